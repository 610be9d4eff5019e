//! What a run reports: rows per phase, repetitions, breakdown, limits.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::physical::Physical;
use crate::result::{Op, ProcResult};
use crate::stats::{self, Summary, MIB};

/// One phase (or one role of a phase) of one repetition, aggregated over
/// its processes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    /// `write`, `read`, `list`, `populate`, `write-alone`, `wr-write`, `wr-read`.
    pub phase: String,
    /// Processes.
    pub procs: usize,
    /// Fields written, read or listed, all processes.
    pub fields: u64,
    /// Bytes, all processes.
    pub bytes: u64,
    /// Last I/O end − first I/O start, seconds.
    pub window_s: f64,
    /// Global timing bandwidth, MiB/s (none for list).
    pub gtb_mib_s: Option<f64>,
    /// Fields (entries for list) per second over the window.
    pub fields_per_s: Option<f64>,
    /// Spread of the processes' first-I/O timestamps, ms.
    pub start_spread_ms: f64,
    /// Spread of the barrier release times, ms.
    pub release_spread_ms: f64,
    /// CPU seconds of all processes inside their windows.
    pub cpu_s: f64,
    /// Other tenants' share of the machine's CPU capacity while the group
    /// ran, percent (local runs): above ~15 % the numbers are noisy.
    pub others_cpu_pct: Option<f64>,
    /// Fields expected but not found.
    pub missing: u64,
    /// Fields that failed verification.
    pub check_failures: u64,
    /// The first verification failure.
    pub first_failure: Option<String>,
    /// Time per operation, summed over processes.
    pub ops: BTreeMap<String, Op>,
    /// Σ over processes of (last I/O − first I/O): the time the breakdown
    /// divides.
    pub process_s: f64,
    /// The processes.
    pub per_process: Vec<ProcResult>,
    /// Followers: how long after a writer's flush returned they had its
    /// fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// Would-be DAOS RPCs of all processes inside their windows, when the
    /// library counts them (the stand-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpcs: Option<u64>,
}

/// Flush-to-visible latency: from a writer's flush returning to a
/// follower having the list element of its fields, both on the machine's
/// clock (one host; across hosts the clocks' offset adds in).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// (flush, follower) pairs measured.
    pub samples: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Pairs where the follower had the fields before the writer's flush
    /// returned (visible once the record is appended, before its sync
    /// returns): counted as 0 ms.
    pub before_return: usize,
}

impl Latency {
    /// Join writers' flush times with followers' first sightings.
    pub fn of(writers: &[ProcResult], followers: &[ProcResult]) -> Option<Latency> {
        let flushed: std::collections::HashMap<(u32, u32), f64> = writers
            .iter()
            .flat_map(|w| w.flushed_at.iter().map(|&(s, m, t)| ((s, m), t)))
            .collect();
        let mut ms = Vec::new();
        let mut before = 0;
        for f in followers {
            for &(s, m, t) in &f.seen_at {
                if let Some(done) = flushed.get(&(s, m)) {
                    let d = (t - done) * 1000.0;
                    if d < 0.0 {
                        before += 1;
                    }
                    ms.push(d.max(0.0));
                }
            }
        }
        if ms.is_empty() {
            return None;
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        Some(Latency {
            samples: ms.len(),
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: ms[ms.len() - 1],
            before_return: before,
        })
    }
}

impl Row {
    /// Aggregate processes.
    pub fn new(phase: &str, procs: Vec<ProcResult>) -> Row {
        let spans: Vec<(f64, f64)> = procs.iter().map(|p| (p.t_first_io, p.t_last_io)).collect();
        let fields = procs.iter().map(|p| p.fields).sum();
        let bytes = procs.iter().map(|p| p.bytes).sum();
        let mut ops: BTreeMap<String, Op> = BTreeMap::new();
        for p in &procs {
            for (k, o) in &p.ops {
                let e = ops.entry(k.clone()).or_default();
                e.secs += o.secs;
                e.calls += o.calls;
            }
        }
        let firsts: Vec<f64> = procs.iter().map(|p| p.t_first_io).collect();
        let releases: Vec<f64> = procs.iter().map(|p| p.t_release).collect();
        Row {
            phase: phase.into(),
            procs: procs.len(),
            fields,
            bytes,
            window_s: stats::global_window(&spans).unwrap_or(0.0),
            gtb_mib_s: if bytes > 0 {
                stats::global_timing_bandwidth(bytes, &spans)
            } else {
                None
            },
            fields_per_s: stats::global_rate(fields, &spans),
            start_spread_ms: stats::spread(&firsts) * 1e3,
            release_spread_ms: stats::spread(&releases) * 1e3,
            cpu_s: procs.iter().map(|p| p.cpu_user + p.cpu_sys).sum(),
            others_cpu_pct: None,
            missing: procs.iter().map(|p| p.missing).sum(),
            check_failures: procs.iter().map(|p| p.check_failures).sum(),
            first_failure: procs.iter().find_map(|p| p.first_failure.clone()),
            ops,
            process_s: procs.iter().map(|p| p.t_last_io - p.t_first_io).sum(),
            rpcs: procs.iter().map(|p| p.rpcs).sum(),
            per_process: procs,
            latency: None,
        }
    }
}

/// A phase over the repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// The phase.
    pub phase: String,
    /// Global timing bandwidth, MiB/s.
    pub gtb_mib_s: Option<Summary>,
    /// Fields (entries) per second.
    pub fields_per_s: Option<Summary>,
    /// Largest start spread of any repetition, ms.
    pub max_start_spread_ms: f64,
}

