//! Tests with real processes: worker processes that write and read one
//! store at once, released together, killed with SIGKILL at random points,
//! their reports collected and checked, each under a time limit so that a
//! hung worker fails its test instead of hanging CI.
//!
//! Every backend runs the same scenarios ([`writers_and_readers`],
//! [`writers_killed_at_random_instants`]) with workers that take the
//! backend from an FDB5-YAML config file (`--config FILE`, loaded by
//! [`load_config`]), so one worker ([`worker_main`]) serves them all:
//!
//! - this crate's tests run it as the binary `fieldstore-testkit-worker`
//!   (`env!("CARGO_BIN_EXE_fieldstore-testkit-worker")`, [`Launcher::new`]);
//! - another crate's tests cannot name that binary (cargo builds and names
//!   only a package's own binaries for its tests), so such a test is a
//!   `harness = false` binary that is its own worker: its `main` starts
//!   with [`worker_from_args`], then runs its tests with [`run_tests`], and
//!   it starts workers with [`Launcher::this_executable`].
//!
//! Guarantees of the test side:
//!
//! - a [`Worker`] is killed and reaped when dropped, so a failing test
//!   leaves no process behind;
//! - every wait on a worker ([`Worker::wait_for_line`], [`Worker::finish`],
//!   [`Worker::kill_after_flushes`], [`Worker::kill`], [`release_together`])
//!   ends at the worker's deadline ([`Launcher::timeout`] after it was
//!   started, [`DEFAULT_TIMEOUT`] unless set): past it the worker is killed
//!   and the test panics with what it had printed;
//! - [`release_together`] starts a group's workloads only when every member
//!   has opened its store, so start-up (exec, connecting to a cluster) does
//!   not stagger them;
//! - [`Worker::kill_after_flushes`] kills with SIGKILL and counts only the
//!   `flushed` lines the worker printed whole before it died: a worker
//!   prints such a line only after its flush returned.

mod scenarios;
mod stop;
pub mod worker;

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitCode, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fieldstore::{Config, FieldStore};

pub use scenarios::{
    a_lock_from_another_process_stops_a_writer_that_reads,
    purge_reclaims_only_what_killed_writers_left, watchers_see_exactly_what_is_flushed,
    writer_paused_across_its_commit_while_purge_runs, writers_and_readers,
    writers_killed_at_random_instants,
};
pub use worker::{worker_main, USAGE};

use crate::streams::Streams;

/// The first argument that makes a test binary run as a worker
/// ([`worker_from_args`], [`Launcher::this_executable`]).
pub const WORKER_ARG: &str = "worker";

/// How long a worker may run unless [`Launcher::timeout`] says otherwise:
/// longer than a reader's own time limit ([`READER_TIMEOUT_SECS`]), so
/// that a reader that times out says so itself.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The time limit the scenarios give their reader workers
/// (`--timeout-secs`): a reader still short of every field then exits with
/// status 2 and says what it saw.
pub const READER_TIMEOUT_SECS: u64 = 240;

/// Read the FDB5-YAML config file at `path`, with the hammer schema
/// ([`crate::support::schema`]) whatever it names: the workloads' keys are
/// written for that schema. Workers and the tests' own handles load their
/// config this way, so both open the same store.
///
/// # Errors
/// As [`Config::from_file`].
pub fn load_config(path: &Path) -> fieldstore::Result<Config> {
    let mut config = Config::from_file(path)?;
    config.schema = crate::support::schema();
    Ok(config)
}

/// Write the config file `path` (YAML) and return its path.
///
/// # Panics
/// If the file cannot be written.
pub fn write_config(path: impl Into<PathBuf>, yaml: &str) -> PathBuf {
    let path = path.into();
    std::fs::write(&path, yaml)
        .unwrap_or_else(|e| panic!("writing the config {}: {e}", path.display()));
    path
}

