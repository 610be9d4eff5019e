//! Values read through jump info are bit-identical to ecCodes decoding the
//! whole field, on fields ecCodes wrote (simple and CCSDS packing, GRIB1
//! and GRIB2, with and without a bitmap, a decimal scale factor, constant
//! fields: `scripts/make_extract_fixtures.py`), and on the real fixtures.

use fieldstore_grib::jump::{ByteSource, JumpInfo, Packing};
use fieldstore_grib::{
    ccsds, decode_values, read_keys, split_messages, values_at, KeyValue, ReadCost,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/grib/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// ecCodes' values of the whole message (missing points NaN).
fn eccodes_values(message: &[u8]) -> Vec<f64> {
    let n = match &read_keys(message, &["numberOfPoints"]).unwrap()[0] {
        Some(KeyValue::Long(n)) => *n as usize,
        other => panic!("numberOfPoints: {other:?}"),
    };
    let mut out = vec![0f64; n];
    decode_values(message, &mut out).unwrap();
    out
}

fn jump_info(message: &[u8]) -> JumpInfo {
    let mut src = message;
    let mut info = JumpInfo::parse(&mut src).unwrap().unwrap();
    if matches!(info.packing, Packing::Ccsds { .. }) {
        let data = &message[info.data_offset as usize..][..info.data_length as usize];
        ccsds::index(&mut info, data).unwrap();
    }
    info
}

/// Every index, one at a time and all at once, against ecCodes; for a
/// field with a bitmap, with bitmap counts every 8, 64 and 4,096 points
/// too.
fn check_all(name: &str, message: &[u8]) -> JumpInfo {
    let info = jump_info(message);
    if info.bitmap_offset.is_some() {
        for every in [8, 64, 4096] {
            let mut counted = info.clone();
            counted.count_bitmap(&mut &message[..], every).unwrap();
            assert!(counted.bitmap_counts.is_some());
            check_all_with(&format!("{name} counts every {every}"), message, &counted);
        }
    }
    check_all_with(name, message, &info);
    info
}

fn check_all_with(name: &str, message: &[u8], info: &JumpInfo) {
    let want = eccodes_values(message);
    let info = info.clone();
    assert_eq!(info.points as usize, want.len(), "{name}: number of points");
    let all: Vec<u64> = (0..want.len() as u64).collect();
    let mut got = Vec::new();
    let mut cost = ReadCost::default();
    values_at(&info, &mut &message[..], &all, &mut got, &mut cost).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{name}: value {i}: {g} vs ecCodes {w}"
        );
    }
    // Scattered single points, in reverse order with repeats.
    let picks: Vec<u64> = (0..want.len() as u64)
        .rev()
        .step_by(37)
        .chain([0, 0])
        .collect();
    values_at(&info, &mut &message[..], &picks, &mut got, &mut cost).unwrap();
    for (p, g) in picks.iter().zip(&got) {
        assert_eq!(
            g.to_bits(),
            want[*p as usize].to_bits(),
            "{name}: value {p}"
        );
    }
}

#[test]
fn written_by_eccodes_bit_identical() {
    let cases = [
        ("simple-g1.grib", 1, false, false),
        ("simple-g1-bitmap.grib", 1, true, false),
        ("simple-g1-constant.grib", 1, false, false),
        ("simple-g2.grib", 2, false, false),
        ("simple-g2-bitmap.grib", 2, true, false),
        ("simple-g2-decimal.grib", 2, false, false),
        ("simple-g2-constant.grib", 2, false, false),
        ("ccsds-g2.grib", 2, false, true),
        ("ccsds-g2-bitmap.grib", 2, true, true),
        ("ccsds-g2-decimal.grib", 2, false, true),
        ("ccsds-g2-constant.grib", 2, false, true),
    ];
    for (name, edition, bitmap, ccsds) in cases {
        let m = fixture(&format!("extract/{name}"));
        let info = check_all(name, &m);
        assert_eq!(info.edition, edition, "{name}");
        assert_eq!(info.bitmap_offset.is_some(), bitmap, "{name}");
        assert_eq!(
            matches!(info.packing, Packing::Ccsds { .. }),
            ccsds,
            "{name}"
        );
        if bitmap {
            assert!(
                eccodes_values(&m).iter().any(|v| v.is_nan()),
                "{name} has missing points"
            );
        }
    }
    // The decimal-scale fixtures do scale (else they test nothing more).
    assert_ne!(
        jump_info(&fixture("extract/simple-g2-decimal.grib")).decimal_scale,
        0
    );
    assert_ne!(
        jump_info(&fixture("extract/ccsds-g2-decimal.grib")).decimal_scale,
        0
    );
    // The big CCSDS fields span several reference sample intervals.
    match jump_info(&fixture("extract/ccsds-g2.grib")).packing {
        Packing::Ccsds { rsi_offsets, .. } => assert!(rsi_offsets.len() > 3, "{rsi_offsets:?}"),
        Packing::Simple => unreachable!(),
    }
}

