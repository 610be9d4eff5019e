//! The data file's write path: fields are staged in an aligned buffer and
//! written in blocks, through the page cache by default (1 MiB blocks) or
//! with `O_DIRECT` (`FIELDSTORE_DIRECT_IO=1`, 4 MiB blocks), bypassing it.
//!
//! Buffered blocks are written back as they are written (write-behind): the
//! write-back of each block is started at once and the writer waits only
//! while more than [`BEHIND`] bytes (32 MiB) are still being written
//! back, so the device works while the writer copies the next fields and
//! `fdatasync` at a flush finds little still dirty. Without it the whole
//! step was copied first and written back at the flush, serially; with it
//! archive of 1 MiB fields by one process went from 654–1515 to
//! 2511–2740 MiB/s in alternating runs, above the same hour's write +
//! `fdatasync` of the same bytes (1431–2022; docs/benchmarks.md, "Latest
//! results"). The pages stay cached for readers on the same node.
//! Buffered writes reach the page cache in pieces of at most 1 MiB
//! ([`WRITE_PIECE`]): larger writes make the kernel take 2 MiB folios,
//! which on a VM with free page reporting cost host faults.
//!
//! Buffered data files are preallocated ahead of the writes
//! (`fallocate(FALLOC_FL_KEEP_SIZE)`, in chunks that double from 4 MiB up
//! to 64 MiB, each at most as large as what is already reserved): writes
//! into allocated blocks skip ext4's per-page delayed-allocation
//! bookkeeping (reservations, extent-status tree, quota), which was up to
//! half of the CPU of archiving 64 KiB fields in a profile. Alternating
//! runs: 1 MiB fields 0.29–0.34 → 0.22–0.25 CPU s/GiB, 64 KiB fields
//! 0.39–0.40 → 0.34–0.37 (docs/benchmarks.md). The file's size is
//! unchanged; when the writer closes the file what was not used is given
//! back (`ftruncate` to the same size). A killed writer leaves at most one
//! chunk allocated past the end of its file.
//!
//! The mode is a [`DataWrites`], from the config's `file:` section or the
//! environment. In `drop-behind` mode (`FIELDSTORE_DROP_BEHIND=1`)
//! buffered pages are also dropped from the
//! page cache once written back (`POSIX_FADV_DONTNEED`), so a writer keeps
//! reusing some 40 MiB of page cache instead of taking new pages for every
//! step. On a VM whose host reclaims the guest's free memory (free page
//! reporting) new pages cost a host fault each: there, 5 of 12 alternating
//! runs archiving 1 MiB fields took 1.7–2.2 s of CPU per GiB (4–5x slower)
//! without it and none of 12 with it (docs/experiments/2026-11-posix-writes.md, "Dropping pages
//! behind writers"). The price: readers on the same node no longer find
//! fresh steps in the page cache. Off by default.
//!
//! Direct writes avoid the kernel's page-cache copy (77–89 % of archive
//! CPU in profiles) and leave `fdatasync` only metadata to do; but readers
//! on the same node then read fresh steps from the disk instead of the page
//! cache, and in the w+r pattern writers lost most of their bandwidth to
//! them. Both paths are kept; measurements in `docs/experiments/2026-11-posix-writes.md`.
//!
//! Full buffers are written by two background threads while the caller
//! fills the next (up to three in flight), so a writer keeps the device
//! busy instead of waiting for each write; `sync` waits for them all.
//!
//! Direct I/O needs aligned buffers, offsets and lengths. At a flush the
//! partial last block is written padded to [`ALIGN`], and the next field
//! starts at the next aligned offset: the gap (at most 4 KiB per flush) is
//! never indexed. Where the file system refuses `O_DIRECT` (tmpfs), writes
//! fall back to ordinary buffered writes with no gaps.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use fieldstore_core::{Error, Result};

/// Alignment of direct I/O buffers, offsets and lengths (the largest
/// logical block size in common use).
pub(crate) const ALIGN: usize = 4096;
/// The staging buffer: with `O_DIRECT` one write per this many bytes
/// (buffered, per [`WRITE_PIECE`]: [`Staging::block`]).
const STAGE: usize = 4 << 20;

/// A buffer of `STAGE` bytes aligned to `ALIGN`, without `unsafe`: an
/// over-allocated vector and the aligned window inside it.
struct Aligned {
    raw: Vec<u8>,
    start: usize,
}

impl Aligned {
    fn new() -> Aligned {
        let raw = vec![0u8; STAGE + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        Aligned { raw, start }
    }

    fn buf(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + STAGE]
    }

