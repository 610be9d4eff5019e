//! The physical limits of a file system, measured in the same run as the
//! benchmark (what `dd conv=fdatasync` and `dd iflag=direct` report, and
//! what cold buffered reads, sequential and scattered, get from the disk).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use fieldstore::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::stats::MIB;

const BLOCK: usize = 1 << 20;
/// The scattered-read test reads one 1 MiB block in this many.
const SCATTER_STRIDE: usize = 4;
/// Reads in flight in the scattered-read test: on the development VM
/// scattered 1 MiB reads gain nothing past two to four in flight.
const SCATTER_DEPTH: usize = 4;

/// Physical limits of one directory's file system.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Physical {
    /// MiB written per test.
    pub mib: u64,
    /// Sequential write of `mib` MiB in 1 MiB blocks, then `fdatasync`.
    pub write_fdatasync_mib_s: f64,
    /// Streams of the concurrent write test.
    pub streams: u32,
    /// `streams` concurrent writers of `mib / streams` MiB each, each
    /// ending in `fdatasync` (aggregate).
    pub write_streams_mib_s: f64,
    /// Sequential `O_DIRECT` write of `mib` MiB in 4 MiB blocks, then
    /// `fdatasync` (no page-cache copy: what a store could do).
    pub write_odirect_mib_s: Option<f64>,
    /// `O_DIRECT` sequential read of the single-stream file.
    pub read_odirect_mib_s: Option<f64>,
    /// Cold buffered sequential read of the single-stream file in 1 MiB
    /// reads, its pages evicted first (`dd bs=1M` after dropping the page
    /// cache): the ceiling of a cold retrieve of fields stored in order.
    #[serde(default)]
    pub read_buffered_mib_s: Option<f64>,
    /// Cold buffered reads of one 1 MiB block in four of the same file,
    /// four in flight, its pages evicted first: the ceiling of a cold
    /// retrieve of fields scattered through the data files.
    #[serde(default)]
    pub read_scattered_mib_s: Option<f64>,
    /// Why the O_DIRECT read could not be done (e.g. tmpfs).
    pub read_odirect_error: Option<String>,
}

fn write_file(path: &Path, mib: u64) -> std::io::Result<()> {
    let mut block = vec![0u8; BLOCK];
    let mut x: u64 = 0x1234_5678_9abc_def1;
    for c in block.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    for _ in 0..mib {
        f.write_all(&block)?;
    }
    f.sync_data()
}

/// An aligned `len`-byte window of `raw` (O_DIRECT needs buffers aligned
/// to the logical block size; 4 KiB covers every disk).
fn aligned(raw: &mut [u8], len: usize) -> &mut [u8] {
    let skew = raw.as_ptr() as usize % 4096;
    let start = if skew == 0 { 0 } else { 4096 - skew };
    &mut raw[start..start + len]
}

fn write_direct(path: &Path, mib: u64) -> std::io::Result<()> {
    const DIRECT_BLOCK: usize = 4 << 20;
    let mut raw = vec![0u8; DIRECT_BLOCK + 4096];
    let buf = aligned(&mut raw, DIRECT_BLOCK);
    let mut x: u64 = 0x0bad_cafe_1234_5678;
    for c in buf.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    for _ in 0..mib.div_ceil(4) {
        f.write_all(buf)?;
    }
    f.sync_data()
}

