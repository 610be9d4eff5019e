//! An S3 store and catalogue written by format version 1
//! (`docs/format/s3.md`), checked in under `tests/fixtures/s3-v1` (one file
//! per object, its key as its path), stays readable: every change to the
//! S3 catalogue, the engine or the store must still list and retrieve it
//! exactly. The test loads the objects into bucket `fixture-v1` (locations
//! name their bucket) on the test's server. Regenerate it only with a new
//! format version, keeping the old one: `FIELDSTORE_WRITE_FIXTURE=1 cargo
//! test -p fieldstore-s3 --test format_v1 -- --ignored write_fixture`.

mod common;

use std::path::{Path, PathBuf};

use common::Raw;
use fieldstore::{Config, FieldStore, Key, ListOptions, Request};

const SCHEMA: &str = "[ class, expver, stream, date, time [ type, levtype [ step, param ]]]";
const BUCKET: &str = "fixture-v1";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/s3-v1")
}

/// The fields of the fixture, as the POSIX one's: three steps of two
/// params, the last step archived twice (the second flush replaces it).
fn fields() -> Vec<(Key, Vec<u8>)> {
    let mut out = Vec::new();
    for step in [0, 6, 12] {
        for param in [130, 167] {
            let key: Key = format!(
                "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,step={step},param={param}"
            )
            .parse()
            .expect("a key");
            let version = if step == 12 { 2 } else { 1 };
            let data = format!("field {key} version {version}").into_bytes();
            out.push((key, data));
        }
    }
    out
}

/// A collocation archived, then wiped.
fn wiped() -> Key {
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc,step=0,param=130"
        .parse()
        .expect("a key")
}

fn open() -> Option<FieldStore> {
    let s = common::server()?;
    let yaml = format!("engine: s3\nstore: s3\n{}", s.section(BUCKET, 30.0));
    let mut c = Config::from_yaml(&yaml, Path::new("/"), "fixture config").expect("a config");
    c.schema = fieldstore::Schema::parse("fixture", SCHEMA).expect("the schema");
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
    for (key, data) in fields() {
        let first = String::from_utf8(data)
            .expect("text")
            .replace("version 2", "version 1");
        fs.archive(&key, first.as_bytes()).expect("archive");
    }
    fs.flush().expect("flush");
    for (key, data) in fields()
        .into_iter()
        .filter(|(k, _)| k.get("step") == Some("12"))
    {
        fs.archive(&key, &data).expect("archive");
    }
    fs.flush().expect("flush");
    fs.archive(&wiped(), b"wiped").expect("archive");
    fs.flush().expect("flush");
    let request: Request =
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc"
            .parse()
            .expect("a request");
    let options = fieldstore::WipeOptions {
        doit: true,
        ..Default::default()
    };
    fs.wipe(&request, options).expect("wipe");
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
    let fs = open().expect("a server");
    let listed = fs
        .list(
            &"class=od".parse().expect("a request"),
            ListOptions::default(),
        )
        .expect("list");
    let want = fields();
    assert_eq!(listed.len(), want.len(), "{listed:?}");
    for (key, data) in &want {
        let got = fs
            .retrieve(&Request::from_key(key))
            .and_then(|r| r.read_all())
            .expect("retrieve");
        assert_eq!(got, *data, "{key}");
    }
    let gone = fs
        .retrieve(&Request::from_key(&wiped()))
        .and_then(|r| r.read_all())
        .expect("retrieve");
    assert!(gone.is_empty(), "the wiped field");
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
