//! Which process this is, for handles inherited across `fork()`.
//!
//! A [`FieldStore`](crate::FieldStore) records the process that opened it.
//! A child forked from that process inherits a copy of the handle's
//! writers — the same open data files and tables of contents, the same
//! staged bytes and offsets — but not the parent's threads. Writing through
//! that copy makes two processes append to one file, each believing it owns
//! the next offset: fields overwrite each other and are read back as
//! checksum mismatches, or are never indexed. So a handle refuses to write
//! in a process other than its own, and its drop there touches nothing.
//!
//! The check runs on every archive, so it must cost nothing measurable:
//! instead of `getpid()` (a system call; glibc no longer caches it) it reads
//! [`current`]'s atomic, which a `pthread_atfork` child handler updates in
//! every child. (A child made by a raw `clone`/`vfork` system call, which
//! runs no fork handlers, is not detected; `fork()`, Python's `os.fork` and
//! `multiprocessing` all run them.)

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// This process's id, once [`current`] has run; 0 before.
static PID: AtomicU32 = AtomicU32::new(0);
/// Whether the fork handler is installed (or being installed).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The fork handler run in the child: the child's own id.
extern "C" fn in_child() {
    // getpid() is async-signal-safe, as a fork handler's work must be.
    PID.store(std::process::id(), Ordering::Relaxed);
}

/// The id of the calling process. The first call installs the fork handler
/// (before reading the id, so that a fork racing with it still updates
/// the child's value); later calls are one atomic load.
pub(crate) fn current() -> u32 {
    let pid = PID.load(Ordering::Relaxed);
    if pid != 0 {
        return pid;
    }
    if !INSTALLED.swap(true, Ordering::AcqRel) {
        // SAFETY: registers a handler that is a plain `extern "C" fn`
        // without arguments; it only stores an integer.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    }
    // A child handler that ran meanwhile already stored the right value.
    let _ = PID.compare_exchange(0, std::process::id(), Ordering::AcqRel, Ordering::Relaxed);
    PID.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_is_the_process_id() {
        assert_eq!(current(), std::process::id());
        assert_eq!(current(), std::process::id());
    }
}
