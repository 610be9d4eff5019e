//! DAOS stores written by format versions 2 and 1 (`docs/format/daos.md`),
//! checked in under `tests/fixtures/store-v2` and `tests/fixtures/store-v1`,
//! stay readable: every change to the DAOS catalogue, its store or the
//! engine must still list and retrieve them exactly.
//!
//! A fixture is the libdaos stand-in's directory of one pool
//! (`crates/daos-standin`, its `Directory` backend): the pool `fixture-v2`
//! (or `fixture-v1`) as a directory holding its containers, one directory
//! per KV (a file per key: key length, key, value) and one file per byte
//! array. Container labels are relative symbolic links; nothing in it names
//! an absolute path or the writing process, except the writer ids and lease
//! keys inside the values (`<host>.<pid>.<start ns>.<n>`), which are data.
//! Field locations name the pool (`daos://fixture-v2/...`), so a fixture
//! is read under its own pool label.
//!
//! The version-1 store is not the output of a version-1 build: it was
//! written by this version (2) and converted, value by value — every framed
//! value's header rewritten to version 1, its record type mapped back to
//! DAOS's own numbering of version 1 ([`V1_KINDS`]) and the header's CRC
//! recomputed. That is faithful: the renumbering (commit be36f9c) changed
//! only the header's version and type numbers, not a payload, and the
//! payload changes since (entry flag bits 1 and 2: extensions,
//! annotations) appear only in entries that have them, which the fixture's
//! do not.
//!
//! Checked against a build of be36f9c^, the last to write version 1: it
//! lists and retrieves the version-1 fixture exactly and refuses the
//! version-2 one naming version 2 (`scripts/check-format-v1-fixtures.sh`,
//! by hand: it builds that commit).
//!
//! Regenerate them only with a new format version, keeping the old ones:
//! `FIELDSTORE_WRITE_FIXTURE=1 cargo test -p fieldstore-daos --test
//! format_fixtures -- --ignored write_fixtures`.
//!
//! The stand-in's directory must be configured before libdaos is
//! initialised, once per process: hence this test binary of its own.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use fieldstore::{FieldStore, ListOptions};
use fieldstore_testkit::fixture;

/// The record header's magic.
const MAGIC: &[u8; 4] = b"FSD1";

/// Version 1's record types, as numbered before the shared numbering
/// (`crates/fieldstore-daos/src/format.rs` at be36f9c^): (its number,
/// today's number). Kept here, not taken from the crate, so that the
/// fixture's conversion does not depend on the reader it tests.
const V1_KINDS: &[(u16, u16)] = &[
    (1, 1), // META (INIT)
    (2, 2), // FLUSH
    (3, 8), // INDIRECT
    (4, 9), // DATASET
    (5, 3), // WIPE
    (6, 4), // RECLAIM
    (7, 5), // CONTROL
];

fn fixture(version: u16) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/store-v{version}"))
}

/// The pool a fixture holds (its directory's name in the stand-in root).
fn pool(version: u16) -> String {
    format!("fixture-v{version}")
}

/// The stand-in's root for this process: a temporary directory, configured
/// before anything initialises libdaos.
fn root() -> &'static Path {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        common::standin().configure_dir(dir.path());
        dir
    })
    .path()
}

fn open(pool: &str) -> FieldStore {
    FieldStore::open(common::config(pool, fixture::schema())).unwrap()
}

/// Copy a directory tree, symbolic links as links (the pool's labels).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        let dest = to.join(&name);
        let t = e.file_type().unwrap();
        if t.is_symlink() {
            let target = std::fs::read_link(e.path()).unwrap();
            std::os::unix::fs::symlink(target, &dest).unwrap();
        } else if t.is_dir() {
            copy_dir(&e.path(), &dest);
        } else if !name.to_string_lossy().starts_with(".tmp.") {
            // (A stand-in put in progress: a lease renewal.)
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The fixture of `version`, copied into this process's stand-in root
/// (once) under its pool label.
fn load(version: u16) -> FieldStore {
    static LOADED: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if !loaded.contains(&version) {
        let p = pool(version);
        copy_dir(&fixture(version).join(&p), &root().join(&p));
        loaded.push(version);
    }
    open(&pool(version))
}

/// The standard fields, written as the POSIX fixture's are, into `pool`
/// (a new pool of the stand-in root).
fn write_store(pool: &str) {
    let _ = root();
    common::standin().pool_create(pool);
    let fs = open(pool);
    fieldstore_testkit::fixture::write(&fs);
}

/// Every KV value file of a pool directory (`conts/<uuid>/obj/<oid>/<key
/// file>`): its path.
fn kv_files(pool_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for cont in std::fs::read_dir(pool_dir.join("conts")).unwrap() {
        let objs = cont.unwrap().path().join("obj");
        for obj in std::fs::read_dir(&objs).unwrap() {
            let obj = obj.unwrap().path();
            if obj.is_dir() {
                for kv in std::fs::read_dir(&obj).unwrap() {
                    out.push(kv.unwrap().path());
                }
            }
        }
    }
    out.sort();
    out
}

/// A KV value file's key and value (the stand-in's layout: `u32` LE key
/// length, the key, the value).
fn split_kv(bytes: &[u8]) -> (&[u8], &[u8]) {
    let klen = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    (&bytes[4..4 + klen], &bytes[4 + klen..])
}

/// The header of a framed value (version, record type), if the value is
/// one: the magic and the header's CRC-32C check.
fn header(value: &[u8]) -> Option<(u16, u16)> {
    if value.len() < 20 || &value[..4] != MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(value[16..20].try_into().unwrap());
    (crc32c::crc32c(&value[..16]) == crc).then(|| {
        (
            u16::from_le_bytes([value[4], value[5]]),
            u16::from_le_bytes([value[6], value[7]]),
        )
    })
}

/// Rewrite the header of every framed value in the KVs of `pool_dir` by
/// `f` (version, type) -> (version, type), the header CRC recomputed.
/// Returns how many were rewritten.
fn rewrite_headers(pool_dir: &Path, f: &dyn Fn(u16, u16) -> (u16, u16)) -> usize {
    let mut n = 0;
    for path in kv_files(pool_dir) {
        let mut bytes = std::fs::read(&path).unwrap();
        let (key, value) = split_kv(&bytes);
        let at = 4 + key.len();
        let Some((version, kind)) = header(value) else {
            continue;
        };
        let (version, kind) = f(version, kind);
        fixture::set_header(&mut bytes[at..], version, kind);
        std::fs::write(&path, &bytes).unwrap();
        n += 1;
    }
    n
}

/// Every framed value of a pool directory: (key, version, record type).
fn headers(pool_dir: &Path) -> Vec<(String, u16, u16)> {
    kv_files(pool_dir)
        .iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).unwrap();
            let (key, value) = split_kv(&bytes);
            header(value).map(|(v, k)| (String::from_utf8_lossy(key).into_owned(), v, k))
        })
        .collect()
}

