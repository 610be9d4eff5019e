//! An S3 store and catalogue written by format version 1
//! (`docs/format/s3.md`), checked in under `tests/fixtures/s3-v1` (one file
//! per object, its key as its path), stays readable: every change to the
//! S3 catalogue, the engine or the store must still list and retrieve it
//! exactly (the content of every fixture: `fieldstore_testkit::fixture`).
//! The test loads the objects into bucket `fixture-v1` (locations
//! name their bucket) on the test's server. Regenerate it only with a new
//! format version, keeping the old one: `FIELDSTORE_WRITE_FIXTURE=1 cargo
//! test -p fieldstore-s3 --test format_v1 -- --ignored write_fixture`.

mod common;

use std::path::{Path, PathBuf};

use common::Raw;
use fieldstore::{Config, FieldStore};
use fieldstore_testkit::fixture;

const BUCKET: &str = "fixture-v1";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/s3-v1")
}

fn open() -> Option<FieldStore> {
    let s = common::server()?;
    let yaml = format!("engine: s3\nstore: s3\n{}", s.section(BUCKET, 30.0));
    let mut c = Config::from_yaml(&yaml, Path::new("/"), "fixture config").expect("a config");
    c.schema = fixture::schema();
    Some(FieldStore::open(c).expect("open"))
}

/// Every file under `dir`, as object keys (paths relative to `dir`).
fn files(dir: &Path, under: &Path, out: &mut Vec<(String, PathBuf)>) {
    for e in std::fs::read_dir(dir).expect("the fixture") {
        let path = e.expect("an entry").path();
        if path.is_dir() {
            files(&path, under, out);
        } else {
            let key = path.strip_prefix(under).expect("under the fixture");
            out.push((key.to_str().expect("UTF-8").to_string(), path));
        }
    }
}

#[test]
#[ignore = "writes the fixture; run by hand for a new format version"]
fn write_fixture() {
    if std::env::var_os("FIELDSTORE_WRITE_FIXTURE").is_none() {
        return;
    }
    let Some(fs) = open() else { return };
    fixture::write(&fs);
    drop(fs);
    let raw = Raw::new(BUCKET);
    let root = fixture();
    let _ = std::fs::remove_dir_all(&root);
    for key in raw.keys().into_iter().filter(|k| !k.contains("/lease/")) {
        let path = root.join(&key);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(&path, raw.get(&key)).expect("the object");
    }
}

#[test]
fn a_version_1_store_lists_and_retrieves_exactly() {
    if common::server().is_none() {
        return;
    }
    let raw = Raw::new(BUCKET);
    raw.create_bucket();
    for key in raw.keys() {
        raw.delete(&key);
    }
    let mut objects = Vec::new();
    files(&fixture(), &fixture(), &mut objects);
    assert!(objects.len() > 5, "the fixture's objects: {objects:?}");
    for (key, path) in &objects {
        raw.put(key, &std::fs::read(path).expect("the object"));
    }
    fixture::check_exactly(&open().expect("a server"), "the version-1 S3 fixture");
}

#[test]
fn its_log_records_carry_version_1() {
    let mut objects = Vec::new();
    files(&fixture(), &fixture(), &mut objects);
    let logs: Vec<_> = objects
        .iter()
        .filter(|(k, _)| k.contains("/log/"))
        .collect();
    assert!(!logs.is_empty(), "log objects in the fixture");
    for (key, path) in logs {
        let bytes = std::fs::read(path).expect("the object");
        assert_eq!(&bytes[..4], b"FSS3", "{key}: magic");
        assert_eq!(
            u16::from_le_bytes([bytes[4], bytes[5]]),
            1,
            "{key}: version"
        );
    }
}
