//! Clause 5 and retrieve's order and bytes; location lookup.

use std::io::Read;

use fieldstore::{ErrorKind, Level};

use super::{opened, PL};
use crate::support::{
    archive_payload, canonical, key, list, must, request, retrieve, retrieve_one, Spec, Stored,
};
use crate::Open;

/// Clause 5: retrieving what does not exist is not an error and yields
/// nothing: a key in a dataset that does not exist, a key missing from an
/// existing collocation, a collocation missing from an existing dataset;
/// a request naming existing and missing fields yields only the existing
/// ones. `location` of a missing key is `None`; list and axes of missing
/// data are empty.
pub fn retrieve_missing_is_empty(open: Open<'_>) {
    let x = "mis1";
    let fs = opened(open, "handle");
    let absent = PL.key(x);
    let nothing = must(
        fs.retrieve(&fieldstore::Request::from_key(&absent)),
        "retrieve from an empty store",
    );
    assert!(
        nothing.is_empty(),
        "retrieve of {absent} before anything was archived found {} fields",
        nothing.len()
    );
    assert_eq!(
        must(nothing.read_all(), "reading an empty retrieve"),
        Vec::<u8>::new()
    );
    assert_eq!(
        must(fs.location(&absent), "location of a missing key"),
        None
    );

    let stored = archive_payload(&fs, &PL.key(x), 1, 100, 1000);
    must(fs.flush(), "flush");
    let reader = opened(open, "reader");
    let missing = [
        ("another step, same collocation", Spec { step: 6, ..PL }),
        ("another collocation", Spec { ty: "cf", ..PL }),
        (
            "another dataset",
            Spec {
                date: 20231202,
                ..PL
            },
        ),
    ];
    for (what, spec) in missing {
        let k = spec.key(x);
        assert_eq!(
            retrieve_one(&reader, &k),
            None,
            "retrieve of a missing field ({what}: {k})"
        );
        assert_eq!(
            must(reader.location(&k), format_args!("location of {k}")),
            None,
            "location of a missing field ({what}: {k})"
        );
    }
    let mixed = request(&format!(
        "class=od,expver={x},stream=enfo,date=20231201/20231202,time=1200,type=pf/cf,levtype=pl,step=0/6,number=1,levelist=500,param=130"
    ));
    let got = retrieve(&reader, &mixed);
    assert_eq!(
        got.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        [stored.canonical.as_str()],
        "retrieve {mixed}: want only the one field that exists"
    );
    assert!(got[0].1 == stored.data, "retrieve {mixed}: wrong bytes");

    let none = request(&format!("class=od,expver={x},date=20231202"));
    for depth in [Level::Dataset, Level::Collocation, Level::Element] {
        let l = list(&reader, &none, depth, true);
        assert!(
            l.is_empty(),
            "list {none} at {depth:?} of a dataset that does not exist: {l:?}"
        );
    }
    let a = must(
        reader.axes(&none, Level::Element),
        "axes of a missing dataset",
    );
    assert!(
        a.values().all(|v| v.is_empty()),
        "axes {none} of a dataset that does not exist: {a:?}"
    );
}