/// One repetition.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Repetition {
    /// 0-based.
    pub index: u32,
    /// The `date` this repetition's fields carry.
    pub date: String,
    /// Its phases.
    pub rows: Vec<Row>,
    /// Whether the page cache was dropped before the read phases.
    pub caches_dropped: Option<bool>,
    /// Physical limits measured right after it.
    pub physical: Option<Physical>,
}

/// The result of `fieldstore hammer`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// A worker process (or a non-zero launcher rank): nothing to print.
    pub quiet: bool,
    /// Print as JSON.
    #[serde(skip)]
    pub json: bool,
    /// `write`, `read`, `list`, `a`, `wr`.
    pub scenario: String,
    /// How processes were started.
    pub launcher: String,
    /// Writer (or only) processes.
    pub processes: u32,
    /// Reader processes (w+r).
    pub readers: u32,
    /// Bytes per field.
    pub field_bytes: u64,
    /// Where the raw phases went (`--raw`), else empty.
    #[serde(default)]
    pub raw_target: String,
    /// The HTML page `--report` wrote, else empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub html_page: String,
    /// Fields per process and phase.
    pub fields_per_process: u64,
    /// The store.
    pub store: String,
    /// `none`, `metadata`, `full`.
    pub check: String,
    /// Randomised field bytes; `None` when the run writes no fields
    /// (`--read`, `--list`: the data is as an earlier run wrote it).
    pub randomised: Option<bool>,
    /// Fields per retrieve.
    pub batch: String,
    /// `/proc/loadavg` before and after: others' load makes numbers noisy.
    pub load_before: String,
    /// After.
    pub load_after: String,
    /// `nproc`.
    pub cpus: usize,
    /// Epoch seconds at the start.
    pub started: f64,
    /// The repetitions.
    pub repetitions: Vec<Repetition>,
    /// Medians and spreads over the repetitions.
    pub summary: Vec<PhaseSummary>,
    /// Physical limits over the repetitions (medians).
    pub physical: Option<PhysicalSummary>,
    /// Missing fields and verification failures.
    pub problems: Vec<String>,
    /// Measurement caveats: processes that did not start together,
    /// repetitions that differ by more than 5 %, a busy machine.
    pub warnings: Vec<String>,
}

/// Medians of the physical limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhysicalSummary {
    /// Sequential write + fdatasync, MiB/s.
    pub write_fdatasync_mib_s: Option<Summary>,
    /// Concurrent writes (one stream per process), MiB/s.
    pub write_streams_mib_s: Option<Summary>,
    /// Streams.
    pub streams: u32,
    /// O_DIRECT write + fdatasync, MiB/s.
    pub write_odirect_mib_s: Option<Summary>,
    /// O_DIRECT read, MiB/s.
    pub read_odirect_mib_s: Option<Summary>,
    /// Cold buffered sequential read, MiB/s.
    #[serde(default)]
    pub read_buffered_mib_s: Option<Summary>,
    /// Cold buffered scattered 1 MiB reads, MiB/s.
    #[serde(default)]
    pub read_scattered_mib_s: Option<Summary>,
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

fn summary_cell(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n > 1 => format!(
            "{:.1} ({:.1}-{:.1}, {:.1}%)",
            s.median, s.min, s.max, s.spread_pct
        ),
        Some(s) => format!("{:.1}", s.median),
        None => "-".into(),
    }
}

