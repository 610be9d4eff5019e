//! Bad input: garbage, truncation, damaged messages, messages ecCodes reads
//! but FDB cannot index. Every bad input is made here from fixture bytes.
// Lists of skipped byte ranges that happen to hold one range.
#![allow(clippy::single_range_in_vec_init)]

use std::path::PathBuf;

use fieldstore_core::{Error, ErrorKind, Schema};
use fieldstore_grib::{fields, mars_key, split_messages, GribError, Problem};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/grib")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The messages before the first error, and that error.
fn split_until_error(bytes: &[u8]) -> (usize, Error) {
    let mut ok = 0;
    for m in split_messages(bytes) {
        match m {
            Ok(_) => ok += 1,
            Err(e) => return (ok, e),
        }
    }
    panic!("no error after {ok} messages");
}

fn grib_error(e: &Error) -> &GribError {
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<GribError>())
        .unwrap_or_else(|| panic!("no GribError source: {e:?}"))
}

/// Asserts the error names `index` and `offset` in its text and fields, and
/// returns the problem.
fn located(e: &Error, index: usize, offset: usize) -> Problem {
    let g = grib_error(e);
    assert_eq!((g.index, g.offset), (index, offset), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("GRIB message {index} at byte offset {offset}: ")),
        "{text}"
    );
    g.problem.clone()
}

/// Every message of `bytes` (which must hold no damaged one), as
/// `(index, offset)`, and the ranges skipped as not GRIB.
fn split_all(bytes: &[u8]) -> (Vec<(usize, usize)>, Vec<std::ops::Range<u64>>) {
    let mut split = split_messages(bytes);
    let at = split
        .by_ref()
        .map(|m| {
            m.map(|m| (m.index(), m.offset()))
                .expect("no damaged message")
        })
        .collect();
    (at, split.skipped().ranges().to_vec())
}

#[test]
fn junk_before_the_first_message_is_skipped_and_reported() {
    // A record header, as Météo-France's ecoclimap files have (12,000 bytes).
    let mut bytes = vec![b'h'; 12_000];
    bytes.extend(fixture("rd-fc.grib"));
    assert_eq!(split_all(&bytes), (vec![(0, 12_000)], vec![0..12_000]));
    // The message is the same bytes, and has the same key.
    let m = split_messages(&bytes).next().expect("one").expect("ok");
    assert!(m.bytes() == fixture("rd-fc.grib").as_slice());
    assert_eq!(
        m.mars_key().expect("key"),
        mars_key(&fixture("rd-fc.grib")).expect("key")
    );
    // Leading NULs are junk too (padding only follows a message).
    let mut leading = vec![0; 8];
    leading.extend(fixture("rd-fc.grib"));
    assert_eq!(split_all(&leading), (vec![(0, 8)], vec![0..8]));
}

#[test]
fn junk_between_and_after_messages_is_skipped_and_reported() {
    let file = fixture("timespan.grib");
    let mut bytes = file[..1800].to_vec();
    bytes.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    bytes.extend_from_slice(&file[1800..]);
    bytes.extend_from_slice(b"\n");
    let (at, ranges) = split_all(&bytes);
    assert_eq!(at.len(), 6);
    assert_eq!(at[1], (1, 1804), "indices count messages, not junk");
    assert_eq!(ranges, [1800..1804, 10_876..10_877]);
    // A trailing `GRI` is junk, not a truncated message (as in ecCodes).
    let mut cut = fixture("synth11.grib");
    cut.extend_from_slice(b"GRI");
    assert_eq!(split_all(&cut), (vec![(0, 0)], vec![660..663]));
    // Only junk: no message, all of it skipped.
    assert_eq!(split_all(b"hello world"), (vec![], vec![0..11]));
}

#[test]
fn nul_padding_is_silent_but_longer_runs_are_reported() {
    // MARS pads GRIB1 to multiples of 120 bytes: levtypes.grib has 84 NULs
    // after each message, which are not part of the messages.
    let bytes = fixture("levtypes.grib");
    let lens: Vec<usize> = split_messages(&bytes)
        .map(|m| m.expect("ok").bytes().len())
        .collect();
    assert_eq!(lens, [1476, 1476]);
    assert_eq!(split_all(&bytes).1, []);

    let mut padded = fixture("rd-fc.grib");
    padded.extend_from_slice(&[0; 119]);
    assert_eq!(split_all(&padded), (vec![(0, 0)], vec![]));
    assert!(mars_key(&padded).is_ok(), "one message and its padding");

    // Padding to a 4 KiB block after `7777`: reported, not an error.
    let mut long = fixture("rd-fc.grib");
    long.extend_from_slice(&[0; 200]);
    assert_eq!(split_all(&long), (vec![(0, 0)], vec![1476..1676]));
    // A single message may not carry it.
    let e = mars_key(&long).expect_err("trailing bytes");
    assert_eq!(located(&e, 0, 0), Problem::TrailingBytes { len: 200 });
}