/// Retrieve yields fields in request order (chains in schema order; within
/// a chain the schema's keyword order, the last keyword varying fastest;
/// values in the order the request gives them), skipping missing ones, with
/// the exact bytes archived, whatever their size (1 MiB and more, odd
/// sizes), through `next_field`, `read_all` and `std::io::Read`.
pub fn retrieve_in_request_order(open: Open<'_>) {
    let x = "ord1";
    let fs = opened(open, "writer");
    let mut stored: Vec<(Spec, Stored)> = Vec::new();
    // Archive in an order unrelated to the request's.
    let mut n = 0usize;
    for param in [130, 131] {
        for levelist in [850, 500] {
            for step in [6, 0, 12] {
                let spec = Spec {
                    step,
                    levelist: Some(levelist),
                    param,
                    ..PL
                };
                let k = spec.key(x);
                let c = canonical(&fs, &k);
                let len = match n {
                    3 => (1 << 20) + 3,
                    7 => 65_537,
                    _ => 28 + n * 37,
                };
                n += 1;
                let data = crate::payload::make(&c, 1, len);
                must(fs.archive(&k, &data), format_args!("archiving {k}"));
                stored.push((
                    spec,
                    Stored {
                        key: k,
                        canonical: c,
                        data,
                    },
                ));
            }
        }
    }
    must(fs.flush(), "flush");
    let reader = opened(open, "reader");
    let req = request(&format!(
        "class=od,expver={x},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=12/7/0/6,number=1,levelist=850/500,param=131/130"
    ));
    // Schema order of the element keywords: step, number, levelist, param.
    let mut want: Vec<&Stored> = Vec::new();
    for step in [12, 7, 0, 6] {
        for levelist in [850, 500] {
            for param in [131, 130] {
                if let Some((_, s)) = stored.iter().find(|(sp, _)| {
                    sp.step == step && sp.levelist == Some(levelist) && sp.param == param
                }) {
                    want.push(s);
                }
            }
        }
    }
    let got = retrieve(&reader, &req);
    assert_eq!(
        got.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        want.iter()
            .map(|s| s.canonical.as_str())
            .collect::<Vec<_>>(),
        "retrieve {req}: fields not in request order"
    );
    for ((k, d), s) in got.iter().zip(&want) {
        assert!(
            *d == s.data,
            "retrieve {req}: field {k}: {} bytes returned differ from the {} archived",
            d.len(),
            s.data.len()
        );
    }
    let concat: Vec<u8> = want.iter().flat_map(|s| s.data.iter().copied()).collect();
    let r = must(reader.retrieve(&req), "retrieve");
    assert_eq!(r.len(), want.len(), "DataReader::len");
    assert_eq!(r.size(), concat.len() as u64, "DataReader::size");
    let all = must(r.read_all(), "DataReader::read_all");
    assert!(
        all == concat,
        "read_all of {req}: {} bytes, not the {} archived, in order",
        all.len(),
        concat.len()
    );
    // Reads smaller than some fields and larger than all.
    for size in [4093, 2 << 20] {
        let mut r = must(reader.retrieve(&req), "retrieve");
        let mut streamed = Vec::new();
        let mut chunk = vec![0u8; size];
        loop {
            let n = r
                .read(&mut chunk)
                .unwrap_or_else(|e| panic!("io::Read of retrieve {req}: {e}"));
            if n == 0 {
                break;
            }
            streamed.extend_from_slice(&chunk[..n]);
        }
        assert!(
            streamed == concat,
            "io::Read of {req} in reads of {size} bytes: {} bytes, not the {} archived, in order",
            streamed.len(),
            concat.len()
        );
    }
}

