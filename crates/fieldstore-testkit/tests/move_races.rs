//! `move` racing live writers, readers and a watcher, with real processes
//! on the POSIX backend: four writer processes (two through one handle
//! each, as a model's I/O server; two through a handle per flush, as a loop
//! of `fieldstore archive` calls), two readers retrieving everything over
//! and over, and one `watch`, while this process moves the dataset back and
//! forth between two roots, within one file system and across two (a tmpfs
//! the test mounts), at random intervals, over several runs.
//!
//! Afterwards: every field whose flush returned success is listed once and
//! reads back its bytes; no field whose flush failed is visible (a move's
//! failures are definite: "moved to another file system"); no reader saw a
//! field vanish or change; the watcher reported each flushed field exactly
//! once and nothing else; no damage, nothing left behind in either root.
//!
//! The deterministic worst interleavings of the same races are unit tests
//! of the `fieldstore` crate (`races.rs`, with failpoints).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use fieldstore::{ErrorKind, Level, ListOptions};
use fieldstore_testkit::processes::{self, Launcher, Worker};
use fieldstore_testkit::rng::Rng;
use fieldstore_testkit::streams::Streams;
use fieldstore_testkit::support::{must, retrieve_one};
use fieldstore_testkit::tmpfs::Tmpfs;

const WORKER: &str = env!("CARGO_BIN_EXE_fieldstore-testkit-worker");
const WRITERS: usize = 4;
const READERS: usize = 2;
/// Moves per run, at least.
const MOVES: usize = 10;

/// One test at a time: a process forked by one test's thread inherits the
/// files another's has open, with their `flock`s, until it execs.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn launcher(dir: &Path, roots: &[&Path]) -> Launcher {
    let mut yaml = String::from("type: local\nengine: toc\nstore: file\nspaces:\n- roots:\n");
    for r in roots {
        yaml.push_str(&format!("  - path: {}\n", r.display()));
    }
    let config = processes::write_config(dir.join("config.yaml"), &yaml);
    Launcher::new(WORKER, config)
}

/// What one writer said of each group of fields it flushed.
#[derive(Debug, Default)]
struct Outcomes {
    flushed: Vec<(usize, usize)>,
    /// `(first, end, kind and message)`.
    failed: Vec<(usize, usize, String)>,
}

fn outcomes(w: usize, out: &str) -> Outcomes {
    let mut o = Outcomes::default();
    for line in out.lines() {
        let mut words = line.splitn(4, ' ');
        let (what, first, end) = (words.next(), words.next(), words.next());
        let range = || -> (usize, usize) {
            (
                first.and_then(|f| f.parse().ok()).expect(line),
                end.and_then(|e| e.parse().ok()).expect(line),
            )
        };
        match what {
            Some("flushed") => o.flushed.push(range()),
            Some("failed") => {
                let (a, b) = range();
                o.failed
                    .push((a, b, words.next().unwrap_or("").to_string()))
            }
            Some("done") | Some("ready") => {}
            _ => panic!("writer {w}: unexpected line {line:?}"),
        }
    }
    o
}

/// Each entry of `root` with the names inside it: what a refused move
/// found in its way.
fn contents(root: &Path) -> Vec<String> {
    let names = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|f| f.file_name().to_string_lossy().into_owned())
            .collect()
    };
    names(root)
        .into_iter()
        .map(|n| format!("{n}: {:?}", names(&root.join(&n))))
        .collect()
}

/// Who moves the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Movers {
    /// This process, each move to its end.
    ThisProcess,
    /// A process per move, SIGKILLed a random 0–40 ms after it starts
    /// (many die in the middle; the next move, or the next writer, finishes
    /// or undoes what they left).
    Killed,
}

