//! Clauses 7 and 8 with real processes sharing one DAOS pool (the
//! stand-in's directory backend):
//!
//! - four writer processes archive into one dataset while two reader
//!   processes poll list and retrieve: every flushed field is found with
//!   its bytes, none is ever partial, none lost; the writers' counts of
//!   would-be RPCs give the cost per field with real contention for log
//!   slots;
//! - writers killed with SIGKILL at random instants: nothing partial or
//!   corrupt is ever visible, and everything a writer reported flushed
//!   stays readable;
//! - without a reachable agent, or without the library, opening a DAOS
//!   store fails with "DAOS unavailable";
//! - the whole conformance suite on the directory backend.
//!
//! The scenarios and the worker are the testkit's
//! (`fieldstore_testkit::processes`), shared with POSIX and RADOS. This
//! executable is its own worker (`harness = false`): started as
//! `processes worker …`, it runs one writer, reader or open instead of the
//! tests, on the pool its config file names. What a config cannot say
//! stays here: the stand-in's pool directory (`DAOS_STANDIN_DIR`, where a
//! real client would find its agent) and its RPC counters file
//! (`DAOS_STANDIN_COUNTERS`) reach the workers through their environment.

mod common;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use fieldstore::{ErrorKind, FieldStore};
use fieldstore_testkit::processes::{self, Launcher};
use fieldstore_testkit::streams::Streams;
use fieldstore_testkit::support::schema;

/// The shared directory of this test run's pools.
fn pool_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("daos-standin-processes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("the pool directory");
        common::standin().configure_dir(&d);
        d
    })
}

fn fresh_pool(prefix: &str) -> String {
    pool_dir();
    common::standin().fresh_pool(prefix)
}

/// Workers on `pool`: its config file (`engine: daos`, `store: daos`, the
/// stand-in as the library) beside the pools, and the stand-in's directory
/// in their environment.
fn launcher(pool: &str) -> Launcher {
    launcher_with(pool, common::section(pool))
}

/// As [`launcher`], with the `daos:` section given.
fn launcher_with(pool: &str, section: serde_json::Value) -> Launcher {
    let yaml = format!("engine: daos\nstore: daos\ndaos: {section}\n");
    let config = processes::write_config(pool_dir().join(format!("{pool}.yaml")), &yaml);
    Launcher::this_executable(config)
        .env("DAOS_STANDIN_DIR", pool_dir())
        .env_remove("FIELDSTORE_DAOS_LIBRARY")
        .env_remove("DAOS_STANDIN_NO_AGENT")
}

