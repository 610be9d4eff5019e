//! Clauses 7 and 8 with real processes on a real Ceph cluster (RADOS
//! catalogue and store):
//!
//! - four writer processes × 1,000 fields into one dataset while two reader
//!   processes poll list and retrieve: every flushed field is found with its
//!   bytes, none is ever partial, none lost (with 16 KiB log segments, so
//!   the writers also race to seal and continue the log);
//! - a writer killed with SIGKILL at random instants, 25 times into one
//!   dataset: nothing partial or corrupt is ever visible, and everything the
//!   writer reported flushed stays readable.
//!
//! This binary is its own worker: `processes worker write|read --config F …`
//! runs one [`Streams`] writer or [`Observer`] reader on the store the
//! config file names (the testkit's worker binary knows only POSIX roots).
//! It has no libtest harness, so it prints its own result line.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fieldstore::{Config, FieldStore};
use fieldstore_testkit::rng::Rng;
use fieldstore_testkit::streams::{Observer, Streams};
use fieldstore_testkit::support::{must, schema};

// ---- worker side --------------------------------------------------------------

fn open_config(path: &str) -> Result<FieldStore, String> {
    let mut c = Config::from_file(Path::new(path)).map_err(|e| format!("config {path}: {e}"))?;
    c.schema = schema();
    FieldStore::open(c).map_err(|e| format!("opening the store of {path}: {e}"))
}