/// `location` finds one key's field: the location's length is the field's,
/// reading it from the store gives the bytes, list shows the same
/// location; after a replacement it moves to the new field while the old
/// location still reads the old bytes (visible data is immutable); a
/// missing key gives `None`; a key that does not fit the schema is an
/// `InvalidInput` error.
pub fn location_lookup(open: Open<'_>) {
    let x = "loc1";
    let fs = opened(open, "writer");
    let fields: Vec<Stored> = [0, 6, 12]
        .iter()
        .map(|&step| archive_payload(&fs, &Spec { step, ..PL }.key(x), 1, 100, 3000))
        .collect();
    must(fs.flush(), "flush");
    let reader = opened(open, "reader");
    let listed = list(
        &reader,
        &request(&format!("class=od,expver={x}")),
        Level::Element,
        false,
    );
    let mut buf = Vec::new();
    for s in &fields {
        let loc = must(
            reader.location(&s.key),
            format_args!("location of {}", s.key),
        )
        .unwrap_or_else(|| panic!("location of the flushed {} is None", s.key));
        assert_eq!(
            loc.length,
            s.data.len() as u64,
            "location of {}: length",
            s.key
        );
        must(
            reader.store().read(&loc, &mut buf),
            format_args!("reading {loc}"),
        );
        assert!(
            buf == s.data,
            "reading the location of {} ({loc}) gives other bytes",
            s.key
        );
        let in_list = listed
            .iter()
            .find(|e| e.full_key().to_string() == s.canonical)
            .unwrap_or_else(|| panic!("list does not show {}", s.key));
        assert_eq!(
            in_list.location.as_ref(),
            Some(&loc),
            "list and location disagree on {}",
            s.key
        );
    }
    let old = must(reader.location(&fields[1].key), "location").expect("checked above");
    let newer = archive_payload(&fs, &fields[1].key, 2, 100, 3000);
    must(fs.flush(), "flush of the replacement");
    let loc = must(reader.location(&newer.key), "location of the replaced key")
        .unwrap_or_else(|| panic!("location of the replaced {} is None", newer.key));
    assert_ne!(
        loc, old,
        "location of {} did not move to the replacement",
        newer.key
    );
    must(
        reader.store().read(&loc, &mut buf),
        format_args!("reading {loc}"),
    );
    assert!(
        buf == newer.data,
        "the replacement's location does not give its bytes"
    );
    must(
        reader.store().read(&old, &mut buf),
        format_args!("reading the replaced field at {old}"),
    );
    assert!(
        buf == fields[1].data,
        "the replaced field's old location ({old}) no longer gives its bytes"
    );

    let missing = Spec { step: 18, ..PL }.key(x);
    assert_eq!(
        must(reader.location(&missing), "location of a missing key"),
        None
    );
    let bad = key(&format!("class=od,expver={x},stream=enfo,date=20231201"));
    match reader.location(&bad) {
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::InvalidInput,
            "location of an incomplete key: {e}"
        ),
        Ok(l) => {
            panic!("location of the incomplete key {bad} gave {l:?}, want an InvalidInput error")
        }
    }
}

/// `Store::read_range` reads exactly the bytes asked for of one field
/// (its first byte, a stretch inside it, its last byte; of the second of
/// two adjacent fields, so an offset counted from the file's start instead
/// of the field's shows), and refuses a range that leaves the field with
/// `InvalidInput`, reading nothing.
pub fn read_range_reads_part_of_a_field(open: Open<'_>) {
    let x = "rng1";
    let fs = opened(open, "writer");
    let fields: Vec<Stored> = [0, 6]
        .iter()
        .map(|&step| archive_payload(&fs, &Spec { step, ..PL }.key(x), 1, 100, 3000))
        .collect();
    must(fs.flush(), "flush");
    let reader = opened(open, "reader");
    let s = &fields[1];
    let loc = must(
        reader.location(&s.key),
        format_args!("location of {}", s.key),
    )
    .unwrap_or_else(|| panic!("location of the flushed {} is None", s.key));
    let len = s.data.len();
    for (offset, n) in [(0, 1), (17, 100), (len - 1, 1), (0, len)] {
        let mut out = vec![0u8; n];
        must(
            reader.store().read_range(&loc, offset as u64, &mut out),
            format_args!("read_range {offset}+{n} of {loc}"),
        );
        assert!(
            out == s.data[offset..offset + n],
            "read_range {offset}+{n} of {loc}: wrong bytes"
        );
    }
    for (offset, n) in [(len, 1), (len - 1, 2), (u64::MAX as usize, 1)] {
        let mut out = vec![0u8; n];
        let e = reader
            .store()
            .read_range(&loc, offset as u64, &mut out)
            .expect_err("a range outside the field must fail");
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidInput,
            "read_range {offset}+{n}: {e}"
        );
    }
}