/// Write both fixtures: a version-2 store, and a version-2 store converted
/// to version 1 (see the file's doc).
#[test]
#[ignore = "writes the fixtures; run by hand for a new format version"]
fn write_fixtures() {
    if std::env::var_os("FIELDSTORE_WRITE_FIXTURE").is_none() {
        return;
    }
    for version in [2, 1] {
        let p = pool(version);
        write_store(&p);
        let written = root().join(&p);
        if version == 1 {
            let n = rewrite_headers(&written, &|v, kind| {
                fixture::as_version_1(V1_KINDS, v, kind)
            });
            assert!(n >= 6, "{n} values converted");
        }
        let dest = fixture(version);
        let _ = std::fs::remove_dir_all(&dest);
        copy_dir(&written, &dest.join(&p));
        // Git keeps no empty directories: a fixture must not need one.
        let mut stack = vec![dest.clone()];
        while let Some(d) = stack.pop() {
            let mut entries = std::fs::read_dir(&d).unwrap().peekable();
            assert!(
                entries.peek().is_some() || d.ends_with("labels"),
                "empty directory {}",
                d.display()
            );
            for e in entries {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                }
            }
        }
    }
}

fn lists_and_retrieves_exactly(version: u16) {
    fixture::check_exactly(&load(version), &format!("the version-{version} fixture"));
}

#[test]
fn a_version_2_store_lists_and_retrieves_exactly() {
    lists_and_retrieves_exactly(2);
}

#[test]
fn a_version_1_store_lists_and_retrieves_exactly() {
    lists_and_retrieves_exactly(1);
}

/// The records' types in the fixtures, by KV key: the root KV's DATASET,
/// `meta`, and the log's FLUSH (three), WIPE and RECLAIM.
fn kinds_by_key(version: u16) -> Vec<(String, u16)> {
    let mut h: Vec<(String, u16)> = headers(&fixture(version).join(pool(version)))
        .into_iter()
        .map(|(key, v, kind)| {
            assert_eq!(v, version, "the version of {key}");
            (key, kind)
        })
        .collect();
    h.sort();
    h
}

#[test]
fn the_fixtures_values_carry_their_version_and_numbering() {
    let dataset = "class=od,expver=0001,stream=oper,date=20231201,time=1200".to_string();
    let expect = |dataset_kind, init, flush, wipe, reclaim| {
        vec![
            (dataset.clone(), dataset_kind),
            ("f.0".to_string(), flush),
            ("f.1".to_string(), flush),
            ("f.2".to_string(), flush),
            ("f.3".to_string(), wipe),
            ("f.4".to_string(), reclaim),
            ("meta".to_string(), init),
        ]
    };
    assert_eq!(kinds_by_key(2), expect(9, 1, 2, 3, 4), "version 2");
    assert_eq!(kinds_by_key(1), expect(4, 1, 2, 5, 6), "version 1");
}

/// A store of a later version is refused by name, not misread.
#[test]
fn a_later_version_is_refused_naming_it() {
    let later = "fixture-v2-as-v3";
    let dir = root().join(later);
    copy_dir(&fixture(2).join(pool(2)), &dir);
    rewrite_headers(&dir, &|_, kind| (3, kind));
    let fs = open(later);
    let text = match fs.list(&"class=od".parse().unwrap(), ListOptions::default()) {
        Err(e) => e.to_string(),
        Ok(listed) => panic!("listed {} fields of version 3", listed.len()),
    };
    assert!(text.contains("version 3"), "{text}");
}