#[test]
fn real_fixtures_bit_identical_or_unsupported() {
    let mut checked = 0;
    for name in [
        "template.grib",
        "x138-300.grib",
        "levtypes.grib",
        "rd-fc.grib",
        "timespan.grib",
        "climatology.grib",
        "synth11.grib",
    ] {
        let bytes = fixture(name);
        for m in split_messages(&bytes) {
            let m = m.unwrap().bytes();
            let mut src = m;
            match JumpInfo::parse(&mut src).unwrap() {
                Ok(_) => {
                    check_all(name, m);
                    checked += 1;
                }
                Err(why) => eprintln!("{name}: falls back: {why}"),
            }
        }
    }
    assert!(checked >= 5, "only {checked} real messages had jump info");
}

#[test]
fn other_packings_are_unsupported_with_the_reason() {
    let m = fixture("extract/complex-g2.grib");
    let mut src = &m[..];
    let why = JumpInfo::parse(&mut src).unwrap().unwrap_err();
    assert!(why.0.contains("5.2"), "{why}");
}

#[test]
fn reads_only_what_holds_the_values() {
    let m = fixture("extract/ccsds-g2.grib");
    let info = jump_info(&m);
    let mut got = Vec::new();
    let mut cost = ReadCost::default();
    values_at(&info, &mut &m[..], &[12_345], &mut got, &mut cost).unwrap();
    assert_eq!(cost.reads, 1);
    assert!(cost.bytes < m.len() as u64 / 3, "{cost:?} of {}", m.len());
    let m = fixture("extract/simple-g2-bitmap.grib");
    let jump = jump_info(&m);
    // Point 4 is present: one byte of bitmap, the two bytes of its 11 bits.
    let mut cost = ReadCost::default();
    values_at(&jump, &mut &m[..], &[4], &mut got, &mut cost).unwrap();
    assert_eq!(cost, ReadCost { reads: 2, bytes: 3 });
    // Point 3 is missing: the bitmap says so, no data is read.
    let mut cost = ReadCost::default();
    values_at(&jump, &mut &m[..], &[3], &mut got, &mut cost).unwrap();
    assert!(got[0].is_nan());
    assert_eq!(cost, ReadCost { reads: 1, bytes: 1 });
}

/// With bitmap counts, a point far into the bitmap costs the bitmap bytes
/// from the count before it, not the bitmap from its start; the value is
/// ecCodes'.
#[test]
fn bitmap_counts_read_a_few_bytes() {
    let m = fixture("extract/ccsds-g2-bitmap.grib");
    let want = eccodes_values(&m);
    let mut info = jump_info(&m);
    let far = want.len() as u64 - 3;
    let mut got = Vec::new();
    let (mut plain, mut counted) = (ReadCost::default(), ReadCost::default());
    values_at(&info, &mut &m[..], &[far], &mut got, &mut plain).unwrap();
    info.count_bitmap(&mut &m[..], 64).unwrap();
    let mut again = Vec::new();
    values_at(&info, &mut &m[..], &[far], &mut again, &mut counted).unwrap();
    assert_eq!(got[0].to_bits(), want[far as usize].to_bits());
    assert_eq!(again[0].to_bits(), want[far as usize].to_bits());
    assert_eq!(plain.reads, counted.reads);
    // The bitmap: far / 8 + 1 bytes without counts, at most 64 / 8 with.
    let bitmap_plain = far / 8 + 1;
    assert_eq!(
        plain.bytes - counted.bytes,
        bitmap_plain - (far % 64) / 8 - 1
    );
    // Counts survive the entry's bytes.
    let decoded = JumpInfo::decode(&info.encode()).unwrap().unwrap();
    assert_eq!(decoded, info);
}

