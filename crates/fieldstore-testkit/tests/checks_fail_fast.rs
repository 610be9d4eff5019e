//! The threaded conformance checks fail, never hang, when one of their
//! handles cannot be opened: each opens its handles before its threads
//! meet at a barrier (a thread that failed to open one used to leave the
//! others waiting there for ever: seen once on S3 in CI).

use std::sync::atomic::{AtomicUsize, Ordering};

use fieldstore_testkit::support::{memory_factory, schema};
use fieldstore_testkit::Open;

/// Run `check` with a handle factory whose second handle fails to open;
/// the check must panic (and return, rather than wait).
fn fails_when_a_handle_does_not_open(name: &str, check: fn(Open<'_>)) {
    let factory = memory_factory(schema());
    let opened = AtomicUsize::new(0);
    let open = || {
        if opened.fetch_add(1, Ordering::SeqCst) == 1 {
            Err(fieldstore::Error::internal(
                "a handle that does not open (injected)",
            ))
        } else {
            factory()
        }
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&open)));
    assert!(
        outcome.is_err(),
        "{name} passed though one of its handles did not open"
    );
}

#[test]
fn concurrent_writers_fails_fast() {
    fails_when_a_handle_does_not_open("concurrent_writers", fieldstore_testkit::concurrent_writers);
}

#[test]
fn readers_during_writes_fails_fast() {
    fails_when_a_handle_does_not_open(
        "readers_during_writes",
        fieldstore_testkit::readers_during_writes,
    );
}

#[test]
fn replace_under_concurrent_reads_fails_fast() {
    fails_when_a_handle_does_not_open(
        "replace_under_concurrent_reads",
        fieldstore_testkit::replace_under_concurrent_reads,
    );
}