    /// The first `len` bytes.
    fn filled(&self, len: usize) -> &[u8] {
        &self.raw[self.start..self.start + len]
    }
}

/// Buffered bytes whose write-back may be under way while the next are
/// copied; the writer waits for older ones. Eight blocks: with two (8 MiB)
/// the device queue ran shallow, and in alternating runs 32 MiB archived
/// 64 KiB fields 10–30 % faster (one process) and kept writers at 87–106 %
/// of their uncontended bandwidth under w+r contention with more bytes
/// moved in total; 64 MiB gained nothing more (docs/experiments/2026-11-posix-writes.md, "How
/// far behind write-back may run").
const BEHIND: usize = 8 * STAGE;
/// Buffered fields of this size or more are written from the caller's
/// buffer, not copied into the stage first.
const DIRECT_FROM: usize = 512 << 10;

/// Buffered writes go to the page cache in pieces of at most this: the
/// kernel sizes the page-cache folios it allocates by the write, and a
/// 4 MiB write takes 2 MiB folios, the blocks a VM's free page reporting
/// hands back to the host, so that each costs host faults on first touch.
/// With 4 MiB writes 6 of 8 alternating runs archiving 64 KiB fields paid
/// that (4-6x the CPU, 463-781 MiB/s), with 1 MiB pieces none of 8
/// (docs/experiments/2026-11-posix-writes.md, "Buffered write size").
const WRITE_PIECE: usize = 1 << 20;

/// Buffered data files are preallocated in chunks of at least this...
const RESERVE_MIN: u64 = 4 << 20;
/// ... and at most this.
const RESERVE_MAX: u64 = 64 << 20;

/// Buffers per data file: one filling while up to `BUFFERS - 1` are written.
const BUFFERS: usize = 4;
/// Threads writing one data file's full buffers.
const WRITERS: usize = 2;

/// A full buffer to write at `offset`.
struct Job {
    buf: Aligned,
    len: usize,
    offset: u64,
}

/// A written buffer coming back, with how its write went.
struct Done {
    job: Job,
    result: std::io::Result<()>,
}

