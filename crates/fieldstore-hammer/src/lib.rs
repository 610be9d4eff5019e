//! The benchmark behind `fieldstore hammer`: fdb-hammer's workload against
//! any fieldstore backend, measured the way the papers measure (global
//! timing bandwidth, processes started together by a barrier, a
//! per-operation time breakdown, physical limits in the same run).
//!
//! # Using it from a binary
//!
//! ```no_run
//! use clap::Parser;
//! #[derive(Parser)]
//! struct Cli {
//!     /// The store's configuration: `HammerArgs::config` is not an argument
//!     /// of its own, so that a CLI's global `--config` serves the hammer too.
//!     #[arg(long, global = true)]
//!     config: Option<std::path::PathBuf>,
//!     #[command(flatten)]
//!     hammer: fieldstore_hammer::HammerArgs,
//! }
//! let mut cli = Cli::parse();
//! cli.hammer.config = cli.config.take();
//! let report = fieldstore_hammer::run(&cli.hammer)?;
//! report.print().ok();
//! std::process::exit(report.exit_code());
//! # Ok::<(), fieldstore::Error>(())
//! ```
//!
//! # The worker contract (for whoever wires the binary)
//!
//! `--processes N` starts N local worker processes by re-running **the
//! current executable with the current arguments plus the hidden flag
//! `--worker-rank R`** (`std::env::current_exe()`, `std::env::args_os()`).
//! So the binary must route those arguments to [`run`] again: with
//! `fieldstore hammer ...` the worker runs `fieldstore hammer ...
//! --worker-rank R`, which works as long as `HammerArgs` is flattened into
//! the `hammer` subcommand (the hidden flags are fields of [`HammerArgs`]).
//! `HammerArgs` defines no `--config` (its `config` field is `#[arg(skip)]`):
//! the binary passes its own global `--config` in, as above.
//! A binary that cannot be re-run that way sets `--worker-exe PATH` (or
//! `FIELDSTORE_HAMMER_WORKER_EXE`): `PATH --worker-rank R` is started
//! instead (the crate's own `fieldstore-hammer` binary accepts that).
//!
//! In worker mode, [`run`] reads one JSON task line from stdin, opens the
//! store, prints `ready`, waits for one byte on stdin (the barrier), runs
//! the timed I/O and prints one JSON result line. **Nothing else may write
//! to stdout in a worker**; [`run`] returns a quiet [`Report`] whose
//! [`Report::print`] prints nothing. Errors go to stderr.
//!
//! Under `mpirun` / `srun` (rank variables `OMPI_COMM_WORLD_RANK/SIZE`,
//! `PMI_RANK/SIZE`, `PMIX_RANK/SIZE`, `SLURM_PROCID/NTASKS` with a size
//! above 1) each rank is a worker of the launch; the ranks meet in a barrier
//! directory on the shared file system (`--barrier-dir`, default
//! `<store root>/.hammer-barrier/<job id>`) and rank 0 prints the report.
//! No MPI library is linked.
//!
//! # Scenarios
//! - default: write (fdb-hammer); `--read`, `--list`: one phase;
//! - `--scenario a`: write, drop caches (with `--drop-caches`), read, list;
//! - `--scenario wr`: populate `read-multiplier × nsteps` steps; writers
//!   alone write `nsteps` new steps (the uncontended reference); drop
//!   caches (with `--drop-caches`); writers write `nsteps` more steps while readers read the
//!   populated steps;
//! - `--scenario follow`: writers alone (the reference), then writers
//!   flushing step by step while readers follow them: each reader reads
//!   every field of every member as soon as it is flushed (`--follow
//!   watch`, or `--follow poll` polling `list` as FDB5's users do) and the
//!   report gives the flush-to-visible latency;
//! - `--scenario bare`: the write phase's bytes and `fdatasync`s with no
//!   store, in the store's directory: the disk's ceiling for that workload
//!   (`bare.rs`).
//! - `--raw` (or `--scenario raw` alone): after the scenario's phases, the
//!   raw bandwidth of the store's backend, IOR-style easy and hard writes
//!   and reads over POSIX files, DAOS arrays or RADOS objects (`raw/`);
//! - `--fieldio` (or `--scenario fieldio` alone): ECMWF's Field I/O pattern
//!   on the store's DAOS pool, an array per field indexed in KVs
//!   (`fieldio.rs`);
//! - `--report DIR`: the run as an HTML page with PNG plots (`html.rs`,
//!   `plots.rs`, from what `trace.rs` records in each process).
//!
//! # Layers
//! Each module names only modules listed before it: the arguments and
//! the messages between launcher and worker at the bottom, the task kinds
//! above them, the worker that runs them, then launching and reporting;
//! the crate root (`run`, the phases' plan) is the top (the `layers` test
//! checks the code against this list).
//! - `stats`: the aggregation math (bandwidth, medians, spreads).
//! - `args`: the command-line arguments.
//! - `payload`: self-describing field payloads and their verification.
//! - `physical`: the file system's physical limits.
//! - `store_spec`: which store a task opens, with the hammer's schema.
//! - `result`: what a process reports, and the clocks it is read from.
//! - `trace`: what a process records inside its window (`Ops`).
//! - `raw`: raw bandwidth, IOR-style, and its task (`RawTask`).
//! - `task`: what a process is told to do (`Role`, `Task`).
//! - `bare`: bare writes, a write phase with no store.
//! - `fieldio`: Field I/O's pattern on DAOS.
//! - `worker`: runs a task — the store's kinds here, the others through
//!   their modules — into its result.
//! - `launch`: starting workers together (pipes, a barrier directory).
//! - `report`: what a run reports.
//! - `plots`: the PNG plots of `--report`.
//! - `html`: the HTML page of `--report`.

