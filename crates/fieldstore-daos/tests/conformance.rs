//! The conformance suite on the DAOS catalogue and store, over the
//! stand-in's in-memory pools (each check on a fresh pool), plus the
//! damage check and the mixed pairs (DAOS catalogue with the POSIX file
//! store, POSIX catalogue with the DAOS store).

mod common;

use fieldstore::{Engine, FieldStore, StoreKind};
use fieldstore_testkit::{damaged_field_detected, run_all, support, Capabilities, Open};

fn with_daos(check: &dyn Fn(Open<'_>)) {
    check(&common::factory("conf"));
}

fieldstore_testkit::conformance_tests!(with_daos);

#[test]
fn damaged_field_is_detected() {
    with_daos(&|open| damaged_field_detected(open, &common::corrupt));
}

fn mixed_pair(engine: Engine, store: StoreKind) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pool = common::standin().fresh_pool("mixed");
    let root = dir.path().to_path_buf();
    let open = move || {
        FieldStore::open(common::mixed(
            &pool,
            &root,
            support::schema(),
            engine,
            store,
        ))
    };
    run_all(&open, &Capabilities::default());
}

#[test]
fn daos_catalogue_with_file_store() {
    mixed_pair(Engine::Daos, StoreKind::File);
}

#[test]
fn toc_catalogue_with_daos_store() {
    mixed_pair(Engine::Toc, StoreKind::Daos);
}