/// The YAML of a POSIX store (`engine: toc`, `store: file`) on one root,
/// which must exist.
pub fn posix_yaml(root: &Path) -> String {
    format!(
        "engine: toc\nstore: file\nspaces:\n- roots:\n  - path: {}\n",
        root.display()
    )
}

/// The flags that describe a [`Streams`] workload to `write` and `read`.
pub fn streams_args(s: &Streams) -> Vec<(&'static str, String)> {
    vec![
        ("expver", s.expver.clone()),
        ("writers", s.writers.to_string()),
        ("fields", s.fields.to_string()),
        ("flush-every", s.flush_every.to_string()),
        ("min-len", s.min_len.to_string()),
        ("max-len", s.max_len.to_string()),
    ]
}

/// The largest `n` of the `flushed <n>` lines of a writer's output (0 if
/// none).
pub fn last_flushed(out: &str) -> usize {
    out.lines()
        .filter_map(|l| l.strip_prefix("flushed "))
        .filter_map(|n| n.trim().parse().ok())
        .max()
        .unwrap_or(0)
}

/// How to start worker processes onto one store: the program, the config
/// file every worker is given (`--config`), environment changes, and the
/// time limit of each worker.
#[derive(Debug, Clone)]
pub struct Launcher {
    program: PathBuf,
    leading: Vec<OsString>,
    config: PathBuf,
    env: Vec<(OsString, Option<OsString>)>,
    timeout: Duration,
}

