//! Starting processes together: local workers behind a pipe barrier, and
//! launcher ranks (mpirun, srun) behind a barrier directory.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use fieldstore::{Error, ErrorKind, Result};

use crate::result::{now, ProcResult};
use crate::task::Task;
use crate::worker;

/// How to start one local worker: an executable and the arguments before
/// `--worker-rank R`.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// The executable.
    pub exe: PathBuf,
    /// Arguments that reach the hammer's argument parser.
    pub prefix: Vec<OsString>,
}

impl WorkerCommand {
    /// `exe` with no prefix, or the current executable re-run with the
    /// current process's arguments (which reach `HammerArgs` again, in a
    /// harness binary or under `fieldstore hammer` alike).
    ///
    /// # Errors
    /// If the current executable cannot be found.
    pub fn resolve(exe: Option<&Path>) -> Result<WorkerCommand> {
        match exe {
            Some(e) => Ok(WorkerCommand {
                exe: e.to_path_buf(),
                prefix: Vec::new(),
            }),
            None => Ok(WorkerCommand {
                exe: std::env::current_exe()
                    .map_err(|e| Error::io("finding the current executable", e))?,
                prefix: std::env::args_os().skip(1).collect(),
            }),
        }
    }
}

/// What the whole machine's CPUs did while a group ran: to tell the
/// benchmark's own load from other tenants'.
#[derive(Debug, Clone, Copy)]
pub struct MachineCpu {
    /// CPU seconds all CPUs were busy.
    pub busy_s: f64,
    /// Wall seconds of the sample.
    pub elapsed_s: f64,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn protocol_error(rank: usize, what: &str) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("worker {rank}: {what} (see its messages above)"),
    )
}

fn read_line(r: &mut Running, rank: usize, what: &str) -> Result<String> {
    let mut line = String::new();
    let n = r
        .stdout
        .read_line(&mut line)
        .map_err(|e| Error::io(format!("worker {rank}"), e))?;
    if n == 0 {
        return Err(protocol_error(rank, &format!("exited before {what}")));
    }
    if let Some(msg) = line.strip_prefix("error ") {
        return Err(Error::new(
            ErrorKind::Io,
            format!("worker {rank}: {}", msg.trim_end()),
        ));
    }
    Ok(line)
}

/// Run one group of tasks as local processes released together: each
/// worker reports `ready` after its set-up, `before_release` runs once
/// every worker is ready, and all then get the go byte in one loop.
///
/// # Errors
/// A worker that fails; every other worker is then killed.
pub fn run_local_group(
    cmd: &WorkerCommand,
    tasks: &[Task],
    before_release: &mut dyn FnMut(),
) -> Result<(Vec<ProcResult>, Option<MachineCpu>)> {
    let mut running: Vec<Running> = Vec::new();
    let result = (|| {
        for (i, task) in tasks.iter().enumerate() {
            let mut child = Command::new(&cmd.exe)
                .args(&cmd.prefix)
                .arg("--worker-rank")
                .arg(i.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| Error::io(format!("starting worker {}", cmd.exe.display()), e))?;
            let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(Error::internal("worker pipes missing"));
            };
            let line = serde_json::to_string(task)
                .map_err(|e| Error::internal(format!("encoding task: {e}")))?;
            // A worker that died at start-up shows up below, as an early EOF.
            let _ = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
            running.push(Running {
                child,
                stdin,
                stdout: BufReader::new(stdout),
            });
        }
        for (i, r) in running.iter_mut().enumerate() {
            // Anything else a worker prints on stdout (a library's message)
            // is passed on to stderr rather than taken for the protocol.
            loop {
                let line = read_line(r, i, "it was ready")?;
                if line.trim_end() == "ready" {
                    break;
                }
                eprint!("worker {i}: {line}");
            }
        }
        before_release();
        let busy0 = crate::physical::machine_busy_seconds();
        let t0 = Instant::now();
        for r in running.iter_mut() {
            let _ = r.stdin.write_all(b"g").and_then(|()| r.stdin.flush());
        }
        let mut out = Vec::new();
        for (i, r) in running.iter_mut().enumerate() {
            let mut line = read_line(r, i, "its result")?;
            while !line.starts_with('{') {
                eprint!("worker {i}: {line}");
                line = read_line(r, i, "its result")?;
            }
            let res: ProcResult = serde_json::from_str(&line)
                .map_err(|e| protocol_error(i, &format!("bad result {line:?}: {e}")))?;
            out.push(res);
        }
        let machine = match (busy0, crate::physical::machine_busy_seconds()) {
            (Some(a), Some(b)) => Some(MachineCpu {
                busy_s: b - a,
                elapsed_s: t0.elapsed().as_secs_f64(),
            }),
            _ => None,
        };
        for (i, r) in running.iter_mut().enumerate() {
            let status = r
                .child
                .wait()
                .map_err(|e| Error::io(format!("worker {i}"), e))?;
            if !status.success() {
                return Err(protocol_error(i, &format!("exited with {status}")));
            }
        }
        Ok((out, machine))
    })();
    if result.is_err() {
        for r in running.iter_mut() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
    result
}

