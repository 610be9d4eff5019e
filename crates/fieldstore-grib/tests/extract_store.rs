//! `fs.extract(request, selection)` on stores (memory, POSIX): values
//! bit-identical to ecCodes decoding the whole retrieved field, through the
//! jump info kept with the index entry, through jump info computed for a
//! field archived without it, and by decoding whole fields of packings
//! without jump info (counted); each selection form; bytes read a small
//! part of the fields; bad selections are errors naming what is wrong.

use fieldstore::{Config, FieldStore, Request, Schema};
use fieldstore_grib::jump::JumpInfo;
use fieldstore_grib::{
    decode_values, mars_key, read_array, ArchiveGrib, ExtractGrib, GribOptions, Method, Selection,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/grib/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every fixture of tests/fixtures/grib/extract, each given its own step so
/// that they are distinct fields; returns (message, request naming it).
fn messages() -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<String> = std::fs::read_dir(format!(
        "{}/../../tests/fixtures/grib/extract",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
    .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let m = fixture(&format!("extract/{n}"));
            (n, m)
        })
        .collect()
}

fn posix(dir: &std::path::Path) -> FieldStore {
    let yaml = format!(
        "type: local\nengine: toc\nstore: file\nspaces:\n  - handler: Default\n    roots:\n      - path: {}\n",
        dir.display()
    );
    std::fs::create_dir_all(dir).unwrap();
    FieldStore::open(Config::from_yaml(&yaml, dir, "test").unwrap()).unwrap()
}

/// The fixtures have no MARS labelling: these fill it in.
const LABELS: [(&str, &str); 4] = [
    ("class", "od"),
    ("expver", "0001"),
    ("stream", "oper"),
    ("type", "fc"),
];

fn options(with_info: bool) -> GribOptions {
    let mut o = GribOptions::default().jump_info(with_info);
    o.defaults = fieldstore::Key::from_pairs(LABELS).unwrap();
    o
}

fn full_key(m: &[u8]) -> fieldstore::Key {
    let mut key = mars_key(m).unwrap();
    for (k, v) in LABELS {
        if key.get(k).is_none() {
            key.set(k, v).unwrap();
        }
    }
    key
}

/// The fixtures share a key (they differ in grid and packing): each is
/// archived, extracted, then replaced by the next.
fn request_of(m: &[u8]) -> Request {
    let split = Schema::ecmwf().split(&full_key(m)).unwrap();
    Request::from_key(&split.full_key())
}

fn whole(m: &[u8]) -> Vec<f64> {
    let n = fieldstore_grib::number_of_values(m).unwrap();
    let mut v = vec![0f64; n];
    decode_values(m, &mut v).unwrap();
    v
}

fn check_store(fs: &FieldStore, with_info: bool) {
    for (name, m) in messages() {
        let fs_fresh = fs; // one field at a time: archive, extract, wipe by replacing
        fs_fresh.archive_grib_with(&m, options(with_info)).unwrap();
        fs_fresh.flush().unwrap();
        let want = whole(&m);
        let n = want.len() as u64;
        let req = request_of(&m);
        // Without jump info at archive, the first extraction computes it
        // and keeps it with the entry; the next ones find it there. The
        // previous fixture's (same key, replaced) never applies.
        let mut first = true;
        let picks: Vec<u64> = vec![n - 1, 0, n / 2, 7, 7];
        let lat = read_array(&m, "latitudes").unwrap();
        let lon = read_array(&m, "longitudes").unwrap();
        let selections = [
            (Selection::Indices(picks.clone()), picks.clone()),
            (
                Selection::Ranges(vec![(3, 9), (n - 4, n)]),
                (3..9).chain(n - 4..n).collect(),
            ),
            (
                Selection::Mask((0..n).map(|i| i % 97 == 5).collect()),
                (0..n).filter(|i| i % 97 == 5).collect(),
            ),
            (
                // Grid points themselves, and one nudged a little.
                Selection::Points(vec![
                    (lat[10], lon[10]),
                    (lat[n as usize - 1], lon[n as usize - 1]),
                    (lat[123] + 0.01, lon[123] - 0.01),
                ]),
                vec![10, n - 1, 123],
            ),
        ];
        for (sel, indices) in selections {
            let got = fs.extract(&req, &sel).unwrap();
            assert_eq!(got.fields.len(), 1, "{name}: fields");
            let f = &got.fields[0];
            assert_eq!(f.indices, indices, "{name}: {sel:?}");
            for (i, v) in f.indices.iter().zip(&f.values) {
                assert_eq!(
                    v.to_bits(),
                    want[*i as usize].to_bits(),
                    "{name} {sel:?}: value {i}"
                );
            }
            let has_info = JumpInfo::of_message(&m).is_some();
            let expected = match (has_info, with_info || !first) {
                (true, true) => Method::Stored,
                (true, false) => Method::Computed,
                (false, _) => Method::Decoded(String::new()),
            };
            if expected == Method::Computed {
                assert_eq!((got.computed, got.persisted), (1, 1), "{name}");
                assert_eq!(got.not_persisted, None, "{name}");
            } else {
                assert_eq!((got.computed, got.persisted), (0, 0), "{name}");
            }
            first = false;
            match (&f.method, &expected) {
                (Method::Decoded(why), Method::Decoded(_)) => {
                    assert!(why.contains("5.2"), "{name}: {why}");
                    assert_eq!(got.decoded, 1);
                }
                (a, b) => assert_eq!(a, b, "{name}"),
            }
            if f.method == Method::Stored
                && m.len() > 10_000
                && !matches!(sel, Selection::Mask(_) | Selection::Points(_))
            {
                assert!(
                    got.read.bytes < got.field_bytes,
                    "{name} {sel:?}: read {:?} of {} bytes",
                    got.read,
                    got.field_bytes
                );
            }
        }
    }
}

