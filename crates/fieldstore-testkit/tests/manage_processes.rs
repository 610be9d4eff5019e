//! Wipe and purge with real processes on the POSIX backend:
//!
//! - wipes of a dataset while two writer processes write into it and two
//!   reader processes poll it: no reader ever sees a flush in part or two
//!   incarnations of the dataset at once, every field read verifies, the
//!   writers are told when a flush of theirs was wiped and go on;
//! - a wipe process and a purge process killed with SIGKILL at random
//!   instants: readers see the dataset whole or not at all (wipe), the
//!   newest versions intact (purge), and the next wipe or purge finishes
//!   the job, leaving nothing behind.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fieldstore::{FieldStore, Level, ListOptions, WipeOptions};
use fieldstore_testkit::churn::Churn;
use fieldstore_testkit::payload;
use fieldstore_testkit::processes::{self, Launcher, Worker};
use fieldstore_testkit::rng::Rng;
use fieldstore_testkit::support::{archive_payload, list, must, request, Spec};

const WORKER: &str = env!("CARGO_BIN_EXE_fieldstore-testkit-worker");

/// The tests of this file run one at a time: a process forked by one
/// test's thread inherits, until it execs, the files another test's
/// thread has open — with their `flock`s, which would make a purge see a
/// dead writer's file as in use (safe, but not what the test checks).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A POSIX store on a fresh root (`dir/root`, returned), its config in
/// `dir`.
fn posix(dir: &tempfile::TempDir) -> (Launcher, PathBuf) {
    let root = dir.path().join("root");
    std::fs::create_dir(&root).expect("the root");
    let config = processes::write_config(
        dir.path().join("config.yaml"),
        &processes::posix_yaml(&root),
    );
    (Launcher::new(WORKER, config), root)
}

fn open(launcher: &Launcher) -> FieldStore {
    must(launcher.open(), "open")
}

/// Names in `root` starting with `prefix`.
fn leftovers(root: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(root)
        .expect("the root")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.starts_with(prefix))
        .map(|n| {
            let inside: Vec<String> = std::fs::read_dir(root.join(&n))
                .map(|d| {
                    d.map(|e| {
                        e.expect("an entry")
                            .file_name()
                            .to_string_lossy()
                            .into_owned()
                    })
                    .collect()
                })
                .unwrap_or_default();
            format!("{n} {inside:?}")
        })
        .collect()
}

#[test]
fn wipes_while_two_writers_and_two_readers_run() {
    let _serial = one_at_a_time();
    const WIPES: usize = 5;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (launcher, root) = posix(&dir);
    let stop = root.join("stop");
    let c = Churn {
        expver: "chr1".into(),
        per_round: 8,
    };
    let flags = vec![
        ("expver", c.expver.clone()),
        ("per-round", c.per_round.to_string()),
        ("stop", stop.to_string_lossy().into_owned()),
    ];
    let writers: Vec<Worker> = (0..2)
        .map(|w| {
            let mut flags = flags.clone();
            flags.push(("writer", w.to_string()));
            launcher.spawn(format!("writer {w}"), "churn-write", &flags)
        })
        .collect();
    let readers: Vec<Worker> = (0..2)
        .map(|r| launcher.spawn(format!("reader {r}"), "churn-read", &flags))
        .collect();
    // Wipe whenever the dataset holds something written since the last
    // wipe, WIPES times, while everybody runs.
    let fs = open(&launcher);
    let doit = WipeOptions {
        doit: true,
        unsafe_wipe_all: false,
    };
    let mut wiped = 0;
    while wiped < WIPES {
        let now = c
            .poll(&fs)
            .unwrap_or_else(|e| panic!("the wiping process's own poll: {e}"));
        if now.values().sum::<usize>() == 0 {
            std::thread::sleep(Duration::from_millis(2));
            continue;
        }
        let report = must(fs.wipe(&c.request(), doit), "wipe");
        assert!(report.datasets.len() <= 1, "{report:?}");
        wiped += 1;
    }
    std::fs::write(&stop, b"").expect("the stop file");
    let mut flushed = 0;
    let mut refused = 0;
    for (w, child) in writers.into_iter().enumerate() {
        let f = child.finish();
        let (status, out, err) = (f.status, f.out, f.err);
        assert!(status.success(), "writer {w} failed ({status}): {err}");
        let last = out.lines().last().unwrap_or_default();
        let mut parts = last.split(' ').skip(1).map(|n| n.parse::<usize>().ok());
        match (last.starts_with("done "), parts.next(), parts.next()) {
            (true, Some(Some(f)), Some(Some(r))) => {
                flushed += f;
                refused += r;
            }
            _ => panic!("writer {w}'s output: {out}"),
        }
    }
    for (r, child) in readers.into_iter().enumerate() {
        let f = child.finish();
        let (status, out, err) = (f.status, f.out, f.err);
        assert!(
            status.success(),
            "reader {r} saw a broken rule ({status}):\n{err}"
        );
        println!("reader {r}: {}", out.trim());
    }
    println!("{WIPES} wipes; writers flushed {flushed} rounds, {refused} refused as wiped");
    assert!(
        refused >= 1,
        "a writer whose dataset was wiped under it is told so at its next flush"
    );
    // The end state obeys the same rules, seen afresh, and no tombstone
    // is left.
    let seen = c
        .poll(&open(&launcher))
        .unwrap_or_else(|e| panic!("a fresh reader at the end: {e}"));
    println!("left at the end: {seen:?}");
    assert_eq!(leftovers(&root, ".wiped."), Vec::<String>::new());
}

