//! No damaged GRIB kills the process: messages written by ecCodes (the
//! fixtures, and one on which ecCodes fails an assertion) are damaged in
//! every way ecCodes may meet — bits flipped, sections cut short or grown
//! with their lengths fixed up so that framing passes and ecCodes parses
//! them, wrong section and total lengths — and fed through every entry
//! point of this crate that calls ecCodes (split and MARS key as archive
//! does, values, keys, coordinates). Each call must return, `Ok` or `Err`;
//! an abort or a crash of ecCodes ends this test binary, and the test with
//! it. `FIELDSTORE_GRIB_DAMAGE_ROUNDS` (default 1) repeats the random part
//! with other seeds, for longer runs than CI's.

use std::path::PathBuf;

use fieldstore_grib::{
    decode_values, fields, mars_key, number_of_values, read_array, read_keys, split_messages,
    GribError, Problem,
};

fn read(dir: &str, name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ecCodes assertion problem of an error, if that is what it is.
fn assertion(e: &fieldstore_core::Error) -> bool {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<GribError>())
        .is_some_and(|g| matches!(g.problem, Problem::EccodesAssertion { .. }))
        || e.to_string().contains("ecCodes assertion failed")
}

#[test]
fn an_eccodes_assertion_is_an_error_of_that_message_and_the_process_goes_on() {
    let bad = read("grib-assert", "msmm-bad-fcmonth.grib");
    let good = read("grib", "rd-fc.grib");
    for _ in 0..3 {
        let e = mars_key(&bad).expect_err("ecCodes asserts");
        assert!(assertion(&e), "{e}");
        assert_eq!(e.kind(), fieldstore_core::ErrorKind::InvalidInput);
        assert!(
            e.to_string().starts_with(
                "GRIB message 0 at byte offset 0: ecCodes cannot decode the message: ecCodes \
                 assertion failed: `gribForecastMonth == fcmonth' in "
            ),
            "{e}"
        );
        // The next message, on this thread and others, is read as ever.
        assert!(mars_key(&good).is_ok());
        std::thread::spawn(move || mars_key(&read("grib", "levtypes.grib")[..1476]).is_ok())
            .join()
            .map(|ok| assert!(ok))
            .expect("thread");
    }
    // In a file, between good messages: that message fails, the others not.
    let mut file = good.clone();
    file.extend_from_slice(&bad);
    file.extend_from_slice(&good);
    let got: Vec<_> = fields(&file).collect();
    assert_eq!(got.len(), 3);
    assert!(got[0].is_ok() && got[2].is_ok());
    let e = got[1].as_ref().expect_err("asserts");
    assert!(
        e.to_string()
            .starts_with(&format!("GRIB message 1 at byte offset {}: ", good.len())),
        "{e}"
    );
    // Values and the keys an array view reads do not assert on it; a key
    // that does is an error too.
    let n = number_of_values(&bad).expect("values");
    let mut values = vec![0f64; n];
    decode_values(&bad, &mut values).expect("values");
    let e = read_keys(&bad, &["shortName", "forecastMonth", "marsStep"]);
    if let Err(e) = e {
        assert!(assertion(&e), "{e}");
    }
}

