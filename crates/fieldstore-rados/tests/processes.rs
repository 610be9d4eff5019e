//! Clauses 7 and 8 with real processes on a real Ceph cluster (RADOS
//! catalogue and store):
//!
//! - four writer processes × 1,000 fields into one dataset while two reader
//!   processes poll list and retrieve: every flushed field is found with its
//!   bytes, none is ever partial, none lost (with 16 KiB log segments, so
//!   the writers also race to seal and continue the log);
//! - a writer killed with SIGKILL at random instants, 25 times into one
//!   dataset: nothing partial or corrupt is ever visible, and everything the
//!   writer reported flushed stays readable;
//! - purge reclaims the objects of writers killed before they flushed (once
//!   their 12 s lease passed without an answer), and keeps a live writer's
//!   unflushed ones.
//!
//! The scenarios and the worker are the testkit's
//! (`fieldstore_testkit::processes`), shared with POSIX and DAOS. This
//! binary is its own worker (`harness = false`): started as
//! `processes worker …`, it runs one writer or reader instead of the
//! tests, on the store its config file names. What stays here is the
//! cluster: started once for this binary (`common::cluster`), one RADOS
//! namespace per test.

mod common;

use std::process::ExitCode;
use std::time::Duration;

use fieldstore_testkit::processes::{self, Launcher, Outcome};
use fieldstore_testkit::streams::Streams;

/// Workers on a fresh namespace of this binary's cluster, with 16 KiB log
/// segments (the writer processes race to seal and continue the dataset's
/// log many times), and the directory of their config file; `None`
/// without Ceph.
fn setup(name: &str) -> Option<(Launcher, tempfile::TempDir)> {
    let cluster = common::cluster()?;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let yaml = format!(
        "engine: rados\nstore: rados\n{}  log_segment_size: 16384\n  writer_lease: 12\n",
        cluster.section(&common::namespace(name))
    );
    let config = processes::write_config(dir.path().join("config.yaml"), &yaml);
    Some((Launcher::this_executable(config), dir))
}

const NO_CEPH: &str = "no Ceph";

fn four_writer_processes_two_reader_processes() -> Outcome {
    let Some((launcher, _dir)) = setup("four_writer_processes_two_reader_processes") else {
        return Outcome::Skipped(NO_CEPH.into());
    };
    let s = Streams {
        expver: "prc1".into(),
        writers: 4,
        fields: 1000,
        flush_every: 10,
        min_len: 28,
        max_len: 1024,
    };
    processes::writers_and_readers(&launcher, &launcher, &s, 2);
    Outcome::Passed
}

fn writers_killed_at_random_instants_lose_nothing_flushed() -> Outcome {
    const TRIALS: usize = 25;
    let Some((launcher, _dir)) = setup("writers_killed_at_random_instants_lose_nothing_flushed")
    else {
        return Outcome::Skipped(NO_CEPH.into());
    };
    let s = Streams {
        expver: "kil1".into(),
        writers: TRIALS + 1,
        fields: 100,
        flush_every: 5,
        min_len: 28,
        max_len: 2048,
    };
    processes::writers_killed_at_random_instants(
        &launcher,
        &s,
        TRIALS,
        Duration::from_micros(3000),
    );
    Outcome::Passed
}

/// Four watcher processes while four writers flush per step, then killed
/// mid-step: each watcher reports exactly what is flushed, once.
fn watchers_see_exactly_what_writers_flush() -> Outcome {
    let Some((launcher, _dir)) = setup("watchers_see_exactly_what_writers_flush") else {
        return Outcome::Skipped(NO_CEPH.into());
    };
    for (expver, kill) in [("wch1", false), ("wch2", true)] {
        let s = Streams {
            expver: expver.into(),
            writers: 4,
            fields: 100,
            flush_every: 10,
            min_len: 28,
            max_len: 2048,
        };
        processes::watchers_see_exactly_what_is_flushed(&launcher, &s, kill);
    }
    Outcome::Passed
}

/// The orphan clause: killed writers' objects go, a live writer's stay.
fn purge_reclaims_only_what_killed_writers_left() -> Outcome {
    let Some((launcher, _dir)) = setup("purge_reclaims_only_what_killed_writers_left") else {
        return Outcome::Skipped(NO_CEPH.into());
    };
    let s = Streams {
        expver: "orp1".into(),
        writers: 4,
        fields: 3,
        flush_every: 3,
        min_len: 600 << 10,
        max_len: 700 << 10,
    };
    // The purge itself waits up to a lease for a killed writer's answer.
    processes::purge_reclaims_only_what_killed_writers_left(&launcher, &s, Duration::ZERO);
    Outcome::Passed
}

/// Issue 38's first row: a writer stopped (SIGSTOP) past its lease
/// between its store flush and its catalogue flush while `purge --doit`
/// removes its objects must not acknowledge its flush.
fn writer_paused_across_its_commit_while_purge_runs() -> Outcome {
    let Some((launcher, _dir)) = setup("writer_paused_across_its_commit_while_purge_runs") else {
        return Outcome::Skipped(NO_CEPH.into());
    };
    let s = Streams {
        expver: "pau1".into(),
        writers: 2,
        fields: 4,
        flush_every: 4,
        min_len: 600 << 10,
        max_len: 700 << 10,
    };
    // Stopped a lease (12 s) before the purge, which then waits another
    // lease for its answer: the OSD has dropped its watch by then.
    processes::writer_paused_across_its_commit_while_purge_runs(
        &launcher,
        &s,
        Duration::from_secs(12),
    );
    Outcome::Passed
}

/// An archive lock another process sets stops this process's writer, also
/// after this process read the lock's record.
fn a_lock_from_another_process_stops_a_writer_that_reads() -> Outcome {
    let Some((launcher, _dir)) = setup("a_lock_from_another_process_stops_a_writer_that_reads")
    else {
        return Outcome::Skipped(NO_CEPH.into());
    };
    processes::a_lock_from_another_process_stops_a_writer_that_reads(&launcher);
    Outcome::Passed
}

fn main() -> ExitCode {
    if let Some(code) = processes::worker_from_args() {
        return code;
    }
    let tests: &[processes::Test<Outcome>] = &[
        (
            "a_lock_from_another_process_stops_a_writer_that_reads",
            a_lock_from_another_process_stops_a_writer_that_reads,
        ),
        (
            "four_writer_processes_two_reader_processes",
            four_writer_processes_two_reader_processes,
        ),
        (
            "writers_killed_at_random_instants_lose_nothing_flushed",
            writers_killed_at_random_instants_lose_nothing_flushed,
        ),
        (
            "watchers_see_exactly_what_writers_flush",
            watchers_see_exactly_what_writers_flush,
        ),
        (
            "purge_reclaims_only_what_killed_writers_left",
            purge_reclaims_only_what_killed_writers_left,
        ),
        (
            "writer_paused_across_its_commit_while_purge_runs",
            writer_paused_across_its_commit_while_purge_runs,
        ),
    ];
    processes::run_tests(tests)
}