#[test]
fn memory_store_with_and_without_stored_jump_info() {
    check_store(
        &FieldStore::open(Config::memory(Schema::ecmwf())).unwrap(),
        true,
    );
    check_store(
        &FieldStore::open(Config::memory(Schema::ecmwf())).unwrap(),
        false,
    );
}

#[test]
fn posix_store_with_and_without_stored_jump_info() {
    let dir = std::env::temp_dir().join(format!("fs-extract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    check_store(&posix(&dir.join("a")), true);
    check_store(&posix(&dir.join("b")), false);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `persist(false)`: every extraction computes the jump info, nothing is
/// written.
#[test]
fn without_persisting_every_extraction_computes() {
    let fs = FieldStore::open(Config::memory(Schema::ecmwf())).unwrap();
    let m = fixture("extract/ccsds-g2-bitmap.grib");
    fs.archive_grib_with(&m, options(false)).unwrap();
    fs.flush().unwrap();
    let sel = Selection::Indices(vec![5, 15_000]);
    let opts = fieldstore_grib::ExtractOptions::default().persist(false);
    for _ in 0..2 {
        let got = fs.extract_with(&request_of(&m), &sel, opts).unwrap();
        assert_eq!((got.computed, got.persisted), (1, 0));
        assert_eq!(got.fields[0].method, Method::Computed);
    }
    let got = fs.extract(&request_of(&m), &sel).unwrap();
    assert_eq!((got.computed, got.persisted), (1, 1));
    let got = fs.extract(&request_of(&m), &sel).unwrap();
    assert_eq!(got.fields[0].method, Method::Stored);
    // Kept: CCSDS offsets and bitmap counts (the two points' bitmap bytes
    // are within 4 KiB: one read), so one read of bitmap and one per RSI.
    let loc = fs.location(&full_key(&m)).unwrap().unwrap();
    let info = JumpInfo::decode(loc.extension.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert!(info.bitmap_counts.is_some());
    assert_eq!(got.read.reads, 3, "{:?}", got.read);
    assert!(got.read.bytes < m.len() as u64, "{:?}", got.read);
}

/// `indices(false)`: the same values, no indices given back; a range past
/// the field's points is still its error.
#[test]
fn without_indices_the_values_are_the_same() {
    let fs = FieldStore::open(Config::memory(Schema::ecmwf())).unwrap();
    let m = fixture("extract/ccsds-g2-bitmap.grib");
    fs.archive_grib_with(&m, options(false)).unwrap();
    fs.flush().unwrap();
    let sel = Selection::Ranges(vec![(0, 10), (15_000, 15_100)]);
    let with = fs.extract(&request_of(&m), &sel).unwrap();
    let opts = fieldstore_grib::ExtractOptions::default().indices(false);
    let without = fs.extract_with(&request_of(&m), &sel, opts).unwrap();
    assert_eq!(with.fields[0].indices.len(), 110);
    assert!(without.fields[0].indices.is_empty());
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&with.fields[0].values),
        bits(&without.fields[0].values)
    );
    let past = Selection::Ranges(vec![(0, 10), (u64::MAX - 1, u64::MAX)]);
    let err = fs.extract_with(&request_of(&m), &past, opts).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

#[test]
fn many_fields_in_request_order() {
    let fs = FieldStore::open(Config::memory(Schema::ecmwf())).unwrap();
    let m = fixture("extract/ccsds-g2-bitmap.grib");
    // The same field under 40 steps, archived in reverse step order so
    // that file order and request order differ.
    let key = full_key(&m);
    let mut fields = Vec::new();
    for step in (0..40).rev() {
        let mut k = key.clone();
        k.set("step", step.to_string()).unwrap();
        fs.archive(&k, &m).unwrap();
        fields.push(k);
    }
    fs.flush().unwrap();
    // No jump info kept by plain `archive`: computed for each field.
    let mut base = key.clone();
    base.remove("step");
    let steps: Vec<String> = (0..40).map(|s| s.to_string()).collect();
    let req: Request = format!("{base},step={}", steps.join("/")).parse().unwrap();
    let want = whole(&m);
    let got = fs
        .extract(&req, &Selection::Indices(vec![5000, 1]))
        .unwrap();
    assert_eq!(got.fields.len(), 40);
    assert_eq!(got.computed, 40);
    let got_steps: Vec<String> = got
        .fields
        .iter()
        .map(|f| f.key.get("step").unwrap().to_string())
        .collect();
    assert_eq!(got_steps, steps);
    for f in &got.fields {
        assert_eq!(f.values[0].to_bits(), want[5000].to_bits());
        assert_eq!(f.values[1].to_bits(), want[1].to_bits());
    }
}

/// Steps, levels and dates given out of numeric and text order, as lists
/// and ranges, on POSIX: the fields come in the order the request gives its
/// values (as `retrieve` answers), not in the order keys sort as text.
#[test]
fn fields_come_in_the_order_the_request_gives() {
    let dir = std::env::temp_dir().join(format!("fs-extract-order-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let fs = posix(&dir);
    let m = fixture("extract/ccsds-g2-bitmap.grib");
    let key = full_key(&m);
    for date in ["20240101", "20240102"] {
        for step in (0..=36).step_by(6) {
            let mut k = key.clone();
            k.set("date", date).unwrap();
            k.set("step", step.to_string()).unwrap();
            fs.archive(&k, &m).unwrap();
        }
    }
    fs.flush().unwrap();
    let mut base = key.clone();
    for kw in ["step", "date"] {
        base.remove(kw);
    }
    let order = |rest: &str| -> Vec<(String, String)> {
        let req: Request = format!("{base},{rest}").parse().unwrap();
        fs.extract(&req, &Selection::Indices(vec![1]))
            .unwrap()
            .fields
            .iter()
            .map(|f| {
                (
                    f.key.get("date").unwrap().to_string(),
                    f.key.get("step").unwrap().to_string(),
                )
            })
            .collect()
    };
    let pairs = |dates: &[&str], steps: &[u32]| -> Vec<(String, String)> {
        dates
            .iter()
            .flat_map(|d| steps.iter().map(move |s| (d.to_string(), s.to_string())))
            .collect()
    };
    assert_eq!(
        order("date=20240101,step=18/6/12"),
        pairs(&["20240101"], &[18, 6, 12])
    );
    assert_eq!(
        order("date=20240101,step=6/to/36/by/6"),
        pairs(&["20240101"], &[6, 12, 18, 24, 30, 36])
    );
    assert_eq!(
        order("date=20240102/20240101,step=36/to/0/by/12"),
        pairs(&["20240102", "20240101"], &[36, 24, 12, 0])
    );
    // A keyword left out orders nothing; the others still do.
    let got = order("date=20240102/20240101,step=all");
    let dates: Vec<&str> = got.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(dates[..7], ["20240102"; 7]);
    assert_eq!(dates[7..], ["20240101"; 7]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_selections_name_what_is_wrong() {
    let fs = FieldStore::open(Config::memory(Schema::ecmwf())).unwrap();
    let m = fixture("extract/simple-g2.grib");
    fs.archive_grib_with(&m, options(true)).unwrap();
    fs.flush().unwrap();
    let req = request_of(&m);
    let err = |s: Selection| fs.extract(&req, &s).unwrap_err().to_string();
    assert!(err(Selection::Indices(vec![1000]))
        .contains("index 1000 is out of range: the field has 1000 points"));
    assert!(err(Selection::Ranges(vec![(5, 2)])).contains("range 5..2 ends before it starts"));
    assert!(err(Selection::Ranges(vec![(990, 1001)])).contains("out of range"));
    assert!(err(Selection::Mask(vec![true; 3]))
        .contains("a mask of 3 flags for a field of 1000 points"));
    assert!(err(Selection::Points(vec![(91.0, 0.0)])).contains("latitude must be within -90..90"));
    // Nothing stored was harmed.
    assert_eq!(
        fs.extract(&req, &Selection::Indices(vec![0]))
            .unwrap()
            .fields
            .len(),
        1
    );
}