fn worker(args: &[String]) -> Result<ExitCode, String> {
    let (command, rest) = args.split_first().ok_or("worker needs write or read")?;
    let mut map = HashMap::new();
    for pair in rest.chunks(2) {
        let [flag, value] = pair else {
            return Err(format!("{pair:?}: flags take a value"));
        };
        let name = flag
            .strip_prefix("--")
            .ok_or(format!("unexpected {flag:?}"))?;
        map.insert(name.to_string(), value.clone());
    }
    let text = |k: &str| map.get(k).cloned().ok_or(format!("--{k} is required"));
    let num = |k: &str| -> Result<usize, String> {
        text(k)?
            .parse()
            .map_err(|_| format!("--{k} is not a number"))
    };
    let s = Streams {
        expver: text("expver")?,
        writers: num("writers")?,
        fields: num("fields")?,
        flush_every: num("flush-every")?,
        min_len: num("min-len")?,
        max_len: num("max-len")?,
    };
    let fs = open_config(&text("config")?)?;
    match command.as_str() {
        "write" => {
            let writer = num("writer")?;
            let mut out = std::io::stdout().lock();
            s.write(&fs, writer, &mut |n| {
                // The test trusts this line only once flush has returned.
                let _ = writeln!(out, "flushed {n}");
                let _ = out.flush();
            })
            .map_err(|e| format!("writer {writer}: {e}"))?;
            let _ = writeln!(out, "done");
            Ok(ExitCode::SUCCESS)
        }
        "read" => {
            let until = num("until-fields")?;
            let timeout = Duration::from_secs(num("timeout-secs")? as u64);
            let floor = vec![0; s.writers];
            let mut observer = Observer::new(s);
            let start = Instant::now();
            loop {
                let seen = observer.poll(&fs, &floor)?;
                let total: usize = seen.iter().sum();
                if total >= until {
                    println!("polls {} fields {total}", observer.polls);
                    return Ok(ExitCode::SUCCESS);
                }
                if start.elapsed() > timeout {
                    eprintln!(
                        "reader: timed out with {total} of {until} fields visible ({seen:?})"
                    );
                    return Ok(ExitCode::from(2));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        other => Err(format!("unknown worker command {other:?}")),
    }
}

// ---- test side ----------------------------------------------------------------

struct Setup {
    cluster: &'static common::Cluster,
    config_file: std::path::PathBuf,
    config: Config,
    _dir: tempfile::TempDir,
}

fn setup(name: &str) -> Option<Setup> {
    let cluster = common::cluster()?;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ns = common::namespace(name);
    // 16 KiB log segments: the writer processes race to seal and continue
    // the dataset's log many times.
    let yaml = format!(
        "engine: rados\nstore: rados\n{}  log_segment_size: 16384\n",
        cluster.section(&ns)
    );
    let config_file = dir.path().join("config.yaml");
    std::fs::write(&config_file, &yaml).expect("writing the config");
    let mut config = Config::from_file(&config_file).expect("the test config");
    config.schema = schema();
    Some(Setup {
        cluster,
        config,
        config_file,
        _dir: dir,
    })
}

fn spawn(setup: &Setup, command: &str, s: &Streams, extra: &[(&str, String)]) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("this test binary"));
    c.args(["worker", command])
        .arg("--config")
        .arg(&setup.config_file)
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

fn finish(mut child: Child, what: &str) -> (std::process::ExitStatus, String, String) {
    let mut out = String::new();
    let mut stderr = child.stderr.take().expect("piped stderr");
    let t = std::thread::spawn(move || {
        let mut e = String::new();
        let _ = stderr.read_to_string(&mut e);
        e
    });
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut out)
        .unwrap_or_else(|e| panic!("reading the output of {what}: {e}"));
    let err = t.join().expect("stderr reader");
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

fn four_writer_processes_two_reader_processes(setup: &Setup) {
    let s = Streams {
        expver: "prc1".into(),
        writers: 4,
        fields: 1000,
        flush_every: 10,
        min_len: 28,
        max_len: 1024,
    };
    let total = s.writers * s.fields;
    let readers: Vec<Child> = (0..2)
        .map(|r| {
            spawn(
                setup,
                "read",
                &s,
                &[
                    ("until-fields", total.to_string()),
                    ("timeout-secs", "240".into()),
                ],
            )
            .spawn()
            .unwrap_or_else(|e| panic!("starting reader {r}: {e}"))
        })
        .collect();
    let writers: Vec<Child> = (0..s.writers)
        .map(|w| {
            spawn(setup, "write", &s, &[("writer", w.to_string())])
                .spawn()
                .unwrap_or_else(|e| panic!("starting writer {w}: {e}"))
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
    let fs = must(FieldStore::open(setup.config.clone()), "open");
    let all = vec![s.fields; s.writers];
    let seen = Observer::new(s.clone())
        .poll(&fs, &all)
        .unwrap_or_else(|e| panic!("after all processes finished: {e}"));
    assert_eq!(seen, all, "fields visible per writer at the end");
}

/// Spawn a writer, let it report `flushes` flushes, wait a random few
/// hundred microseconds more, and SIGKILL it. Returns what it reported.
fn kill_writer_after(
    setup: &Setup,
    s: &Streams,
    writer: usize,
    flushes: usize,
    rng: &mut Rng,
) -> usize {
    let mut child = spawn(setup, "write", s, &[("writer", writer.to_string())])
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting writer {writer}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel::<usize>();
    let lines = std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let mut reported = 0;
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
            break;
        }
    }
    std::thread::sleep(Duration::from_micros(rng.below(3000)));
    let _ = child.kill();
    let status = child.wait().expect("waiting for the killed writer");
    let reported = lines.join().expect("the stdout reader");
    assert!(
        status.success() || status.signal() == Some(9),
        "writer {writer} failed by itself ({status}) before it was killed"
    );
    reported
}

fn writers_killed_at_random_instants_lose_nothing_flushed(setup: &Setup) {
    const TRIALS: usize = 25;
    let mut rng = Rng::from_env("sigkill trials");
    let s = Streams {
        expver: "kil1".into(),
        writers: TRIALS + 1,
        fields: 100,
        flush_every: 5,
        min_len: 28,
        max_len: 2048,
    };
    let flushes = s.fields.div_ceil(s.flush_every);
    let mut observer = Observer::new(s.clone());
    let mut floor = vec![0; s.writers];
    let mut stats = [0usize; 3];
    for t in 0..TRIALS {
        let after = rng.below(flushes as u64 + 1) as usize;
        let reported = kill_writer_after(setup, &s, t, after, &mut rng);
        floor[t] = reported;
        let before: Vec<usize> = observer.seen().to_vec();
        let fs = must(FieldStore::open(setup.config.clone()), "open after a kill");
        let seen = observer.poll(&fs, &floor).unwrap_or_else(|e| {
            panic!(
                "trial {t}: writer killed after {after} flushes ({reported} reported flushed): {e}"
            )
        });
        for w in 0..t {
            assert_eq!(
                seen[w], before[w],
                "trial {t}: writer {w}, killed earlier, changed"
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
    let fs = must(FieldStore::open(setup.config.clone()), "open");
    must(
        s.write(&fs, TRIALS, &mut |_| ()),
        "a writer after the crashes",
    );
    floor[TRIALS] = s.fields;
    let seen = observer
        .poll(
            &must(FieldStore::open(setup.config.clone()), "open"),
            &floor,
        )
        .unwrap_or_else(|e| panic!("after the last writer: {e}"));
    assert_eq!(seen[TRIALS], s.fields, "the writer after the crashes");
    let _ = setup.cluster;
}

type Test = (&'static str, fn(&Setup));

const TESTS: &[Test] = &[
    (
        "four_writer_processes_two_reader_processes",
        four_writer_processes_two_reader_processes,
    ),
    (
        "writers_killed_at_random_instants_lose_nothing_flushed",
        writers_killed_at_random_instants_lose_nothing_flushed,
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        return match worker(&args[1..]) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("worker: {e}");
                ExitCode::FAILURE
            }
        };
    }
    // libtest's command line: filters are kept; flags are ignored, with
    // the value of those that take one; `--list` lists.
    let mut filters: Vec<&String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--list" => {
                for (name, _) in TESTS {
                    println!("{name}: test");
                }
                return ExitCode::SUCCESS;
            }
            "--test-threads" | "--skip" | "--format" | "--color" | "--logfile" | "-Z" => {
                it.next();
            }
            f if f.starts_with('-') => {}
            _ => filters.push(a),
        }
    }
    let tests: Vec<&Test> = TESTS
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    println!("running {} tests", tests.len());
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        let result = std::panic::catch_unwind(|| match setup(name) {
            Some(s) => {
                test(&s);
                "ok"
            }
            None => "skipped (no Ceph)",
        });
        match result {
            Ok(outcome) => {
                println!("test {name} ... {outcome}");
                passed += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    let status = if failed == 0 { "ok" } else { "FAILED" };
    println!("\ntest result: {status}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
