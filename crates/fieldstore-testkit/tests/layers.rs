//! The layer order of the core, the front crate's and every backend
//! crate's modules, as each `lib.rs` documents it (`fieldstore_testkit::layers`).

use std::path::Path;

fn crate_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

#[test]
fn core_keeps_its_layers() {
    fieldstore_testkit::layers::check(&crate_dir("fieldstore-core"));
}

#[test]
fn rados_keeps_its_layers() {
    fieldstore_testkit::layers::check(&crate_dir("fieldstore-rados"));
}

#[test]
fn daos_keeps_its_layers() {
    fieldstore_testkit::layers::check(&crate_dir("fieldstore-daos"));
}

#[test]
fn the_front_crate_keeps_its_layers() {
    fieldstore_testkit::layers::check(&crate_dir("fieldstore"));
}

#[test]
fn the_c_boundary_keeps_its_layers() {
    fieldstore_testkit::layers::check(&crate_dir("fieldstore-cabi"));
}
