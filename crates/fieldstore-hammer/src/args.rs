//! Command-line arguments (`fieldstore hammer ...`), fdb-hammer compatible.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// The access pattern of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum Scenario {
    /// Pattern A: a write phase, then (caches dropped) a read phase, then a
    /// list phase; no contention.
    A,
    /// w+r contention: populate, then writers alone (the uncontended
    /// reference), then writers writing new steps while readers read the
    /// steps flushed earlier.
    Wr,
    /// The write phase's bytes and flush points written bare, with no
    /// store: the disk's ceiling for this workload, to measure a store's
    /// write phase against in the same run.
    Bare,
    /// Post-processing as it runs: writers alone (the reference), then
    /// writers flushing step by step while readers follow them, reading
    /// each step across all members as soon as it is flushed (`--follow`);
    /// reports flush-to-visible latency.
    Follow,
    /// Only the raw bandwidth phases of `--raw` (IOR-style, no store).
    Raw,
    /// Only the Field I/O phases of `--fieldio` (DAOS, no store).
    Fieldio,
}

/// How `--scenario follow`'s readers learn that a step is flushed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum FollowMode {
    /// `FieldStore::watch`: notified (inotify on POSIX), or polling the
    /// catalogue where a backend has no notifications.
    #[default]
    Watch,
    /// Poll `list` of the next step until all of it is there, as FDB5's
    /// users do (every `--poll-period-ms`).
    Poll,
}

/// How many fields one `retrieve()` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum Batch {
    /// One retrieve per field (fdb-hammer C++).
    Field,
    /// One retrieve per (step, member): all levels and params.
    Step,
    /// One retrieve per process for everything it reads (pyfdb-style).
    All,
}

/// `fieldstore hammer`: fdb-hammer's workload against any fieldstore
/// backend, with a process barrier, global timing bandwidth and a
/// per-operation time breakdown.
///
/// Each process writes (or reads, or lists) `nsteps × nensembles × nlevels ×
/// nparams` fields; process `p` uses members `number + p·nensembles ...`.
/// Writers flush after every (step, member), like fdb-hammer.
#[derive(Debug, Clone, Args, serde::Serialize, serde::Deserialize)]
#[command(next_help_heading = "Hammer")]
pub struct HammerArgs {
    /// Steps per process: step .. step+nsteps-1.
    #[arg(long, default_value_t = 1)]
    pub nsteps: u32,
    /// First step.
    #[arg(long, default_value_t = 0)]
    pub step: u32,
    /// Levels per process: level .. level+nlevels-1.
    #[arg(long, default_value_t = 1)]
    pub nlevels: u32,
    /// First level.
    #[arg(long, default_value_t = 0)]
    pub level: u32,
    /// Parameters per process: paramIds 1..=nparams (or the first nparams
    /// of --params).
    #[arg(long, default_value_t = 1)]
    pub nparams: u32,
    /// Explicit paramIds, comma-separated (integers).
    #[arg(long, value_delimiter = ',')]
    pub params: Vec<u32>,
    /// Ensemble members per process.
    #[arg(long, default_value_t = 1)]
    pub nensembles: u32,
    /// First ensemble member (process p starts at number + p·nensembles).
    #[arg(long, default_value_t = 1)]
    pub number: u32,
    /// `expver` of every key.
    #[arg(long, default_value = "xxxx")]
    pub expver: String,
    /// `class` of every key.
    #[arg(long, default_value = "od")]
    pub class: String,
    /// `stream` of every key.
    #[arg(long, default_value = "enfo")]
    pub stream: String,
    /// `date` of every key (YYYYMMDD); repetition r of a writing run uses
    /// date + r days, so repetitions never overwrite each other.
    #[arg(long, default_value = "20240101")]
    pub date: String,
    /// `time` of every key.
    #[arg(long, default_value = "0000")]
    pub time: String,
    /// `type` of every key.
    #[arg(long = "type", default_value = "pf")]
    pub type_: String,
    /// `levtype` of every key.
    #[arg(long, default_value = "pl")]
    pub levtype: String,

    /// Read the fields (written before with the same arguments).
    #[arg(long, conflicts_with_all = ["list", "scenario"])]
    pub read: bool,
    /// List the fields (one list per step).
    #[arg(long, conflicts_with = "scenario")]
    pub list: bool,
    /// Run a whole access pattern instead of one phase.
    #[arg(long, value_enum)]
    pub scenario: Option<Scenario>,

    /// Do not randomise each field's bytes (only the 40-byte check header
    /// changes per field).
    #[arg(long)]
    pub no_randomise_data: bool,
    /// On read: check every field's header (identity, length); on list:
    /// check the listed keys.
    #[arg(long)]
    pub md_check: bool,
    /// On read: check the header and every byte (CRC-32C).
    #[arg(long)]
    pub full_check: bool,

    /// Bytes per synthetic field.
    #[arg(long, default_value_t = 1 << 20, conflicts_with = "template")]
    pub field_size: u64,
    /// A GRIB message used as every field's bytes (keys stay explicit).
    #[arg(long)]
    pub template: Option<PathBuf>,