pub mod args;
mod bare;
pub mod fieldio;
pub mod html;
pub mod launch;
pub mod payload;
pub mod physical;
pub mod plots;
pub mod raw;
pub mod report;
pub mod result;
pub mod stats;
pub mod store_spec;
pub mod task;
pub mod trace;
pub mod worker;

use std::path::PathBuf;
use std::time::Duration;

use fieldstore::{Error, ErrorKind, Result};

pub use args::{Batch, HammerArgs, Scenario};
pub use report::{Report, Row};
pub use result::ProcResult;
pub use store_spec::StoreSpec;
pub use task::{Role, Task};

use launch::{DirBarrier, LauncherRank, MachineCpu, WorkerCommand};
use payload::Check;

/// One group of processes started together.
#[derive(Debug, Clone)]
pub struct Group {
    /// Row name(s): the phase; w+r contention splits by role.
    pub name: &'static str,
    /// One task per process.
    pub tasks: Vec<Task>,
    /// Drop the page cache once its processes are ready (store open),
    /// right before they are released: the cold phase then starts at the
    /// same short time after the drop for every system measured. (On a VM
    /// that hands freed memory back to its host, that time decides what
    /// a cold read costs: docs/benchmarks.md, Method.)
    pub drop_caches: bool,
}

/// Whether read phases start with the page cache dropped: only when asked
/// (`--drop-caches`), never by default, since it empties the cache of
/// every process on the machine.
fn drops_caches(args: &HammerArgs) -> bool {
    args.drop_caches && !args.no_drop_caches
}

/// Whether this run writes the fields it reads or lists: a run of only
/// `--read` or only `--list` reads what an earlier run wrote, so whether
/// the bytes are randomised is that run's to say.
fn writes_fields(args: &HammerArgs) -> bool {
    args.scenario.is_some() || !(args.read || args.list)
}

/// `date + days` for a YYYYMMDD date.
fn add_days(date: &str, days: u32) -> Result<String> {
    let bad = || Error::invalid_input(format!("--date {date}: expected YYYYMMDD"));
    if date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: i64 = date.parse().map_err(|_| bad())?;
    let (y, m, d) = (n / 10000, (n / 100) % 100, n % 100);
    // Days from civil (proleptic Gregorian), and back.
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let z = era * 146097 + doe + i64::from(days);
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Ok(format!("{y:04}{m:02}{d:02}"))
}

