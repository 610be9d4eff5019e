//! The S3 server crashes: SeaweedFS SIGKILLed while writers flush through
//! the S3 catalogue and store (`engine: s3`, `store: s3`) and a reader
//! follows them, then started again on its ports and directory — the S3
//! counterpart of the RADOS OSD fault test and of POSIX's crash images.
//!
//! - A writer whose request meets the dead server gets `Unavailable`,
//!   naming the endpoint, and archives again from its last successful
//!   flush (a conditional PUT cut by the crash may or may not have created
//!   its slot: the flush is then in the log once or twice, which changes
//!   nothing).
//! - The reader never sees a flush partly or out of order, nor a field
//!   with other bytes (the testkit's `Observer`), before, during (its
//!   polls then fail naming the endpoint, until one succeeds after the
//!   restart) and after the outage.
//! - Afterwards every field every writer was told is flushed reads back
//!   with its bytes, through a fresh handle, and in the end all are there.
//!
//! The server is this test's own (`common::own_server`); with
//! `FIELDSTORE_S3_ENDPOINT` set (radosgw, started by the caller) the test
//! skips.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fieldstore::{ErrorKind, FieldStore};
use fieldstore_testkit::streams::{Observer, Streams};
use fieldstore_testkit::support::must;

/// Archive every field of writer `w`, flushing every `flush_every`; on an
/// error, check that it is `Unavailable` and names the endpoint, and
/// archive again from the last successful flush, whose count `flushed`
/// holds. The fields archived again go to `again` first (a flush that
/// failed may have become visible all the same: they then move).
fn write_with_retry(
    fs: &FieldStore,
    s: &Streams,
    w: usize,
    endpoint: &str,
    flushed: &AtomicUsize,
    errors: &Mutex<Vec<String>>,
    again: &Mutex<Vec<(usize, usize)>>,
) {
    let started = Instant::now();
    s.write_retrying(fs, w, flushed, &mut |e, from, at| {
        assert_eq!(
            e.kind(),
            ErrorKind::Unavailable,
            "writer {w}: not a clear error: {e}"
        );
        assert!(
            e.to_string().contains(endpoint),
            "writer {w}: the error does not name the endpoint: {e}"
        );
        let mut errors = errors.lock().unwrap();
        if errors.len() < 3 || started.elapsed() > Duration::from_secs(60) {
            eprintln!("writer {w}: {e}");
        }
        errors.push(format!("writer {w}: {e}"));
        drop(errors);
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "writer {w}: still failing after 120 s"
        );
        again.lock().unwrap().extend((from..=at).map(|j| (w, j)));
        std::thread::sleep(Duration::from_millis(200));
    });
}

/// Counts a writer thread done when it ends, however it ends.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn server_killed_and_restarted_while_writers_flush() {
    let Some(server) = common::own_server() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = server.config_of("s3", "s3", &common::bucket("crash"), dir.path());
    let s = Streams {
        expver: "crsh".into(),
        writers: 3,
        fields: 1200,
        flush_every: 8,
        min_len: 1000,
        max_len: 8000,
    };
    let flushed: Vec<AtomicUsize> = (0..s.writers).map(|_| AtomicUsize::new(0)).collect();
    let done = AtomicUsize::new(0);
    // Odd while the server is down; a poll that saw it change may fail.
    let outage = AtomicUsize::new(0);
    let errors = Mutex::new(Vec::new());
    let again = Mutex::new(Vec::new());
    let now = || -> Vec<usize> { flushed.iter().map(|f| f.load(Ordering::SeqCst)).collect() };
    // The dataset made before the writers start (its first flush, writer
    // 0's), so that the writers race for log slots from their first
    // flush, not for creating `meta` (SeaweedFS's first writes to a new
    // bucket make its volumes and are slow).
    let first = must(FieldStore::open(config.clone()), "open");
    let first_flush = Streams {
        fields: s.flush_every,
        ..s.clone()
    };
    first_flush.write_retrying(&first, 0, &flushed[0], &mut |e, _, _| {
        panic!("the first flush: {e}")
    });
    drop(first);
    let (polls, failed_polls) = std::thread::scope(|scope| {
        for w in 0..s.writers {
            let (s, config, flushed, errors, again, done) =
                (&s, config.clone(), &flushed, &errors, &again, &done);
            let endpoint = server.endpoint.as_str();
            scope.spawn(move || {
                // Counted done also when it panics: the reader stops then.
                let _done = Done(done);
                let fs = must(FieldStore::open(config), "open a writer");
                write_with_retry(&fs, s, w, endpoint, &flushed[w], errors, again);
            });
        }
        let reader = scope.spawn(|| {
            let fs = must(FieldStore::open(config.clone()), "open the reader");
            let mut obs = Observer::new(s.clone());
            let (mut failed, mut recovered) = (0, false);
            loop {
                let last = done.load(Ordering::SeqCst) == s.writers;
                let before = outage.load(Ordering::SeqCst);
                let floor = now();
                for (w, i) in again.lock().unwrap().drain(..) {
                    obs.may_move(w, i);
                }
                match obs.poll(&fs, &floor) {
                    Ok(_) if last => return (obs.polls, failed),
                    Ok(_) => recovered |= before == 2,
                    Err(e) => {
                        // From the kill to the first poll that succeeds
                        // after the restart: a restarted SeaweedFS answers
                        // 500 for a while, until its volumes have reported
                        // to its master.
                        let outage_seen =
                            outage.load(Ordering::SeqCst) != before || (before >= 1 && !recovered);
                        assert!(outage_seen, "reader, not during the outage: {e}");
                        assert!(e.contains(&server.endpoint), "reader: {e}");
                        failed += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        // Kill once every writer has flushed (they go on unevenly: each
        // race for a slot costs its losers a wait for its answer and a
        // look at the slot, `Client::put_new`).
        let deadline = Instant::now() + Duration::from_secs(120);
        while now().iter().any(|&n| n < 2 * s.flush_every) {
            assert!(
                Instant::now() < deadline,
                "writers made no progress before the kill"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        outage.fetch_add(1, Ordering::SeqCst);
        server.kill();
        let at_kill = now();
        assert!(
            at_kill.iter().any(|&n| n < s.fields),
            "every writer was done before the kill: {at_kill:?}"
        );
        std::thread::sleep(Duration::from_secs(2));
        let restarting = Instant::now();
        server.restart();
        outage.fetch_add(1, Ordering::SeqCst);
        println!(
            "server killed with {at_kill:?} fields flushed per writer; serving again {:.1?} after \
             the restart began",
            restarting.elapsed()
        );
        reader.join().expect("the reader")
    });
    let errors = errors.into_inner().unwrap();
    println!(
        "reader polls: {polls}, {failed_polls} of them failed during the outage; writer errors \
         (then archived again): {}",
        errors.len()
    );
    for e in errors.iter().take(6) {
        println!("  {e}");
    }
    assert!(
        !errors.is_empty(),
        "no writer met the dead server: the test tested nothing"
    );
    // Everything is there, with its bytes, for a reader that starts now.
    let fs = must(FieldStore::open(config), "open a reader after the restart");
    let all = vec![s.fields; s.writers];
    let seen = Observer::new(s.clone())
        .poll(&fs, &all)
        .unwrap_or_else(|e| panic!("after the restart: {e}"));
    assert_eq!(seen, all, "fields visible per writer after the restart");
}