/// A dataset of `handles` writers, two fields each, in family `x`.
fn populate(launcher: &Launcher, x: &str, handles: u32, version: u32) -> usize {
    let mut n = 0;
    for h in 0..handles {
        let fs = open(launcher);
        for param in [130, 131] {
            let spec = Spec {
                date: 20240101,
                time: 0,
                ty: "pf",
                levtype: "pl",
                step: h,
                number: Some(1),
                levelist: Some(500),
                param,
            };
            archive_payload(&fs, &spec.key(x), version, 200, 2000);
            n += 1;
        }
        must(fs.flush(), "flush");
    }
    n
}

/// Every field of family `x`, listed and read: `(count, versions)`.
fn read_all(fs: &FieldStore, x: &str) -> (usize, BTreeMap<u32, usize>) {
    let mut versions = BTreeMap::new();
    let mut buf = Vec::new();
    let listed = list(
        fs,
        &request(&format!("class=od,expver={x}")),
        Level::Element,
        false,
    );
    for e in &listed {
        let loc = e.location.clone().expect("a location");
        must(
            fs.store().read(&loc, &mut buf),
            format_args!("reading {loc}"),
        );
        let v = payload::verify(&buf, &e.full_key().to_string())
            .unwrap_or_else(|err| panic!("{loc}: {err}"));
        *versions.entry(v).or_insert(0) += 1;
    }
    (listed.len(), versions)
}

/// Start a maintenance worker, wait for it to begin, let it run a random
/// while, SIGKILL it. Whether it finished.
fn kill_during(command: &str, launcher: &Launcher, req: &str, rng: &mut Rng) -> bool {
    let mut worker = launcher.spawn(command, command, &[("request", req.to_string())]);
    worker.wait_for_line("start");
    std::thread::sleep(Duration::from_micros(rng.below(4000)));
    let f = worker.kill();
    let status = f.status;
    // The output keeps any lines before `start` too: besides `start`, the
    // worker prints only `done` (perhaps cut short by the kill), after it.
    assert!(
        f.out
            .lines()
            .all(|l| !l.is_empty() && "done".starts_with(l)),
        "{command} did not start: {:?} {}",
        f.out,
        f.err
    );
    let done = f.out.lines().any(|l| l == "done");
    assert!(
        status.success() || status.signal() == Some(9),
        "{command} failed by itself ({status})"
    );
    done
}

