//! Every GRIB fixture against what ecCodes and FDB5 gave for it
//! (`tests/fixtures/oracle/ecmwf-splits.tsv`, recorded with ecCodes 2.50):
//! message boundaries, the MARS key in ecCodes' order, and FDB5's split.

use std::collections::BTreeMap;
use std::path::PathBuf;

use fieldstore_core::{Key, Schema};
use fieldstore_grib::{eccodes_version, fields, split_messages};

const SPLITS: &str = include_str!("../../../tests/fixtures/oracle/ecmwf-splits.tsv");

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/grib")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

struct Row {
    file: String,
    index: usize,
    mars: String,
    fdb5: String,
}

fn rows() -> Vec<Row> {
    SPLITS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 4, "bad fixture row: {l}");
            Row {
                file: cols[0].to_string(),
                index: cols[1].parse().expect("index"),
                mars: cols[2].to_string(),
                fdb5: cols[3].to_string(),
            }
        })
        .collect()
}

/// ecCodes releases before 2.50 (Debian bookworm ships 2.28) do not put
/// `timespan` into the `mars` namespace of GRIB2 fields (everything else is
/// the same, order included). What those versions give instead, and what
/// FDB5's schema then makes of it (`timespan` is optional: it is empty). See
/// `docs/grib.md` ("Which ecCodes").
const OLD_ECCODES: &[(&str, usize, &str, &str)] = &[
    ("timespan.grib", 0, "domain=g,date=20161230,time=1800,expver=5659,class=e6,type=fc,stream=oper,step=6,levtype=sfc,param=167", "{class=e6,expver=5659,stream=oper,date=20161230,domain=g}{type=fc,levtype=sfc}{time=1800,step=6,param=167}"),
    ("timespan.grib", 1, "domain=g,date=20161230,time=1800,expver=5659,class=e6,type=fc,stream=oper,step=12,levtype=sfc,param=167", "{class=e6,expver=5659,stream=oper,date=20161230,domain=g}{type=fc,levtype=sfc}{time=1800,step=12,param=167}"),
    ("timespan.grib", 2, "domain=g,date=20161230,time=1800,expver=5659,class=e6,type=fc,stream=oper,step=18,levtype=sfc,param=167", "{class=e6,expver=5659,stream=oper,date=20161230,domain=g}{type=fc,levtype=sfc}{time=1800,step=18,param=167}"),
    ("timespan.grib", 3, "domain=g,date=20161230,time=1800,expver=5659,class=e6,type=fc,stream=oper,levtype=sfc,step=6,param=228143", "{class=e6,expver=5659,stream=oper,date=20161230,domain=g}{type=fc,levtype=sfc}{time=1800,step=6,param=228143}"),
    ("timespan.grib", 4, "domain=g,date=20161230,time=1800,expver=5659,class=e6,type=fc,stream=oper,levtype=sfc,step=12,param=228143", "{class=e6,expver=5659,stream=oper,date=20161230,domain=g}{type=fc,levtype=sfc}{time=1800,step=12,param=228143}"),
    ("timespan.grib", 5, "domain=g,date=20161230,time=1800,expver=5659,class=e6,type=fc,stream=oper,levtype=sfc,step=18,param=228143", "{class=e6,expver=5659,stream=oper,date=20161230,domain=g}{type=fc,levtype=sfc}{time=1800,step=18,param=228143}"),
];

/// `major * 10000 + minor * 100 + patch`.
fn version_number() -> u32 {
    let v = eccodes_version();
    let parts: Vec<u32> = v.split('.').map(|p| p.parse().expect("version")).collect();
    parts[0] * 10000 + parts[1] * 100 + parts[2]
}

/// What this ecCodes should give for `row`: the oracle's key and split, or,
/// for ecCodes before 2.50, the recorded older behaviour where it differs.
fn expected(row: &Row) -> (String, String) {
    if version_number() < 2_50_00 {
        if let Some((_, _, mars, fdb5)) = OLD_ECCODES
            .iter()
            .find(|(f, i, ..)| *f == row.file && *i == row.index)
        {
            return (mars.to_string(), fdb5.to_string());
        }
    }
    (row.mars.clone(), row.fdb5.clone())
}

