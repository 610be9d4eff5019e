//! Fault test: the OSD is killed (SIGKILL) and restarted while writers run.
//!
//! - Writers with the default timeout ride it out: librados holds their
//!   operations and resends them to the restarted OSD (the OSD recognises
//!   a resent operation it had already applied), or, if an operation does
//!   give up, the writer gets an `Unavailable` error and archives again
//!   from its last successful flush.
//! - A writer with a 3 s timeout, flushing while the OSD is down, gets a
//!   clear `Unavailable` error naming the pool.
//! - Nothing any writer was told is flushed is lost: every such field reads
//!   back with its bytes afterwards, and in the end all fields are there.
//!
//! Uses its own bluestore cluster: a memstore OSD loses its data when killed.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fieldstore::{ErrorKind, FieldStore};
use fieldstore_testkit::streams::{Observer, Streams};
use fieldstore_testkit::support::must;

fn osd(cluster: &common::Cluster, action: &str) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ceph-osd.sh");
    let out = Command::new(script)
        .arg(&cluster.dir)
        .arg(action)
        .output()
        .expect("running scripts/ceph-osd.sh");
    assert!(
        out.status.success(),
        "ceph-osd.sh {action}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Archive every field of writer `w`, flushing every `flush_every`; on an
/// error, check it is `Unavailable` and archive again from the last
/// successful flush. `flushed` is what the last successful flush covers.
fn write_with_retry(
    fs: &FieldStore,
    s: &Streams,
    w: usize,
    flushed: &AtomicUsize,
    errors: &Mutex<Vec<String>>,
) {
    let mut retries = 0;
    s.write_retrying(fs, w, flushed, &mut |e, _, _| {
        assert_eq!(
            e.kind(),
            ErrorKind::Unavailable,
            "writer {w}: not a clear error: {e}"
        );
        errors.lock().unwrap().push(format!("writer {w}: {e}"));
        retries += 1;
        assert!(retries < 20, "writer {w}: too many retries");
    });
}

#[test]
fn osd_killed_and_restarted_while_writers_run() {
    let Some(cluster) = common::start("bluestore") else {
        return;
    };
    let ns = common::namespace("fault");
    let config = common::config(&cluster, "rados", "rados", &ns, None);
    let s = Streams {
        expver: "flt1".into(),
        writers: 3,
        fields: 300,
        flush_every: 10,
        min_len: 1000,
        max_len: 8000,
    };
    let flushed: Arc<Vec<AtomicUsize>> =
        Arc::new((0..s.writers).map(|_| AtomicUsize::new(0)).collect());
    let errors = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for w in 0..s.writers {
            let (s, config, flushed, errors) =
                (&s, config.clone(), flushed.clone(), errors.clone());
            scope.spawn(move || {
                let fs = must(FieldStore::open(config), "open a writer");
                write_with_retry(&fs, s, w, &flushed[w], &errors);
            });
        }
        // Kill once every writer has flushed something and none is done.
        let deadline = Instant::now() + Duration::from_secs(120);
        while flushed.iter().any(|f| f.load(Ordering::SeqCst) < 30) {
            assert!(
                Instant::now() < deadline,
                "writers made no progress before the kill"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let at_kill: Vec<usize> = flushed.iter().map(|f| f.load(Ordering::SeqCst)).collect();
        osd(&cluster, "kill");
        // While the OSD is down, a writer with a short timeout gets a clear
        // error naming the pool.
        let mut short = config.clone();
        let mut section = short.backend("rados").clone();
        section["timeout"] = serde_json::json!(3);
        short.backends.insert("rados".into(), section);
        let fs = must(FieldStore::open(short), "open with a 3 s timeout");
        let lone = Streams {
            expver: "flt2".into(),
            writers: 1,
            fields: 1,
            ..s.clone()
        };
        let e = fs
            .archive(&lone.key(0, 0), &lone.payload(&fs, 0, 0))
            .and_then(|()| fs.flush())
            .expect_err("a flush while the only OSD is down");
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        assert!(
            e.to_string().contains("pool 'fieldstore'"),
            "the error does not name the pool: {e}"
        );
        println!("flush with the OSD down: {e}");
        fs.discard().expect("discard");
        osd(&cluster, "start");
        println!("OSD killed with {at_kill:?} fields flushed per writer, then restarted");
    });
    let errors = errors.lock().unwrap();
    println!(
        "writer errors during the outage (then retried): {}",
        errors.len()
    );
    for e in errors.iter() {
        println!("  {e}");
    }
    // Everything is there, with its bytes.
    let fs = must(FieldStore::open(config.clone()), "open a reader");
    let all = vec![s.fields; s.writers];
    let seen = Observer::new(s.clone())
        .poll(&fs, &all)
        .unwrap_or_else(|e| panic!("after the restart: {e}"));
    assert_eq!(seen, all, "fields visible per writer after the OSD restart");
}
