//! RADOS stores written by format versions 2 and 1 (`docs/format/rados.md`),
//! checked in under `tests/fixtures/store-v2` and `tests/fixtures/store-v1`,
//! stay readable: every change to the RADOS catalogue, its store or the
//! engine must still list and retrieve them exactly. Skips without Ceph,
//! except under `CI=true`.
//!
//! A fixture is a dump of one namespace of the pool `fieldstore` (the test
//! cluster's, `scripts/ceph-start.sh`): `namespace` names it (field
//! locations name the pool and namespace, `rados://fieldstore/<namespace>/…`,
//! so a dump is loaded into a namespace of that name), and
//! `objects/<object name>/` holds each object: `data`, its bytes, and
//! `omap/<key>`, one file per omap pair holding the value (no `omap/` for
//! an object without one). The test loads a dump into this test binary's
//! throwaway cluster through the crate's own librados bindings
//! ([`RawObjects::create`]: data and omap in one operation per object),
//! then opens it as a store.
//!
//! The version-1 store is not the output of a version-1 build: it was
//! written by this version (2) and converted — the header of every framed
//! record (the records of each log segment's data, the index blocks in the
//! segments' omaps; nothing else is framed) rewritten to version 1, its
//! record type mapped back to RADOS's own numbering of version 1
//! ([`V1_KINDS`]) and the header's CRC recomputed. That is faithful: the
//! renumbering (commit be36f9c) changed only the header's version and type
//! numbers, not a payload, and the payload changes since (entry flag bits
//! 1 and 2: extensions, annotations) appear only in entries that have them,
//! which the fixture's do not.
//!
//! Checked against a build of be36f9c^, the last to write version 1: it
//! lists and retrieves the version-1 fixture exactly and refuses the
//! version-2 one naming version 2 (`scripts/check-format-v1-fixtures.sh`,
//! by hand: it builds that commit).
//!
//! Regenerate them only with a new format version, keeping the old ones:
//! `FIELDSTORE_WRITE_FIXTURE=1 cargo test -p fieldstore-rados --test
//! format_fixtures -- --ignored write_fixtures` (alone: it writes the
//! namespaces the other tests load).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fieldstore::{FieldStore, ListOptions};
use fieldstore_rados::{RadosConfig, RawObjects};
use fieldstore_testkit::fixture;

/// The record header's magic.
const MAGIC: &[u8; 4] = b"FSRR";

/// The pool the test cluster creates, which the fixtures' locations name.
const POOL: &str = "fieldstore";

/// Version 1's record types, as numbered before the shared numbering
/// (`crates/fieldstore-rados/src/format.rs` at be36f9c^): (its number,
/// today's number). Kept here, not taken from the crate, so that the
/// fixture's conversion does not depend on the reader it tests.
const V1_KINDS: &[(u16, u16)] = &[
    (1, 1),   // INIT
    (2, 2),   // FLUSH
    (3, 6),   // SEAL
    (4, 3),   // WIPE
    (5, 4),   // RECLAIM
    (6, 5),   // CONTROL
    (7, 7),   // WIPED
    (10, 10), // BLOCK
];

fn fixture(version: u16) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/store-v{version}"))
}

fn open(cluster: &common::Cluster, namespace: &str) -> FieldStore {
    let mut c = common::config(cluster, "rados", "rados", namespace, None);
    c.schema = fixture::schema();
    FieldStore::open(c).unwrap()
}

fn raw(cluster: &common::Cluster, namespace: &str) -> RawObjects {
    let mut c = RadosConfig::new(cluster.pool.clone());
    c.conf = Some(cluster.conf.clone());
    c.namespace = namespace.to_string();
    c.timeout_secs = 60;
    RawObjects::open(&c).unwrap()
}

/// One object of a dump: name, data, omap pairs (in key order).
type Object = (String, Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>);

/// The objects of a dump, by name.
fn read_dump(dir: &Path) -> Vec<Object> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("objects")).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let data = std::fs::read(path.join("data")).unwrap();
        let mut omap = Vec::new();
        if path.join("omap").exists() {
            for kv in std::fs::read_dir(path.join("omap")).unwrap() {
                let kv = kv.unwrap();
                let key = kv.file_name().to_str().unwrap().as_bytes().to_vec();
                omap.push((key, std::fs::read(kv.path()).unwrap()));
            }
        }
        omap.sort();
        out.push((name, data, omap));
    }
    out.sort();
    out
}