impl Launcher {
    /// Workers run by `program` (a binary whose arguments are
    /// [`worker_main`]'s, such as `fieldstore-testkit-worker`) on the store
    /// of the config file `config`.
    pub fn new(program: impl Into<PathBuf>, config: impl Into<PathBuf>) -> Launcher {
        Launcher {
            program: program.into(),
            leading: Vec::new(),
            config: config.into(),
            env: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Workers run by this executable as `<exe> worker …`: for a
    /// `harness = false` test binary whose `main` calls
    /// [`worker_from_args`] first.
    ///
    /// # Panics
    /// If this executable's path is unknown.
    pub fn this_executable(config: impl Into<PathBuf>) -> Launcher {
        let exe = std::env::current_exe().expect("the path of this test executable");
        let mut l = Launcher::new(exe, config);
        l.leading.push(WORKER_ARG.into());
        l
    }

    /// Set an environment variable in the workers (after the changes made
    /// before).
    #[must_use]
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Launcher {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Remove an environment variable from the workers' environment.
    #[must_use]
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Launcher {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// The time limit of each worker, from its start.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Launcher {
        self.timeout = timeout;
        self
    }

    /// The config file the workers are given.
    pub fn config(&self) -> &Path {
        &self.config
    }

    /// A handle in this process onto the workers' store (the config file,
    /// loaded by [`load_config`]).
    ///
    /// # Errors
    /// As [`load_config`] and [`FieldStore::open`].
    pub fn open(&self) -> fieldstore::Result<FieldStore> {
        FieldStore::open(load_config(&self.config)?)
    }

    /// The command line of worker `command` with `--config` and `flags`
    /// (`("writer", "3")` is `--writer 3`), stdout and stderr piped,
    /// stdin `/dev/null`.
    pub fn command(&self, command: &str, flags: &[(&str, String)]) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.leading)
            .arg(command)
            .arg("--config")
            .arg(&self.config);
        for (k, v) in flags {
            c.arg(format!("--{k}")).arg(v);
        }
        for (k, v) in &self.env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn start(&self, what: String, command: &str, flags: &[(&str, String)], held: bool) -> Worker {
        Worker::start(what, self.command(command, flags), held, self.timeout)
    }

    /// Start worker `command` (described in messages as `what`); `write`
    /// and `read` start their workload at once.
    ///
    /// # Panics
    /// If the process cannot be started.
    pub fn spawn(
        &self,
        what: impl Into<String>,
        command: &str,
        flags: &[(&str, String)],
    ) -> Worker {
        self.start(what.into(), command, flags, false)
    }

    /// Start worker `command` held: `write` and `read` open the store, say
    /// `ready` and wait for [`Worker::release`] (or [`release_together`])
    /// before they start their workload.
    ///
    /// # Panics
    /// If the process cannot be started.
    pub fn spawn_held(
        &self,
        what: impl Into<String>,
        command: &str,
        flags: &[(&str, String)],
    ) -> Worker {
        self.start(what.into(), command, flags, true)
    }
}

/// What a worker left when it exited.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its standard output, less the lines [`Worker::wait_for_line`]
    /// consumed (`ready`).
    pub out: String,
    /// Its standard error.
    pub err: String,
}

/// A running worker process. Dropping it kills it (SIGKILL) and reaps it.
#[derive(Debug)]
pub struct Worker {
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Stdout as `read_line` gives it: whole lines end with `\n`; the last
    /// piece may not, if the worker died mid-line.
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    out: String,
    deadline: Instant,
    timeout: Duration,
    reaped: bool,
}

impl Worker {
    fn start(what: String, mut command: Command, held: bool, timeout: Duration) -> Worker {
        if held {
            command.stdin(Stdio::piped());
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what} ({command:?}): {e}"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(n) if n > 0 => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut e = String::new();
            let _ = stderr.read_to_string(&mut e);
            e
        });
        Worker {
            what,
            child,
            stdin,
            lines,
            stderr: Some(stderr),
            out: String::new(),
            deadline: Instant::now() + timeout,
            timeout,
            reaped: false,
        }
    }

    /// The worker's description in messages.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Kill the worker past its deadline and fail the test with what it
    /// printed.
    fn hung(&mut self, doing: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
        while let Ok(piece) = self.lines.recv_timeout(Duration::from_secs(1)) {
            self.out.push_str(&piece);
        }
        let err = self.take_stderr();
        panic!(
            "{} did not {doing} within its time limit of {:?}: killed it.\nstdout:\n{}\nstderr:\n{err}",
            self.what, self.timeout, self.out
        );
    }

    fn take_stderr(&mut self) -> String {
        self.stderr
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// The next piece of stdout (a line, `\n` included, or a last partial
    /// one); `None` at its end. Fails the test at the deadline.
    fn next_piece(&mut self, doing: &str) -> Option<String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(piece) => Some(piece),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => self.hung(doing),
        }
    }

    /// Whether the process has not exited yet (it is reaped if it has;
    /// [`Worker::finish`] still gives its status and output).
    ///
    /// # Panics
    /// If its status cannot be read.
    pub fn is_running(&mut self) -> bool {
        match self.child.try_wait() {
            Ok(status) => status.is_none(),
            Err(e) => panic!("{}: reading its status: {e}", self.what),
        }
    }

    /// The next whole line of the worker's stdout, without its `\n` (also
    /// kept for [`Finished::out`]); `None` when its stdout ends.
    ///
    /// # Panics
    /// At the deadline.
    pub fn next_line(&mut self) -> Option<String> {
        let piece = self.next_piece("print a line")?;
        self.out.push_str(&piece);
        Some(piece.trim_end_matches('\n').to_string())
    }

    /// Wait for the line `wanted` on the worker's stdout and consume it
    /// (lines before it are kept for [`Finished::out`]).
    ///
    /// # Panics
    /// If the worker's stdout ends first (with its status and stderr), or
    /// at the deadline.
    pub fn wait_for_line(&mut self, wanted: &str) {
        let doing = format!("print {wanted:?}");
        loop {
            match self.next_piece(&doing) {
                Some(line) if line.strip_suffix('\n') == Some(wanted) => return,
                Some(line) => self.out.push_str(&line),
                None => {
                    let status = self.child.wait();
                    self.reaped = true;
                    let err = self.take_stderr();
                    panic!(
                        "{} exited ({status:?}) without printing {wanted:?}.\nstdout:\n{}\nstderr:\n{err}",
                        self.what, self.out
                    );
                }
            }
        }
    }

    /// Wait until the worker has stopped itself (SIGSTOP: state `T` in
    /// `/proc/<pid>/stat`), as `write-hold --stop-after-store-flush 1`
    /// does between its store's flush and its catalogue's.
    ///
    /// # Panics
    /// At the deadline, or if it exits instead.
    pub fn wait_stopped(&mut self) {
        let stat = format!("/proc/{}/stat", self.child.id());
        loop {
            let state = std::fs::read_to_string(&stat).ok().and_then(|t| {
                // The state follows the command name, which is in parentheses.
                t.rsplit_once(')')
                    .and_then(|(_, rest)| rest.trim_start().chars().next())
            });
            if state == Some('T') {
                return;
            }
            if !self.is_running() {
                let out = self.lines.try_iter().collect::<String>();
                panic!("{} exited instead of stopping: {out}", self.what);
            }
            if Instant::now() > self.deadline {
                self.hung("stop");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Resume a stopped worker (SIGCONT).
    pub fn resume(&self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
    }

    /// Let a held worker start its workload (close its stdin); nothing for
    /// a worker started at once.
    pub fn release(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            // A worker that died already is reported by whoever waits on it.
            let _ = stdin.write_all(b"go\n");
        }
    }

    /// [`Worker::finish`], and the worker succeeded and said `done` last.
    ///
    /// # Panics
    /// At the deadline; if it failed or did not end with `done`.
    pub fn finish_done(self) -> Finished {
        let what = self.what().to_string();
        let f = self.finish();
        assert!(
            f.status.success(),
            "{what} failed ({}): {}",
            f.status,
            f.err
        );
        assert!(f.out.trim_end().ends_with("done"), "{what}: {}", f.out);
        f
    }

    /// Wait for the worker to exit (releasing it first if it was held) and
    /// return its status and output.
    ///
    /// # Panics
    /// At the deadline.
    pub fn finish(mut self) -> Finished {
        self.release();
        while let Some(piece) = self.next_piece("finish") {
            self.out.push_str(&piece);
        }
        // Stdout is closed: the worker exits now, or is stuck on the way.
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < self.deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(None) => self.hung("exit"),
                Err(e) => panic!("waiting for {}: {e}", self.what),
            }
        };
        self.reaped = true;
        let err = self.take_stderr();
        Finished {
            status,
            out: std::mem::take(&mut self.out),
            err,
        }
    }

    /// Release the worker, a writer, let it print `flushes` `flushed` lines
    /// (or end), sleep `delay`, and SIGKILL it. Returns the largest count
    /// it reported flushed in a whole line, killed mid-line or not.
    ///
    /// # Panics
    /// If the worker failed by itself (an exit status other than success
    /// or SIGKILL), or at the deadline.
    pub fn kill_after_flushes(mut self, flushes: usize, delay: Duration) -> usize {
        self.release();
        let mut reported = 0;
        let mut seen = 0;
        let count = |piece: &str, reported: &mut usize| {
            // Only whole lines count: the process may die mid-line.
            let n = piece
                .strip_suffix('\n')
                .and_then(|l| l.trim().strip_prefix("flushed "))
                .and_then(|n| n.parse::<usize>().ok());
            if let Some(n) = n {
                *reported = (*reported).max(n);
            }
            n.is_some()
        };
        while seen < flushes {
            let Some(piece) = self.next_piece("report its flushes") else {
                break; // the writer finished or died
            };
            if count(&piece, &mut reported) {
                seen += 1;
            }
            self.out.push_str(&piece);
        }
        std::thread::sleep(delay);
        let status = self.kill_and_drain(|piece| {
            count(piece, &mut reported);
        });
        let err = self.take_stderr();
        assert!(
            status.success() || status.signal() == Some(9),
            "{} failed by itself ({status}) before it was killed: {err}",
            self.what
        );
        reported
    }

    /// SIGKILL the worker now (unless it has exited) and reap it: its exit
    /// status (SIGKILL, or its own) and all it printed, the last line
    /// perhaps cut short.
    ///
    /// # Panics
    /// If its output does not end by its deadline.
    pub fn kill(mut self) -> Finished {
        let status = self.kill_and_drain(|_| ());
        let err = self.take_stderr();
        Finished {
            status,
            out: std::mem::take(&mut self.out),
            err,
        }
    }

    /// SIGKILL and reap the worker, then read the rest of its stdout,
    /// giving each piece to `each`.
    fn kill_and_drain(&mut self, mut each: impl FnMut(&str)) -> ExitStatus {
        // Child::kill is SIGKILL on Unix.
        let _ = self.child.kill();
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("waiting for the killed {}: {e}", self.what));
        self.reaped = true;
        // Stdout ends with the process (the pipe's only writer).
        while let Some(piece) = self.next_piece("close its output") {
            each(&piece);
            self.out.push_str(&piece);
        }
        status
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Wait until every worker of `group` (started with
/// [`Launcher::spawn_held`]) has opened its store and said `ready`, then
/// release them all, one right after the other.
///
/// # Panics
/// If a worker exits before it is ready, or at its deadline.
pub fn release_together<'a>(group: impl IntoIterator<Item = &'a mut Worker>) {
    let mut group: Vec<&mut Worker> = group.into_iter().collect();
    for w in &mut group {
        w.wait_for_line("ready");
    }
    for w in &mut group {
        w.release();
    }
}