    /// Store configuration (YAML, FDB5's shape): any backend. Not an
    /// argument of its own: the binary sets it from its (global) `--config`,
    /// so that `fieldstore --config c.yaml hammer ...` and
    /// `fieldstore-hammer --config c.yaml ...` both work.
    #[arg(skip)]
    pub config: Option<PathBuf>,
    /// Shortcut: an embedded POSIX store in this directory (created), with
    /// the hammer schema.
    #[arg(long)]
    pub root: Option<PathBuf>,

    /// Local worker processes, released together by a barrier. Under
    /// mpirun/srun (rank variables set) the launcher's ranks are used.
    #[arg(long, default_value_t = 1)]
    pub processes: u32,
    /// w+r: reader processes (default: --processes).
    #[arg(long)]
    pub readers: Option<u32>,
    /// follow: how readers learn of flushes.
    #[arg(long, value_enum, default_value_t = FollowMode::Watch)]
    pub follow: FollowMode,
    /// follow: readers only learn of the fields, they do not read them
    /// (what watching itself costs the writers).
    #[arg(long)]
    pub follow_no_read: bool,
    /// follow --follow poll: pause between two lists (0: none, as fast as
    /// the catalogue answers).
    #[arg(long, default_value_t = 0)]
    pub poll_period_ms: u64,
    /// w+r: readers read this many times the steps a writer writes, so
    /// that both groups stay busy over about the same window.
    #[arg(long, default_value_t = 4)]
    pub read_multiplier: u32,
    /// Fields per retrieve.
    #[arg(long, value_enum, default_value_t = Batch::Step)]
    pub batch: Batch,
    /// Break archive/flush/retrieve down into catalogue and store calls
    /// (goes through the backend traits, like the handle does).
    #[arg(long)]
    pub detailed: bool,
    /// Repeat the run; medians and spreads are reported.
    #[arg(long, default_value_t = 1)]
    pub repetitions: u32,
    /// Drop the whole machine's page cache before each read phase, so
    /// that reads are cold (the papers' method: pattern A's read, w+r's
    /// readers, the raw and Field I/O reads). Needs root; affects every
    /// process on the machine, so it is never done unless asked.
    #[arg(long)]
    pub drop_caches: bool,
    /// The default now (the page cache is dropped only with
    /// `--drop-caches`); accepted for scripts written when dropping was the
    /// default for root.
    #[arg(long, hide = true, conflicts_with = "drop_caches")]
    pub no_drop_caches: bool,
    /// Measure the physical limits of the store's file system in the same
    /// run: sequential write + fdatasync (1 and N streams), O_DIRECT read.
    #[arg(long)]
    pub physical: bool,
    /// Only measure the physical limits (`--repetitions` times).
    #[arg(long)]
    pub physical_only: bool,
    /// MiB written per physical-limit test.
    #[arg(long, default_value_t = 1024)]
    pub physical_mib: u64,
    /// Barrier directory on a file system all ranks share (MPI/Slurm runs;
    /// default: `.hammer-barrier` in the store's root).
    #[arg(long)]
    pub barrier_dir: Option<PathBuf>,
    /// Give up waiting at a barrier directory after this many seconds.
    #[arg(long, default_value_t = 600, hide = true)]
    pub barrier_timeout: u64,
    /// After the scenario's phases, measure the raw bandwidth of the
    /// store's backend IOR-style (POSIX files, DAOS arrays, RADOS
    /// objects or S3 objects — one per transfer —, no store): easy (an object per process, sequential
    /// transfers) and hard (one shared object, interleaved 47008-byte
    /// transfers) writes, synced, then reads of another process's data
    /// after dropping the page cache.
    #[arg(long)]
    pub raw: bool,
    /// After the scenario's phases, run ECMWF's Field I/O pattern on the
    /// store's DAOS pool (no store): each field written into its own array
    /// and indexed in a shared main KV and per-process index KVs, then read
    /// back by querying the KVs; same fields, bytes and checks as the
    /// write phase. Needs `store: daos`.
    #[arg(long)]
    pub fieldio: bool,
    /// --raw easy: bytes per transfer.
    #[arg(long, default_value_t = 1 << 20)]
    pub raw_transfer: u64,
    /// --raw: bytes per process and phase (default: the bytes of the
    /// store's write phase, so both move the same data).
    #[arg(long)]
    pub raw_bytes: Option<u64>,
    /// Also write the report as a self-contained HTML page with PNG plots
    /// (bandwidth over time, per-rank timeline, latency and access-size
    /// histograms, breakdown, ceilings, limits) to DIR/index.html.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,

    /// Internal: run as local worker process R (reads its task from stdin).
    #[arg(long, hide = true)]
    pub worker_rank: Option<u32>,
    /// Internal: the executable to spawn as a worker with only
    /// `--worker-rank R` (default: re-run the current executable with the
    /// current arguments).
    #[arg(long, hide = true, env = "FIELDSTORE_HAMMER_WORKER_EXE")]
    pub worker_exe: Option<PathBuf>,
}

impl Default for HammerArgs {
    fn default() -> Self {
        #[derive(clap::Parser)]
        struct P {
            #[command(flatten)]
            a: HammerArgs,
        }
        <P as clap::Parser>::parse_from(["hammer"]).a
    }
}