fn read_direct(path: &Path) -> std::io::Result<u64> {
    let mut f: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut raw = vec![0u8; BLOCK + 4096];
    let buf = aligned(&mut raw, BLOCK);
    let mut total = 0u64;
    loop {
        let n = f.read(buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// Drop a file's pages from the page cache, as `drop_caches` would, but
/// without root: after `fdatasync` they are clean, and clean pages that
/// nobody maps are dropped. (On tmpfs nothing is dropped: the pages are
/// the file, and the reads measure memory.)
fn evict(f: &File) -> std::io::Result<()> {
    // SAFETY: a system call on a descriptor `f` keeps open for the call's
    // duration; it touches no memory of this process.
    match unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) } {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

fn read_buffered(path: &Path) -> std::io::Result<u64> {
    let mut f = File::open(path)?;
    evict(&f)?;
    let mut buf = vec![0u8; BLOCK];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

fn read_scattered(path: &Path, mib: u64) -> std::io::Result<u64> {
    let f = File::open(path)?;
    evict(&f)?;
    let offsets: Vec<u64> = (0..mib).step_by(SCATTER_STRIDE).map(|b| b << 20).collect();
    let next = AtomicUsize::new(0);
    let results: Vec<std::io::Result<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..SCATTER_DEPTH)
            .map(|_| {
                s.spawn(|| {
                    let mut buf = vec![0u8; BLOCK];
                    let mut bytes = 0u64;
                    while let Some(&off) = offsets.get(next.fetch_add(1, Ordering::Relaxed)) {
                        f.read_exact_at(&mut buf, off)?;
                        bytes += BLOCK as u64;
                    }
                    Ok(bytes)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("reader thread panicked")))
            })
            .collect()
    });
    results.into_iter().sum()
}

/// Measure in `dir` (files are removed afterwards).
///
/// # Errors
/// I/O errors of the write tests.
pub fn measure(dir: &Path, mib: u64, streams: u32) -> Result<Physical> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))?;
    let base = dir.join(format!(".hammer-physical.{}", std::process::id()));
    let one = base.with_extension("1");
    let mib = mib.max(1);
    let streams = streams.max(1);
    let mut p = Physical {
        mib,
        streams,
        ..Physical::default()
    };
    let t = Instant::now();
    write_file(&one, mib).map_err(|e| Error::io(one.display(), e))?;
    p.write_fdatasync_mib_s = mib as f64 / t.elapsed().as_secs_f64();

    // Nothing of the file may come from the page cache either way: O_DIRECT.
    let t = Instant::now();
    match read_direct(&one) {
        Ok(n) => p.read_odirect_mib_s = Some(n as f64 / MIB / t.elapsed().as_secs_f64()),
        Err(e) => p.read_odirect_error = Some(e.to_string()),
    }
    let t = Instant::now();
    let n = read_buffered(&one).map_err(|e| Error::io(one.display(), e))?;
    p.read_buffered_mib_s = Some(n as f64 / MIB / t.elapsed().as_secs_f64());
    let t = Instant::now();
    let n = read_scattered(&one, mib).map_err(|e| Error::io(one.display(), e))?;
    p.read_scattered_mib_s = Some(n as f64 / MIB / t.elapsed().as_secs_f64());
    let _ = std::fs::remove_file(&one);

    let t = Instant::now();
    match write_direct(&one, mib) {
        Ok(()) => {
            p.write_odirect_mib_s = Some(mib.div_ceil(4) as f64 * 4.0 / t.elapsed().as_secs_f64());
        }
        Err(e) => p.read_odirect_error = Some(format!("O_DIRECT write: {e}")),
    }
    let _ = std::fs::remove_file(&one);

    let per = (mib / u64::from(streams)).max(1);
    let paths: Vec<_> = (0..streams)
        .map(|i| base.with_extension(format!("s{i}")))
        .collect();
    let t = Instant::now();
    let results: Vec<std::io::Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = paths
            .iter()
            .map(|path| s.spawn(move || write_file(path, per)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")))
            })
            .collect()
    });
    let secs = t.elapsed().as_secs_f64();
    for path in &paths {
        let _ = std::fs::remove_file(path);
    }
    for r in results {
        r.map_err(|e| Error::io(dir.display(), e))?;
    }
    p.write_streams_mib_s = (per * u64::from(streams)) as f64 / secs;
    Ok(p)
}

/// Flush dirty pages and drop the page cache (needs root); whether it
/// worked.
pub fn drop_caches() -> bool {
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

/// CPU seconds the whole machine spent busy since boot (all CPUs, from
/// `/proc/stat`: user, nice, system, irq, softirq, steal).
pub fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let busy: u64 = [0usize, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| v.get(i))
        .sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| busy as f64 / hz as f64)
}

/// The 1, 5 and 15-minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