/// The worker side of [`run_local_group`]: read the task from stdin, set
/// up, say `ready`, wait for the go byte, run, print the result as one JSON
/// line. Nothing else may be printed on stdout.
///
/// # Errors
/// Protocol and task errors (also reported on stdout as `error ...`).
pub fn worker_main() -> Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = String::new();
    input
        .read_line(&mut line)
        .map_err(|e| Error::io("reading the task", e))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = serde_json::from_str::<Task>(&line)
        .map_err(|e| Error::invalid_input(format!("bad task: {e}")))
        .and_then(|task| {
            worker::execute(&task, &mut || {
                writeln!(out, "ready")
                    .and_then(|()| out.flush())
                    .map_err(|e| Error::io("signalling ready", e))?;
                let mut go = [0u8; 1];
                input
                    .read_exact(&mut go)
                    .map_err(|e| Error::io("waiting for the go byte", e))?;
                Ok(now())
            })
        });
    let text = match &result {
        Ok(r) => serde_json::to_string(r).map_err(|e| Error::internal(e.to_string()))?,
        Err(e) => format!("error {}", e.to_string().replace('\n', " ")),
    };
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("writing the result", e))?;
    result.map(|_| ())
}

/// A rank given by a launcher (mpirun, srun), read from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LauncherRank {
    /// This process's rank.
    pub rank: u32,
    /// Number of ranks.
    pub size: u32,
    /// Which variables said so.
    pub source: &'static str,
    /// An id shared by the ranks of one launch, for the barrier directory.
    pub job: String,
}

/// Detect a launcher's rank variables (Open MPI, PMI/MPICH/Intel MPI,
/// Slurm). `None` outside a launcher.
pub fn launcher_rank(env: &dyn Fn(&str) -> Option<String>) -> Option<LauncherRank> {
    const VARS: [(&str, &str, &str); 4] = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"),
        ("PMI_RANK", "PMI_SIZE", "PMI"),
        ("PMIX_RANK", "PMIX_SIZE", "PMIx"),
        ("SLURM_PROCID", "SLURM_NTASKS", "Slurm"),
    ];
    for (r, s, source) in VARS {
        let (Some(rank), Some(size)) = (
            env(r).and_then(|v| v.trim().parse().ok()),
            env(s).and_then(|v| v.trim().parse().ok()),
        ) else {
            continue;
        };
        let job = [
            "SLURM_JOB_ID",
            "SLURM_STEP_ID",
            "PMIX_NAMESPACE",
            "OMPI_MCA_ess_base_jobid",
            "PMI_JOBID",
            "FIELDSTORE_HAMMER_JOB",
        ]
        .iter()
        .filter_map(|v| env(v))
        .collect::<Vec<_>>()
        .join(".");
        let job = if job.is_empty() { "job".into() } else { job };
        return Some(LauncherRank {
            rank,
            size,
            source,
            job: job
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect(),
        });
    }
    None
}

/// A barrier between the ranks of a launch through a directory on a shared
/// file system: each rank creates `<phase>/ready.<rank>`; rank 0 waits for
/// all of them and creates `<phase>/go`; the others poll for it. Results
/// go to `<phase>/result.<rank>.json` for rank 0 to aggregate.
#[derive(Debug, Clone)]
pub struct DirBarrier {
    /// The directory of this launch.
    pub dir: PathBuf,
    /// This rank.
    pub rank: u32,
    /// Number of ranks.
    pub size: u32,
    /// Give up after this long.
    pub timeout: Duration,
}

/// Create `path` atomically (write a private file, rename it into place).
/// Every name is written by one rank only (`ready.R`, `result.R.json`, `go`
/// by rank 0), so `.<name>.tmp` is private to its writer on every host.
fn touch(path: &Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).map_err(|e| Error::io(tmp.display(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path.display(), e))
}

impl DirBarrier {
    fn phase_dir(&self, phase: usize) -> Result<PathBuf> {
        let d = self.dir.join(format!("phase{phase}"));
        std::fs::create_dir_all(&d).map_err(|e| Error::io(d.display(), e))?;
        Ok(d)
    }