/// Sum of `name=calls/rpcs` over the counters file's lines.
fn counted(lines: &str, name: &str) -> (u64, u64) {
    let mut sum = (0, 0);
    for line in lines.lines() {
        for item in line.split_whitespace() {
            if let Some(v) = item.strip_prefix(&format!("{name}=")) {
                if let Some((c, r)) = v.split_once('/') {
                    sum.0 += c.parse::<u64>().unwrap_or(0);
                    sum.1 += r.parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    sum
}

fn four_writer_processes_two_reader_processes() {
    let pool = fresh_pool("prc");
    let s = Streams {
        expver: "dpr1".into(),
        writers: 4,
        fields: 600,
        flush_every: 20,
        min_len: 28,
        max_len: 1024,
    };
    let counters = pool_dir().join(format!("{pool}.counters"));
    let readers = launcher(&pool);
    // Only the writers count their calls: one line each.
    let writers = readers.clone().env("DAOS_STANDIN_COUNTERS", &counters);
    processes::writers_and_readers(&readers, &writers, &s, 2);
    // What the writers cost, contention for log slots included.
    let lines = std::fs::read_to_string(&counters).expect("the writers' counters");
    assert_eq!(
        lines.lines().count(),
        s.writers,
        "one line per writer: {lines}"
    );
    let fields = (s.writers * s.fields) as u64;
    let flushes = (s.writers * s.fields.div_ceil(s.flush_every)) as u64;
    let (_, writes) = counted(&lines, "daos_array_write");
    let (_, puts) = counted(&lines, "daos_kv_put");
    let (_, gets) = counted(&lines, "daos_kv_get");
    let total: u64 = lines
        .lines()
        .filter_map(|l| l.split_whitespace().find_map(|i| i.strip_prefix("rpcs=")))
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    println!(
        "  {} writer processes, {fields} fields, {flushes} flushes: {total} RPCs \
         ({:.3} per field): array_write {writes}, kv_put {puts}, kv_get {gets}",
        s.writers,
        total as f64 / fields as f64
    );
    assert_eq!(
        writes,
        fields + flushes,
        "one array write per field, and the tail hint's byte per flush"
    );
    assert!(
        puts <= fields,
        "at most one KV put per field, amortised ({puts})"
    );
    assert!(
        puts + gets <= 8 * flushes,
        "finding a free log slot under contention: {puts} puts and {gets} gets for {flushes} flushes"
    );
}

fn writers_killed_at_random_instants_lose_nothing_flushed() {
    const TRIALS: usize = 24;
    let pool = fresh_pool("kil");
    let s = Streams {
        expver: "dkl1".into(),
        writers: TRIALS + 1,
        fields: 60,
        flush_every: 5,
        min_len: 28,
        max_len: 2048,
    };
    processes::writers_killed_at_random_instants(
        &launcher(&pool),
        &s,
        TRIALS,
        Duration::from_micros(1500),
    );
}

/// Four watcher processes while four writers flush per step, then killed
/// mid-step: each watcher reports exactly what is flushed, once (DAOS has
/// no notifications: the watchers poll the dataset's log).
fn watchers_see_exactly_what_writers_flush() {
    let pool = fresh_pool("wch");
    for (expver, kill) in [("dwc1", false), ("dwc2", true)] {
        let s = Streams {
            expver: expver.into(),
            writers: 4,
            fields: 100,
            flush_every: 10,
            min_len: 28,
            max_len: 2048,
        };
        processes::watchers_see_exactly_what_is_flushed(&launcher(&pool), &s, kill);
    }
}

fn unavailable_without_agent_or_library() {
    let launcher = launcher(&fresh_pool("una"));
    let cases = [
        ("no agent", "DAOS_STANDIN_NO_AGENT", "1"),
        (
            "no library",
            "FIELDSTORE_DAOS_LIBRARY",
            "/nonexistent/lib64/libdaos.so.2",
        ),
    ];
    for (what, key, value) in cases {
        let f = launcher
            .clone()
            .env(key, value)
            .spawn(what, "open", &[])
            .finish();
        assert!(f.status.success(), "{what}: {}", f.err);
        assert!(
            f.out.starts_with(&format!(
                "error {:?}: DAOS unavailable",
                ErrorKind::Unavailable
            )),
            "{what}: {}",
            f.out
        );
        println!("  {what}: {}", f.out.trim());
    }
    let f = launcher.spawn("ok", "open", &[]).finish();
    assert_eq!(f.out.trim(), "opened", "{}", f.err);
}

/// The whole conformance suite, damage check included, on one pool of the
/// directory backend (the in-memory runs are in `conformance.rs`).
fn conformance_on_the_directory_backend() {
    let pool = fresh_pool("cnf");
    let open = {
        let pool = pool.clone();
        move || FieldStore::open(common::config(&pool, schema()))
    };
    let damage_record = |d: &fieldstore::DatasetKey, n: usize| common::damage_slot(&pool, d, n);
    let remove_record = |d: &fieldstore::DatasetKey, n: usize| common::remove_slot(&pool, d, n);
    let cut = |d: &fieldstore::DatasetKey, n: usize| common::remove_tail(&pool, d, n);
    let unregister = |d: &fieldstore::DatasetKey| common::unregister(&pool, d);
    fieldstore_testkit::run_all(
        &open,
        &fieldstore_testkit::Capabilities {
            corrupt: Some(&common::corrupt),
            damage_record: Some(&damage_record),
            damage_header: None,
            remove_record: Some(&remove_record),
            splice_record: None,
            cut_log: Some(&cut),
            unregister: Some(&unregister),
            blocks_outlive_records: false,
        },
    );
}

/// The orphan clause: the arrays of writers killed before they flushed
/// are destroyed by purge once their process's lease (6 s here) is dead,
/// and a live writer's unflushed arrays stay.
fn purge_reclaims_only_what_killed_writers_left() {
    // Long enough that a renewal (every 1.5 s) is never late (3 s) under
    // a loaded machine.
    const LEASE: u64 = 6;
    let pool = fresh_pool("orp");
    let mut section = common::section(&pool);
    section["writer_lease"] = LEASE.into();
    let s = Streams {
        expver: "dor1".into(),
        writers: 4,
        fields: 3,
        flush_every: 3,
        min_len: 600 << 10,
        max_len: 700 << 10,
    };
    processes::purge_reclaims_only_what_killed_writers_left(
        &launcher_with(&pool, section),
        &s,
        Duration::from_millis(2 * LEASE * 1000 + 500),
    );
}

/// Issue 38's first row: a writer stopped (SIGSTOP) past its lease
/// between its store flush and its catalogue flush while `purge --doit`
/// destroys its arrays must not acknowledge its flush.
fn writer_paused_across_its_commit_while_purge_runs() {
    const LEASE: u64 = 6;
    let pool = fresh_pool("pau");
    let mut section = common::section(&pool);
    section["writer_lease"] = LEASE.into();
    let s = Streams {
        expver: "dpa1".into(),
        writers: 2,
        fields: 4,
        flush_every: 4,
        min_len: 600 << 10,
        max_len: 700 << 10,
    };
    processes::writer_paused_across_its_commit_while_purge_runs(
        &launcher_with(&pool, section),
        &s,
        Duration::from_millis(2 * LEASE * 1000 + 500),
    );
}

/// An archive lock another process sets stops this process's writer, also
/// after this process's reader learnt of the lock's slot (which once let
/// the writer start past it, unchecked).
fn a_lock_from_another_process_stops_a_writer_that_reads() {
    let pool = fresh_pool("lck");
    processes::a_lock_from_another_process_stops_a_writer_that_reads(&launcher(&pool));
}

/// One writer process flushes 20 fields into pool `pool`, one per slot
/// (the tail hint names slot 19); returns the workload, the dataset's key
/// (from the schema: nothing in this process reads the log, so its
/// readers are cold) and a fresh handle on the pool, once `damage` did
/// its part.
fn twenty_slots_then(
    pool: &str,
    expver: &str,
    damage: &dyn Fn(&fieldstore::DatasetKey),
) -> (Streams, FieldStore) {
    let s = Streams {
        expver: expver.into(),
        writers: 1,
        fields: 20,
        flush_every: 1,
        min_len: 100,
        max_len: 900,
    };
    let mut flags = processes::streams_args(&s);
    flags.push(("writer", "0".to_string()));
    launcher(pool)
        .spawn("writer", "write", &flags)
        .finish_done();
    damage(
        &schema()
            .split(&s.key(0, 0))
            .expect("a key of the schema")
            .dataset,
    );
    let r = FieldStore::open(common::config(pool, schema())).expect("open");
    (s, r)
}

fn read(r: &FieldStore, s: &Streams, i: usize) -> fieldstore::Result<Vec<u8>> {
    r.retrieve(&fieldstore::Request::from_key(&s.key(0, i)))
        .and_then(|h| h.read_all())
}

/// Two log slots missing in a row, read by a process that never saw the
/// log (so only the tail hint, the last slot published, reaches past the
/// gap): the fields their flushes held fail `Corrupt` instead of reading
/// as absent, and everything flushed after the gap reads back.
fn gap_of_two_slots_is_seen_by_a_cold_reader() {
    let pool = fresh_pool("gap2");
    let (s, r) = twenty_slots_then(&pool, "dgp2", &|d| {
        common::remove_slot(&pool, d, 2);
        common::remove_slot(&pool, d, 3);
    });
    for i in 2..4 {
        match read(&r, &s, i) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "field {i}: {e}"),
            Ok(b) => panic!("field {i}, in a missing slot, read {} bytes", b.len()),
        }
    }
    for i in 4..s.fields {
        match read(&r, &s, i) {
            Ok(b) => assert!(
                b == s.payload(&r, 0, i),
                "field {i}, after the gap, read other bytes"
            ),
            Err(e) => panic!("field {i}, after the gap: {e}"),
        }
    }
}

/// The last four log slots removed (16 to 19, the tail hint naming slot
/// 19), read by a process that never saw the log: lookups fail `Corrupt`
/// (the lost slots may hold the newest version of any field) instead of
/// answering absent or older with success, and `status` reports it.
fn lost_tail_reaching_the_hint_is_seen_by_a_cold_reader() {
    let pool = fresh_pool("tail");
    let (s, r) = twenty_slots_then(&pool, "dtl1", &|d| common::remove_tail(&pool, d, 16));
    for i in [0, 15, 16, 19] {
        match read(&r, &s, i) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "field {i}: {e}"),
            Ok(b) if i >= 16 => panic!("field {i}, in a lost slot, read {} bytes", b.len()),
            Ok(b) => assert!(b == s.payload(&r, 0, i), "field {i} read other bytes"),
        }
    }
    let status = r.status(&s.dataset_request()).expect("status");
    assert!(
        status.iter().any(|d| !d.damage.is_empty()),
        "status does not report the lost tail: {status:?}"
    );
}