/// Threads that write full buffers with `O_DIRECT` while the caller fills
/// the next one: a synchronous direct write waits for the device, and with
/// one write at a time a writer competing with readers for the disk lost
/// most of its bandwidth (measured: 29–43 % of its uncontended rate).
struct Pool {
    jobs: Option<std::sync::mpsc::Sender<Job>>,
    done: std::sync::mpsc::Receiver<Done>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    fn new(file: std::sync::Arc<File>) -> Pool {
        let (jobs, job_rx) = std::sync::mpsc::channel::<Job>();
        let (done_tx, done) = std::sync::mpsc::channel::<Done>();
        let job_rx = std::sync::Arc::new(std::sync::Mutex::new(job_rx));
        let threads = (0..WRITERS)
            .map(|_| {
                let (file, job_rx, done_tx) = (file.clone(), job_rx.clone(), done_tx.clone());
                std::thread::spawn(move || loop {
                    let Some(mut job) = job_rx.lock().ok().and_then(|rx| rx.recv().ok()) else {
                        return;
                    };
                    let len = job.len;
                    let result = file.write_all_at(&job.buf.buf()[..len], job.offset);
                    if done_tx.send(Done { job, result }).is_err() {
                        return;
                    }
                })
            })
            .collect();
        Pool {
            jobs: Some(jobs),
            done,
            threads,
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// How the POSIX store writes data files: the `file:` section of a
/// config (`dataWrites: buffered | drop-behind | direct`), else the
/// environment (`FIELDSTORE_DIRECT_IO=1`, `FIELDSTORE_DROP_BEHIND=1`), else
/// buffered, keeping pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataWrites {
    /// Through the page cache, with write-behind; `drop_behind`: pages
    /// are dropped from the cache once written back.
    Buffered {
        /// Drop written-back pages from the page cache.
        drop_behind: bool,
    },
    /// `O_DIRECT` where the file system allows it, buffered elsewhere.
    Direct,
}

impl DataWrites {
    /// From the environment: `FIELDSTORE_DIRECT_IO=1` for direct writes,
    /// else buffered, dropping pages behind with `FIELDSTORE_DROP_BEHIND=1`.
    /// Buffered and keeping the pages is the default: readers on the node
    /// find what was just flushed in the page cache, and with write-behind
    /// buffered archive was as fast as direct or faster in alternating runs
    /// (docs/benchmarks.md, "Latest results", and docs/experiments/2026-11-posix-writes.md, "Direct or buffered data
    /// writes").
    pub fn from_env() -> DataWrites {
        let on = |name: &str| std::env::var_os(name).is_some_and(|v| v == "1");
        if on("FIELDSTORE_DIRECT_IO") {
            DataWrites::Direct
        } else {
            DataWrites::Buffered {
                drop_behind: on("FIELDSTORE_DROP_BEHIND"),
            }
        }
    }

    /// From a config's `file:` section (`null` when there is none): its
    /// `dataWrites` key if given, else [`DataWrites::from_env`].
    ///
    /// # Errors
    /// `InvalidConfig` naming an unknown key or value.
    pub fn from_config(section: &serde_json::Value) -> Result<DataWrites> {
        use fieldstore_core::ErrorKind;
        use serde_json::Value;
        let invalid = |m: String| Error::new(ErrorKind::InvalidConfig, m);
        let map = match section {
            Value::Null => return Ok(DataWrites::from_env()),
            Value::Object(m) => m,
            _ => return Err(invalid("the 'file:' section must be a mapping".to_string())),
        };
        if let Some(k) = map.keys().find(|k| *k != "dataWrites") {
            return Err(invalid(format!(
                "file: unknown key '{k}' (expected dataWrites)"
            )));
        }
        match map.get("dataWrites") {
            None | Some(Value::Null) => Ok(DataWrites::from_env()),
            Some(v) => match v.as_str() {
                Some("buffered") => Ok(DataWrites::Buffered { drop_behind: false }),
                Some("drop-behind") => Ok(DataWrites::Buffered { drop_behind: true }),
                Some("direct") => Ok(DataWrites::Direct),
                _ => Err(invalid(format!(
                    "file.dataWrites must be buffered, drop-behind or direct, not {v}"
                ))),
            },
        }
    }
}

/// Appends fields to one data file.
pub(crate) struct Staging {
    path: PathBuf,
    /// Opened with `O_DIRECT`, or `None` after falling back to `buffered`.
    direct: Option<std::sync::Arc<File>>,
    buffered: File,
    stage: Aligned,
    /// Bytes staged, not yet written.
    staged: usize,
    /// File offset of the first staged byte (aligned in direct mode).
    base: u64,
    /// Writer threads, started at the first full buffer in direct mode.
    pool: Option<Pool>,
    /// Buffers back from the pool, ready to fill.
    spare: Vec<Aligned>,
    /// Buffers allocated so far (at most `BUFFERS`).
    allocated: usize,
    in_flight: usize,
    /// The first error of a background write, reported at the next call.
    failed: Option<Error>,
    /// Buffered mode: ranges whose write-back was started, oldest first,
    /// and their total length.
    behind: std::collections::VecDeque<(u64, usize)>,
    behind_bytes: usize,
    /// Buffered mode: drop pages from the cache once written back.
    drop_behind: bool,
    /// Buffered mode: blocks are allocated up to this offset (`None` once
    /// the file system refused to preallocate).
    reserved_to: Option<u64>,
}

fn is_direct_refused(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

impl Staging {
    /// Write through `file` (already created; kept open so its locks stay
    /// held), directly when the file system allows it.
    pub(crate) fn new(path: &Path, file: File, mode: DataWrites) -> Staging {
        let direct = if mode == DataWrites::Direct {
            // The same file, through its descriptor, not `path`: its
            // directory may have been moved since it was created.
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
                .ok()
                .map(std::sync::Arc::new)
        } else {
            None
        };
        Staging {
            path: path.to_path_buf(),
            direct,
            buffered: file,
            stage: Aligned::new(),
            staged: 0,
            base: 0,
            pool: None,
            spare: Vec::new(),
            allocated: 1,
            in_flight: 0,
            failed: None,
            behind: std::collections::VecDeque::new(),
            behind_bytes: 0,
            drop_behind: mode == DataWrites::Buffered { drop_behind: true },
            reserved_to: Some(0),
        }
    }

    /// Buffered mode: make sure blocks are allocated up to `end`, a chunk
    /// at a time.
    fn reserve(&mut self, end: u64) {
        let Some(to) = self.reserved_to else {
            return;
        };
        if end <= to {
            return;
        }
        let chunk = to.clamp(RESERVE_MIN, RESERVE_MAX).max(end - to);
        self.reserved_to = allocate(&self.buffered, to, chunk).then_some(to + chunk);
    }

    /// Buffered mode: start the write-back of the range just written and
    /// wait for the oldest ranges until at most [`BEHIND`] bytes are left
    /// in flight.
    fn write_behind(&mut self, offset: u64, len: usize) {
        writeback(&self.buffered, offset, len, false);
        self.behind.push_back((offset, len));
        self.behind_bytes += len;
        while self.behind_bytes > BEHIND {
            let Some((o, l)) = self.behind.pop_front() else {
                break;
            };
            writeback(&self.buffered, o, l, true);
            if self.drop_behind {
                drop_cached(&self.buffered, o, l);
            }
            self.behind_bytes -= l;
        }
    }

    /// Bytes staged before they are written: a whole stage with
    /// `O_DIRECT` (one large aligned write), [`WRITE_PIECE`] buffered. A
    /// buffered block small enough to stay in the CPU's L2 cache between
    /// the copy into it and the kernel's copy out of it, and handed to
    /// write-back sooner: in paired runs against 4 MiB blocks (64 KiB
    /// fields, one writer) 1.05–1.31x the fields/s, four runs of 14–20
    /// rounds (docs/experiments/2026-11-posix-writes.md, "Buffered block
    /// size").
    fn block(&self) -> usize {
        if self.direct.is_some() {
            STAGE
        } else {
            WRITE_PIECE
        }
    }

    /// The file offset the next byte appended will have.
    pub(crate) fn next_offset(&self) -> u64 {
        self.base + self.staged as u64
    }

    fn check_failed(&mut self) -> Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }

    /// Append `data`, writing out full blocks as they fill.
    pub(crate) fn append(&mut self, mut data: &[u8]) -> Result<()> {
        self.check_failed()?;
        if self.direct.is_none() && data.len() >= DIRECT_FROM {
            // Buffered, a large field: one write from the caller's bytes
            // instead of a copy into the stage first.
            if self.staged > 0 {
                self.write_staged(self.staged)?;
            }
            let offset = self.base;
            self.reserve(offset + data.len() as u64);
            self.write_buffered(data, offset)?;
            self.base += data.len() as u64;
            self.write_behind(offset, data.len());
            return Ok(());
        }
        while !data.is_empty() {
            // Asked each time: a refused `O_DIRECT` falls back to buffered
            // blocks in the middle of a call, with more staged than one.
            let n = data.len().min(self.block().saturating_sub(self.staged));
            let at = self.staged;
            self.stage.buf()[at..at + n].copy_from_slice(&data[..n]);
            self.staged += n;
            data = &data[n..];
            if self.staged >= self.block() {
                self.write_staged(self.staged)?;
            }
        }
        Ok(())
    }

    /// Write out what is staged (padding the last block in direct mode),
    /// wait for every write, and make the file's data durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        if self.staged > 0 {
            let len = if self.direct.is_some() {
                let padded = self.staged.div_ceil(ALIGN) * ALIGN;
                let from = self.staged;
                self.stage.buf()[from..padded].fill(0);
                padded
            } else {
                self.staged
            };
            self.write_staged(len)?;
        }
        while self.in_flight > 0 {
            self.wait_one();
        }
        self.check_failed()?;
        let file: &File = self.direct.as_deref().unwrap_or(&self.buffered);
        file.sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))?;
        crate::failpoint::synced(&self.path);
        // Everything is written back now.
        for (o, l) in self.behind.drain(..) {
            if self.drop_behind {
                drop_cached(&self.buffered, o, l);
            }
        }
        self.behind_bytes = 0;
        Ok(())
    }

    /// Hand the first `len` staged bytes to be written at `base`;
    /// afterwards nothing is staged and `base` is past them.
    fn write_staged(&mut self, len: usize) -> Result<()> {
        let offset = self.base;
        if self.direct.is_some() {
            let next = match self.spare.pop() {
                Some(b) => b,
                None if self.allocated < BUFFERS => {
                    self.allocated += 1;
                    Aligned::new()
                }
                None => {
                    self.wait_one();
                    self.spare.pop().unwrap_or_else(Aligned::new)
                }
            };
            let buf = std::mem::replace(&mut self.stage, next);
            if let Some(direct) = &self.direct {
                let pool = self.pool.get_or_insert_with(|| Pool::new(direct.clone()));
                if let Some(jobs) = &pool.jobs {
                    if let Err(e) = jobs.send(Job { buf, len, offset }) {
                        // The threads are gone: write here instead.
                        self.write_now(e.0)?;
                    } else {
                        self.in_flight += 1;
                    }
                }
            }
        } else {
            self.reserve(offset + len as u64);
            let written = self.write_pieces(self.stage.filled(len), offset);
            if written.is_err() {
                self.cut(offset);
            }
            written?;
            self.write_behind(offset, len);
        }
        self.base += len as u64;
        self.staged = 0;
        Ok(())
    }

    /// Write `data` at `offset` through the page cache, in pieces of at
    /// most [`WRITE_PIECE`]. A write that fails (a full disk) leaves nothing
    /// behind: the file is cut back to `offset`, where the next write goes.
    fn write_buffered(&mut self, data: &[u8], offset: u64) -> Result<()> {
        let written = self.write_pieces(data, offset);
        if written.is_err() {
            self.cut(offset);
        }
        written
    }

    fn write_pieces(&self, data: &[u8], offset: u64) -> Result<()> {
        let mut at = offset;
        for piece in data.chunks(WRITE_PIECE) {
            self.buffered
                .write_all_at(piece, at)
                .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
            at += piece.len() as u64;
        }
        Ok(())
    }

    /// Cut the file at `len` (best effort: on failure the bytes stay until
    /// purge), including blocks preallocated past it.
    fn cut(&mut self, len: u64) {
        if self.buffered.set_len(len).is_ok() {
            self.reserved_to = self.reserved_to.map(|to| to.min(len));
        }
    }

    /// Forget every byte staged or written at or after `len`, which the
    /// catalogue will never index (a flush that failed before anything
    /// became visible), and cut the file there. `len` is where a flush
    /// left the file (aligned in direct mode).
    pub(crate) fn abandon_from(&mut self, len: u64) {
        while self.in_flight > 0 {
            self.wait_one();
        }
        self.failed = None;
        self.staged = 0;
        self.base = len;
        self.behind.clear();
        self.behind_bytes = 0;
        self.cut(len);
    }

    /// Wait for one background write; a refusal of direct I/O is retried
    /// buffered (same bytes, same offset), other errors are kept for the
    /// next call.
    fn wait_one(&mut self) {
        let done = match &self.pool {
            Some(pool) => pool.done.recv(),
            None => return,
        };
        self.in_flight -= 1;
        let Ok(Done { job, result }) = done else {
            self.failed
                .get_or_insert(Error::internal("a data writer thread stopped"));
            return;
        };
        match result {
            Ok(()) => self.spare.push(job.buf),
            Err(e) if is_direct_refused(&e) => {
                self.direct = None;
                if let Err(e) = self.write_now(job) {
                    self.failed.get_or_insert(e);
                }
            }
            Err(e) => {
                self.failed
                    .get_or_insert(Error::io(format!("writing {}", self.path.display()), e));
                self.spare.push(job.buf);
            }
        }
    }

    /// Write a job's bytes synchronously through the buffered descriptor.
    fn write_now(&mut self, mut job: Job) -> Result<()> {
        let len = job.len;
        let r = self
            .buffered
            .write_all_at(&job.buf.buf()[..len], job.offset);
        self.spare.push(job.buf);
        r.map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }
}