fn range(first: u32, n: u32) -> Vec<u32> {
    (first..first + n).collect()
}

fn scenario_name(args: &HammerArgs) -> &'static str {
    match (args.scenario, args.read, args.list) {
        (Some(Scenario::A), ..) => "a",
        (Some(Scenario::Wr), ..) => "wr",
        (Some(Scenario::Bare), ..) => "bare",
        (Some(Scenario::Follow), ..) => "follow",
        (Some(Scenario::Raw), ..) => "raw",
        (Some(Scenario::Fieldio), ..) => "fieldio",
        (None, true, _) => "read",
        (None, _, true) => "list",
        _ => "write",
    }
}

fn writes(args: &HammerArgs) -> bool {
    args.scenario.is_some() || !(args.read || args.list)
}

/// The groups of one repetition, for `writers` (or all) and `readers`
/// processes.
///
/// # Errors
/// Invalid arguments.
pub fn plan(args: &HammerArgs, rep: u32, writers: u32, readers: u32) -> Result<Vec<Group>> {
    if args.nsteps == 0 || args.nlevels == 0 || args.nparams == 0 || args.nensembles == 0 {
        return Err(Error::invalid_input(
            "--nsteps, --nlevels, --nparams and --nensembles must be at least 1",
        ));
    }
    let params: Vec<u32> = if args.params.is_empty() {
        range(1, args.nparams)
    } else if args.params.len() < args.nparams as usize {
        return Err(Error::invalid_input(format!(
            "--nparams {} but only {} --params given",
            args.nparams,
            args.params.len()
        )));
    } else {
        args.params[..args.nparams as usize].to_vec()
    };
    let date = if writes(args) {
        add_days(&args.date, rep)?
    } else {
        add_days(&args.date, 0)?
    };
    let base: Vec<(String, String)> = [
        ("class", &args.class),
        ("expver", &args.expver),
        ("stream", &args.stream),
        ("date", &date),
        ("time", &args.time),
        ("type", &args.type_),
        ("levtype", &args.levtype),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let check = if args.full_check {
        Check::Full
    } else if args.md_check {
        Check::Metadata
    } else {
        Check::None
    };
    let store = StoreSpec {
        config: args.config.clone(),
        root: args.root.clone(),
    };
    let members = |p: u32| range(args.number + p * args.nensembles, args.nensembles);
    let task = |role: Role, rank: u32, steps: Vec<u32>, members: Vec<u32>| Task {
        role,
        rank,
        store: store.clone(),
        base: base.clone(),
        steps,
        members,
        levels: range(args.level, args.nlevels),
        params: params.clone(),
        field_size: args.field_size,
        template: args.template.clone(),
        randomise: !args.no_randomise_data,
        check,
        batch: args.batch,
        detailed: args.detailed,
        follow: args.follow,
        poll_period_ms: args.poll_period_ms,
        follow_no_read: args.follow_no_read,
        raw: None,
    };
    let ns = args.nsteps;
    let s0 = args.step;
    let group = |name, role, steps: Vec<u32>, drop_caches| Group {
        name,
        tasks: (0..writers)
            .map(|p| task(role, p, steps.clone(), members(p)))
            .collect(),
        drop_caches,
    };
    let drop = drops_caches(args);
    let mut groups = match args.scenario {
        None if args.read => vec![group("read", Role::Read, range(s0, ns), drop)],
        None if args.list => vec![group("list", Role::List, range(s0, ns), false)],
        None => vec![group("write", Role::Write, range(s0, ns), false)],
        Some(Scenario::A) => vec![
            group("write", Role::Write, range(s0, ns), false),
            group("read", Role::Read, range(s0, ns), drop),
            group("list", Role::List, range(s0, ns), false),
        ],
        Some(Scenario::Bare) => vec![group("bare-write", Role::Bare, range(s0, ns), false)],
        Some(Scenario::Follow) => {
            // Readers follow every member of the steps being written, as
            // post-processing reads a step across the ensemble.
            let following = range(s0 + ns, ns);
            let all_members = range(args.number, writers * args.nensembles);
            let mut follow = group("follow", Role::Write, following.clone(), false);
            for r in 0..readers {
                follow.tasks.push(task(
                    Role::Follow,
                    writers + r,
                    following.clone(),
                    all_members.clone(),
                ));
            }
            vec![
                group("write-alone", Role::Write, range(s0, ns), false),
                follow,
            ]
        }
        Some(Scenario::Wr) => {
            let k = args.read_multiplier.max(1);
            let populated = range(s0, ns * k);
            let mut contention = group("wr", Role::Write, range(s0 + ns * (k + 1), ns), drop);
            for r in 0..readers {
                contention.tasks.push(task(
                    Role::Read,
                    writers + r,
                    populated.clone(),
                    members(r % writers.max(1)),
                ));
            }
            vec![
                group("populate", Role::Write, populated.clone(), false),
                group("write-alone", Role::Write, range(s0 + ns * k, ns), false),
                contention,
            ]
        }
        Some(Scenario::Raw | Scenario::Fieldio) => Vec::new(),
    };
    if runs_fieldio(args) {
        groups.push(group(
            "fieldio-write",
            Role::FieldIoWrite,
            range(s0, ns),
            false,
        ));
        groups.push(group(
            "fieldio-read",
            Role::FieldIoRead,
            range(s0, ns),
            false,
        ));
    }
    if args.raw || args.scenario == Some(Scenario::Raw) {
        groups.extend(raw_groups(
            args,
            writers,
            &task(Role::RawWrite, 0, Vec::new(), Vec::new()),
        )?);
    }
    Ok(groups)
}

/// The IOR-style raw phases (`crate::raw`): easy and hard writes, then
/// (caches dropped) easy and hard reads, each process reading the next
/// one's transfers. By default each process moves the bytes of the store's
/// write phase.
fn raw_groups(args: &HammerArgs, procs: u32, like: &Task) -> Result<Vec<Group>> {
    let per_process = match args.raw_bytes {
        Some(b) => b,
        None => {
            let field = match &args.template {
                Some(t) => std::fs::metadata(t)
                    .map_err(|e| Error::io(format!("template {}", t.display()), e))?
                    .len(),
                None => args.field_size,
            };
            field
                * u64::from(args.nsteps)
                * u64::from(args.nensembles)
                * u64::from(args.nlevels)
                * u64::from(args.nparams)
        }
    };
    if args.raw_transfer == 0 || per_process == 0 {
        return Err(Error::invalid_input(
            "--raw-transfer and --raw-bytes must be at least 1",
        ));
    }
    let phase = |name: &'static str, pattern: raw::Pattern, role: Role, drop: bool| {
        let transfer = match pattern {
            raw::Pattern::Easy => args.raw_transfer,
            raw::Pattern::Hard => raw::HARD_TRANSFER,
        };
        Group {
            name,
            tasks: (0..procs)
                .map(|p| Task {
                    role,
                    rank: p,
                    raw: Some(raw::RawTask {
                        pattern,
                        transfer,
                        transfers: per_process.div_ceil(transfer),
                        procs,
                        owner: if role == Role::RawRead {
                            (p + 1) % procs
                        } else {
                            p
                        },
                    }),
                    ..like.clone()
                })
                .collect(),
            drop_caches: drop,
        }
    };
    let drop = drops_caches(args);
    use raw::Pattern::{Easy, Hard};
    Ok(vec![
        phase("raw-easy-write", Easy, Role::RawWrite, false),
        phase("raw-hard-write", Hard, Role::RawWrite, false),
        phase("raw-easy-read", Easy, Role::RawRead, drop),
        phase("raw-hard-read", Hard, Role::RawRead, drop),
    ])
}