#[test]
fn an_index_out_of_range_is_named() {
    let m = fixture("extract/simple-g2.grib");
    let info = jump_info(&m);
    let e = values_at(
        &info,
        &mut &m[..],
        &[1000],
        &mut Vec::new(),
        &mut ReadCost::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("index 1000") && e.to_string().contains("1000 points"),
        "{e}"
    );
}

#[test]
fn a_truncated_message_is_an_error_not_a_panic() {
    let m = fixture("extract/simple-g2.grib");
    for cut in [20, 100, m.len() - 10] {
        let mut src = &m[..cut];
        assert!(JumpInfo::parse(&mut src).is_err(), "cut at {cut}");
    }
    let _ = ByteSource::size(&&m[..]);
}

/// The RSI offsets found by walking the block structure are libaec's own,
/// on every CCSDS fixture (8, 12, 16 and 24 bits, with and without a
/// bitmap).
#[test]
fn walked_rsi_offsets_are_libaecs() {
    for name in [
        "ccsds-g2.grib",
        "ccsds-g2-bitmap.grib",
        "ccsds-g2-decimal.grib",
    ] {
        let m = fixture(&format!("extract/{name}"));
        let mut src = &m[..];
        let parsed = JumpInfo::parse(&mut src).unwrap().unwrap();
        let data = &m[parsed.data_offset as usize..][..parsed.data_length as usize];
        let walked =
            ccsds::walk(&parsed, data).unwrap_or_else(|| panic!("{name}: the walk failed"));
        let mut decoded = parsed;
        ccsds::index_with_libaec(&mut decoded, data).unwrap();
        match decoded.packing {
            Packing::Ccsds { rsi_offsets, .. } => {
                assert_eq!(walked, rsi_offsets, "{name}");
                assert!(rsi_offsets.len() > 1, "{name}");
            }
            Packing::Simple => unreachable!(),
        }
    }
}

/// The walk against libaec, and their costs, on every message of the file
/// `FIELDSTORE_WALK_GRIB` names (the benchmark's million-point fields):
/// `FIELDSTORE_WALK_GRIB=f.grib cargo test --release -p fieldstore-grib --test extract -- --ignored walk_on`.
#[test]
#[ignore = "needs FIELDSTORE_WALK_GRIB"]
fn walk_on_a_file() {
    let bytes = std::fs::read(std::env::var("FIELDSTORE_WALK_GRIB").unwrap()).unwrap();
    let (mut walk_s, mut aec_s) = (0f64, 0f64);
    for m in split_messages(&bytes) {
        let m = m.unwrap().bytes();
        let mut src = m;
        let parsed = JumpInfo::parse(&mut src).unwrap().unwrap();
        let data = &m[parsed.data_offset as usize..][..parsed.data_length as usize];
        let t = std::time::Instant::now();
        let walked = ccsds::walk(&parsed, data).expect("the walk failed");
        walk_s += t.elapsed().as_secs_f64();
        let mut decoded = parsed;
        let t = std::time::Instant::now();
        ccsds::index_with_libaec(&mut decoded, data).unwrap();
        aec_s += t.elapsed().as_secs_f64();
        match decoded.packing {
            Packing::Ccsds { rsi_offsets, .. } => assert_eq!(walked, rsi_offsets),
            Packing::Simple => unreachable!(),
        }
    }
    eprintln!("walk {walk_s:.4} s, libaec {aec_s:.4} s");
}
