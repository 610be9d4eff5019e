#!/usr/bin/env bash
# By hand, not in CI (it builds a second copy of the workspace): the
# version-1 DAOS and RADOS fixtures (crates/fieldstore-{daos,rados}/tests/
# fixtures/store-v1), made by converting version-2 stores (see their
# tests/format_fixtures.rs), are read by a build of the last commit that
# wrote version 1 (be36f9c^): it must list and retrieve them exactly, the
# wiped field absent, and refuse the version-2 fixtures naming version 2.
# The RADOS half starts a throwaway Ceph (scripts/setup-ceph.sh installs it)
# and loads the dumps with the `rados` tool, not with fieldstore's code.
# Usage: scripts/check-format-v1-fixtures.sh [cargo options, e.g. --offline]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/setup.sh
source scripts/setup-ceph.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
old=$(mktemp -d)
trap 'rm -rf "$old"' EXIT
git archive be36f9c^ | tar -x -C "$old"
cat >"$old/crates/fieldstore-daos/tests/v1_reads_fixture.rs" <<'RUST'
//! The version-1 fixture, read by a version-1 build.
mod common;
use std::path::Path;
use fieldstore::{FieldStore, Key, ListOptions, Request, Schema};
const SCHEMA: &str = "[ class, expver, stream, date, time [ type, levtype [ step, param ]]]";
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        let t = e.file_type().unwrap();
        if t.is_symlink() { std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &dest).unwrap(); }
        else if t.is_dir() { copy_dir(&e.path(), &dest); }
        else { std::fs::copy(e.path(), &dest).unwrap(); }
    }
}
#[test]
fn the_old_build_reads_the_v1_fixture_and_refuses_v2() {
    let root = tempfile::tempdir().unwrap();
    common::standin().configure_dir(root.path());
    let src = Path::new(&std::env::var("FIXTURES").unwrap()).to_path_buf();
    copy_dir(&src.join("store-v1/fixture-v1"), &root.path().join("fixture-v1"));
    copy_dir(&src.join("store-v2/fixture-v2"), &root.path().join("fixture-v2"));
    let fs = FieldStore::open(common::config("fixture-v1", Schema::parse("f", SCHEMA).unwrap())).unwrap();
    let listed = fs.list(&"class=od".parse().unwrap(), ListOptions::default()).unwrap();
    let mut n = 0;
    for e in &listed {
        let key = e.full_key();
        let got = fs.retrieve(&Request::from_key(&key)).unwrap().read_all().unwrap();
        let want = format!("field {key} version {}", if key.get("step") == Some("12") { 2 } else { 1 });
        assert_eq!(String::from_utf8_lossy(&got), want);
        n += 1;
    }
    assert_eq!(n, 6, "{listed:?}");
    let wiped: Key = "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc,step=0,param=130".parse().unwrap();
    assert!(fs.retrieve(&Request::from_key(&wiped)).unwrap().read_all().unwrap().is_empty());
    let fs2 = FieldStore::open(common::config("fixture-v2", Schema::parse("f", SCHEMA).unwrap())).unwrap();
    let e = fs2.list(&"class=od".parse().unwrap(), ListOptions::default()).unwrap_err();
    eprintln!("v2 in the old build: {e}");
    assert!(e.to_string().contains("version 2"), "{e}");
}
RUST
cat >"$old/crates/fieldstore-rados/tests/v1_reads_fixture.rs" <<'RUST'
//! The version-1 fixture, read by a version-1 build.
mod common;
use std::path::Path;
use fieldstore::{FieldStore, Key, ListOptions, Request, Schema};
const SCHEMA: &str = "[ class, expver, stream, date, time [ type, levtype [ step, param ]]]";
/// Load a dump with the rados CLI (independent of the new RawObjects).
fn load(cluster: &common::Cluster, dir: &Path) -> String {
    let ns = std::fs::read_to_string(dir.join("namespace")).unwrap().trim().to_string();
    for e in std::fs::read_dir(dir.join("objects")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        cluster.rados(&ns, &["put", &name, p.join("data").to_str().unwrap()]);
        if p.join("omap").exists() {
            for kv in std::fs::read_dir(p.join("omap")).unwrap() {
                let kv = kv.unwrap();
                cluster.rados(&ns, &["setomapval", &name, kv.file_name().to_str().unwrap(), "--input-file", kv.path().to_str().unwrap()]);
            }
        }
    }
    ns
}
fn open(cluster: &common::Cluster, ns: &str) -> FieldStore {
    let mut c = common::config(cluster, "rados", "rados", ns, None);
    c.schema = Schema::parse("f", SCHEMA).unwrap();
    FieldStore::open(c).unwrap()
}
#[test]
fn the_old_build_reads_the_v1_fixture_and_refuses_v2() {
    let cluster = common::cluster().expect("ceph");
    let src = Path::new(&std::env::var("FIXTURES").unwrap()).to_path_buf();
    let ns1 = load(cluster, &src.join("store-v1"));
    let ns2 = load(cluster, &src.join("store-v2"));
    let fs = open(cluster, &ns1);
    let listed = fs.list(&"class=od".parse().unwrap(), ListOptions::default()).unwrap();
    let mut n = 0;
    for e in &listed {
        let key = e.full_key();
        let got = fs.retrieve(&Request::from_key(&key)).unwrap().read_all().unwrap();
        let want = format!("field {key} version {}", if key.get("step") == Some("12") { 2 } else { 1 });
        assert_eq!(String::from_utf8_lossy(&got), want);
        n += 1;
    }
    assert_eq!(n, 6, "{listed:?}");
    let wiped: Key = "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc,step=0,param=130".parse().unwrap();
    assert!(fs.retrieve(&Request::from_key(&wiped)).unwrap().read_all().unwrap().is_empty());
    let fs2 = open(cluster, &ns2);
    let e = fs2.list(&"class=od".parse().unwrap(), ListOptions::default()).map(|l| l.len());
    eprintln!("v2 in the old build: {e:?}");
    assert!(format!("{e:?}").contains("version 2"), "{e:?}");
}
RUST
cd "$old"
FIXTURES="$repo/crates/fieldstore-daos/tests/fixtures" \
    cargo test "$@" -p fieldstore-daos --test v1_reads_fixture -- --nocapture
FIXTURES="$repo/crates/fieldstore-rados/tests/fixtures" CI=true \
    cargo test "$@" -p fieldstore-rados --test v1_reads_fixture -- --nocapture
