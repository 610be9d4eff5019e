//! Clauses 7 and 8 with real processes on a real S3 server (SeaweedFS,
//! `common`), each scenario twice: the POSIX catalogue over the S3 store,
//! then the S3 catalogue (`engine: s3`) over it:
//!
//! - four writer processes × 1,000 fields into one dataset while two reader
//!   processes poll list and retrieve: every flushed field is found with its
//!   bytes, none is ever partial, none lost;
//! - a writer killed with SIGKILL at random instants, 25 times into one
//!   dataset: nothing partial or corrupt is ever visible, and everything the
//!   writer reported flushed stays readable;
//! - watchers see exactly what writers flush, also when writers are killed;
//! - purge reclaims the objects of writers killed before they flushed (once
//!   their lease is dead: two leases and a second by the server's clock),
//!   and keeps a live writer's objects not yet published;
//! - a writer stopped (SIGSTOP) past its lease between its store flush and
//!   its catalogue flush while `purge --doit` removes its objects does not
//!   acknowledge its flush.
//!
//! The scenarios and the worker are the testkit's
//! (`fieldstore_testkit::processes`), shared with POSIX, RADOS and DAOS.
//! This binary is its own worker (`harness = false`). What stays here is
//! the server: started once for this binary, one bucket and one POSIX root
//! per scenario and engine. Writers PUT once they hold 1 MiB (`write_buffer`), so that a
//! writer killed before its flush has left objects behind.

mod common;

use std::process::ExitCode;
use std::time::Duration;

use fieldstore_testkit::processes::{self, Launcher, Outcome};
use fieldstore_testkit::streams::Streams;

/// The writers' lease (seconds): renewed every 1.5 s; dead to purge two
/// leases and a second after its last renewal.
const LEASE: f64 = 6.0;

/// The catalogues each scenario runs with, over the S3 store: both, or
/// those `FIELDSTORE_S3_ENGINES` names (comma-separated; the radosgw stage
/// runs `s3` only, which drives the S3 store as well).
fn engines() -> Vec<String> {
    std::env::var("FIELDSTORE_S3_ENGINES")
        .unwrap_or_else(|_| "toc,s3".into())
        .split(',')
        .map(str::to_string)
        .collect()
}

/// Workers with catalogue `engine` on a fresh bucket and POSIX root, and
/// the directory of their config file; `None` without SeaweedFS.
fn setup(name: &str, engine: &str) -> Option<(Launcher, tempfile::TempDir)> {
    let server = common::server()?;
    eprintln!("-- engine: {engine}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).expect("the root");
    let yaml = format!(
        "engine: {engine}\nstore: s3\n{}  write_buffer: 1048576\nspaces:\n- roots:\n  - path: {}\n",
        server.section(&common::bucket(name), LEASE),
        root.display()
    );
    let config = processes::write_config(dir.path().join("config.yaml"), &yaml);
    Some((Launcher::this_executable(config), dir))
}

const NO_S3: &str = "no SeaweedFS";

/// When purge counts a killed writer dead: two leases, the second of HTTP
/// dates, and a margin.
fn dead_after() -> Duration {
    Duration::from_secs_f64(2.0 * LEASE + 2.0)
}

fn four_writer_processes_two_reader_processes() -> Outcome {
    for engine in engines() {
        let Some((launcher, _dir)) = setup("four-writers", &engine) else {
            return Outcome::Skipped(NO_S3.into());
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
    }
    Outcome::Passed
}

fn writers_killed_at_random_instants_lose_nothing_flushed() -> Outcome {
    const TRIALS: usize = 25;
    for engine in engines() {
        let Some((launcher, _dir)) = setup("killed", &engine) else {
            return Outcome::Skipped(NO_S3.into());
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
    }
    Outcome::Passed
}

fn watchers_see_exactly_what_writers_flush() -> Outcome {
    for engine in engines() {
        let Some((launcher, _dir)) = setup("watchers", &engine) else {
            return Outcome::Skipped(NO_S3.into());
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
    }
    Outcome::Passed
}

/// The orphan clause: killed writers' objects go, a live writer's stay.
fn purge_reclaims_only_what_killed_writers_left() -> Outcome {
    for engine in engines() {
        let Some((launcher, _dir)) = setup("orphans", &engine) else {
            return Outcome::Skipped(NO_S3.into());
        };
        let s = Streams {
            expver: "orp1".into(),
            writers: 4,
            fields: 3,
            flush_every: 3,
            min_len: 600 << 10,
            max_len: 700 << 10,
        };
        processes::purge_reclaims_only_what_killed_writers_left(&launcher, &s, dead_after());
    }
    Outcome::Passed
}

/// Issue 38's first row: a writer stopped (SIGSTOP) past its lease
/// between its store flush and its catalogue flush while `purge --doit`
/// removes its objects must not acknowledge its flush.
fn writer_paused_across_its_commit_while_purge_runs() -> Outcome {
    for engine in engines() {
        let Some((launcher, _dir)) = setup("paused", &engine) else {
            return Outcome::Skipped(NO_S3.into());
        };
        let s = Streams {
            expver: "pau1".into(),
            writers: 2,
            fields: 4,
            flush_every: 4,
            min_len: 600 << 10,
            max_len: 700 << 10,
        };
        processes::writer_paused_across_its_commit_while_purge_runs(&launcher, &s, dead_after());
    }
    Outcome::Passed
}

/// An archive lock another process sets stops this process's writer, also
/// after this process read the lock's record.
fn a_lock_from_another_process_stops_a_writer_that_reads() -> Outcome {
    for engine in engines() {
        let Some((launcher, _dir)) = setup("locked", &engine) else {
            return Outcome::Skipped(NO_S3.into());
        };
        processes::a_lock_from_another_process_stops_a_writer_that_reads(&launcher);
    }
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