/// The last two log slots removed (18 and 19: past slot 16, the last a
/// hint written every 16th slot, as it was, would name), then a writer in a process that never saw
/// the log flushes once: it starts past the tail hint (slot 19), so the
/// removed slots stay a gap rather than filled, and a reader that never saw
/// the log fails the fields they held `Corrupt` instead of reading them as
/// absent; the late field reads back, and the others exactly or `Corrupt`
/// (the gap may have held newer versions of them).
fn short_lost_tail_then_a_cold_writer_is_damage() {
    let pool = fresh_pool("tail2");
    let late = Streams {
        expver: "dtl2".into(),
        writers: 2,
        fields: 1,
        flush_every: 1,
        min_len: 100,
        max_len: 900,
    };
    let (s, r) = twenty_slots_then(&pool, "dtl2", &|d| {
        common::remove_tail(&pool, d, 18);
        let mut flags = processes::streams_args(&late);
        flags.push(("writer", "1".to_string()));
        launcher(&pool)
            .spawn("late writer", "write", &flags)
            .finish_done();
    });
    for i in 0..s.fields {
        match read(&r, &s, i) {
            Err(e) if i >= 18 => assert_eq!(e.kind(), ErrorKind::Corrupt, "field {i}: {e}"),
            Ok(b) if i >= 18 => panic!(
                "field {i}, in a removed slot, read {} bytes with success: the writer after the \
                 lost tail hid it",
                b.len()
            ),
            // The gap may hold a newer version of any field before it.
            Ok(b) => assert!(b == s.payload(&r, 0, i), "field {i} read other bytes"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "field {i}: {e}"),
        }
    }
    let got = r
        .retrieve(&fieldstore::Request::from_key(&late.key(1, 0)))
        .and_then(|h| h.read_all());
    match got {
        Ok(b) => assert!(
            b == late.payload(&r, 1, 0),
            "the late field read other bytes"
        ),
        Err(e) => panic!("the late field, flushed after the gap: {e}"),
    }
}