impl Report {
    /// Fill `summary`, `physical` and `problems` from the repetitions.
    pub fn finish(&mut self) {
        let mut phases: Vec<String> = Vec::new();
        for rep in &self.repetitions {
            for row in &rep.rows {
                if !phases.contains(&row.phase) {
                    phases.push(row.phase.clone());
                }
                if row.procs > 1 && row.start_spread_ms > 0.05 * row.window_s * 1e3 {
                    self.warnings.push(format!(
                        "repetition {} {}: processes started {:.2} ms apart, > 5 % of the {:.3} s window",
                        rep.index, row.phase, row.start_spread_ms, row.window_s
                    ));
                }
                if row.others_cpu_pct.is_some_and(|o| o > 15.0) {
                    self.warnings.push(format!(
                        "repetition {} {}: other processes used {:.0} % of the machine's CPU",
                        rep.index,
                        row.phase,
                        row.others_cpu_pct.unwrap_or(0.0)
                    ));
                }
                if row.missing > 0 {
                    self.problems.push(format!(
                        "repetition {} {}: {} of the fields expected were not found",
                        rep.index, row.phase, row.missing
                    ));
                }
                if row.check_failures > 0 {
                    self.problems.push(format!(
                        "repetition {} {}: {} fields failed verification; first: {}",
                        rep.index,
                        row.phase,
                        row.check_failures,
                        row.first_failure.as_deref().unwrap_or("?")
                    ));
                }
            }
        }
        self.summary = phases
            .iter()
            .map(|ph| {
                let rows: Vec<&Row> = self
                    .repetitions
                    .iter()
                    .flat_map(|r| r.rows.iter().filter(|row| &row.phase == ph))
                    .collect();
                let gtb: Vec<f64> = rows.iter().filter_map(|r| r.gtb_mib_s).collect();
                let fps: Vec<f64> = rows.iter().filter_map(|r| r.fields_per_s).collect();
                PhaseSummary {
                    phase: ph.clone(),
                    gtb_mib_s: stats::summarise(&gtb),
                    fields_per_s: stats::summarise(&fps),
                    max_start_spread_ms: rows.iter().map(|r| r.start_spread_ms).fold(0.0, f64::max),
                }
            })
            .collect();
        for p in &self.summary {
            if let Some(g) = p.fields_per_s.filter(|g| g.n > 1 && g.spread_pct > 5.0) {
                self.warnings.push(format!(
                    "{}: repetitions differ by {:.0} % (> 5 %): run longer or on a quieter machine",
                    p.phase, g.spread_pct
                ));
            }
        }
        let phys: Vec<&Physical> = self
            .repetitions
            .iter()
            .filter_map(|r| r.physical.as_ref())
            .collect();
        if !phys.is_empty() {
            let w: Vec<f64> = phys.iter().map(|p| p.write_fdatasync_mib_s).collect();
            let s: Vec<f64> = phys.iter().map(|p| p.write_streams_mib_s).collect();
            let r: Vec<f64> = phys.iter().filter_map(|p| p.read_odirect_mib_s).collect();
            let d: Vec<f64> = phys.iter().filter_map(|p| p.write_odirect_mib_s).collect();
            let b: Vec<f64> = phys.iter().filter_map(|p| p.read_buffered_mib_s).collect();
            let sc: Vec<f64> = phys.iter().filter_map(|p| p.read_scattered_mib_s).collect();
            self.physical = Some(PhysicalSummary {
                write_fdatasync_mib_s: stats::summarise(&w),
                write_streams_mib_s: stats::summarise(&s),
                streams: phys[0].streams,
                write_odirect_mib_s: stats::summarise(&d),
                read_odirect_mib_s: stats::summarise(&r),
                read_buffered_mib_s: stats::summarise(&b),
                read_scattered_mib_s: stats::summarise(&sc),
            });
        }
    }

    /// The summary row of a phase.
    pub fn phase(&self, phase: &str) -> Option<&PhaseSummary> {
        self.summary.iter().find(|s| s.phase == phase)
    }