/// If this process was started as a worker (`<exe> worker <command> …`, by
/// [`Launcher::this_executable`]), run it and return its exit status;
/// otherwise `None`. The first thing in a self-working test binary's
/// `main`.
pub fn worker_from_args() -> Option<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some(WORKER_ARG) {
        return None;
    }
    let name = std::env::args()
        .next()
        .map_or_else(|| "worker".to_string(), |p| format!("{p} {WORKER_ARG}"));
    Some(worker_main(&name, &args[1..]))
}

/// How a test of [`run_tests`] ended, when it did not panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and passed.
    Passed,
    /// It could not run here, for the reason given (reported as ignored).
    Skipped(String),
}

impl From<()> for Outcome {
    fn from((): ()) -> Outcome {
        Outcome::Passed
    }
}

/// A test of [`run_tests`]: its name and its function, which returns `()`
/// or an [`Outcome`].
pub type Test<T = ()> = (&'static str, fn() -> T);

/// Run the tests of a `harness = false` test binary as libtest would, from
/// this process's arguments: names given are filters (a test runs if its
/// name contains one), `--list` lists, other flags are ignored (with the
/// value of those that take one). A test fails by panicking. Prints a line
/// per test with its time and libtest's summary line; the exit status is
/// success if no test failed.
pub fn run_tests<T: Into<Outcome>>(tests: &[Test<T>]) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut filters: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--list" => {
                for (name, _) in tests {
                    println!("{name}: test");
                }
                return ExitCode::SUCCESS;
            }
            "--test-threads" | "--skip" | "--format" | "--color" | "--logfile" | "-Z" => {
                it.next();
            }
            f if f.starts_with('-') => {}
            f => filters.push(f),
        }
    }
    let selected: Vec<_> = tests
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f)))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let (mut passed, mut skipped, mut failed) = (0, 0, Vec::new());
    for (name, test) in &selected {
        let start = Instant::now();
        let result = std::panic::catch_unwind(|| test().into());
        let secs = start.elapsed().as_secs_f64();
        match result {
            Ok(Outcome::Passed) => {
                println!("test {name} ... ok ({secs:.1}s)");
                passed += 1;
            }
            Ok(Outcome::Skipped(why)) => {
                println!("test {name} ... skipped ({why})");
                skipped += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED ({secs:.1}s)");
                failed.push(*name);
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:\n    {}", failed.join("\n    "));
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {skipped} ignored; 0 measured; {} filtered out\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        tests.len() - selected.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