#[test]
fn a_grib_that_does_not_frame_is_an_error_not_junk() {
    // `GRIB` then a length that holds no message: damaged, as in ecCodes
    // ("unreadable message"), after junk that is skipped.
    let mut bytes = b"junk ".to_vec();
    bytes.extend_from_slice(b"GRIB\x00\x00\x10\x01 and more junk");
    bytes.extend(fixture("rd-fc.grib"));
    let (ok, e) = split_until_error(&bytes);
    assert_eq!(ok, 0);
    assert_eq!(located(&e, 0, 5), Problem::BadLength { declared: 16 });
    // The single-message reader refuses what is not one message.
    let mut lead = b"not a GRIB".to_vec();
    lead.extend(fixture("rd-fc.grib"));
    let e = mars_key(&lead).expect_err("leading bytes");
    assert!(matches!(located(&e, 0, 0), Problem::Garbage { .. }), "{e}");
    assert!(
        e.to_string().ends_with("expected 'GRIB', found 'not a GR'"),
        "{e}"
    );
}

#[test]
fn truncated_file() {
    let file = fixture("timespan.grib");
    // Cut in the middle of message 2 (at 3600, 1800 bytes long).
    let (ok, e) = split_until_error(&file[..4000]);
    assert_eq!(ok, 2);
    assert_eq!(
        located(&e, 2, 3600),
        Problem::Truncated {
            declared: 1800,
            available: 400
        }
    );
    assert!(
        e.to_string()
            .ends_with("truncated: the message is 1800 bytes long but only 400 bytes are left"),
        "{e}"
    );
    // Cut inside section 0 (GRIB2's is 16 bytes).
    let (_, e) = split_until_error(&file[..3610]);
    assert_eq!(
        located(&e, 2, 3600),
        Problem::Truncated {
            declared: 16,
            available: 10
        }
    );
    // Cut inside the magic number: `GR` starts no message, and is skipped
    // as ecCodes skips it.
    assert_eq!(
        split_all(&file[..3602]),
        (vec![(0, 0), (1, 1800)], vec![3600..3602])
    );
    // GRIB1, cut in the data section.
    let file = fixture("x138-300.grib");
    let (_, e) = split_until_error(&file[..1_000_000]);
    assert_eq!(
        located(&e, 0, 0),
        Problem::Truncated {
            declared: 3_280_398,
            available: 1_000_000
        }
    );
}

#[test]
fn damaged_end_marker() {
    let mut file = fixture("timespan.grib");
    file[1800 + 1799] = b'8';
    let (ok, e) = split_until_error(&file);
    assert_eq!(ok, 1);
    let p = located(&e, 1, 1800);
    assert_eq!(
        p,
        Problem::MissingEndMarker {
            at: 3596,
            found: "'7778'".to_string()
        }
    );
}

#[test]
fn damaged_length() {
    // GRIB2: the length points into the data section.
    let mut file = fixture("timespan.grib");
    file[1800 + 14] = 0x06; // 1800 = 0x0708 -> 0x0608
    let (_, e) = split_until_error(&file);
    assert!(
        matches!(located(&e, 1, 1800), Problem::MissingEndMarker { .. }),
        "{e}"
    );
    // GRIB1: a length too small to hold a message.
    let mut file = fixture("rd-fc.grib");
    file[4..7].copy_from_slice(&[0, 0, 20]);
    let (_, e) = split_until_error(&file);
    assert_eq!(located(&e, 0, 0), Problem::BadLength { declared: 20 });
}