/// A small deterministic generator (xorshift), so that a failure is
/// reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The sections of a message: (start, length field width, length).
fn sections(m: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    if m.get(7) == Some(&2) {
        let mut at = 16;
        while at + 5 <= m.len().saturating_sub(4) {
            let len = u32::from_be_bytes([m[at], m[at + 1], m[at + 2], m[at + 3]]) as usize;
            if len < 5 {
                break;
            }
            out.push((at, 4, len));
            at += len;
        }
    } else {
        let u24 = |at: usize| -> usize {
            m.get(at..at + 3).map_or(0, |b| {
                (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize
            })
        };
        let s1 = u24(8);
        out.push((8, 3, s1));
        let flags = m.get(15).copied().unwrap_or(0);
        let mut at = 8 + s1;
        for bit in [0x80, 0x40] {
            if flags & bit != 0 {
                let len = u24(at);
                out.push((at, 3, len));
                at += len;
            }
        }
        out.push((at, 3, u24(at)));
    }
    out
}

/// `m` with section `s` resized by `delta` bytes at its end (cut or grown
/// with `fill`), its length and the message's total length fixed up.
fn resize_section(m: &[u8], s: (usize, usize, usize), delta: isize, fill: u8) -> Option<Vec<u8>> {
    let (at, width, len) = s;
    let new_len = len.checked_add_signed(delta).filter(|l| *l > width + 1)?;
    let end = at.checked_add(len)?;
    if end > m.len() - 4 {
        return None;
    }
    let mut out = m[..at + new_len.min(len)].to_vec();
    out.resize(at + new_len, fill);
    out.extend_from_slice(&m[end..]);
    let be = (new_len as u64).to_be_bytes();
    out[at..at + width].copy_from_slice(&be[8 - width..]);
    let total = out.len() as u64;
    if m[7] == 2 {
        out[8..16].copy_from_slice(&total.to_be_bytes());
    } else {
        if total >= 1 << 23 {
            return None;
        }
        out[4..7].copy_from_slice(&total.to_be_bytes()[5..]);
    }
    Some(out)
}

/// Feed one damaged input through the archive path (split, MARS key) and,
/// with `decode`, also give ecCodes its messages to decode; count the
/// outcomes.
fn feed_with(input: &[u8], counts: &mut Counts, decode: bool) {
    counts.inputs += 1;
    // To find the input that killed a run: each is written here first.
    if let Some(path) = std::env::var_os("FIELDSTORE_GRIB_DAMAGE_LAST") {
        std::fs::write(path, input).expect("FIELDSTORE_GRIB_DAMAGE_LAST");
    }
    for f in fields(input) {
        match f {
            Ok(_) => counts.keys += 1,
            Err(e) if assertion(&e) => counts.assertions += 1,
            Err(_) => counts.errors += 1,
        }
    }
    if !decode {
        return;
    }
    // What ecCodes is given directly (a stored field read back): values,
    // keys, coordinates, also when framing would have refused it.
    let messages: Vec<&[u8]> = split_messages(input)
        .filter_map(Result::ok)
        .map(|m| m.bytes())
        .collect();
    let direct = if messages.is_empty() {
        vec![input]
    } else {
        messages
    };
    for m in direct {
        let outcome = number_of_values(m).and_then(|n| {
            if n > 2_000_000 {
                return Ok(());
            }
            let mut v = vec![0f32; n];
            decode_values(m, &mut v)
        });
        let outcome = outcome
            .and_then(|()| read_keys(m, &["shortName", "stepRange", "gridType", "forecastMonth"]))
            .and_then(|_| read_array(m, "distinctLatitudes"));
        match outcome {
            Ok(_) => counts.decoded += 1,
            Err(e) if assertion(&e) => counts.assertions += 1,
            Err(_) => counts.errors += 1,
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    inputs: u64,
    keys: u64,
    decoded: u64,
    errors: u64,
    assertions: u64,
}

/// Every damaged input of the campaign, fed with [`feed_with`].
fn campaign(decode: bool) -> Counts {
    let feed = |m: &[u8], counts: &mut Counts| feed_with(m, counts, decode);
    let seeds: Vec<Vec<u8>> = [
        ("grib", "rd-fc.grib"),
        ("grib", "synth11.grib"),
        ("grib", "levtypes.grib"),
        ("grib", "template.grib"),
        ("grib", "climatology.grib"),
        ("grib-missing", "complex-no-bitmap.grib"),
        ("grib-foreign", "kwbc-t.grib"),
        ("grib-assert", "msmm-bad-fcmonth.grib"),
    ]
    .iter()
    .flat_map(|(dir, name)| {
        let file = read(dir, name);
        split_messages(&file)
            .map(|m| m.expect("a fixture").bytes().to_vec())
            .collect::<Vec<_>>()
    })
    .chain(
        // One message of each GRIB2 packing in timespan.grib's first.
        split_messages(&read("grib", "timespan.grib"))
            .take(1)
            .map(|m| m.expect("a fixture").bytes().to_vec()),
    )
    .collect();
    let rounds: u64 = std::env::var("FIELDSTORE_GRIB_DAMAGE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut counts = Counts::default();
    for seed in &seeds {
        // Every section cut short or grown (lengths fixed up), and every
        // section length and the total length wrong.
        for s in sections(seed) {
            for delta in [-1isize, -4, -(s.2 as isize) / 2, 1, 7, 64] {
                for fill in [0x00, 0xff] {
                    if let Some(m) = resize_section(seed, s, delta, fill) {
                        feed(&m, &mut counts);
                    }
                }
            }
            for v in [0u8, 1, 0xff] {
                let mut m = seed.clone();
                m[s.0 + s.1 - 1] = v;
                feed(&m, &mut counts);
            }
        }
        for cut in [seed.len() / 2, seed.len() - 5, 20] {
            let mut m = seed[..cut].to_vec();
            m.extend_from_slice(b"7777");
            feed(&m, &mut counts);
        }
    }
    // Bits flipped: every byte of the headers (sections 0 to 4 carry what
    // ecCodes interprets), then random bytes anywhere.
    for seed in &seeds {
        let headers = sections(seed)
            .iter()
            .take(4)
            .map(|(at, _, len)| at + len)
            .max()
            .unwrap_or(64)
            .min(seed.len() - 4)
            .min(256);
        for i in 0..headers {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut m = seed.clone();
                m[i] ^= mask;
                feed(&m, &mut counts);
            }
        }
    }
    for round in 0..rounds {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (round + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
        for _ in 0..400 {
            let seed = &seeds[rng.below(seeds.len())];
            let mut m = seed.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(m.len());
                m[i] ^= 1 << rng.below(8);
            }
            feed(&m, &mut counts);
        }
    }
    counts
}

/// The archive path (what `fieldstore archive`, Python's `archive(data)`
/// and C's `fdb_archive_multiple` run): split, then each message's MARS
/// key.
#[test]
fn damaged_messages_made_by_eccodes_never_kill_the_archive_path() {
    let counts = campaign(false);
    eprintln!("damaged GRIB, archive path: {counts:?}");
    assert!(counts.inputs > 5_000, "{counts:?}");
    // The inputs reach ecCodes (not all refused by framing), and its
    // assertions (the msmm message's, a GRIB1 bitmap section's) are caught.
    assert!(counts.keys > 1_000 && counts.errors > 1_000, "{counts:?}");
    assert!(counts.assertions > 0, "{counts:?}");
}

/// Decoding damaged messages (values, keys, coordinates of a stored field
/// that was damaged when archived). Under valgrind this found ecCodes 2.50
/// reading past its own buffer in `DataApplyBitmap::unpack` (a GRIB1
/// bitmap section grown by a byte: more points present than coded values),
/// which `decode_values` now refuses before ecCodes decodes; the heap
/// damage had crashed a later call. Ignored: it takes minutes in a debug
/// build and has not yet been run clean to its end (`--ignored`).
#[test]
#[ignore = "slow (minutes); not yet run clean to its end: see docs/grib.md"]
fn damaged_messages_made_by_eccodes_never_kill_the_decode_path() {
    let counts = campaign(true);
    eprintln!("damaged GRIB, decode path: {counts:?}");
    assert!(counts.decoded > 1_000, "{counts:?}");
}