    fn wait_for(&self, what: &dyn Fn() -> bool, label: &str) -> Result<()> {
        let start = Instant::now();
        let mut sleep = Duration::from_micros(100);
        while !what() {
            if start.elapsed() > self.timeout {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "rank {}: timed out after {:?} waiting for {label} in {}",
                        self.rank,
                        self.timeout,
                        self.dir.display()
                    ),
                ));
            }
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(Duration::from_millis(2));
        }
        Ok(())
    }

    /// Wait until every rank reached `phase`; returns the release time.
    ///
    /// # Errors
    /// I/O errors; a timeout.
    pub fn wait(&self, phase: usize) -> Result<f64> {
        let d = self.phase_dir(phase)?;
        touch(&d.join(format!("ready.{}", self.rank)), "")?;
        let go = d.join("go");
        if self.rank == 0 {
            let size = self.size;
            self.wait_for(
                &|| (0..size).all(|r| d.join(format!("ready.{r}")).exists()),
                "every rank to be ready",
            )?;
            touch(&go, &now().to_string())?;
        } else {
            self.wait_for(&|| go.exists(), "the go file")?;
        }
        Ok(now())
    }

    /// The end of a launch: every rank says it is done with the directory,
    /// and rank 0, once all have, removes it. (Passing the last barrier is
    /// not enough: rank 0 passes it before the others have seen its `go`.)
    ///
    /// # Errors
    /// I/O errors; a timeout.
    pub fn finish(&self) -> Result<()> {
        touch(&self.dir.join(format!("done.{}", self.rank)), "")?;
        if self.rank == 0 {
            let size = self.size;
            self.wait_for(
                &|| (0..size).all(|r| self.dir.join(format!("done.{r}")).exists()),
                "every rank to be done",
            )?;
            std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io(self.dir.display(), e))?;
        }
        Ok(())
    }

    /// Publish this rank's result of `phase`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn publish(&self, phase: usize, result: Option<&ProcResult>) -> Result<()> {
        let d = self.phase_dir(phase)?;
        let text = serde_json::to_string(&result).map_err(|e| Error::internal(e.to_string()))?;
        touch(&d.join(format!("result.{}.json", self.rank)), &text)
    }

    /// Rank 0: every rank's result of `phase` (ranks without a task give
    /// none).
    ///
    /// # Errors
    /// I/O errors; a timeout; a rank whose result says it failed.
    pub fn collect(&self, phase: usize) -> Result<Vec<ProcResult>> {
        let d = self.phase_dir(phase)?;
        let size = self.size;
        self.wait_for(
            &|| (0..size).all(|r| d.join(format!("result.{r}.json")).exists()),
            "every rank's result",
        )?;
        let mut out = Vec::new();
        for r in 0..size {
            let p = d.join(format!("result.{r}.json"));
            let text = std::fs::read_to_string(&p).map_err(|e| Error::io(p.display(), e))?;
            let res: Option<ProcResult> = serde_json::from_str(&text)
                .map_err(|e| Error::corrupt(format!("{}: {e}", p.display())))?;
            out.extend(res);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_variables_are_detected() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(launcher_rank(&env(&[])), None);
        let r = launcher_rank(&env(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_JOB_ID", "77"),
        ]))
        .unwrap();
        assert_eq!(
            (r.rank, r.size, r.source, r.job.as_str()),
            (3, 8, "Slurm", "77")
        );
        // Open MPI wins over Slurm when both are set (mpirun inside an allocation).
        let r = launcher_rank(&env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
        ]))
        .unwrap();
        assert_eq!((r.rank, r.size, r.source), (1, 2, "Open MPI"));
        assert_eq!(
            launcher_rank(&env(&[("PMI_RANK", "x"), ("PMI_SIZE", "2")])),
            None
        );
    }

    #[test]
    fn directory_barrier_releases_all_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let handles: Vec<_> = (0..3)
            .map(|rank| {
                let b = DirBarrier {
                    dir: dir.path().to_path_buf(),
                    rank,
                    size: 3,
                    timeout: Duration::from_secs(10),
                };
                std::thread::spawn(move || {
                    let t = b.wait(0).unwrap();
                    b.publish(
                        0,
                        Some(&ProcResult {
                            rank,
                            t_release: t,
                            ..ProcResult::default()
                        }),
                    )
                    .unwrap();
                    (rank == 0).then(|| b.collect(0).unwrap())
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().unwrap().unwrap_or_default());
        }
        assert_eq!(all.len(), 3);
        let t: Vec<f64> = all.iter().map(|r| r.t_release).collect();
        assert!(crate::stats::spread(&t) < 1.0);
    }
}
