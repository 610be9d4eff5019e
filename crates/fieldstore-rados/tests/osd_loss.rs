//! Ceph as a cluster, not one daemon (issue 27, item 5): three OSDs on
//! this machine (bluestore on sparse files, so a killed OSD keeps its data
//! and rejoins; a memstore OSD comes back empty and does not start), pool
//! size 3, min_size 2, quick failure detection (heartbeat every 1 s, grace
//! 6 s, one reporter: `scripts/ceph-start.sh` with `CEPH_OSDS=3`).
//!
//! Two writers archive and flush steps of fields while a reader follows,
//! through two outages:
//!
//! 1. osd.1 SIGKILLed, left down 5 s (the writers run degraded on the two
//!    survivors), restarted; wait until every PG is active+clean again.
//!    A killed OSD is noticed at once (its peers' connections are refused).
//! 2. osd.2 SIGSTOPped (a hung OSD: only the heartbeat grace notices it),
//!    until the mon marks it down, 3 s more, then SIGCONT; wait until clean.
//!
//! Asserted: the writers flush during each outage; the reader never sees a
//! flush partly or out of order and reads every field it sees with its bytes
//! (the testkit's `Observer`); afterwards every flushed field reads back
//! exactly; the cluster is active+clean again within bounds; no flush
//! stalled beyond what the op timeout allows (a bound that holds on a
//! loaded machine). The longest flush stall of each outage and Ceph's
//! detection and recovery times are measured and printed (`--nocapture`;
//! the numbers are in docs/benchmarks.md).
//!
//! Writers and reader are threads of this process, each with its own
//! `FieldStore`, so its own librados client following the osdmap itself,
//! as a separate process would.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fieldstore::{ErrorKind, FieldStore};
use fieldstore_testkit::streams::{Observer, Streams};
use fieldstore_testkit::support::must;

/// The client op timeout of the test configs (`Cluster::section`).
const OP_TIMEOUT: Duration = Duration::from_secs(60);

