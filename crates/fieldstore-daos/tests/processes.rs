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
//! This executable is its own worker (`harness = false`): started with
//! `FIELDSTORE_DAOS_TEST_ROLE` set, it runs one writer or reader instead
//! of the tests.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fieldstore::{ErrorKind, FieldStore};
use fieldstore_testkit::rng::Rng;
use fieldstore_testkit::streams::{Observer, Streams};
use fieldstore_testkit::support::{must, schema};

const ROLE: &str = "FIELDSTORE_DAOS_TEST_ROLE";

fn streams_from_env() -> Streams {
    let n = |k: &str| -> usize {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("worker: {k} is not set"))
    };
    Streams {
        expver: std::env::var("W_EXPVER").expect("W_EXPVER"),
        writers: n("W_WRITERS"),
        fields: n("W_FIELDS"),
        flush_every: n("W_FLUSH_EVERY"),
        min_len: n("W_MIN_LEN"),
        max_len: n("W_MAX_LEN"),
    }
}

fn worker_open() -> fieldstore::Result<FieldStore> {
    let pool = std::env::var("W_POOL").expect("W_POOL");
    FieldStore::open(common::config(&pool, schema()))
}

/// A child process: `write`, `read` or `open`. Its exit code is the result.
fn worker(role: &str) -> ExitCode {
    use std::io::Write;
    match role {
        "write" => {
            let s = streams_from_env();
            let w: usize = std::env::var("W_WRITER")
                .ok()
                .and_then(|v| v.parse().ok())
                .expect("W_WRITER");
            let fs = match worker_open() {
                Ok(fs) => fs,
                Err(e) => {
                    eprintln!("writer {w}: open: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let mut out = std::io::stdout().lock();
            if let Err(e) = s.write(&fs, w, &mut |n| {
                let _ = writeln!(out, "flushed {n}");
                let _ = out.flush();
            }) {
                eprintln!("writer {w}: {e}");
                return ExitCode::FAILURE;
            }
            let _ = writeln!(out, "done");
            ExitCode::SUCCESS
        }
        "read" => {
            let s = streams_from_env();
            let until = s.writers * s.fields;
            let fs = match worker_open() {
                Ok(fs) => fs,
                Err(e) => {
                    eprintln!("reader: open: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let floor = vec![0; s.writers];
            let mut obs = Observer::new(s);
            let start = Instant::now();
            loop {
                let seen = match obs.poll(&fs, &floor) {
                    Ok(seen) => seen,
                    Err(e) => {
                        eprintln!("reader: {e}");
                        return ExitCode::FAILURE;
                    }
                };
                let total: usize = seen.iter().sum();
                if total >= until {
                    println!("polls {} fields {total}", obs.polls);
                    return ExitCode::SUCCESS;
                }
                if start.elapsed() > Duration::from_secs(240) {
                    eprintln!("reader: timed out with {total} of {until} fields ({seen:?})");
                    return ExitCode::from(2);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        "open" => {
            match worker_open() {
                Ok(_) => println!("opened"),
                Err(e) => println!("error {:?}: {e}", e.kind()),
            }
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("unknown role {other}");
            ExitCode::from(3)
        }
    }
}

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

fn child(role: &str, pool: &str, s: &Streams, extra: &[(&str, String)]) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("this executable"));
    c.env(ROLE, role)
        .env("DAOS_STANDIN_DIR", pool_dir())
        .env("W_POOL", pool)
        .env("W_EXPVER", &s.expver)
        .env("W_WRITERS", s.writers.to_string())
        .env("W_FIELDS", s.fields.to_string())
        .env("W_FLUSH_EVERY", s.flush_every.to_string())
        .env("W_MIN_LEN", s.min_len.to_string())
        .env("W_MAX_LEN", s.max_len.to_string())
        .env_remove("FIELDSTORE_DAOS_LIBRARY")
        .env_remove("DAOS_STANDIN_NO_AGENT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        c.env(k, v);
    }
    c
}

fn finish(mut child: Child, what: &str) -> (std::process::ExitStatus, String, String) {
    let mut out = String::new();
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

fn open_pool(pool: &str) -> FieldStore {
    pool_dir();
    must(FieldStore::open(common::config(pool, schema())), "open")
}

fn fresh_pool(prefix: &str) -> String {
    pool_dir();
    common::standin().fresh_pool(prefix)
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
    let readers: Vec<Child> = (0..2)
        .map(|r| {
            child("read", &pool, &s, &[])
                .spawn()
                .unwrap_or_else(|e| panic!("starting reader {r}: {e}"))
        })
        .collect();
    let writers: Vec<Child> = (0..s.writers)
        .map(|w| {
            child(
                "write",
                &pool,
                &s,
                &[
                    ("W_WRITER", w.to_string()),
                    ("DAOS_STANDIN_COUNTERS", counters.display().to_string()),
                ],
            )
            .spawn()
            .unwrap_or_else(|e| panic!("starting writer {w}: {e}"))
        })
        .collect();
    for (w, c) in writers.into_iter().enumerate() {
        let (status, out, err) = finish(c, &format!("writer {w}"));
        assert!(status.success(), "writer {w} failed ({status}): {err}");
        assert_eq!(last_flushed(&out), s.fields, "writer {w}: {out}");
        assert!(out.ends_with("done\n"), "writer {w}: {out}");
    }
    for (r, c) in readers.into_iter().enumerate() {
        let (status, out, err) = finish(c, &format!("reader {r}"));
        assert!(
            status.success(),
            "reader {r} found a violation or timed out ({status}):\n{err}"
        );
        println!("  reader {r}: {}", out.trim());
    }
    let fs = open_pool(&pool);
    let all = vec![s.fields; s.writers];
    let seen = Observer::new(s.clone())
        .poll(&fs, &all)
        .unwrap_or_else(|e| panic!("after all processes finished: {e}"));
    assert_eq!(seen, all, "fields visible per writer at the end");
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
    assert_eq!(writes, fields, "one array write per field");
    assert!(
        puts <= fields,
        "at most one KV put per field, amortised ({puts})"
    );
    assert!(
        puts + gets <= 8 * flushes,
        "finding a free log slot under contention: {puts} puts and {gets} gets for {flushes} flushes"
    );
}

/// Spawn a writer, let it report `flushes` flushes, wait a random few
/// hundred microseconds more, and SIGKILL it. Returns what it reported.
fn kill_writer_after(
    pool: &str,
    s: &Streams,
    writer: usize,
    flushes: usize,
    rng: &mut Rng,
) -> usize {
    let mut c = child("write", pool, s, &[("W_WRITER", writer.to_string())])
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting writer {writer}: {e}"));
    let stdout = c.stdout.take().expect("piped stdout");
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
    std::thread::sleep(Duration::from_micros(rng.below(1500)));
    let _ = c.kill();
    let status = c.wait().expect("waiting for the killed writer");
    let reported = lines.join().expect("the stdout reader");
    assert!(
        status.success() || status.signal() == Some(9),
        "writer {writer} failed by itself ({status}) before it was killed"
    );
    reported
}

fn writers_killed_at_random_instants_lose_nothing_flushed() {
    const TRIALS: usize = 24;
    let mut rng = Rng::from_env("sigkill trials");
    let pool = fresh_pool("kil");
    let s = Streams {
        expver: "dkl1".into(),
        writers: TRIALS + 1,
        fields: 60,
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
        let reported = kill_writer_after(&pool, &s, t, after, &mut rng);
        floor[t] = reported;
        let before = observer.seen().to_vec();
        let fs = open_pool(&pool);
        let seen = observer.poll(&fs, &floor).unwrap_or_else(|e| {
            panic!("trial {t}: writer killed after {after} flushes ({reported} reported): {e}")
        });
        for w in 0..t {
            assert_eq!(
                seen[w], before[w],
                "trial {t}: writer {w} of an earlier trial changed"
            );
        }
        stats[match seen[t] {
            0 => 0,
            n if n == s.fields => 2,
            _ => 1,
        }] += 1;
    }
    println!(
        "  killed {TRIALS} writers: {} with nothing visible, {} part-way, {} complete",
        stats[0], stats[1], stats[2]
    );
    let fs = open_pool(&pool);
    must(
        s.write(&fs, TRIALS, &mut |_| ()),
        "a writer after the crashes",
    );
    floor[TRIALS] = s.fields;
    let seen = observer
        .poll(&open_pool(&pool), &floor)
        .unwrap_or_else(|e| panic!("after the last writer: {e}"));
    assert_eq!(seen[TRIALS], s.fields);
}

fn unavailable_without_agent_or_library() {
    let pool = fresh_pool("una");
    let s = Streams {
        expver: "x".into(),
        writers: 1,
        fields: 1,
        flush_every: 1,
        min_len: 28,
        max_len: 28,
    };
    let cases = [
        ("no agent", vec![("DAOS_STANDIN_NO_AGENT", "1".to_string())]),
        (
            "no library",
            vec![(
                "FIELDSTORE_DAOS_LIBRARY",
                "/nonexistent/lib64/libdaos.so.2".to_string(),
            )],
        ),
    ];
    for (what, env) in cases {
        let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.clone())).collect();
        let (status, out, err) = finish(
            child("open", &pool, &s, &env).spawn().expect("a worker"),
            what,
        );
        assert!(status.success(), "{what}: {err}");
        assert!(
            out.starts_with(&format!(
                "error {:?}: DAOS unavailable",
                ErrorKind::Unavailable
            )),
            "{what}: {out}"
        );
        println!("  {what}: {}", out.trim());
    }
    let (_, out, err) = finish(
        child("open", &pool, &s, &[]).spawn().expect("a worker"),
        "ok",
    );
    assert_eq!(out.trim(), "opened", "{err}");
}

/// The whole conformance suite, damage check included, on one pool of the
/// directory backend (the in-memory runs are in `conformance.rs`).
fn conformance_on_the_directory_backend() {
    let pool = fresh_pool("cnf");
    let open = move || FieldStore::open(common::config(&pool, schema()));
    fieldstore_testkit::run_all(
        &open,
        &fieldstore_testkit::Capabilities {
            corrupt: Some(&common::corrupt),
        },
    );
}

fn main() -> ExitCode {
    if let Ok(role) = std::env::var(ROLE) {
        return worker(&role);
    }
    let tests: &[(&str, fn())] = &[
        (
            "four_writer_processes_two_reader_processes",
            four_writer_processes_two_reader_processes,
        ),
        (
            "writers_killed_at_random_instants_lose_nothing_flushed",
            writers_killed_at_random_instants_lose_nothing_flushed,
        ),
        (
            "unavailable_without_agent_or_library",
            unavailable_without_agent_or_library,
        ),
        (
            "conformance_on_the_directory_backend",
            conformance_on_the_directory_backend,
        ),
    ];
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<_> = tests
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, test) in &selected {
        let start = Instant::now();
        let r = std::panic::catch_unwind(test);
        let ok = r.is_ok();
        println!(
            "test {name} ... {} ({:.1}s)",
            if ok { "ok" } else { "FAILED" },
            start.elapsed().as_secs_f64()
        );
        if !ok {
            failed.push(*name);
        }
    }
    let _ = std::fs::remove_dir_all(pool_dir());
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failed.len(),
        failed.len(),
        tests.len() - selected.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