/// Move the dataset `ds` to `to` as `movers` says; whether a move ran to
/// its end.
fn move_once(
    fs: &fieldstore::FieldStore,
    launcher: &Launcher,
    movers: Movers,
    ds: &fieldstore::Request,
    to: &Path,
    rng: &mut Rng,
) -> bool {
    match movers {
        Movers::ThisProcess => match fs.move_datasets(ds, to) {
            Ok(moved) => !moved.is_empty(),
            // Already there (a dataset not created yet is no error: it
            // moves nothing).
            Err(e) if e.kind() == ErrorKind::InvalidInput => {
                // "exists already" (something of the dataset's name in the
                // target root: a second dataset a writer created, or a
                // store's directory made beside the dataset while it was
                // moved) is a failure: creations and moves are serialised
                // by the roots' namespace lock.
                let text = e.to_string();
                if text.contains("exists already") {
                    panic!(
                        "move to {} refused: {e}; there: {:?}",
                        to.display(),
                        contents(to)
                    );
                }
                assert!(
                    text.contains("already in root"),
                    "move to {}: {e}",
                    to.display()
                );
                false
            }
            Err(e) => panic!("move to {}: {e}", to.display()),
        },
        Movers::Killed => {
            let mut mover = launcher.spawn(
                "mover",
                "move",
                &[
                    ("request", ds.to_string()),
                    ("to", to.display().to_string()),
                ],
            );
            mover.wait_for_line("start");
            std::thread::sleep(Duration::from_micros(rng.below(40_000)));
            let f = mover.kill();
            if f.status.success() {
                return f.out.contains("done");
            }
            // Killed, or refused: only "already there" or "not created
            // yet" may refuse.
            assert!(
                f.status.code().is_none() || f.err.contains("InvalidInput"),
                "move to {} ({}): {}",
                to.display(),
                f.status,
                f.err
            );
            false
        }
    }
}

