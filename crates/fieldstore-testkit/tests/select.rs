//! The conformance suite through `type: select`: two POSIX sub-stores, one
//! taking the datasets whose `expver` ends in an odd digit, the other
//! every other dataset (the checks each use their own `expver`, so the
//! datasets of the suite spread over both). Every clause of the contract
//! must hold through the routing as it holds on one store.

use std::path::Path;

use fieldstore::{Config, FieldStore};
use fieldstore_testkit::support::schema;
use fieldstore_testkit::Open;

fn with_select(check: &dyn Fn(Open<'_>)) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    in_select(dir.path(), check);
}

/// Run `check` on a select config of two POSIX sub-stores under `base`.
fn in_select(base: &Path, check: &dyn Fn(Open<'_>)) {
    let base = base.to_path_buf();
    for d in ["odd", "rest"] {
        std::fs::create_dir_all(base.join(d)).expect("a sub-store's root");
    }
    std::fs::write(base.join("schema"), schema().text()).expect("the schema file");
    let yaml = "type: select\n\
                schema: schema\n\
                fdbs:\n\
                - select: expver=[13579]$\n  spaces: [{roots: [{path: odd}]}]\n\
                - select: ''\n  spaces: [{roots: [{path: rest}]}]\n";
    let open = move || FieldStore::open(Config::from_yaml(yaml, &base, "select test config")?);
    check(&open);
}

fieldstore_testkit::conformance_tests!(with_select);

/// The whole suite on one select config, after which both sub-stores hold
/// datasets: the routing was exercised, not one lane alone.
#[test]
fn run_all_spreads_over_both_sub_stores() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    in_select(dir.path(), &|open| {
        fieldstore_testkit::run_all(open, &fieldstore_testkit::Capabilities::default());
    });
    for lane in ["odd", "rest"] {
        let datasets = std::fs::read_dir(dir.path().join(lane))
            .expect("a sub-store's root")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))
            })
            .count();
        assert!(
            datasets > 0,
            "no dataset was routed to the '{lane}' sub-store"
        );
    }
}