/// Racing writers store their tail hints out of order: after the 20th
/// slot's hint, a late one names slot 17 (through the medium's own slot
/// log, as a writer that published slot 17 would). Then slots 18 and 19
/// are removed. A process that never saw the log fails the fields they
/// held `Corrupt`, never reads them as absent.
fn late_hint_then_lost_tail_is_seen_by_a_cold_reader() {
    use fieldstore_core::engine::slot_catalogue::SlotMedium;
    let pool = fresh_pool("late");
    let (s, r) = twenty_slots_then(&pool, "dlh1", &|d| {
        let cfg =
            fieldstore_daos::DaosConfig::from_value(&common::section(&pool)).expect("a config");
        let medium = fieldstore_daos::DaosMedium::with_config(cfg).expect("the DAOS medium");
        let cont = SlotMedium::open(&medium, d)
            .expect("opening the dataset")
            .expect("the dataset exists");
        let log = medium.slots(&cont).expect("the slot log");
        log.set_hint(17).expect("a late hint");
        common::remove_tail(&pool, d, 18);
    });
    for i in 0..s.fields {
        match read(&r, &s, i) {
            Err(e) if i >= 18 => assert_eq!(e.kind(), ErrorKind::Corrupt, "field {i}: {e}"),
            Ok(b) if i >= 18 => panic!(
                "field {i}, in a removed slot, read {} bytes with success: the late hint hid the \
                 lost tail",
                b.len()
            ),
            Ok(b) => assert!(b == s.payload(&r, 0, i), "field {i} read other bytes"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "field {i}: {e}"),
        }
    }
}

fn main() -> ExitCode {
    if let Some(code) = processes::worker_from_args() {
        return code;
    }
    let tests: &[processes::Test] = &[
        (
            "a_lock_from_another_process_stops_a_writer_that_reads",
            a_lock_from_another_process_stops_a_writer_that_reads,
        ),
        (
            "late_hint_then_lost_tail_is_seen_by_a_cold_reader",
            late_hint_then_lost_tail_is_seen_by_a_cold_reader,
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
            "unavailable_without_agent_or_library",
            unavailable_without_agent_or_library,
        ),
        (
            "conformance_on_the_directory_backend",
            conformance_on_the_directory_backend,
        ),
        (
            "purge_reclaims_only_what_killed_writers_left",
            purge_reclaims_only_what_killed_writers_left,
        ),
        (
            "writer_paused_across_its_commit_while_purge_runs",
            writer_paused_across_its_commit_while_purge_runs,
        ),
        (
            "gap_of_two_slots_is_seen_by_a_cold_reader",
            gap_of_two_slots_is_seen_by_a_cold_reader,
        ),
        (
            "lost_tail_reaching_the_hint_is_seen_by_a_cold_reader",
            lost_tail_reaching_the_hint_is_seen_by_a_cold_reader,
        ),
        (
            "short_lost_tail_then_a_cold_writer_is_damage",
            short_lost_tail_then_a_cold_writer_is_damage,
        ),
    ];
    let code = processes::run_tests(tests);
    let _ = std::fs::remove_dir_all(pool_dir());
    code
}