fn write_dump(dir: &Path, namespace: &str, objects: &[Object]) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::write(dir.join("namespace"), format!("{namespace}\n")).unwrap();
    for (name, data, omap) in objects {
        assert!(
            !name.contains('/') && !name.starts_with('.'),
            "object {name:?} cannot be a directory's name"
        );
        let d = dir.join("objects").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("data"), data).unwrap();
        if !omap.is_empty() {
            std::fs::create_dir_all(d.join("omap")).unwrap();
        }
        for (k, v) in omap {
            let k = std::str::from_utf8(k).unwrap();
            assert!(
                !k.contains('/') && !k.starts_with('.') && !k.is_empty(),
                "omap key {k:?} of {name} cannot be a file's name"
            );
            std::fs::write(d.join("omap").join(k), v).unwrap();
        }
    }
}

/// The namespace a dump must be loaded into.
fn dump_namespace(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("namespace"))
        .unwrap()
        .trim()
        .to_string()
}

/// Every object of `namespace`, with its data and omap.
fn dump(cluster: &common::Cluster, namespace: &str) -> Vec<Object> {
    let objects = raw(cluster, namespace);
    objects
        .list()
        .unwrap()
        .into_iter()
        .map(|name| {
            let data = objects.read_all(&name).unwrap();
            let omap = objects.omap(&name).unwrap();
            (name, data, omap)
        })
        .collect()
}

/// Create `objects` in `namespace` (which must not hold them yet).
fn load_objects(cluster: &common::Cluster, namespace: &str, objects: &[Object]) {
    let raw = raw(cluster, namespace);
    for (name, data, omap) in objects {
        let pairs: Vec<(&[u8], &[u8])> = omap
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
        raw.create(name, data, &pairs).unwrap();
    }
}

/// Whether an object is a segment of a dataset's log (`<dataset
/// name>.catalogue`, `<dataset name>.catalogue.<k>`), whose data and omap
/// values (except `!` keys) are framed records.
fn is_segment(name: &str) -> bool {
    name.ends_with(".catalogue")
        || name.rsplit_once('.').is_some_and(|(head, k)| {
            head.ends_with(".catalogue") && !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit())
        })
}

/// The header of the record at the start of `buf`: (version, type, the
/// record's length); the magic, the header's CRC and the payload's CRC
/// must check.
fn header(buf: &[u8]) -> (u16, u16, usize) {
    assert!(buf.len() >= 20 && &buf[..4] == MAGIC, "not a record");
    let le32 = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().unwrap());
    assert_eq!(crc32c::crc32c(&buf[..16]), le32(16), "header CRC");
    let len = le32(8) as usize;
    assert_eq!(crc32c::crc32c(&buf[20..20 + len]), le32(12), "payload CRC");
    (
        u16::from_le_bytes([buf[4], buf[5]]),
        u16::from_le_bytes([buf[6], buf[7]]),
        20 + len,
    )
}

/// Each framed record of a dump's objects, in log order per segment then
/// its index blocks: (object, omap key or "" for the log, version, type,
/// where it starts in the data or value).
fn records(objects: &[Object]) -> Vec<(String, String, u16, u16, usize)> {
    let mut out = Vec::new();
    for (name, data, omap) in objects.iter().filter(|o| is_segment(&o.0)) {
        let mut at = 0;
        while at < data.len() {
            let (v, kind, len) = header(&data[at..]);
            out.push((name.clone(), String::new(), v, kind, at));
            at += len;
        }
        for (k, value) in omap.iter().filter(|(k, _)| !k.starts_with(b"!")) {
            let (v, kind, len) = header(value);
            assert_eq!(len, value.len(), "{name} omap {k:?}: one record");
            let k = String::from_utf8(k.clone()).unwrap();
            out.push((name.clone(), k, v, kind, 0));
        }
    }
    out
}

/// Rewrite every record's header by `f` (version, type) -> (version,
/// type), the header CRC recomputed.
fn rewrite_headers(objects: &mut [Object], f: &dyn Fn(u16, u16) -> (u16, u16)) -> usize {
    let found = records(objects);
    for (name, key, v, kind, at) in &found {
        let (_, data, omap) = objects.iter_mut().find(|o| &o.0 == name).unwrap();
        let buf = if key.is_empty() {
            &mut data[*at..]
        } else {
            &mut omap
                .iter_mut()
                .find(|(k, _)| k == key.as_bytes())
                .unwrap()
                .1[..]
        };
        let (v, kind) = f(*v, *kind);
        fixture::set_header(buf, v, kind);
    }
    found.len()
}