/// An entry's extension (`FieldLocation::extension`, archived with
/// `archive_extended`) comes back with the entry from every way of finding
/// it — `location`, `list`, `retrieve`'s fields — in another handle after
/// the flush, byte for byte (including an empty one and one of 64 KiB);
/// a field archived again without one has none, and one archived again
/// with another has the new one.
pub fn entry_extension_carried(open: Open<'_>) {
    let x = "ext1";
    let fs = opened(open, "writer");
    let keys: Vec<fieldstore::Key> = [0, 6, 12]
        .iter()
        .map(|&step| Spec { step, ..PL }.key(x))
        .collect();
    let exts: [Vec<u8>; 3] = [
        vec![0x4a, 1, 2, 3],
        Vec::new(),
        (0..65_536u32).map(|i| (i % 251) as u8).collect(),
    ];
    for (k, e) in keys.iter().zip(&exts) {
        let split = must(fs.schema().split(k), format_args!("split {k}"));
        must(
            fs.archive_extended(&split, b"field bytes", Some(e.as_slice().into())),
            format_args!("archiving {k}"),
        );
    }
    must(fs.flush(), "flush");
    let reader = opened(open, "reader");
    let ext_of = |fs: &fieldstore::FieldStore, k: &fieldstore::Key| {
        must(fs.location(k), format_args!("location of {k}"))
            .unwrap_or_else(|| panic!("{k} not found"))
            .extension
            .map(|e| e.to_vec())
    };
    for (k, e) in keys.iter().zip(&exts) {
        assert_eq!(
            ext_of(&reader, k).as_ref(),
            Some(e),
            "location of {k}: extension"
        );
    }
    let all = request(&format!("class=od,expver={x}"));
    let listed = list(&reader, &all, Level::Element, false);
    assert_eq!(listed.len(), 3);
    for l in &listed {
        let ext = l.location.as_ref().and_then(|l| l.extension.as_deref());
        assert!(ext.is_some(), "list {}: no extension", l.braced());
    }
    let fields = must(reader.retrieve(&all), "retrieve").fields().to_vec();
    assert!(
        fields.iter().all(|(_, l)| l.extension.is_some()),
        "retrieve's fields lost extensions"
    );
    // Replaced: without an extension, and with another one.
    must(fs.archive(&keys[0], b"new bytes"), "archive again");
    let split = must(fs.schema().split(&keys[1]), "split");
    must(
        fs.archive_extended(&split, b"new bytes", Some(vec![9u8; 5].into())),
        "archive again",
    );
    must(fs.flush(), "flush");
    let reader = opened(open, "reader after the replacement");
    assert_eq!(
        ext_of(&reader, &keys[0]),
        None,
        "replaced without an extension"
    );
    assert_eq!(
        ext_of(&reader, &keys[1]),
        Some(vec![9u8; 5]),
        "replaced with another"
    );
    assert_eq!(
        ext_of(&reader, &keys[2]).as_ref(),
        Some(&exts[2]),
        "untouched"
    );
}

