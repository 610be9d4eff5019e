//! Bare writes (`--scenario bare`): a write phase's bytes and flush points
//! with no store in between, the disk's ceiling for that workload.
//!
//! Each process appends exactly the bytes its write phase would archive
//! (same field size, same number of fields) to a file of its own in the
//! store's directory, and makes them durable exactly where the write phase
//! flushes (after every (step, member)). The bytes go out the cheapest way
//! the page cache allows: writes of at most 1 MiB from one buffer, the
//! write-back of each started at once (`sync_file_range`) with at most
//! 32 MiB of it in flight, `fdatasync` at every flush point. No keys, no
//! index, no checksum, no copy but the kernel's — the write path of the
//! POSIX store with everything that makes it a store taken out.
//!
//! Why this and not only `dd`: a flush drains the device's queue, so the
//! same disk gives fewer MiB/s to a workload that flushes every 31 MiB than
//! to one `dd ... conv=fdatasync`, and write-back that overlaps the copy
//! gives more than `dd` does. A store measured at 100 % of bare writes of
//! the same workload in the same run loses nothing the disk would notice,
//! and a target above them is beyond the disk for that workload.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

use fieldstore::{Error, Result};

use crate::payload::Generator;
use crate::result::ProcResult;
use crate::store_spec::StoreSpec;
use crate::task::Task;
use crate::trace::Ops;

/// Bytes per write.
const PIECE: usize = 1 << 20;
/// Bytes whose write-back may still be under way; the writer waits for the
/// oldest beyond this (the POSIX store's own limit).
const BEHIND: u64 = 32 << 20;

/// The directory bare writes go to: the store's first root.
///
/// # Errors
/// `InvalidInput` when the store has no root on a file system.
pub(crate) fn directory(store: &StoreSpec) -> Result<PathBuf> {
    store.directory().ok_or_else(|| {
        Error::invalid_input(
            "--scenario bare writes to the store's directory: give --root or a config \
             whose first root is on a file system",
        )
    })
}

/// One process's file, created before the barrier and removed when
/// dropped (after the timed window).
pub(crate) struct BareFile {
    path: PathBuf,
    file: File,
    /// The bytes written, one piece over and over.
    piece: Vec<u8>,
    /// Bytes per field, as the write phase would archive them.
    field_bytes: u64,
}

impl BareFile {
    /// Create the file of `task`'s process in the store's directory;
    /// `field_bytes` is the length of one of the write phase's fields.
    ///
    /// # Errors
    /// `InvalidInput` when the store is not on a file system; I/O errors.
    pub(crate) fn create(task: &Task, field_bytes: u64) -> Result<BareFile> {
        let dir = directory(&task.store)?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        let path = dir.join(format!(".hammer-bare.{}.{}", task.rank, std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io(path.display(), e))?;
        Ok(BareFile {
            path,
            file,
            piece: Generator::synthetic(PIECE),
            field_bytes,
        })
    }

    /// The timed loop: the write phase's bytes, `fdatasync` after every
    /// (step, member).
    ///
    /// # Errors
    /// I/O errors.
    pub(crate) fn write(&self, task: &Task, ops: &mut Ops, r: &mut ProcResult) -> Result<()> {
        let io = |e| Error::io(self.path.display(), e);
        let per_flush = (task.levels.len() * task.params.len()) as u64;
        let flush_bytes = per_flush * self.field_bytes;
        let mut behind: VecDeque<(u64, u64)> = VecDeque::new();
        let mut behind_bytes = 0u64;
        let mut offset = 0u64;
        for _ in 0..task.steps.len() * task.members.len() {
            let t = Instant::now();
            let end = offset + flush_bytes;
            while offset < end {
                let n = (end - offset).min(PIECE as u64);
                self.file
                    .write_all_at(&self.piece[..n as usize], offset)
                    .map_err(io)?;
                ops.io(n);
                writeback(&self.file, offset, n, false);
                behind.push_back((offset, n));
                behind_bytes += n;
                while behind_bytes > BEHIND {
                    let Some((o, l)) = behind.pop_front() else {
                        break;
                    };
                    writeback(&self.file, o, l, true);
                    behind_bytes -= l;
                }
                offset += n;
            }
            let t = ops.add("write", t);
            self.file.sync_data().map_err(io)?;
            ops.add("fdatasync", t);
            behind.clear();
            behind_bytes = 0;
            r.fields += per_flush;
        }
        r.bytes = offset;
        Ok(())
    }
}

impl Drop for BareFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Start the write-back of `len` bytes at `offset` (`wait`: and wait for
/// it). A hint: a file system without `sync_file_range` loses the overlap,
/// and `fdatasync` still writes everything.
fn writeback(file: &File, offset: u64, len: u64, wait: bool) {
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