/// The rows of a finished group.
fn rows_of(group: &Group, results: Vec<ProcResult>, machine: Option<MachineCpu>) -> Vec<Row> {
    // Others' share of the machine while the group ran: all busy CPU time
    // minus what our processes used, over the CPUs' capacity.
    let own: f64 = results.iter().map(|p| p.cpu_user + p.cpu_sys).sum();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let foreign = machine
        // /proc/stat counts in 10 ms ticks: shorter samples say nothing.
        .filter(|m| m.elapsed_s >= 0.2)
        .map(|m| ((m.busy_s - own).max(0.0) / (m.elapsed_s * cpus) * 100.0).min(100.0));
    let mut rows = if group.name == "wr" {
        let (w, r): (Vec<_>, Vec<_>) = results.into_iter().partition(|p| p.role == "write");
        vec![Row::new("wr-write", w), Row::new("wr-read", r)]
    } else if group.name == "follow" {
        let (w, r): (Vec<_>, Vec<_>) = results.into_iter().partition(|p| p.role == "write");
        let latency = report::Latency::of(&w, &r);
        let mut read = Row::new("follow-read", r);
        read.latency = latency;
        vec![Row::new("follow-write", w), read]
    } else {
        vec![Row::new(group.name, results)]
    };
    for r in &mut rows {
        r.others_cpu_pct = foreign;
    }
    rows
}