/// Annotations (`FieldStore::annotate`): an extension added to a field's
/// entry after it was archived, by the location it was listed at. It is
/// handed back with the field by another handle (`location`, `list`,
/// `retrieve`); it never survives a replacement of the field, even when
/// written after it for the old location (a reader that listed the field
/// before); an annotation of a key that has no entry makes nothing
/// visible; masked entries are listed as before; a wipe counts fields, not
/// annotations, and one written after the wipe creates nothing.
pub fn annotation_applies_to_its_field_only(open: Open<'_>) {
    let x = "ann1";
    let fs = opened(open, "writer");
    let keys: Vec<fieldstore::Key> = [0, 6, 12, 18]
        .iter()
        .map(|&step| Spec { step, ..PL }.key(x))
        .collect();
    for k in &keys[..3] {
        must(fs.archive(k, b"field bytes"), format_args!("archiving {k}"));
    }
    must(fs.flush(), "flush");
    let all = request(&format!("class=od,expver={x}"));
    let annotator = opened(open, "annotator");
    let listed = list(&annotator, &all, Level::Element, false);
    assert_eq!(listed.len(), 3);
    let find = |k: &fieldstore::Key| {
        listed
            .iter()
            .find(|l| l.full_key() == *k)
            .unwrap_or_else(|| panic!("{k} not listed"))
    };
    let a: std::sync::Arc<[u8]> = b"J\x02a".as_slice().into();
    let b: std::sync::Arc<[u8]> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    let written = must(
        annotator.annotate(&[(find(&keys[0]), a.clone()), (find(&keys[1]), b.clone())]),
        "annotate",
    );
    assert_eq!(written, 2);
    let ext_of = |fs: &fieldstore::FieldStore, k: &fieldstore::Key| {
        must(fs.location(k), format_args!("location of {k}"))
            .unwrap_or_else(|| panic!("{k} not found"))
            .extension
    };
    let reader = opened(open, "reader");
    assert_eq!(ext_of(&reader, &keys[0]), Some(a.clone()), "annotated");
    assert_eq!(ext_of(&reader, &keys[1]), Some(b.clone()), "annotated");
    assert_eq!(ext_of(&reader, &keys[2]), None, "not annotated");
    let now = list(&reader, &all, Level::Element, false);
    assert_eq!(now.len(), 3, "annotations are not fields: {now:?}");
    assert!(now
        .iter()
        .all(|l| l.location.as_ref().is_some_and(|l| !l.annotates)));
    for (k, want) in keys[..3].iter().zip([Some(&a), Some(&b), None]) {
        let r = must(
            reader.retrieve(&fieldstore::Request::from_key(k)),
            format_args!("retrieve {k}"),
        );
        let fields = r.fields();
        assert_eq!(fields.len(), 1, "retrieve {k}");
        assert_eq!(fields[0].1.extension.as_ref(), want, "retrieve {k}");
    }
    // Replaced, then annotated for the old location by the annotator,
    // which listed it before: the new field, without the annotation.
    must(fs.archive(&keys[1], b"new bytes"), "archive again");
    must(fs.flush(), "flush");
    let stale: std::sync::Arc<[u8]> = b"stale".as_slice().into();
    must(
        annotator.annotate(&[(find(&keys[1]), stale.clone())]),
        "annotate a replaced field",
    );
    // And a key never archived, at some location: nothing appears.
    let mut ghost = find(&keys[2]).clone();
    let split = must(fs.schema().split(&keys[3]), "split");
    ghost.element = split.element;
    must(
        annotator.annotate(&[(&ghost, stale.clone())]),
        "annotate a key without an entry",
    );
    let reader = opened(open, "reader after the replacement");
    assert_eq!(ext_of(&reader, &keys[1]), None, "replaced: no annotation");
    assert_eq!(
        must(
            reader.location(&keys[3]),
            "location of a key never archived"
        ),
        None,
        "an annotation made a field appear"
    );
    assert_eq!(
        retrieve_one(&reader, &keys[1]),
        Some(b"new bytes".to_vec()),
        "the replacement is the field"
    );
    assert_eq!(ext_of(&reader, &keys[0]), Some(a), "others keep theirs");
    assert_eq!(list(&reader, &all, Level::Element, false).len(), 3);
    // With masked entries: the old field once more, never an annotation.
    let dup = list(&reader, &all, Level::Element, true);
    assert_eq!(dup.len(), 4, "{dup:?}");
    assert!(dup
        .iter()
        .all(|l| l.location.as_ref().is_some_and(|l| !l.annotates)));
    // A wipe counts fields, not annotations; an annotation written after
    // it (from the listing before) makes nothing appear, and does not
    // create the dataset again.
    let dataset = request(&format!(
        "class=od,expver={x},stream=enfo,date={},time={:04}",
        PL.date, PL.time
    ));
    let dry = must(
        fs.wipe(&dataset, fieldstore::WipeOptions::default()),
        "wipe (dry run)",
    );
    assert_eq!(dry.datasets.len(), 1, "{dry:?}");
    assert_eq!(
        dry.datasets[0].fields, 4,
        "three fields and one replaced, annotations not counted: {dry:?}"
    );
    let wipe = fieldstore::WipeOptions {
        doit: true,
        unsafe_wipe_all: false,
    };
    must(fs.wipe(&dataset, wipe), "wipe");
    let written = must(
        annotator.annotate(&[(find(&keys[0]), stale.clone())]),
        "annotate after the wipe",
    );
    assert_eq!(written, 0, "annotations of a wiped dataset");
    let reader = opened(open, "reader after the wipe");
    assert_eq!(
        must(reader.location(&keys[0]), "location after the wipe"),
        None
    );
    assert!(list(&reader, &all, Level::Dataset, false).is_empty());
}