#[test]
fn damaged_sections_inside_a_message() {
    // GRIB2 message 1: section 4 (at 16+21+17+1672 = 1726) claims too much.
    let mut file = fixture("timespan.grib");
    file[1800 + 1726 + 3] = 200;
    let (ok, e) = split_until_error(&file);
    assert_eq!(ok, 1);
    let p = located(&e, 1, 1800);
    assert!(matches!(p, Problem::BadSections { at: 3526, .. }), "{p:?}");
    assert!(e.to_string().contains("section 4 claims 200 bytes"), "{e}");

    // GRIB2 cut after section 4 with a consistent length and end marker:
    // ecCodes would give a partial key, the structure check refuses it.
    let file = fixture("timespan.grib");
    let mut short = file[..1760].to_vec();
    short.extend_from_slice(b"7777");
    short[8..16].copy_from_slice(&1764u64.to_be_bytes());
    let e = mars_key(&short).expect_err("no sections 5 to 7");
    assert!(matches!(located(&e, 0, 0), Problem::BadSections { .. }));
    assert!(
        e.to_string().contains("the end marker follows section 4"),
        "{e}"
    );

    // GRIB1: section 1 claims a different length.
    let mut file = fixture("rd-fc.grib");
    file[10] = 60;
    let e = mars_key(&file).expect_err("sections do not add up");
    assert!(matches!(
        located(&e, 0, 0),
        Problem::BadSections { at: 8, .. }
    ));
}

#[test]
fn unsupported_edition() {
    let mut file = fixture("timespan.grib");
    file[1800 + 7] = 3;
    let (_, e) = split_until_error(&file);
    assert_eq!(
        located(&e, 1, 1800),
        Problem::UnsupportedEdition { edition: 3 }
    );
}