/// Start writing back `len` bytes at `offset` of `file` (`wait`: and wait
/// until they are written). A hint only: errors are ignored here, because
/// `fdatasync` at the flush writes what is left and reports failures, and
/// file systems without `sync_file_range` (it is Linux-only) lose nothing
/// but the overlap.
pub(crate) fn writeback(file: &File, offset: u64, len: usize, wait: bool) {
    let flags = if wait {
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER
    } else {
        libc::SYNC_FILE_RANGE_WRITE
    };
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: a system call on a descriptor `file` keeps open for the
    // call's duration; it touches no memory of this process.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
}

impl Drop for Staging {
    /// Give back the blocks preallocated past the end of the file: on ext4
    /// and XFS, setting a file's size to its size frees them. Staged bytes
    /// that were never flushed are not written (the catalogue never
    /// indexed them).
    fn drop(&mut self) {
        if self.reserved_to.is_some_and(|to| to > 0) {
            if let Ok(m) = self.buffered.metadata() {
                let _ = self.buffered.set_len(m.len());
            }
        }
    }
}

/// Allocate blocks for `len` bytes at `offset` of `file` without changing
/// its size; `false` if the file system cannot.
fn allocate(file: &File, offset: u64, len: u64) -> bool {
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return false;
    };
    // SAFETY: a system call on a descriptor `file` keeps open for the
    // call's duration; it touches no memory of this process.
    unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) == 0 }
}

