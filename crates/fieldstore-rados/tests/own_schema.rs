//! A RADOS dataset is read with the schema it was created under (stored in
//! its INIT record): the conformance check
//! `fieldstore_testkit::datasets_keep_their_schema`, with the schema read
//! from a file the test rewrites, as a user's config would. Skips without
//! Ceph, except under `CI=true`.

mod common;

use fieldstore::{Config, Error, FieldStore};

#[test]
fn a_rados_dataset_keeps_its_schema_when_the_schema_file_changes() {
    let Some(cluster) = common::cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let yaml = format!(
        "engine: rados\nstore: rados\nschema: schema.txt\n{}",
        cluster.section(&common::namespace("own_schema"))
    );
    fieldstore_testkit::datasets_keep_their_schema(&|text: &str| {
        std::fs::write(tmp.path().join("schema.txt"), text)
            .map_err(|e| Error::io("writing schema.txt".to_string(), e))?;
        FieldStore::open(Config::from_yaml(&yaml, tmp.path(), "test config")?)
    });
}
