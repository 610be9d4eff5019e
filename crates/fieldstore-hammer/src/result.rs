//! What a process reports of one phase, sent back as one JSON line: its
//! counts, its window's times (epoch seconds), its CPU time and its time
//! per operation; and the clocks they are read from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Time and calls spent in one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Seconds.
    pub secs: f64,
    /// Calls.
    pub calls: u64,
}

/// What one process reports.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProcResult {
    /// Rank in the group.
    pub rank: u32,
    /// What it did (`write`, `read`, `list`).
    pub role: String,
    /// Host name and process id.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// Fields written, read or listed.
    pub fields: u64,
    /// Bytes written or read.
    pub bytes: u64,
    /// Fields it expected to find (read, list).
    pub expected: u64,
    /// Fields not found.
    pub missing: u64,
    /// Fields that failed `--md-check` / `--full-check`.
    pub check_failures: u64,
    /// The first failure, for the report.
    pub first_failure: Option<String>,
    /// Epoch seconds: setup done, waiting at the barrier.
    pub t_ready: f64,
    /// Epoch seconds: released by the barrier.
    pub t_release: f64,
    /// Epoch seconds: just before the first I/O call.
    pub t_first_io: f64,
    /// Epoch seconds: just after the last I/O call returned.
    pub t_last_io: f64,
    /// Seconds in opening the store (before the barrier, not timed).
    pub setup_secs: f64,
    /// Time per operation inside the window.
    pub ops: BTreeMap<String, Op>,
    /// CPU seconds (user, system) of the process inside the window.
    pub cpu_user: f64,
    /// System CPU seconds inside the window.
    pub cpu_sys: f64,
    /// Writers: when each flush returned, as `(step, member, epoch s)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flushed_at: Vec<(u32, u32, f64)>,
    /// Followers: when each flush's fields were first seen, as `(step,
    /// member, epoch s)` (the earliest of its fields).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_at: Vec<(u32, u32, f64)>,
    /// Would-be DAOS RPCs inside the window, when the library counts them
    /// (the stand-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpcs: Option<u64>,
    /// When each operation ran: `(operation, start, end)` in epoch seconds,
    /// consecutive calls of one operation merged (`crate::trace`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<(String, f64, f64)>,
    /// More spans happened than were kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spans_cut: bool,
    /// Calls per operation by duration: bucket `i` is `[2^i, 2^(i+1))` µs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub latency_log2_us: BTreeMap<String, Vec<u64>>,
    /// `(epoch s, bytes so far)` samples inside the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<(f64, u64)>,
    /// Accesses by size: floor(log₂(bytes)) → count.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sizes_log2: BTreeMap<u32, u64>,
}

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// (user, system) CPU seconds of this process.
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// This host's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