#[test]
fn keys_and_splits_agree_with_eccodes_and_fdb5() {
    let schema = Schema::ecmwf();
    let mut by_file: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in rows() {
        by_file.entry(row.file.clone()).or_default().push(row);
    }
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for (file, rows) in &by_file {
        let bytes = fixture(file);
        let got: Vec<_> = fields(&bytes)
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(got.len(), rows.len(), "{file}: number of messages");
        for (row, field) in rows.iter().zip(&got) {
            assert_eq!(field.index, row.index);
            let (want_mars, want_fdb5) = expected(row);
            let mars = field.key.to_string();
            let split = schema
                .split(&field.key)
                .map(|s| s.braced())
                .unwrap_or_else(|e| format!("ERROR: {e}"));
            if mars != want_mars || split != want_fdb5 {
                mismatches.push(format!(
                    "{file}:{}\n  mars want {want_mars}\n       got  {mars}\n  fdb5 want {want_fdb5}\n       got  {split}",
                    row.index
                ));
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 14);
    assert!(
        mismatches.is_empty(),
        "ecCodes {}: {} mismatches:\n{}",
        eccodes_version(),
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// `scripts/test-with-eccodes-wheel.sh` swaps the library at run time; make
/// sure the swap happened.
#[test]
fn runs_the_expected_eccodes() {
    if let Ok(want) = std::env::var("FIELDSTORE_GRIB_EXPECT_ECCODES") {
        assert_eq!(eccodes_version(), want);
    }
}

#[test]
fn old_eccodes_table_only_covers_real_differences() {
    // Every recorded older behaviour differs from the oracle (else drop it).
    let rows = rows();
    for (file, index, mars, _) in OLD_ECCODES {
        let row = rows
            .iter()
            .find(|r| r.file == *file && r.index == *index)
            .expect("row exists");
        assert_ne!(row.mars, *mars, "{file}:{index}");
    }
}

/// Message boundaries: `(offset, length)` per file, as ecCodes'
/// `offset`/`totalLength` give them (NUL padding after GRIB1 messages is not
/// part of a message).
#[test]
fn boundaries_are_byte_exact() {
    let want: &[(&str, &[(usize, usize)])] = &[
        ("climatology.grib", &[(0, 178_296), (178_296, 178_296)]),
        ("levtypes.grib", &[(0, 1476), (1560, 1476)]),
        ("rd-fc.grib", &[(0, 1476)]),
        ("synth11.grib", &[(0, 660)]),
        ("template.grib", &[(0, 10_732)]),
        (
            "timespan.grib",
            &[
                (0, 1800),
                (1800, 1800),
                (3600, 1800),
                (5400, 1824),
                (7224, 1824),
                (9048, 1824),
            ],
        ),
        ("x138-300.grib", &[(0, 3_280_398)]),
    ];
    for (file, bounds) in want {
        let bytes = fixture(file);
        let got: Vec<(usize, usize)> = split_messages(&bytes)
            .map(|m| m.map(|m| (m.offset(), m.bytes().len())))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(&got, bounds, "{file}");
        for m in split_messages(&bytes) {
            let m = m.expect("splits");
            assert_eq!(m.bytes(), &bytes[m.offset()..m.offset() + m.bytes().len()]);
            assert!(m.bytes().starts_with(b"GRIB") && m.bytes().ends_with(b"7777"));
            let edition = if *file == "timespan.grib" { 2 } else { 1 };
            assert_eq!(m.edition(), edition, "{file}");
        }
    }
}

#[test]
fn concatenated_files_split_into_all_their_messages() {
    let names = [
        "timespan.grib",
        "levtypes.grib",
        "synth11.grib",
        "climatology.grib",
        "template.grib",
        "rd-fc.grib",
    ];
    let mut all = Vec::new();
    let mut want: Vec<Key> = Vec::new();
    for name in names {
        let bytes = fixture(name);
        for f in fields(&bytes) {
            want.push(f.expect("fixture").key);
        }
        all.extend_from_slice(&bytes);
    }
    let got: Vec<Key> = fields(&all)
        .map(|f| f.expect("concatenation").key)
        .collect();
    assert_eq!(got.len(), 6 + 2 + 1 + 2 + 1 + 1);
    assert_eq!(got, want);
}

#[test]
fn keys_are_the_same_from_every_thread() {
    let bytes = fixture("timespan.grib");
    let want: Vec<Key> = fields(&bytes).map(|f| f.expect("ok").key).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..25 {
                        let got: Vec<Key> = fields(&bytes).map(|f| f.expect("ok").key).collect();
                        assert_eq!(got, want);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
    });
}