    /// 0 when everything was found and verified, 3 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.problems.is_empty() {
            0
        } else {
            3
        }
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Print to stdout as a table or JSON (nothing for a quiet report).
    ///
    /// # Errors
    /// Write errors.
    pub fn print(&self) -> std::io::Result<()> {
        use std::io::Write;
        if self.quiet {
            return Ok(());
        }
        let text = if self.json {
            self.to_json()
        } else {
            self.table()
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")?;
        out.flush()
    }

    /// The report for people.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let procs = if self.scenario == "wr" {
            format!("{} writers + {} readers", self.processes, self.readers)
        } else {
            format!("{} processes", self.processes)
        };
        let _ = writeln!(
            s,
            "fieldstore hammer: {} ({procs}, {}), {} fields of {} B per process and phase, {} repetition(s)",
            self.scenario,
            self.launcher,
            self.fields_per_process,
            self.field_bytes,
            self.repetitions.len()
        );
        let _ = writeln!(
            s,
            "store: {}; check: {}; data: {}; retrieve batch: {}",
            self.store,
            self.check,
            data_kind(self.randomised),
            self.batch
        );
        let dropped = self
            .repetitions
            .iter()
            .filter_map(|r| r.caches_dropped)
            .collect::<Vec<_>>();
        let _ = writeln!(
            s,
            "cpus: {}; load average before: {}, after: {}; page cache dropped before reads: {}",
            self.cpus,
            self.load_before,
            self.load_after,
            if dropped.is_empty() {
                "n/a".to_string()
            } else if dropped.iter().all(|d| *d) {
                "yes".to_string()
            } else {
                "NO (warm reads)".to_string()
            }
        );
        let has_rows = self.repetitions.iter().any(|r| !r.rows.is_empty());
        let _ = writeln!(s);
        if has_rows {
            let _ = writeln!(
                s,
                "{:<14} {:>3} {:>5} {:>9} {:>10} {:>9} {:>10} {:>11} {:>9} {:>7} {:>8}",
                "phase",
                "rep",
                "procs",
                "fields",
                "MiB",
                "window s",
                "MiB/s",
                "fields/s",
                "spread ms",
                "CPU s",
                "others %"
            );
            for rep in &self.repetitions {
                for r in &rep.rows {
                    let _ = writeln!(
                        s,
                        "{:<14} {:>3} {:>5} {:>9} {:>10.1} {:>9.4} {:>10} {:>11} {:>9.2} {:>7.2} {:>8}",
                        r.phase,
                        rep.index,
                        r.procs,
                        r.fields,
                        r.bytes as f64 / MIB,
                        r.window_s,
                        opt(r.gtb_mib_s, 1),
                        opt(r.fields_per_s, 0),
                        r.start_spread_ms,
                        r.cpu_s,
                        opt(r.others_cpu_pct, 0)
                    );
                }
            }
        }
        if has_rows && self.repetitions.len() > 1 {
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "{:<12} {:<36} {:<36}",
                "phase", "MiB/s median (min-max, spread)", "fields/s median (min-max, spread)"
            );
            for p in &self.summary {
                let _ = writeln!(
                    s,
                    "{:<12} {:<36} {:<36}",
                    p.phase,
                    summary_cell(&p.gtb_mib_s),
                    summary_cell(&p.fields_per_s)
                );
            }
        }
        for (contended, with) in [("wr-write", "contention"), ("follow-write", "followers")] {
            if let (Some(alone), Some(cont)) = (self.phase("write-alone"), self.phase(contended)) {
                if let (Some(a), Some(c)) = (&alone.gtb_mib_s, &cont.gtb_mib_s) {
                    let _ = writeln!(
                        s,
                        "\nwriters with {with} keep {:.0}% of their bandwidth alone ({:.1} of {:.1} MiB/s)",
                        c.median / a.median * 100.0,
                        c.median,
                        a.median
                    );
                }
            }
        }
        for rep in &self.repetitions {
            for r in &rep.rows {
                if let Some(l) = &r.latency {
                    let _ = writeln!(
                        s,
                        "flush-to-visible latency (rep {}): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {} (flush, reader) pairs; {} seen before the writer's flush returned",
                        rep.index, l.p50_ms, l.p99_ms, l.max_ms, l.samples, l.before_return
                    );
                }
            }
        }
        let mut rpc_lines = Vec::new();
        for rep in &self.repetitions {
            for r in &rep.rows {
                if let (Some(n), true) = (r.rpcs, r.fields > 0) {
                    rpc_lines.push(format!(
                        "  {:<16} rep {}: {} RPCs, {:.2} per {}",
                        r.phase,
                        rep.index,
                        n,
                        n as f64 / r.fields as f64,
                        if r.phase.starts_with("raw-") {
                            "transfer"
                        } else {
                            "field"
                        }
                    ));
                }
            }
        }
        if !rpc_lines.is_empty() {
            let _ = writeln!(
                s,
                "\nDAOS RPCs inside the windows (counted by the stand-in):"
            );
            for l in rpc_lines {
                let _ = writeln!(s, "{l}");
            }
        }
        if !self.raw_target.is_empty() {
            let _ = writeln!(s, "\nraw phases (IOR-style, no store): {}", self.raw_target);
        }
        if has_rows {
            let _ = writeln!(
                s,
                "\ntime per operation (seconds summed over processes and repetitions; % of process time in the window)"
            );
        }
        let mut phases: Vec<&str> = Vec::new();
        for rep in &self.repetitions {
            for r in &rep.rows {
                if !phases.contains(&r.phase.as_str()) {
                    phases.push(&r.phase);
                }
            }
        }
        for ph in phases {
            let mut ops: BTreeMap<&str, Op> = BTreeMap::new();
            let mut total = 0.0;
            for r in self
                .repetitions
                .iter()
                .flat_map(|rep| rep.rows.iter().filter(|r| r.phase == ph))
            {
                total += r.process_s;
                for (k, o) in &r.ops {
                    let e = ops.entry(k).or_default();
                    e.secs += o.secs;
                    e.calls += o.calls;
                }
            }
            let mut line = format!("  {ph:<12}");
            let mut accounted = 0.0;
            let mut sorted: Vec<_> = ops.into_iter().collect();
            sorted.sort_by(|a, b| b.1.secs.total_cmp(&a.1.secs));
            for (k, o) in sorted {
                accounted += o.secs;
                let pct = if total > 0.0 {
                    o.secs / total * 100.0
                } else {
                    0.0
                };
                let per_call = if o.calls > 0 {
                    o.secs / o.calls as f64 * 1e6
                } else {
                    0.0
                };
                let _ = write!(
                    line,
                    " {k} {:.3}s {pct:.0}% ({per_call:.1}us/call);",
                    o.secs
                );
            }
            let other = (total - accounted).max(0.0);
            let pct = if total > 0.0 {
                other / total * 100.0
            } else {
                0.0
            };
            let _ = writeln!(s, "{line} other {other:.3}s {pct:.0}%");
        }
        if let Some(last) = self.repetitions.last().filter(|_| has_rows) {
            let _ = writeln!(
                s,
                "\nper process, repetition {} (epoch seconds before the first and after the last I/O):",
                last.index
            );
            for r in &last.rows {
                for p in &r.per_process {
                    let _ = writeln!(
                        s,
                        "  {:<12} rank {:>3} {}:{:<8} before first IO {:.6}  after last IO {:.6}  fields {:>7}  bytes {:>12}",
                        r.phase, p.rank, p.host, p.pid, p.t_first_io, p.t_last_io, p.fields, p.bytes
                    );
                }
            }
        }
        if let Some(p) = &self.physical {
            let _ = writeln!(
                s,
                "\nphysical limits, same file system, same run (median MiB/s):"
            );
            let _ = writeln!(
                s,
                "  sequential write + fdatasync, 1 stream: {}; {} streams: {}; O_DIRECT write: {}; O_DIRECT read: {}",
                summary_cell(&p.write_fdatasync_mib_s),
                p.streams,
                summary_cell(&p.write_streams_mib_s),
                summary_cell(&p.write_odirect_mib_s),
                summary_cell(&p.read_odirect_mib_s)
            );
            let _ = writeln!(
                s,
                "  cold buffered read, sequential: {}; one 1 MiB block in four, four in flight: {}",
                summary_cell(&p.read_buffered_mib_s),
                summary_cell(&p.read_scattered_mib_s)
            );
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(s, "\nwarnings:");
            for w in &self.warnings {
                let _ = writeln!(s, "  {w}");
            }
        }
        if !self.html_page.is_empty() {
            let _ = writeln!(s, "\nHTML report: {}", self.html_page);
        }
        if self.problems.is_empty() {
            let _ = write!(
                s,
                "\nall fields found{}",
                if self.check == "none" {
                    ""
                } else {
                    " and verified"
                }
            );
        } else {
            let _ = writeln!(s, "\nPROBLEMS:");
            for p in &self.problems {
                let _ = writeln!(s, "  {p}");
            }
        }
        s
    }
}

/// The report's words for the fields' bytes: `randomised`, `not
/// randomised`, or, for a run that writes none, `as written earlier`.
pub(crate) fn data_kind(randomised: Option<bool>) -> &'static str {
    match randomised {
        Some(true) => "randomised",
        Some(false) => "not randomised",
        None => "as written earlier (this run writes none)",
    }
}
