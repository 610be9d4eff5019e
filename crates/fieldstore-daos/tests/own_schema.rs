//! A DAOS dataset is read with the schema it was created under (stored in
//! its dataset KV's `meta`): the conformance check
//! `fieldstore_testkit::datasets_keep_their_schema`, over the libdaos
//! stand-in.

mod common;

use fieldstore::{FieldStore, Schema};

#[test]
fn a_daos_dataset_keeps_its_schema_when_the_schema_changes() {
    let pool = common::standin().fresh_pool("own_schema");
    fieldstore_testkit::datasets_keep_their_schema(&|text: &str| {
        let schema = Schema::parse("schema", text)?;
        FieldStore::open(common::config(&pool, schema))
    });
}