/// `ceph ARGS -f json` on `cluster`, bounded to 20 s; `None` if it fails.
fn ceph_json(cluster: &common::Cluster, args: &[&str]) -> Option<serde_json::Value> {
    let out = std::process::Command::new("timeout")
        .args(["20", "ceph", "-c", &cluster.conf])
        .args(args)
        .args(["-f", "json"])
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

/// Whether every PG of pool `pool_id` (of `pgs`) reports active+clean,
/// asked of its primary OSD (`ceph pg ID query`: needs no mgr).
fn all_clean(cluster: &common::Cluster, pool_id: u64, pgs: u64) -> bool {
    (0..pgs).all(|i| {
        ceph_json(cluster, &["pg", &format!("{pool_id}.{i:x}"), "query"])
            .is_some_and(|v| v["state"].as_str() == Some("active+clean"))
    })
}

/// Whether the osdmap has OSD `id` up.
fn osd_up(cluster: &common::Cluster, id: usize) -> Option<bool> {
    let v = ceph_json(cluster, &["osd", "dump"])?;
    v["osds"]
        .as_array()?
        .iter()
        .find(|o| o["osd"].as_u64() == Some(id as u64))
        .map(|o| o["up"].as_u64() == Some(1))
}

/// Poll `cond` every 200 ms for at most `limit`; the time it took.
fn wait_for(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    t.elapsed()
}

const PHASES: [&str; 3] = ["no outage", "osd.1 killed", "osd.2 hung"];

#[test]
fn osd_killed_or_hung_under_load_loses_nothing_flushed() {
    let t0 = Instant::now();
    let Some(cluster) = common::start_osds("bluestore", 3) else {
        return;
    };
    println!("3-OSD bluestore cluster started in {:.1?}", t0.elapsed());
    let dump = ceph_json(&cluster, &["osd", "dump"]).expect("osd dump");
    let pool = dump["pools"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["pool_name"] == "fieldstore"))
        .expect("the pool in the osd dump");
    let (pool_id, pgs) = (
        pool["pool"].as_u64().unwrap(),
        pool["pg_num"].as_u64().unwrap(),
    );
    assert_eq!(
        (pool["size"].as_u64(), pool["min_size"].as_u64()),
        (Some(3), Some(2)),
        "pool size and min_size"
    );

    let ns = common::namespace("osdloss");
    let config = common::config(&cluster, "rados", "rados", &ns, None);
    // Writers stop (after a flush) when told; `fields` is only a ceiling.
    let s = Streams {
        expver: "osl1".into(),
        writers: 2,
        fields: 100_000,
        flush_every: 10,
        min_len: 1000,
        max_len: 8000,
    };
    let flushed: Vec<AtomicUsize> = (0..s.writers).map(|_| AtomicUsize::new(0)).collect();
    let phase = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // Per phase: the longest flush (ms) and the number of flushes.
    let longest: Vec<AtomicU64> = PHASES.iter().map(|_| AtomicU64::new(0)).collect();
    let count: Vec<AtomicUsize> = PHASES.iter().map(|_| AtomicUsize::new(0)).collect();
    let errors = Mutex::new(Vec::<String>::new());
    let writers_done = AtomicUsize::new(0);
    let mut report = Vec::new();

    std::thread::scope(|scope| {
        for w in 0..s.writers {
            let (s, config, flushed) = (&s, config.clone(), &flushed[w]);
            let (phase, stop, longest, count, errors, done) =
                (&phase, &stop, &longest, &count, &errors, &writers_done);
            scope.spawn(move || {
                let fs = must(FieldStore::open(config), "open a writer");
                let mut i = 0;
                let mut retries = 0;
                while i < s.fields {
                    let r = fs
                        .archive(&s.key(w, i), &s.payload(&fs, w, i))
                        .and_then(|()| {
                            if (i + 1) % s.flush_every == 0 {
                                let before = phase.load(Ordering::SeqCst);
                                let t = Instant::now();
                                fs.flush()?;
                                let ms = t.elapsed().as_millis() as u64;
                                let after = phase.load(Ordering::SeqCst);
                                // A flush that overlaps an outage counts in it.
                                let p = before.max(after);
                                longest[p].fetch_max(ms, Ordering::SeqCst);
                                count[p].fetch_add(1, Ordering::SeqCst);
                                flushed.store(i + 1, Ordering::SeqCst);
                            }
                            Ok(())
                        });
                    match r {
                        Ok(()) => i += 1,
                        Err(e) => {
                            // Only a timed-out operation may fail (the op
                            // timeout is far beyond an outage): archive
                            // again from the last successful flush.
                            assert_eq!(e.kind(), ErrorKind::Unavailable, "writer {w}: {e}");
                            errors.lock().unwrap().push(format!("writer {w}: {e}"));
                            retries += 1;
                            assert!(retries < 5, "writer {w}: too many retries");
                            fs.discard().expect("discard");
                            i = flushed.load(Ordering::SeqCst);
                        }
                    }
                    if i % s.flush_every == 0 && stop.load(Ordering::SeqCst) {
                        break;
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        // The reader follows until the writers are done.
        let (s2, config2, flushed2, done2) = (&s, config.clone(), &flushed, &writers_done);
        let reader = scope.spawn(move || {
            let fs = must(FieldStore::open(config2), "open the reader");
            let mut obs = Observer::new(s2.clone());
            loop {
                let last = done2.load(Ordering::SeqCst) == s2.writers;
                let floor: Vec<usize> = flushed2.iter().map(|f| f.load(Ordering::SeqCst)).collect();
                obs.poll(&fs, &floor)
                    .unwrap_or_else(|e| panic!("reader: {e}"));
                if last {
                    return obs.polls;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let now = || -> Vec<usize> { flushed.iter().map(|f| f.load(Ordering::SeqCst)).collect() };
        let min_progress = |from: &[usize], what: &str| {
            wait_for(Duration::from_secs(120), what, || {
                now().iter().zip(from).all(|(n, f)| *n >= f + 50)
            })
        };

        // Phase 1: osd.1 SIGKILLed, down 5 s, restarted.
        min_progress(&[0, 0], "the writers' first flushes");
        let at = now();
        phase.store(1, Ordering::SeqCst);
        let killed = Instant::now();
        cluster.osd(1, "kill");
        let down = wait_for(Duration::from_secs(120), "osd.1 marked down", || {
            osd_up(&cluster, 1) == Some(false)
        });
        std::thread::sleep(Duration::from_secs(5));
        let degraded = now();
        cluster.osd(1, "start");
        let restarted = Instant::now();
        let up = wait_for(Duration::from_secs(120), "osd.1 up again", || {
            osd_up(&cluster, 1) == Some(true)
        });
        wait_for(
            Duration::from_secs(150),
            "all PGs active+clean after osd.1",
            || all_clean(&cluster, pool_id, pgs),
        );
        let clean = restarted.elapsed();
        phase.store(0, Ordering::SeqCst);
        report.push(format!(
            "osd.1 SIGKILL at {at:?} flushed: marked down {down:.1?} after the kill; \
             restarted {:.1?} after the kill with {degraded:?} flushed; up {up:.1?} and all \
             {pgs} PGs active+clean {clean:.1?} after the restart",
            restarted - killed
        ));
        assert!(
            degraded.iter().zip(&at).all(|(d, a)| d > a),
            "a writer flushed nothing while osd.1 was down: {at:?} → {degraded:?}"
        );

        // Phase 2: osd.2 SIGSTOPped until marked down, 3 s more, SIGCONT.
        min_progress(&now(), "the writers after osd.1's return");
        let at = now();
        phase.store(2, Ordering::SeqCst);
        let frozen = Instant::now();
        cluster.osd(2, "stop");
        let down = wait_for(Duration::from_secs(120), "hung osd.2 marked down", || {
            osd_up(&cluster, 2) == Some(false)
        });
        std::thread::sleep(Duration::from_secs(3));
        let degraded = now();
        cluster.osd(2, "cont");
        let thawed = Instant::now();
        let up = wait_for(Duration::from_secs(120), "osd.2 up again", || {
            osd_up(&cluster, 2) == Some(true)
        });
        wait_for(
            Duration::from_secs(150),
            "all PGs active+clean after osd.2",
            || all_clean(&cluster, pool_id, pgs),
        );
        let clean = thawed.elapsed();
        phase.store(0, Ordering::SeqCst);
        report.push(format!(
            "osd.2 SIGSTOP at {at:?} flushed: marked down {down:.1?} after the stop \
             (heartbeat grace 6 s); SIGCONT {:.1?} after the stop with {degraded:?} flushed; \
             up {up:.1?} and all PGs active+clean {clean:.1?} after the SIGCONT",
            thawed - frozen
        ));
        assert!(
            degraded.iter().zip(&at).all(|(d, a)| d > a),
            "a writer flushed nothing while osd.2 was hung: {at:?} → {degraded:?}"
        );

        min_progress(&now(), "the writers after osd.2's return");
        stop.store(true, Ordering::SeqCst);
        let polls = reader.join().expect("the reader");
        report.push(format!("reader: {polls} polls, each consistent"));
    });

    for line in &report {
        println!("{line}");
    }
    let errors = errors.into_inner().unwrap();
    for (p, name) in PHASES.iter().enumerate() {
        println!(
            "{name}: {} flushes, the longest {:.1?}",
            count[p].load(Ordering::SeqCst),
            Duration::from_millis(longest[p].load(Ordering::SeqCst))
        );
    }
    println!(
        "Ceph: osd heartbeat interval 1 s, grace 6 s, mon osd min down reporters 1; \
         client op timeout {OP_TIMEOUT:?}; writer errors (then retried): {}",
        errors.len()
    );
    for e in &errors {
        println!("  {e}");
    }
    // Physically safe: one attempt of an operation waits at most the op
    // timeout; no flush may wait for more than two.
    for (p, l) in longest.iter().enumerate() {
        let l = Duration::from_millis(l.load(Ordering::SeqCst));
        assert!(l < OP_TIMEOUT * 2, "{}: a flush stalled {l:?}", PHASES[p]);
    }

    // Everything flushed is there, with its bytes, through a fresh client;
    // the writers stopped right after a flush, so that is all they wrote.
    let fs = must(FieldStore::open(config), "open a reader");
    let all: Vec<usize> = flushed.iter().map(|f| f.load(Ordering::SeqCst)).collect();
    let seen = Observer::new(s.clone())
        .poll(&fs, &all)
        .unwrap_or_else(|e| panic!("after the outages: {e}"));
    assert_eq!(seen, all, "fields visible per writer after the outages");
    println!(
        "{all:?} fields flushed and read back; total wall time {:.1?}",
        t0.elapsed()
    );
    cluster.stop();
}