#[test]
fn wipe_killed_at_random_instants_is_finished_by_the_next() {
    let _serial = one_at_a_time();
    const TRIALS: u32 = 12;
    const HANDLES: u32 = 12;
    let mut rng = Rng::from_env("wipe sigkill trials");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (launcher, root) = posix(&dir);
    let keep = populate(&launcher, "kept", 2, 1);
    let mut outcomes = [0usize; 3]; // untouched, hidden (interrupted), finished
    for t in 0..TRIALS {
        let x = format!("k{t:03}");
        let n = populate(&launcher, &x, HANDLES, 1);
        let req = format!("class=od,expver={x}");
        let finished = kill_during("wipe", &launcher, &req, &mut rng);
        let fs = open(&launcher);
        // Whole or not at all, at every depth.
        let (seen, _) = read_all(&fs, &x);
        let datasets = list(&fs, &request(&req), Level::Dataset, false).len();
        let collocations = list(&fs, &request(&req), Level::Collocation, false).len();
        match (seen, datasets, collocations) {
            (s, 1, 1) if s == n => outcomes[0] += 1,
            (0, 0, 0) => outcomes[if finished { 2 } else { 1 }] += 1,
            other => panic!(
                "trial {t}: after a wipe killed mid-way, the dataset is half visible: \
                 {other:?} (fields, datasets, collocations) of {n} fields"
            ),
        }
        let status = must(fs.status(&request(&req)), "status");
        assert!(status.len() <= 1, "{status:?}");
        // The next wipe finishes the job.
        let doit = WipeOptions {
            doit: true,
            unsafe_wipe_all: false,
        };
        must(fs.wipe(&request(&req), doit), "the wipe after the kill");
        assert_eq!(
            read_all(&open(&launcher), &x).0,
            0,
            "trial {t}: after the second wipe"
        );
        assert_eq!(
            must(open(&launcher).status(&request(&req)), "status"),
            vec![],
            "trial {t}: nothing left to report"
        );
        assert_eq!(
            leftovers(&root, ".wiped."),
            Vec::<String>::new(),
            "trial {t}"
        );
        assert_eq!(
            read_all(&fs, "kept").0,
            keep,
            "trial {t}: the other dataset"
        );
    }
    println!(
        "wipes killed: {} before hiding anything, {} after hiding, {} after finishing",
        outcomes[0], outcomes[1], outcomes[2]
    );
}

#[test]
fn purge_killed_at_random_instants_is_finished_by_the_next() {
    let _serial = one_at_a_time();
    const TRIALS: u32 = 10;
    const HANDLES: u32 = 10;
    let mut rng = Rng::from_env("purge sigkill trials");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (launcher, root) = posix(&dir);
    let mut outcomes = [0usize; 3]; // nothing removed, some, finished
    for t in 0..TRIALS {
        let x = format!("p{t:03}");
        // Version 1 by some writers, all replaced by others: every file of
        // the first writers holds only replaced fields.
        let n = populate(&launcher, &x, HANDLES, 1);
        populate(&launcher, &x, HANDLES, 2);
        let req = format!("class=od,expver={x},stream=enfo,date=20240101,time=0000");
        let finished = kill_during("purge", &launcher, &req, &mut rng);
        let dir_name = format!("od:{x}:enfo:20240101:0000");
        let data_files = || {
            std::fs::read_dir(root.join(&dir_name))
                .expect("the dataset directory")
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".data"))
                })
                .count()
        };
        let left = data_files();
        outcomes[match (finished, left) {
            (true, _) => 2,
            (false, l) if l == 2 * HANDLES as usize => 0,
            _ => 1,
        }] += 1;
        // Readers of the newest versions never notice.
        let fs = open(&launcher);
        assert_eq!(
            read_all(&fs, &x),
            (n, BTreeMap::from([(2, n)])),
            "trial {t}: the newest versions after a purge killed mid-way"
        );
        // The next purge finishes: nothing replaced is left, and every
        // entry still listed with duplicates reads.
        let report = must(fs.purge(&request(&req), true), "the purge after the kill");
        assert!(
            report.datasets.iter().all(|d| d.kept.is_empty()),
            "{report:?}"
        );
        let fresh = open(&launcher);
        let full = must(
            fresh.list(
                &request(&req),
                ListOptions {
                    depth: Level::Element,
                    duplicates: true,
                },
            ),
            "list with duplicates",
        );
        assert_eq!(full.len(), n, "trial {t}: replaced versions left: {full:?}");
        let stats = must(fresh.stats(&request(&req)), "stats");
        assert_eq!(
            (stats[0].duplicates, stats[0].reclaimable_bytes),
            (0, 0),
            "trial {t}: {stats:?}"
        );
        assert_eq!(
            data_files(),
            HANDLES as usize,
            "trial {t}: only the newest writers' data files remain"
        );
    }
    println!(
        "purges killed: {} before removing anything, {} part-way, {} after finishing",
        outcomes[0], outcomes[1], outcomes[2]
    );
}