/// One run: writers, readers and a watcher start together; `movers` move
/// the dataset between `a` and `b` until the writers are done (and at
/// least [`MOVES`] times); then everything is checked.
fn run(dir: &Path, a: &Path, b: &Path, expver: &str, seed: u64, movers: Movers) {
    let launcher = launcher(dir, &[a, b]);
    let s = Streams {
        expver: expver.into(),
        writers: WRITERS,
        fields: 60,
        flush_every: 3,
        min_len: 28,
        max_len: 4096,
    };
    let stop = dir.join(format!("stop-{expver}"));
    let mut writers: Vec<Worker> = (0..WRITERS)
        .map(|w| {
            let mut flags = processes::streams_args(&s);
            flags.push(("writer", w.to_string()));
            flags.push(("handle-per-flush", (w % 2).to_string()));
            launcher.spawn_held(format!("writer {w}"), "write-groups", &flags)
        })
        .collect();
    let mut readers: Vec<Worker> = (0..READERS)
        .map(|r| {
            let mut flags = processes::streams_args(&s);
            flags.push(("stop", stop.display().to_string()));
            launcher.spawn_held(format!("reader {r}"), "read-steady", &flags)
        })
        .collect();
    let mut watcher = launcher.spawn_held(
        "watcher",
        "watch",
        &[
            ("request", s.dataset_request().to_string()),
            ("timeout-secs", "600".to_string()),
        ],
    );
    processes::release_together(
        writers
            .iter_mut()
            .chain(readers.iter_mut())
            .chain(std::iter::once(&mut watcher)),
    );
    let fs = must(launcher.open(), "open");
    let mut rng = Rng::new(seed);
    let ds = s.dataset_request();
    // Moves started (each killed one started too), and those that ran to
    // their end.
    let (mut moves, mut finished) = (0, 0);
    let mut round = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while writers.iter_mut().any(Worker::is_running) || moves < MOVES {
        assert!(
            Instant::now() < deadline,
            "{moves} moves in two minutes ({round} tried; the writers said: {:?}; the store: {:?})",
            writers
                .iter_mut()
                .map(Worker::is_running)
                .collect::<Vec<_>>(),
            fs.status(&ds).map(|s| s
                .iter()
                .map(|d| (d.place.clone(), d.damage.clone()))
                .collect::<Vec<_>>())
        );
        let to = if round % 2 == 0 { b } else { a };
        round += 1;
        let ended = move_once(&fs, &launcher, movers, &ds, to, &mut rng);
        finished += usize::from(ended);
        if ended || movers == Movers::Killed {
            moves += 1;
        }
        std::thread::sleep(Duration::from_micros(rng.below(5000)));
    }
    // A move killed last is finished (or undone) by moving again.
    if movers == Movers::Killed {
        for to in [a, b] {
            match fs.move_datasets(&ds, to) {
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::InvalidInput => {}
                Err(e) => panic!("finishing the moves: {e}"),
            }
        }
    }
    let said: Vec<Outcomes> = writers
        .drain(..)
        .enumerate()
        .map(|(w, child)| outcomes(w, &child.finish_done().out))
        .collect();
    std::fs::write(&stop, b"").unwrap();
    for (r, child) in readers.drain(..).enumerate() {
        let f = child.finish();
        assert!(f.status.success(), "reader {r} ({}): {}", f.status, f.err);
        assert!(f.out.contains("polls"), "reader {r}: {}", f.out);
    }
    // Give the watcher time to see the last flushes, then stop it.
    std::thread::sleep(Duration::from_secs(2));
    let watched = watcher.kill();
    assert!(watched.err.trim().is_empty(), "watcher: {}", watched.err);

    let fs = must(launcher.open(), "open");
    let mut flushed = BTreeSet::new();
    let mut failures = 0;
    for (w, o) in said.iter().enumerate() {
        for &(first, end) in &o.flushed {
            for i in first..end {
                let k = s.key(w, i);
                assert_eq!(
                    retrieve_one(&fs, &k).as_deref(),
                    Some(s.payload(&fs, w, i).as_slice()),
                    "field {i} of writer {w}: its flush returned success"
                );
                flushed.insert(fieldstore_testkit::support::canonical(&fs, &k));
            }
        }
        for (first, end, why) in &o.failed {
            failures += 1;
            assert!(
                why.starts_with("NotFound") && why.contains("moved to another file system"),
                "writer {w}, fields {first}..{end}: a flush may fail only because the dataset \
                 moved away, definitely: {why}"
            );
            for i in *first..*end {
                assert_eq!(
                    retrieve_one(&fs, &s.key(w, i)),
                    None,
                    "field {i} of writer {w}: its flush failed ({why}), so it must not be visible"
                );
            }
        }
    }
    let listed = must(fs.list(&ds, ListOptions::default()), "list");
    assert_eq!(
        listed.len(),
        flushed.len(),
        "each flushed field listed once"
    );
    // The watcher: each flushed field once, nothing else.
    let mut reported: BTreeMap<String, usize> = BTreeMap::new();
    for line in watched.out.lines() {
        if let Some(key) = line.strip_prefix("field ") {
            *reported.entry(key.to_string()).or_default() += 1;
        } else {
            assert!(
                matches!(line, "ready" | "done"),
                "watcher reported {line:?} (the workload replaces nothing)"
            );
        }
    }
    let twice: Vec<_> = reported.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "reported more than once: {twice:?}");
    let reported: BTreeSet<String> = reported.into_keys().collect();
    let missed: Vec<_> = flushed.difference(&reported).collect();
    let extra: Vec<_> = reported.difference(&flushed).collect();
    assert!(
        missed.is_empty(),
        "the watcher missed {} flushed fields: {missed:?}",
        missed.len()
    );
    assert!(
        extra.is_empty(),
        "the watcher reported fields never flushed: {extra:?}"
    );
    // One dataset, undamaged; nothing left behind.
    let status = must(fs.status(&ds), "status");
    assert_eq!(status.len(), 1, "{status:?}");
    assert!(status[0].damage.is_empty(), "{status:?}");
    for root in [a, b] {
        let names: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let hidden: Vec<(String, Vec<String>)> = names
            .iter()
            .filter(|n| n.starts_with('.'))
            .map(|n| {
                let inside = std::fs::read_dir(root.join(n))
                    .map(|d| {
                        d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                (n.clone(), inside)
            })
            .collect();
        assert!(
            hidden.is_empty(),
            "left behind in {}: {hidden:?}",
            root.display()
        );
    }
    let datasets = must(
        fs.list(
            &ds,
            ListOptions {
                depth: Level::Dataset,
                duplicates: false,
            },
        ),
        "list datasets",
    );
    assert_eq!(datasets.len(), 1);
    eprintln!(
        "{expver}: {moves} moves ({finished} ran to their end), {} fields flushed, {failures} flushes failed (moved away), {} \
         reported by the watcher",
        flushed.len(),
        reported.len()
    );
}

#[test]
fn moves_within_one_file_system_racing_writers_readers_and_a_watcher() {
    let _serial = one_at_a_time();
    for (n, seed) in [(0, 7u64), (1, 11), (2, 13)] {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        run(
            dir.path(),
            &a,
            &b,
            &format!("mw{n}"),
            seed,
            Movers::ThisProcess,
        );
    }
}

/// Three runs with `b` on a tmpfs of its own (moves copy), moved by
/// `movers`; expvers `<prefix>0`, `<prefix>1`, …
fn across_file_systems(prefix: &str, seeds: [u64; 3], movers: Movers) {
    let _serial = one_at_a_time();
    for (n, seed) in seeds.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let Some(b) = Tmpfs::mount(&dir.path().join("b"), "256m") else {
            return;
        };
        run(
            dir.path(),
            &a,
            b.path(),
            &format!("{prefix}{n}"),
            seed,
            movers,
        );
    }
}

#[test]
fn moves_across_file_systems_racing_writers_readers_and_a_watcher() {
    across_file_systems("mx", [17, 19, 23], Movers::ThisProcess);
}

#[test]
fn moves_killed_at_random_instants_racing_writers_readers_and_a_watcher() {
    across_file_systems("mk", [29, 31, 37], Movers::Killed);
}
