//! Clauses 7 and 8 with real processes on the POSIX backend:
//!
//! - four writer processes × 2,000 fields into one dataset while two reader
//!   processes poll list and retrieve: every flushed field is found with
//!   its bytes, none is ever partial, none lost;
//! - a writer killed with SIGKILL at random instants, 60 times into one
//!   dataset: nothing partial or corrupt is ever visible, and everything
//!   the writer reported flushed stays readable.
//!
//! The worker binary (`src/bin/worker.rs`) and the rules a reader checks
//! (`fieldstore_testkit::streams`) are shared with the in-process checks.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use fieldstore::FieldStore;
use fieldstore_testkit::rng::Rng;
use fieldstore_testkit::streams::{Observer, Streams};
use fieldstore_testkit::support::{must, posix_config, schema};

const WORKER: &str = env!("CARGO_BIN_EXE_fieldstore-testkit-worker");

fn worker(command: &str, root: &Path, s: &Streams, extra: &[(&str, String)]) -> Command {
    let mut c = Command::new(WORKER);
    c.arg(command)
        .arg("--root")
        .arg(root)
        .args(["--expver", &s.expver])
        .args(["--writers", &s.writers.to_string()])
        .args(["--fields", &s.fields.to_string()])
        .args(["--flush-every", &s.flush_every.to_string()])
        .args(["--min-len", &s.min_len.to_string()])
        .args(["--max-len", &s.max_len.to_string()]);
    for (k, v) in extra {
        c.arg(format!("--{k}")).arg(v);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Wait for a child and return its stdout and stderr.
fn finish(mut child: Child, what: &str) -> (std::process::ExitStatus, String, String) {
    let mut out = String::new();
    let mut err = String::new();
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let t = std::thread::spawn(move || {
        let mut e = String::new();
        let _ = stderr.read_to_string(&mut e);
        e
    });
    stdout
        .read_to_string(&mut out)
        .unwrap_or_else(|e| panic!("reading the output of {what}: {e}"));
    err.push_str(&t.join().expect("stderr reader"));
    let status = child
        .wait()
        .unwrap_or_else(|e| panic!("waiting for {what}: {e}"));
    (status, out, err)
}

fn last_flushed(out: &str) -> usize {
    out.lines()
        .filter_map(|l| l.strip_prefix("flushed "))
        .filter_map(|n| n.trim().parse().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn four_writer_processes_two_reader_processes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    let s = Streams {
        expver: "prc1".into(),
        writers: 4,
        fields: 2000,
        flush_every: 50,
        min_len: 28,
        max_len: 1024,
    };
    let total = s.writers * s.fields;
    let readers: Vec<Child> = (0..2)
        .map(|r| {
            worker(
                "read",
                root,
                &s,
                &[
                    ("until-fields", total.to_string()),
                    ("timeout-secs", "240".into()),
                ],
            )
            .spawn()
            .unwrap_or_else(|e| panic!("starting reader {r} ({WORKER}): {e}"))
        })
        .collect();
    let writers: Vec<Child> = (0..s.writers)
        .map(|w| {
            worker("write", root, &s, &[("writer", w.to_string())])
                .spawn()
                .unwrap_or_else(|e| panic!("starting writer {w} ({WORKER}): {e}"))
        })
        .collect();
    for (w, child) in writers.into_iter().enumerate() {
        let (status, out, err) = finish(child, &format!("writer {w}"));
        assert!(status.success(), "writer {w} failed ({status}): {err}");
        assert_eq!(
            last_flushed(&out),
            s.fields,
            "writer {w} did not report all its fields flushed: {out}"
        );
        assert!(out.ends_with("done\n"), "writer {w}'s output: {out}");
    }
    for (r, child) in readers.into_iter().enumerate() {
        let (status, out, err) = finish(child, &format!("reader {r}"));
        assert!(
            status.success(),
            "reader {r} found a violation or timed out ({status}):\n{err}"
        );
        println!("reader {r}: {}", out.trim());
    }
    let fs = must(FieldStore::open(posix_config(root, schema())), "open");
    let all = vec![s.fields; s.writers];
    let seen = Observer::new(s.clone())
        .poll(&fs, &all)
        .unwrap_or_else(|e| panic!("after all processes finished: {e}"));
    assert_eq!(seen, all, "fields visible per writer at the end");
}

/// Spawn a writer, let it report `flushes` flushes, wait a random few
/// hundred microseconds more, and SIGKILL it. Returns what it reported
/// flushed.
fn kill_writer_after(
    root: &Path,
    s: &Streams,
    writer: usize,
    flushes: usize,
    rng: &mut Rng,
) -> usize {
    let mut child = worker("write", root, s, &[("writer", writer.to_string())])
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting writer {writer} ({WORKER}): {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel::<usize>();
    let lines = std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let mut reported = 0;
        // Only whole lines count: the process may die mid-line.
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.ends_with('\n') {
            if let Some(n) = line
                .trim()
                .strip_prefix("flushed ")
                .and_then(|n| n.parse().ok())
            {
                reported = n;
                let _ = tx.send(n);
            }
            line.clear();
        }
        reported
    });
    for _ in 0..flushes {
        if rx.recv().is_err() {
            break; // the writer finished or died
        }
    }
    std::thread::sleep(Duration::from_micros(rng.below(1500)));
    // Child::kill is SIGKILL on Unix.
    let _ = child.kill();
    let status = child.wait().expect("waiting for the killed writer");
    let reported = lines.join().expect("the stdout reader");
    assert!(
        status.success() || status.signal() == Some(9),
        "writer {writer} failed by itself ({status}) before it was killed"
    );
    reported
}

#[test]
fn writers_killed_at_random_instants_lose_nothing_flushed() {
    const TRIALS: usize = 60;
    let mut rng = Rng::from_env("sigkill trials");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    let s = Streams {
        expver: "kil1".into(),
        writers: TRIALS + 1,
        fields: 100,
        flush_every: 10,
        min_len: 28,
        max_len: 2048,
    };
    let flushes = s.fields.div_ceil(s.flush_every);
    let mut observer = Observer::new(s.clone());
    let mut floor = vec![0; s.writers];
    let mut stats = [0usize; 3]; // killed before any flush, mid-way, after the end
    for t in 0..TRIALS {
        let after = rng.below(flushes as u64 + 1) as usize;
        let reported = kill_writer_after(root, &s, t, after, &mut rng);
        floor[t] = reported;
        let before: Vec<usize> = observer.seen().to_vec();
        let fs = must(
            FieldStore::open(posix_config(root, schema())),
            "open after a kill",
        );
        let seen = observer.poll(&fs, &floor).unwrap_or_else(|e| {
            panic!("trial {t}: writer killed after {after} flushes ({reported} fields reported flushed): {e}")
        });
        for w in 0..t {
            assert_eq!(
                seen[w], before[w],
                "trial {t}: writer {w}, killed in an earlier trial, now shows {} fields instead of {}",
                seen[w], before[w]
            );
        }
        stats[match seen[t] {
            0 => 0,
            n if n == s.fields => 2,
            _ => 1,
        }] += 1;
    }
    println!(
        "killed {TRIALS} writers: {} with nothing visible, {} part-way, {} complete",
        stats[0], stats[1], stats[2]
    );
    // The dataset stays writable after all those crashes.
    let fs = must(FieldStore::open(posix_config(root, schema())), "open");
    must(
        s.write(&fs, TRIALS, &mut |_| ()),
        "a writer after the crashes",
    );
    floor[TRIALS] = s.fields;
    let seen = observer
        .poll(
            &must(FieldStore::open(posix_config(root, schema())), "open"),
            &floor,
        )
        .unwrap_or_else(|e| panic!("after the last writer: {e}"));
    assert_eq!(seen[TRIALS], s.fields, "the writer after the crashes");
    // Finally every visible field once more, read afresh by a new reader.
    let fs = must(FieldStore::open(posix_config(root, schema())), "open");
    let again = Observer::new(s.clone())
        .poll(&fs, &floor)
        .unwrap_or_else(|e| panic!("a fresh reader at the end: {e}"));
    assert_eq!(
        again, seen,
        "a fresh reader sees what the long-lived one saw"
    );
}