/// Drop `len` bytes at `offset` of `file` from the page cache (clean pages
/// only: call after they were written back). A hint: errors are ignored.
fn drop_cached(file: &File, offset: u64, len: usize) {
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: a system call on a descriptor `file` keeps open for the
    // call's duration; it touches no memory of this process.
    let _ =
        unsafe { libc::posix_fadvise(file.as_raw_fd(), offset, len, libc::POSIX_FADV_DONTNEED) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new, empty data file in a directory of its own.
    fn new_file() -> (tempfile::TempDir, PathBuf, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.data");
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        (dir, path, file)
    }

    /// Buffered files are preallocated ahead of the writes, and what was
    /// not used is given back when the writer closes the file.
    #[test]
    fn preallocated_blocks_are_given_back_at_close() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, path, file) = new_file();
        let mut s = Staging::new(&path, file, DataWrites::Buffered { drop_behind: false });
        let field = vec![7u8; 3 << 20];
        for _ in 0..3 {
            s.append(&field).unwrap();
        }
        s.sync().unwrap();
        let size = 9u64 << 20;
        let open = std::fs::metadata(&path).unwrap();
        assert_eq!(open.len(), size, "preallocation must not change the size");
        let Some(reserved) = s.reserved_to else {
            return; // this file system cannot preallocate
        };
        assert!(reserved > size, "reserved up to {reserved}");
        assert!(
            open.blocks() * 512 >= reserved,
            "{} bytes allocated",
            open.blocks() * 512
        );
        drop(s);
        let closed = std::fs::metadata(&path).unwrap();
        assert_eq!(closed.len(), size);
        assert!(
            closed.blocks() * 512 < size + (1 << 20),
            "{} bytes still allocated for {size}",
            closed.blocks() * 512
        );
        assert_eq!(std::fs::read(&path).unwrap(), field.repeat(3));
    }

    /// `O_DIRECT` refused in the middle of a writer's life (as by a file
    /// system that takes the flag at open and refuses the write) leaves
    /// more staged than a buffered block holds: the next fields still land
    /// after it.
    #[test]
    fn a_direct_writer_falling_back_to_buffered_keeps_what_it_staged() {
        let (_dir, path, file) = new_file();
        let mut s = Staging::new(&path, file, DataWrites::Direct);
        // Direct, whether or not this file system takes the flag: nothing
        // is written through it before the fall-back.
        let plain = OpenOptions::new().write(true).open(&path).unwrap();
        s.direct = Some(std::sync::Arc::new(plain));
        let first: Vec<u8> = (0..2 * WRITE_PIECE + 100).map(|j| j as u8).collect();
        s.append(&first).unwrap();
        assert!(s.staged > WRITE_PIECE, "{} staged", s.staged);
        // What `wait_one` does when a write is refused.
        s.direct = None;
        let mut all = first;
        for i in 0..20 {
            let field: Vec<u8> = (0..(64 << 10) + i).map(|j| (j * 7 + i) as u8).collect();
            s.append(&field).unwrap();
            all.extend(field);
        }
        s.sync().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), all);
    }

    #[test]
    fn fields_land_at_their_offsets_with_aligned_gaps_after_flushes() {
        // Buffered (with write-behind over many blocks), dropping pages
        // behind or not, and direct.
        for mode in [
            DataWrites::Buffered { drop_behind: false },
            DataWrites::Buffered { drop_behind: true },
            DataWrites::Direct,
        ] {
            let (_dir, path, file) = new_file();
            let mut s = Staging::new(&path, file, mode);
            let direct = s.direct.is_some();
            let mut fields = Vec::new();
            let lengths = [10usize, 5000, STAGE + 123, 7, 3 * STAGE + 5, 1, 2 * STAGE];
            for (i, len) in lengths.into_iter().enumerate() {
                let data: Vec<u8> = (0..len).map(|j| (i * 31 + j) as u8).collect();
                fields.push((s.next_offset(), data.clone()));
                s.append(&data).unwrap();
                if i == 1 {
                    s.sync().unwrap();
                    if direct {
                        assert_eq!(s.next_offset() % ALIGN as u64, 0);
                    }
                }
            }
            s.sync().unwrap();
            let bytes = std::fs::read(&path).unwrap();
            for (off, data) in fields {
                assert_eq!(
                    &bytes[off as usize..off as usize + data.len()],
                    &data[..],
                    "{mode:?}, direct: {direct}"
                );
            }
            if !direct {
                // Buffered: no gaps, the fields are back to back.
                assert_eq!(bytes.len(), lengths.iter().sum::<usize>());
            }
        }
    }
}