fn base_report(args: &HammerArgs, launcher: String, writers: u32, readers: u32) -> Report {
    let field_bytes = match &args.template {
        Some(t) => std::fs::metadata(t).map(|m| m.len()).unwrap_or(0),
        None => args.field_size,
    };
    let per = u64::from(args.nsteps)
        * u64::from(args.nensembles)
        * u64::from(args.nlevels)
        * u64::from(args.nparams);
    Report {
        quiet: false,
        json: args.json,
        scenario: scenario_name(args).into(),
        launcher,
        processes: writers,
        readers: if matches!(args.scenario, Some(Scenario::Wr | Scenario::Follow)) {
            readers
        } else {
            0
        },
        field_bytes,
        fields_per_process: per,
        store: match (&args.config, &args.root) {
            (Some(c), _) => format!("config {}", c.display()),
            (None, Some(r)) => format!("embedded POSIX store at {}", r.display()),
            (None, None) => {
                "the environment's store (FIELDSTORE_CONFIG / FIELDSTORE_ROOT, else ./fieldstore-data)"
                    .into()
            }
        } + ", with the hammer's own schema (fdb-hammer's, whatever the config names)",
        check: if args.full_check {
            "full".into()
        } else if args.md_check {
            "metadata".into()
        } else {
            "none".into()
        },
        randomised: writes_fields(args).then_some(!args.no_randomise_data),
        batch: format!("{:?}", args.batch).to_lowercase(),
        raw_target: if runs_raw(args) {
            raw::describe(&store_spec(args))
        } else {
            String::new()
        },
        load_before: physical::loadavg(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        started: result::now(),
        ..Report::default()
    }
}

fn runs_fieldio(args: &HammerArgs) -> bool {
    args.fieldio || args.scenario == Some(Scenario::Fieldio)
}

fn runs_raw(args: &HammerArgs) -> bool {
    args.raw || args.scenario == Some(Scenario::Raw)
}

fn store_spec(args: &HammerArgs) -> StoreSpec {
    StoreSpec {
        config: args.config.clone(),
        root: args.root.clone(),
    }
}

fn physical_dir(args: &HammerArgs) -> PathBuf {
    StoreSpec {
        config: args.config.clone(),
        root: args.root.clone(),
    }
    .directory()
    .unwrap_or_else(std::env::temp_dir)
}

/// Run the benchmark the arguments describe: as the coordinator of local
/// worker processes, as a worker (`--worker-rank`), or as one rank of an
/// mpirun/srun launch.
///
/// # Errors
/// Invalid arguments; store errors of any process.
pub fn run(args: &HammerArgs) -> Result<Report> {
    if args.worker_rank.is_some() {
        launch::worker_main()?;
        return Ok(Report {
            quiet: true,
            ..Report::default()
        });
    }
    if args.config.is_some() && args.root.is_some() {
        return Err(Error::invalid_input(
            "--config and --root name two different stores: give one",
        ));
    }
    if args.scenario == Some(Scenario::Bare) {
        // Refused here, before any worker opens the store.
        bare::directory(&StoreSpec {
            config: args.config.clone(),
            root: args.root.clone(),
        })?;
    }
    if runs_raw(args) {
        // Refused here, before any process starts, when the store has no
        // backend to measure (memory) or it cannot be reached.
        raw::open(&store_spec(args))?;
    }
    if runs_fieldio(args) {
        // Likewise: Field I/O needs a store on DAOS.
        fieldio::open(&store_spec(args))?;
    }
    let env = |k: &str| std::env::var(k).ok();
    if let Some(rank) = launch::launcher_rank(&env).filter(|r| r.size > 1) {
        return run_ranks(args, &rank);
    }
    let writers = args.processes.max(1);
    let readers = args.readers.unwrap_or(writers).max(1);
    let cmd = WorkerCommand::resolve(args.worker_exe.as_deref())?;
    let mut report = base_report(
        args,
        "local processes, pipe barrier".into(),
        writers,
        readers,
    );
    for rep in 0..args.repetitions.max(1) {
        if args.physical_only {
            report.scenario = "physical".into();
            report.repetitions.push(report::Repetition {
                index: rep,
                physical: Some(physical::measure(
                    &physical_dir(args),
                    args.physical_mib,
                    writers,
                )?),
                ..Default::default()
            });
            continue;
        }
        let groups = plan(args, rep, writers, readers)?;
        let mut r = report::Repetition {
            index: rep,
            date: groups
                .first()
                .and_then(|g| g.tasks.first())
                .and_then(|t| t.base.iter().find(|(k, _)| k == "date"))
                .map(|(_, v)| v.clone())
                .unwrap_or_default(),
            ..Default::default()
        };
        for g in &groups {
            let mut dropped = None;
            let (results, machine) = launch::run_local_group(&cmd, &g.tasks, &mut || {
                if g.drop_caches {
                    dropped = Some(physical::drop_caches());
                }
            })?;
            r.caches_dropped = dropped.or(r.caches_dropped);
            r.rows.extend(rows_of(g, results, machine));
        }
        if runs_raw(args) {
            raw::remove_all(&store_spec(args), writers)?;
        }
        if runs_fieldio(args) {
            fieldio::remove_all(&store_spec(args))?;
        }
        if args.physical {
            r.physical = Some(physical::measure(
                &physical_dir(args),
                args.physical_mib,
                writers,
            )?);
        }
        report.repetitions.push(r);
    }
    report.load_after = physical::loadavg();
    report.finish();
    if let Some(dir) = &args.report {
        report.html_page = html::write(&report, dir)?.display().to_string();
    }
    Ok(report)
}

/// One rank of an mpirun/srun launch.
fn run_ranks(args: &HammerArgs, rank: &LauncherRank) -> Result<Report> {
    let size = rank.size;
    let (writers, readers) = match args.scenario {
        Some(Scenario::Wr | Scenario::Follow) => {
            let w = (size / 2).max(1);
            (w, size.saturating_sub(w).max(1))
        }
        _ => (size, 0),
    };
    let dir = args
        .barrier_dir
        .clone()
        .unwrap_or_else(|| physical_dir(args).join(".hammer-barrier"))
        .join(&rank.job);
    let barrier = DirBarrier {
        dir: dir.clone(),
        rank: rank.rank,
        size,
        timeout: Duration::from_secs(args.barrier_timeout.max(1)),
    };
    let mut report = base_report(
        args,
        format!("{} ranks, barrier directory {}", rank.source, dir.display()),
        writers,
        readers,
    );
    let mut phase = 0usize;
    for rep in 0..args.repetitions.max(1) {
        let groups = plan(args, rep, writers, readers)?;
        let mut r = report::Repetition {
            index: rep,
            ..Default::default()
        };
        for g in &groups {
            // Rank 0 drops the cache on its way into the start barrier:
            // everyone is released right after it (see `Group::drop_caches`).
            let mut release = || {
                if rank.rank == 0 && g.drop_caches {
                    r.caches_dropped = Some(physical::drop_caches());
                }
                barrier.wait(phase)
            };
            let result = match g.tasks.get(rank.rank as usize) {
                Some(task) => Some(worker::execute(task, &mut release)?),
                None => {
                    release()?;
                    None
                }
            };
            barrier.publish(phase, result.as_ref())?;
            if rank.rank == 0 {
                r.rows.extend(rows_of(g, barrier.collect(phase)?, None));
            }
            // Nobody starts the next phase before rank 0 collected this one.
            phase += 1;
            barrier.wait(phase)?;
            phase += 1;
        }
        if rank.rank == 0 && runs_raw(args) {
            raw::remove_all(&store_spec(args), writers)?;
        }
        if rank.rank == 0 && runs_fieldio(args) {
            fieldio::remove_all(&store_spec(args))?;
        }
        if rank.rank == 0 && args.physical {
            r.physical = Some(physical::measure(
                &physical_dir(args),
                args.physical_mib,
                1,
            )?);
        }
        report.repetitions.push(r);
    }
    barrier.finish()?;
    if rank.rank != 0 {
        return Ok(Report {
            quiet: true,
            ..Report::default()
        });
    }
    report.load_after = physical::loadavg();
    report.finish();
    if report.repetitions.is_empty() {
        return Err(Error::new(ErrorKind::Internal, "no repetition ran"));
    }
    if let Some(dir) = &args.report {
        report.html_page = html::write(&report, dir)?.display().to_string();
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_into_a_cli_with_global_config() {
        // The shape of `fieldstore`: global --config/--quiet, a `hammer` subcommand.
        #[derive(clap::Parser)]
        struct Cli {
            #[arg(long, global = true)]
            config: Option<PathBuf>,
            #[arg(short, long, global = true)]
            quiet: bool,
            #[command(subcommand)]
            command: Cmd,
        }
        #[derive(clap::Subcommand)]
        enum Cmd {
            Hammer(HammerArgs),
        }
        use clap::{CommandFactory, Parser};
        Cli::command().debug_assert();
        let cli = Cli::parse_from([
            "fieldstore",
            "hammer",
            "--config",
            "c.yaml",
            "--nsteps",
            "3",
            "--worker-rank",
            "1",
        ]);
        let Cmd::Hammer(h) = cli.command;
        assert_eq!(cli.config, Some(PathBuf::from("c.yaml")));
        assert_eq!((h.nsteps, h.worker_rank), (3, Some(1)));
    }

    #[test]
    fn dates_add_across_months_and_leap_years() {
        assert_eq!(add_days("20240101", 0).unwrap(), "20240101");
        assert_eq!(add_days("20240228", 1).unwrap(), "20240229");
        assert_eq!(add_days("20230228", 1).unwrap(), "20230301");
        assert_eq!(add_days("20241231", 1).unwrap(), "20250101");
        assert!(add_days("2024-01-01", 1).is_err());
    }

    /// Bad arguments are refused before anything runs, each error naming
    /// the flags at fault.
    #[test]
    fn bad_arguments_are_named() {
        let msg = |r: Result<Vec<Group>>| {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            e.to_string()
        };
        let zero = HammerArgs {
            nlevels: 0,
            ..HammerArgs::default()
        };
        assert_eq!(
            msg(plan(&zero, 0, 1, 1)),
            "--nsteps, --nlevels, --nparams and --nensembles must be at least 1"
        );
        let few = HammerArgs {
            nparams: 3,
            params: vec![130, 167],
            ..HammerArgs::default()
        };
        assert_eq!(
            msg(plan(&few, 0, 1, 1)),
            "--nparams 3 but only 2 --params given"
        );
        let date = HammerArgs {
            date: "2024-01-01".to_string(),
            ..HammerArgs::default()
        };
        assert_eq!(
            msg(plan(&date, 0, 1, 1)),
            "--date 2024-01-01: expected YYYYMMDD"
        );
        let both = HammerArgs {
            config: Some(PathBuf::from("c.yaml")),
            root: Some(PathBuf::from("/tmp/never-created")),
            ..HammerArgs::default()
        };
        let e = run(&both).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            "--config and --root name two different stores: give one"
        );
        let e = payload::Generator::new(vec![0u8; 8], false, 0)
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            "fields of 8 bytes (data section 8 bytes) are too small for the 40-byte check header"
        );
    }

    /// The page cache is dropped before read phases only with
    /// `--drop-caches` (issue 42: the demo, run as root, emptied the
    /// machine's cache), and never before writes.
    #[test]
    fn caches_are_dropped_only_when_asked() {
        let dropped = |a: &HammerArgs| -> Vec<(&'static str, bool)> {
            plan(a, 0, 1, 1)
                .unwrap()
                .iter()
                .map(|g| (g.name, g.drop_caches))
                .collect()
        };
        let mut a = HammerArgs {
            scenario: Some(Scenario::A),
            ..HammerArgs::default()
        };
        assert_eq!(
            dropped(&a),
            [("write", false), ("read", false), ("list", false)]
        );
        a.drop_caches = true;
        assert_eq!(
            dropped(&a),
            [("write", false), ("read", true), ("list", false)]
        );
        let old = HammerArgs {
            read: true,
            no_drop_caches: true,
            ..HammerArgs::default()
        };
        assert_eq!(dropped(&old), [("read", false)]);
    }

    /// A run that only reads or lists says nothing of randomised bytes it
    /// did not write (issue 42: a read of data written with
    /// `--no-randomise-data` reported "data: randomised").
    #[test]
    fn a_read_alone_does_not_claim_randomised_data() {
        let data = |a: &HammerArgs| base_report(a, String::new(), 1, 0).randomised;
        let read = HammerArgs {
            read: true,
            ..HammerArgs::default()
        };
        assert_eq!(data(&read), None);
        assert!(report::data_kind(data(&read)).starts_with("as written earlier"));
        assert_eq!(data(&HammerArgs::default()), Some(true));
        let plain = HammerArgs {
            no_randomise_data: true,
            ..HammerArgs::default()
        };
        assert_eq!(data(&plain), Some(false));
    }

    #[test]
    fn plans_give_each_process_its_members_and_wr_its_steps() {
        let mut a = HammerArgs {
            nsteps: 2,
            nensembles: 2,
            ..HammerArgs::default()
        };
        let g = plan(&a, 0, 2, 2).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].tasks[1].members, vec![3, 4]);
        a.scenario = Some(Scenario::Wr);
        a.read_multiplier = 3;
        let g = plan(&a, 1, 2, 3).unwrap();
        let names: Vec<_> = g.iter().map(|g| g.name).collect();
        assert_eq!(names, ["populate", "write-alone", "wr"]);
        assert_eq!(g[0].tasks[0].steps, (0..6).collect::<Vec<_>>());
        assert_eq!(g[1].tasks[0].steps, vec![6, 7]);
        assert_eq!(g[2].tasks.len(), 5);
        assert_eq!(g[2].tasks[0].steps, vec![8, 9]);
        assert_eq!(g[2].tasks[4].role, Role::Read);
        assert_eq!(g[2].tasks[3].members, vec![3, 4]);
        assert_eq!(
            g[2].tasks[4].members,
            vec![1, 2],
            "reader 2 reads writer 0's data"
        );
        assert!(!g[2].drop_caches, "not dropped unless asked");
        let date = &g[0].tasks[0]
            .base
            .iter()
            .find(|(k, _)| k == "date")
            .unwrap()
            .1;
        assert_eq!(date, "20240102");
    }
}