/// The standard fields, written as the POSIX fixture's are, into
/// `namespace`.
fn write_store(cluster: &common::Cluster, namespace: &str) {
    let fs = open(cluster, namespace);
    fieldstore_testkit::fixture::write(&fs);
}

/// Write both fixtures: a version-2 store, and a version-2 store converted
/// to version 1 (see the file's doc).
#[test]
#[ignore = "writes the fixtures; run by hand, alone, for a new format version"]
fn write_fixtures() {
    if std::env::var_os("FIELDSTORE_WRITE_FIXTURE").is_none() {
        return;
    }
    let cluster = common::cluster().expect("Ceph, to write the fixtures");
    assert_eq!(cluster.pool, POOL);
    for version in [2, 1] {
        let namespace = format!("fixture-v{version}");
        write_store(cluster, &namespace);
        let mut objects = dump(cluster, &namespace);
        if version == 1 {
            let n = rewrite_headers(&mut objects, &|v, kind| {
                fixture::as_version_1(V1_KINDS, v, kind)
            });
            assert!(n >= 6, "{n} records converted");
        }
        write_dump(&fixture(version), &namespace, &objects);
        assert_eq!(read_dump(&fixture(version)), objects, "the dump reads back");
    }
}

/// The fixture of `version`, loaded (once) into this binary's cluster.
fn load(cluster: &common::Cluster, version: u16) -> FieldStore {
    static LOADED: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let dir = fixture(version);
    let namespace = dump_namespace(&dir);
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if !loaded.contains(&version) {
        assert_eq!(cluster.pool, POOL, "the pool the fixture's locations name");
        load_objects(cluster, &namespace, &read_dump(&dir));
        loaded.push(version);
    }
    open(cluster, &namespace)
}

fn lists_and_retrieves_exactly(version: u16) {
    let Some(cluster) = common::cluster() else {
        return;
    };
    let fs = load(cluster, version);
    fixture::check_exactly(&fs, &format!("the version-{version} fixture"));
}

#[test]
fn a_version_2_store_lists_and_retrieves_exactly() {
    lists_and_retrieves_exactly(2);
}

#[test]
fn a_version_1_store_lists_and_retrieves_exactly() {
    lists_and_retrieves_exactly(1);
}

/// The log's record types, in order, and the index blocks' (all one
/// type), of a fixture; every record of the fixture's version.
fn kinds(version: u16) -> (Vec<u16>, Vec<u16>) {
    let (mut log, mut blocks) = (Vec::new(), Vec::new());
    for (object, key, v, kind, _) in records(&read_dump(&fixture(version))) {
        assert_eq!(v, version, "the version of {object} {key:?}");
        if key.is_empty() {
            log.push(kind);
        } else {
            blocks.push(kind);
        }
    }
    (log, blocks)
}

/// Needs no cluster: the dumps' bytes.
#[test]
fn the_fixtures_records_carry_their_version_and_numbering() {
    // INIT, three FLUSHes, WIPE (no RECLAIM: the wiped field shares its
    // writer's data object with fields that stay); one block per flush.
    assert_eq!(
        kinds(2),
        (vec![1, 2, 2, 2, 3], vec![10, 10, 10]),
        "version 2"
    );
    assert_eq!(
        kinds(1),
        (vec![1, 2, 2, 2, 4], vec![10, 10, 10]),
        "version 1"
    );
    assert_eq!(dump_namespace(&fixture(2)), "fixture-v2");
    assert_eq!(dump_namespace(&fixture(1)), "fixture-v1");
}

/// A store of a later version is refused by name, not misread.
#[test]
fn a_later_version_is_refused_naming_it() {
    let Some(cluster) = common::cluster() else {
        return;
    };
    let mut objects = read_dump(&fixture(2));
    rewrite_headers(&mut objects, &|_, kind| (3, kind));
    let namespace = common::namespace("fixture-v2-as-v3");
    load_objects(cluster, &namespace, &objects);
    let fs = open(cluster, &namespace);
    let text = match fs.list(&"class=od".parse().unwrap(), ListOptions::default()) {
        Err(e) => e.to_string(),
        Ok(listed) => panic!("listed {} fields of version 3", listed.len()),
    };
    assert!(text.contains("version 3"), "{text}");
}
