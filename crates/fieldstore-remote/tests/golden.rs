//! Golden tests: every frame of real FDB5 5.25 traffic (tests/golden/,
//! see its README) decodes, every payload decodes completely as the
//! message it is, and re-encoding gives the same bytes.

use std::collections::HashMap;
use std::path::PathBuf;

use fieldstore_remote::archive::{decode_flush, CatalogueBlob, ReadRequest, StoreBlob};
use fieldstore_remote::elements::{AxesElement, ListElement, Stores};
use fieldstore_remote::frame::decode_frame;
use fieldstore_remote::key::Key;
use fieldstore_remote::location::FieldLocation;
use fieldstore_remote::request::ToolRequest;
use fieldstore_remote::schema::Schema;
use fieldstore_remote::startup::{ClientStartup, DataStartup, ServerStartup};
use fieldstore_remote::{Header, Message, Reader, Writer};

fn golden(path: &str) -> Vec<(Header, Vec<u8>)> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(path);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut rest = &bytes[..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (h, payload, r) = decode_frame(rest, 1 << 30).unwrap();
        out.push((h, payload.to_vec()));
        rest = r;
    }
    out
}

/// Decode `payload` with `decode`, require every byte used, re-encode with
/// `encode` and require the same bytes.
fn exact<T>(
    payload: &[u8],
    decode: impl Fn(&mut Reader<'_>) -> Result<T, fieldstore_remote::DecodeError>,
    encode: impl Fn(&T, &mut Writer),
) -> T {
    let mut r = Reader::new(payload);
    let v = decode(&mut r).unwrap();
    r.finish().unwrap();
    let mut w = Writer::new();
    encode(&v, &mut w);
    assert_eq!(w.bytes(), payload, "re-encoding differs");
    v
}

/// A tool request followed by an `int` (list's depth, axes' level).
fn tool_and_int(payload: &[u8]) -> (ToolRequest, i32) {
    exact(
        payload,
        |r| Ok((ToolRequest::decode(r)?, r.int()?)),
        |(t, n), w| {
            t.encode(w);
            w.int(*n);
        },
    )
}

#[test]
fn the_write_flow_decodes_exactly() {
    // Client to catalogue, control.
    let frames = golden("dual/cat-1-c2s.bin");
    let (h, p) = &frames[0];
    assert_eq!(
        (h.message, h.client_id, h.control),
        (Message::Startup, 0, true)
    );
    let s = exact(p, ClientStartup::decode, ClientStartup::encode);
    assert_eq!(s.protocol_version, 3);
    assert_eq!(
        s.config
            .get("NumberOfConnections")
            .and_then(|v| v.as_numbers()),
        Some(vec![1, 2])
    );
    let mut requests = HashMap::new();
    for (h, p) in &frames[1..] {
        requests.insert(h.request_id, h.message);
        match h.message {
            Message::Schema if !p.is_empty() => {
                let k = exact(p, Key::decode, Key::encode);
                assert_eq!(k.get("class"), Some("od"));
            }
            Message::Flush => {
                let n = exact(p, decode_flush, |n, w| {
                    w.ulong(*n);
                });
                assert!(n == 1 || n == 2);
            }
            Message::Stores
            | Message::Schema
            | Message::Archive
            | Message::Stop
            | Message::Exit => {
                assert!(p.is_empty())
            }
            other => panic!("unexpected {other}"),
        }
    }
    // Catalogue to client.
    for (h, p) in golden("dual/cat-1-s2c.bin") {
        match h.message {
            Message::Startup => {
                let s = exact(&p, ServerStartup::decode, ServerStartup::encode);
                assert_eq!(
                    s.config
                        .get("NumberOfConnections")
                        .and_then(|v| v.as_numbers()),
                    Some(vec![2])
                );
            }
            Message::Received => match requests[&h.request_id] {
                Message::Stores => {
                    let s = exact(&p, Stores::decode, Stores::encode);
                    assert_eq!(s.stores.len(), 1);
                }
                Message::Schema => {
                    let s = exact(&p, Schema::decode, Schema::encode);
                    assert_eq!(s.rules.len(), 98);
                    assert!(s.types.contains(&("step".into(), "Step".into())));
                }
                _ => assert!(p.is_empty()),
            },
            Message::Exit => {}
            other => panic!("unexpected {other}"),
        }
    }
    // Client to catalogue, data: the field locations.
    let frames = golden("dual/cat-data1-2-c2s.bin");
    exact(&frames[0].1, DataStartup::decode, DataStartup::encode);
    let mut n = 0;
    for (h, p) in &frames[1..] {
        if h.message == Message::Blob {
            assert!(!h.control);
            let b = exact(p, CatalogueBlob::decode, CatalogueBlob::encode);
            assert_eq!(b.location.class, "RemoteFieldLocation");
            assert_eq!(b.location.uri.scheme, "fdb");
            assert_eq!(b.location.uri.query_value("internalScheme"), Some("file"));
            n += 1;
        }
    }
    assert_eq!(n, 3);
    // Client to store: control and data.
    for (h, p) in golden("dual/store-1-c2s.bin") {
        if h.message == Message::Flush {
            exact(&p, decode_flush, |n, w| {
                w.ulong(*n);
            });
        }
    }
    let mut sizes = Vec::new();
    for (h, p) in golden("dual/store-data1-2-c2s.bin") {
        if h.message == Message::Blob {
            let mut r = Reader::new(&p);
            let b = StoreBlob::decode(&mut r).unwrap();
            r.finish().unwrap();
            let mut w = Writer::new();
            b.encode(&mut w);
            assert_eq!(w.bytes(), &p[..]);
            assert!(b.data.starts_with(b"GRIB") && b.data.ends_with(b"7777"));
            sizes.push(b.data.len());
        }
    }
    assert_eq!(sizes, [660, 1476, 1476]);
    // Store to client: each field's location, answering the blob's request id.
    let mut locations = 0;
    for (h, p) in golden("dual/store-1-s2c.bin") {
        if h.message == Message::Store {
            assert!(h.control);
            let l = exact(&p, FieldLocation::decode, FieldLocation::encode);
            assert_eq!(
                (l.class.as_str(), l.uri.scheme.as_str(), l.uri.port),
                ("TocFieldLocation", "file", -1)
            );
            locations += 1;
        }
    }
    assert_eq!(locations, 3);
}

#[test]
fn list_axes_and_inspect_replies_decode_exactly() {
    for (file, data, want_message) in [
        (
            "dual/cat-3-c2s.bin",
            "dual/cat-data3-4-s2c.bin",
            Message::List,
        ),
        (
            "dual/cat-7-c2s.bin",
            "dual/cat-data7-8-s2c.bin",
            Message::List,
        ),
        (
            "dual/cat-9-c2s.bin",
            "dual/cat-data9-10-s2c.bin",
            Message::Inspect,
        ),
        (
            "dual/cat-5-c2s.bin",
            "dual/cat-data5-6-s2c.bin",
            Message::Axes,
        ),
        (
            "dual/cat-13-c2s.bin",
            "dual/cat-data13-14-s2c.bin",
            Message::Axes,
        ),
    ] {
        let frames = golden(file);
        let (h, p) = frames
            .iter()
            .find(|(h, _)| h.message == want_message)
            .expect("the request");
        assert!(h.control);
        match want_message {
            Message::Inspect => {
                let t = exact(p, ToolRequest::decode, ToolRequest::encode);
                assert_eq!(t.request.verb, "retrieve");
                assert!(!t.all);
            }
            _ => {
                let (t, n) = tool_and_int(p);
                assert!(n == 1 || n == 3, "{file}: depth {n}");
                assert_eq!(t.all, t.request.params.is_empty());
            }
        }
        let mut replies = golden(data);
        // The server answers the client's Exit with one of its own.
        assert_eq!(replies.pop().map(|(h, _)| h.message), Some(Message::Exit));
        let last = replies.last().expect("frames");
        assert_eq!(last.0.message, Message::Complete);
        for (h, p) in &replies[..replies.len() - 1] {
            assert_eq!((h.message, h.control), (Message::Blob, false));
            if want_message == Message::Axes {
                let a = exact(p, AxesElement::decode, AxesElement::encode);
                assert!(!a.axes.is_empty());
            } else {
                let e = exact(p, ListElement::decode, ListElement::encode);
                let class = &e.location.as_ref().expect("a location").class;
                // Inspect's elements carry the remote location as archived;
                // list's are re-created as TOC locations of the fdb URI.
                let want = if want_message == Message::Inspect {
                    "RemoteFieldLocation"
                } else {
                    "TocFieldLocation"
                };
                assert_eq!(class, want);
            }
        }
    }
}

#[test]
fn the_read_flow_decodes_exactly() {
    let frames = golden("dual/store-3-c2s.bin");
    let (_, p) = frames
        .iter()
        .find(|(h, _)| h.message == Message::Read)
        .expect("read");
    let r = exact(p, ReadRequest::decode, ReadRequest::encode);
    assert_eq!(r.location.class, "TocFieldLocation");
    assert_eq!(r.location.length, 660);
    let data = golden("dual/store-data3-4-s2c.bin");
    assert_eq!(data[0].0.message, Message::Blob);
    assert!(data[0].1.starts_with(b"GRIB"));
    assert_eq!(data[1].0.message, Message::Complete);
}

#[test]
fn single_connection_mode_sends_blobs_on_the_control_socket_marked_as_data() {
    let frames = golden("single/cat-2-c2s.bin");
    let s = exact(&frames[0].1, ClientStartup::decode, ClientStartup::encode);
    assert!(matches!(
        s.config.get("PreferSingleConnection"),
        Some(fieldstore_remote::value::Value::Bool(true))
    ));
    let replies = golden("single/cat-2-s2c.bin");
    let s = exact(&replies[0].1, ServerStartup::decode, ServerStartup::encode);
    assert_eq!(
        s.config
            .get("NumberOfConnections")
            .and_then(|v| v.as_numbers()),
        Some(vec![1])
    );
    let blobs: Vec<_> = replies
        .iter()
        .filter(|(h, _)| h.message == Message::Blob)
        .collect();
    assert_eq!(blobs.len(), 3);
    assert!(blobs.iter().all(|(h, _)| !h.control));
}

#[test]
fn the_wipe_flow_decodes_exactly() {
    use fieldstore_remote::wipe::{
        kind, CatalogueWipeState, StoreWipeReply, StoreWipeRequest, WipeRequest,
    };
    // The dry run, then --doit.
    for (file, data, doit) in [
        ("wipe/cat-15-c2s.bin", "wipe/cat-data15-16-s2c.bin", false),
        ("wipe/cat-17-c2s.bin", "wipe/cat-data17-18-s2c.bin", true),
    ] {
        let frames = golden(file);
        let (_, p) = frames
            .iter()
            .find(|(h, _)| h.message == Message::Wipe)
            .expect("wipe");
        let w = exact(p, WipeRequest::decode, WipeRequest::encode);
        assert_eq!((w.doit, w.unsafe_wipe_all), (doit, false));
        let blobs = golden(data);
        let s = exact(
            &blobs[0].1,
            CatalogueWipeState::decode,
            CatalogueWipeState::encode,
        );
        assert_eq!(s.db_key.get("date"), Some("20230508"));
        assert!(s.info.starts_with("[Database: od:0001:oper:20230508"));
        assert_eq!(s.state.delete[0].0, kind::CATALOGUE);
        assert_eq!(s.stores.len(), 1);
        let (uri, store) = &s.stores[0];
        assert_eq!((uri.scheme.as_str(), &store.store_uri), ("fdb", uri));
        assert_eq!(store.state.delete[0].0, kind::STORE);
        assert_eq!(blobs[1].0.message, Message::Complete);
        // The --doit steps to the catalogue carry the dataset key.
        if doit {
            let steps: Vec<Message> = frames.iter().map(|(h, _)| h.message).collect();
            for m in [
                Message::DoMaskIndexEntries,
                Message::DoWipeUris,
                Message::DoWipeFinish,
            ] {
                let (_, p) = frames.iter().find(|(h, _)| h.message == m).expect("step");
                let k = exact(p, Key::decode, Key::encode);
                assert_eq!(k, s.db_key, "{steps:?}");
            }
        }
    }
    // The store's part: the signed state, then the steps with empty keys.
    let frames = golden("wipe/store-7-c2s.bin");
    let (h, p) = frames
        .iter()
        .find(|(h, _)| h.message == Message::Wipe)
        .expect("wipe");
    let r = exact(p, StoreWipeRequest::decode, StoreWipeRequest::encode);
    assert!(r.key.is_empty() && r.doit && !r.unsafe_wipe_all);
    assert_ne!(r.state.signature, 0);
    let replies = golden("wipe/store-7-s2c.bin");
    let (_, p) = replies
        .iter()
        .find(|(rh, _)| rh.message == Message::Received && rh.request_id == h.request_id)
        .expect("reply");
    exact(p, StoreWipeReply::decode, StoreWipeReply::encode);
    let full = frames
        .iter()
        .find(|(h, _)| h.message == Message::DoUnsafeFullWipe)
        .expect("full wipe asked");
    let (_, answer) = replies
        .iter()
        .find(|(rh, _)| rh.request_id == full.0.request_id)
        .expect("answer");
    // FDB5's POSIX store does not wipe everything itself.
    assert!(!exact(
        answer,
        |r| r.bool(),
        |b, w| {
            w.bool(*b);
        }
    ));
}
