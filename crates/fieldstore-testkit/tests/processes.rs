//! Clauses 7 and 8 with real processes on the POSIX backend:
//!
//! - four writer processes × 2,000 fields into one dataset while two reader
//!   processes poll list and retrieve: every flushed field is found with
//!   its bytes, none is ever partial, none lost;
//! - a writer killed with SIGKILL at random instants, 60 times into one
//!   dataset: nothing partial or corrupt is ever visible, and everything
//!   the writer reported flushed stays readable;
//! - purge reclaims the data files of writers killed before they flushed,
//!   and keeps a live writer's unflushed one.
//!
//! The scenarios, the worker binary (`src/bin/worker.rs`) and the rules a
//! reader checks are shared with the DAOS and RADOS backends
//! (`fieldstore_testkit::processes`, `fieldstore_testkit::streams`).

use std::time::Duration;

use fieldstore_testkit::processes::{self, Launcher};
use fieldstore_testkit::streams::Streams;

const WORKER: &str = env!("CARGO_BIN_EXE_fieldstore-testkit-worker");

/// A POSIX store on a fresh root (`dir/root`), its config in `dir`.
fn posix(dir: &tempfile::TempDir) -> Launcher {
    let root = dir.path().join("root");
    std::fs::create_dir(&root).expect("the root");
    Launcher::new(
        WORKER,
        processes::write_config(
            dir.path().join("config.yaml"),
            &processes::posix_yaml(&root),
        ),
    )
}

#[test]
fn four_writer_processes_two_reader_processes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let s = Streams {
        expver: "prc1".into(),
        writers: 4,
        fields: 2000,
        flush_every: 50,
        min_len: 28,
        max_len: 1024,
    };
    let launcher = posix(&dir);
    processes::writers_and_readers(&launcher, &launcher, &s, 2);
}

#[test]
fn writers_killed_at_random_instants_lose_nothing_flushed() {
    const TRIALS: usize = 60;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let s = Streams {
        expver: "kil1".into(),
        writers: TRIALS + 1,
        fields: 100,
        flush_every: 10,
        min_len: 28,
        max_len: 2048,
    };
    processes::writers_killed_at_random_instants(
        &posix(&dir),
        &s,
        TRIALS,
        Duration::from_micros(1500),
    );
}

/// The orphan clause: killed writers' files go, a live writer's stays.
#[test]
fn purge_reclaims_only_what_killed_writers_left() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    processes::purge_reclaims_only_what_killed_writers_left(
        &posix(&dir),
        &orphans("orp1"),
        Duration::ZERO,
    );
}

/// An archive lock another process sets stops this process's writer, also
/// after this process read the lock's record.
#[test]
fn a_lock_from_another_process_stops_a_writer_that_reads() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    processes::a_lock_from_another_process_stops_a_writer_that_reads(&posix(&dir));
}

/// The workload of the orphan clause: writer 0 flushed, 1 and 2 killed, 3
/// live; fields of their own units on every backend (RADOS gives a field
/// of 512 KiB or more an object of its own).
pub fn orphans(expver: &str) -> Streams {
    Streams {
        expver: expver.into(),
        writers: 4,
        fields: 3,
        flush_every: 3,
        min_len: 600 << 10,
        max_len: 700 << 10,
    }
}

/// The harness's time limit: a worker that would run for a minute (a
/// reader waiting for a field nobody writes) fails the test at the limit
/// its launcher sets, and is killed.
#[test]
fn a_hung_worker_fails_the_test_at_its_time_limit() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let launcher = posix(&dir).timeout(Duration::from_secs(1));
    let s = Streams {
        expver: "hng1".into(),
        writers: 1,
        fields: 1,
        flush_every: 1,
        min_len: 28,
        max_len: 28,
    };
    let mut flags = processes::streams_args(&s);
    flags.push(("until-fields", "1".into()));
    flags.push(("timeout-secs", "60".into()));
    let reader = launcher.spawn("the reader", "read", &flags);
    let start = std::time::Instant::now();
    let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.finish()))
        .expect_err("finish returns only once the worker exits");
    let message = failure
        .downcast_ref::<String>()
        .expect("a panic with a message");
    assert!(
        message.starts_with("the reader did not finish within its time limit of 1s: killed it"),
        "{message}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "the time limit took {:?}",
        start.elapsed()
    );
}

/// The workload of the watch scenarios: four writers, a flush per step of
/// ten levels.
fn watched(expver: &str) -> Streams {
    Streams {
        expver: expver.into(),
        writers: 4,
        fields: 200,
        flush_every: 10,
        min_len: 28,
        max_len: 2048,
    }
}

#[test]
fn four_watchers_see_each_flushed_field_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    processes::watchers_see_exactly_what_is_flushed(&posix(&dir), &watched("wch1"), false);
}

#[test]
fn watchers_see_exactly_what_writers_killed_mid_step_flushed() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    processes::watchers_see_exactly_what_is_flushed(&posix(&dir), &watched("wch2"), true);
}
