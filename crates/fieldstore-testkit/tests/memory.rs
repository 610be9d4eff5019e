//! The conformance suite on the in-memory reference backend.

use fieldstore_testkit::{run_all, support, Capabilities, Open};

fn with_memory(check: &dyn Fn(Open<'_>)) {
    check(&support::memory_factory(support::schema()));
}

fieldstore_testkit::conformance_tests!(with_memory);

/// Every check on one shared backend, one after the other: checks keep to
/// their own datasets and are not disturbed by each other's.
#[test]
fn run_all_on_one_backend() {
    let open = support::memory_factory(support::schema());
    run_all(&open, &Capabilities::default());
}

/// A dataset keeps the schema it was created under when the configured
/// schema changes (handles with either schema share one backend).
#[test]
fn datasets_keep_their_schema() {
    let backend = fieldstore::backends::memory::MemoryBackend::new();
    fieldstore_testkit::datasets_keep_their_schema(&|text: &str| {
        let schema = fieldstore::Schema::parse("schema", text)?;
        Ok(fieldstore::FieldStore::with_backends(
            fieldstore::Config::memory(schema),
            std::sync::Arc::new(backend.catalogue()),
            std::sync::Arc::new(backend.store()),
        ))
    });
}