#[test]
fn value_keys_cannot_hold() {
    // expver is 4 characters in the GRIB1 local section: put a control
    // character in it.
    let mut file = fixture("rd-fc.grib");
    let at = file
        .windows(4)
        .position(|w| w == b"xxxx")
        .expect("expver in the local section");
    file[at] = 1;
    let e = mars_key(&file).expect_err("control character");
    let p = located(&e, 0, 0);
    assert!(
        matches!(&p, Problem::BadKey { keyword, .. } if keyword == "expver"),
        "{p:?}"
    );
    assert!(
        e.to_string().contains(r#"'expver' has value "\u{1}xxx""#),
        "{e}"
    );
}

#[test]
fn message_without_mars_labelling_names_what_is_missing() {
    // Not an ECMWF message: centre 7 and section 1 without ECMWF's local
    // extension (its last 24 bytes). ecCodes reads it, with no class,
    // stream, type or expver; its key is returned as is, and the schema
    // names what is missing.
    let file = fixture("rd-fc.grib");
    assert_eq!((file[8 + 2], file[8 + 4]), (52, 98));
    let mut foreign = file[..8 + 28].to_vec();
    foreign.extend_from_slice(&file[8 + 52..]);
    foreign[8 + 2] = 28;
    foreign[8 + 4] = 7;
    let len = foreign.len() as u32;
    foreign[4..7].copy_from_slice(&len.to_be_bytes()[1..]);
    let key = mars_key(&foreign).expect("ecCodes reads it");
    assert_eq!(
        key.to_string(),
        "levtype=sfc,date=20201102,time=0000,step=12,param=166.128"
    );
    let err = Schema::ecmwf().split(&key).expect_err("no rule");
    assert!(err.to_string().contains("class"), "{err}");

    // Only the centre changed: ecCodes now misreads section 1, says so, and
    // would return a partial key; that is an error.
    let mut damaged = file.clone();
    damaged[8 + 4] = 7;
    let e = mars_key(&damaged).expect_err("inconsistent section 1");
    let p = located(&e, 0, 0);
    assert!(matches!(p, Problem::Undecodable { .. }), "{p:?}");
    assert!(e.to_string().contains("section_1"), "{e}");
}

#[test]
fn unknown_templates_are_errors_not_partial_keys() {
    // GRIB2 message 0 of timespan.grib: section 4 at 1726, its template
    // number at octets 8-9. ecCodes logs "unable to find template" and
    // returns a key without step, levtype and param.
    let mut file = fixture("timespan.grib");
    file[1726 + 7..1726 + 9].copy_from_slice(&[0xff, 0xfe]);
    let e = mars_key(&file[..1800]).expect_err("unknown template");
    let p = located(&e, 0, 0);
    assert!(matches!(p, Problem::Undecodable { .. }), "{p:?}");
    // ecCodes 2.28 names the template; 2.50 falls back to another template
    // and complains about the section's size.
    let text = e.to_string();
    assert!(
        text.contains("template.4.65534") || text.contains("section_4"),
        "{e}"
    );
}

#[test]
fn key_errors_do_not_end_the_iteration() {
    // [good, bad value, good]: the caller can skip the bad one (--skip-bad).
    let good = fixture("rd-fc.grib");
    let mut bad = good.clone();
    let at = bad.windows(4).position(|w| w == b"xxxx").expect("expver");
    bad[at] = 1;
    let mut file = good.clone();
    file.extend_from_slice(&bad);
    file.extend_from_slice(&good);
    let got: Vec<_> = fields(&file).collect();
    assert_eq!(got.len(), 3);
    assert!(got[0].is_ok() && got[2].is_ok());
    let e = got[1].as_ref().expect_err("bad value");
    located(e, 1, 1476);
    let f = got[2].as_ref().expect("ok");
    assert_eq!((f.index, f.offset, f.bytes.len()), (2, 2952, 1476));
}

#[test]
fn mars_key_takes_exactly_one_message() {
    let file = fixture("timespan.grib");
    let e = mars_key(&file).expect_err("six messages");
    assert_eq!(located(&e, 0, 0), Problem::TrailingBytes { len: 9072 });
    let e = mars_key(&[]).expect_err("empty");
    assert!(matches!(located(&e, 0, 0), Problem::Truncated { .. }));
    assert_eq!(
        split_messages(&[]).count(),
        0,
        "an empty file has no messages"
    );
}

#[test]
fn file_context_is_added_by_the_caller() {
    let e = split_until_error(b"GRIB").1.context("x.grib");
    assert_eq!(
        e.to_string(),
        "x.grib: GRIB message 0 at byte offset 0: truncated: the message is 8 bytes long but only 4 bytes are left"
    );
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[test]
fn every_single_byte_corruption_is_an_error_or_a_key() {
    // ecCodes must never crash on a damaged header: flip every byte of the
    // headers of a GRIB1 and a GRIB2 message and extract the key.
    for (name, upto) in [("rd-fc.grib", 120), ("timespan.grib", 1800)] {
        let file = fixture(name);
        let len = split_messages(&file)
            .next()
            .expect("one")
            .expect("ok")
            .bytes()
            .len();
        for i in 0..upto.min(len) {
            if (100..1700).contains(&i) && i % 16 != 0 {
                continue; // the grid's coordinates, sampled
            }
            for v in [0x00, 0xff, file[i] ^ 0x01] {
                let mut damaged = file[..len].to_vec();
                damaged[i] = v;
                let _ = mars_key(&damaged);
            }
        }
    }
}

/// `(index, offset)` of each item, `Err` for errors, with `resync`.
fn resynced(bytes: &[u8]) -> Vec<Result<(usize, usize), (usize, usize)>> {
    split_messages(bytes)
        .resync()
        .map(|m| match m {
            Ok(m) => Ok((m.index(), m.offset())),
            Err(e) => {
                let g = grib_error(&e);
                Err((g.index, g.offset))
            }
        })
        .collect()
}

#[test]
fn resync_goes_on_after_garbage_with_one_error_per_damaged_stretch() {
    let file = fixture("timespan.grib");
    // 6 messages of 1800 bytes (2t) and 1824 (cp); garbage after message 0,
    // including a `GRIB` that starts no valid message.
    let mut bytes = file[..1800].to_vec();
    bytes.extend_from_slice(b"junk GRIB junk");
    bytes.extend_from_slice(&file[1800..]);
    let items = resynced(&bytes);
    assert_eq!(items.len(), 7, "{items:?}");
    assert_eq!(items[0], Ok((0, 0)));
    // "junk " is skipped; "GRIB junk" is a damaged message.
    assert_eq!(items[1], Err((1, 1805)));
    assert_eq!(items[2], Ok((2, 1800 + 14)));
    assert!(items[2..].iter().all(Result::is_ok), "{items:?}");
    // Without resync the same input ends at the garbage.
    assert_eq!(split_messages(&bytes).count(), 2);
}

#[test]
fn resync_skips_a_damaged_message_and_ends_after_a_truncated_one() {
    let file = fixture("timespan.grib");
    let mut bytes = file.clone();
    // Message 1's end marker: its stretch runs to message 2.
    bytes[2 * 1800 - 1] = b'X';
    // The last message cut short.
    bytes.truncate(bytes.len() - 100);
    let items = resynced(&bytes);
    let errors: Vec<_> = items.iter().filter_map(|i| i.err()).collect();
    assert_eq!(errors, [(1, 1800), (5, file.len() - 1824)], "{items:?}");
    let ok: Vec<_> = items.iter().filter_map(|i| i.ok()).collect();
    assert_eq!(ok.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 2, 3, 4]);
    assert_eq!(ok[1], (2, 3600));
}

#[test]
fn resync_on_input_without_any_message_is_no_item_and_skipped_bytes() {
    assert!(resynced(b"hello, world").is_empty());
    let mut split = split_messages(b"hello, world").resync();
    assert_eq!(split.by_ref().count(), 0);
    assert_eq!(split.skipped().ranges(), [0..12]);
    assert!(resynced(b"").is_empty());
}
