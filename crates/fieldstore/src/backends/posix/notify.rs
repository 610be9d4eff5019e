//! Waiting for flushes with inotify (Linux): the POSIX catalogue's
//! [`ChangeWaiter`].
//!
//! What is watched: every visited root (a dataset directory created,
//! renamed in or out, removed: new datasets, wipes, moves), every dataset
//! directory (its `toc` linked into place), and every `toc` (appended to:
//! a flush, a wipe of collocations, a purge's record; or renamed away).
//! After an event of a root or a dataset directory (or a dropped watch, or
//! lost events), the waiter looks for dataset directories and tables of
//! contents it does not watch yet before blocking again; if it finds any it
//! returns at once (a flush may have come before the watch), so nothing is
//! slept through. Appends to a `toc` cost no such look.
//!
//! What changed ([`Changes`]): a wait that saw only appends to (or
//! attribute changes of) tables of contents names their datasets — the key
//! read once from each `toc`'s `INIT` record, the first time it changes —
//! so that a watch looks at those datasets only. Any other event (a root
//! or a dataset directory changed, a `toc` renamed or removed, lost
//! events, a `toc` whose key cannot be read) makes it `Unknown`; a wait
//! that timed out with no event says nothing changed, since the kernel
//! queues every event of a watched file (overflow is itself an event).
//!
//! inotify sees changes made through this kernel only: on NFS or Lustre a
//! writer on another node is not seen. There, and when the kernel refuses
//! a watch (`max_user_watches`), the waiter polls instead; `watch` can also
//! be told to poll.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use fieldstore_core::{ChangeWaiter, Changes, DatasetKey, Error, PollingWaiter, Result};

use super::layout::TOC;

const ROOT_EVENTS: u32 =
    libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_MOVED_FROM | libc::IN_DELETE | libc::IN_ONLYDIR;
const DIR_EVENTS: u32 = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_DELETE_SELF;
const TOC_EVENTS: u32 =
    libc::IN_MODIFY | libc::IN_MOVE_SELF | libc::IN_DELETE_SELF | libc::IN_ATTRIB;

/// An inotify instance over a store's roots.
pub(crate) struct InotifyWaiter {
    fd: OwnedFd,
    roots: Vec<PathBuf>,
    /// Paths watched (directories and tables of contents) with the device
    /// and inode watched (a dataset wiped and created anew under the same
    /// path is another inode, watched again) and the watch descriptor.
    watched: HashMap<PathBuf, ((u64, u64), i32)>,
    /// The path of each watch descriptor, to forget it when the kernel
    /// drops it, and what it is.
    paths: HashMap<i32, (PathBuf, Watched)>,
    /// An event said something may need a watch it lacks (a root or a
    /// dataset directory changed, a watch was dropped, events were lost):
    /// look for it before blocking again. Appends to a `toc`, the events of
    /// every flush, do not set it, so they cost no directory listing.
    rescan: bool,
    /// Set when the kernel refused a watch: poll from then on.
    fallback: Option<PollingWaiter>,
    /// What the events drained since the last wait returned say changed.
    changes: Changes,
}

/// What one watch descriptor watches.
enum Watched {
    /// A root or a dataset directory.
    Directory,
    /// A dataset's table of contents, with the dataset's key once an
    /// event of it was seen (`Some(None)`: its `INIT` could not be read).
    Toc(Option<Option<DatasetKey>>),
}

impl InotifyWaiter {
    /// Watch `roots` and every dataset in them.
    ///
    /// # Errors
    /// I/O errors of `inotify_init1`.
    pub(crate) fn new(roots: Vec<PathBuf>) -> Result<InotifyWaiter> {
        // SAFETY: no pointers; returns a new descriptor or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io("inotify_init1", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a descriptor we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut w = InotifyWaiter {
            fd,
            roots,
            watched: HashMap::new(),
            paths: HashMap::new(),
            rescan: false,
            fallback: None,
            changes: Changes::none(),
        };
        w.add_new();
        Ok(w)
    }

    /// Watch what is not watched yet; returns whether anything was added.
    fn add_new(&mut self) -> bool {
        let mut added = false;
        for root in self.roots.clone() {
            added |= self.add(&root, ROOT_EVENTS);
            let Ok(entries) = std::fs::read_dir(&root) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let dir = e.path();
                if !dir.is_dir() {
                    continue;
                }
                added |= self.add(&dir, DIR_EVENTS);
                let toc = dir.join(TOC);
                if toc.exists() {
                    added |= self.add(&toc, TOC_EVENTS);
                }
            }
        }
        added
    }

    /// Add one watch; a path already watched is not added again. A refused
    /// watch turns the waiter into a polling one.
    fn add(&mut self, path: &Path, mask: u32) -> bool {
        let Ok(meta) = std::fs::metadata(path) else {
            return false;
        };
        let ident = super::layout::identity(&meta);
        if self.watched.get(path).is_some_and(|(i, _)| *i == ident) {
            return false;
        }
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), mask) };
        if wd < 0 {
            let e = std::io::Error::last_os_error();
            // Gone meanwhile (wiped): nothing to watch. Out of watches:
            // poll.
            if e.raw_os_error() == Some(libc::ENOSPC) && self.fallback.is_none() {
                self.fallback = Some(PollingWaiter::new(Duration::from_millis(50)));
            }
            return false;
        }
        self.watched.insert(path.to_path_buf(), (ident, wd));
        let what = if mask == TOC_EVENTS {
            Watched::Toc(None)
        } else {
            Watched::Directory
        };
        self.paths.insert(wd, (path.to_path_buf(), what));
        true
    }

    /// Read every pending event; forget the watches the kernel dropped
    /// (`IN_IGNORED`: the file or directory is gone, or was renamed away —
    /// a dataset created anew under the same path is watched again).
    fn drain(&mut self) {
        let mut buf = [0u8; 8192];
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            let n = n as usize;
            // Each event: an `inotify_event`, then `len` bytes of name.
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n {
                // SAFETY: `header` bytes from `at` are within what `read`
                // returned; the kernel wrote an `inotify_event` there (read
                // unaligned: the buffer is bytes).
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let (wd, mask, len) = (ev.wd, ev.mask, ev.len);
                let of_toc = matches!(self.paths.get(&wd), Some((_, Watched::Toc(_))));
                let gone = libc::IN_IGNORED | libc::IN_MOVE_SELF | libc::IN_DELETE_SELF;
                if mask & libc::IN_Q_OVERFLOW != 0 || !of_toc || mask & gone != 0 {
                    self.rescan = true;
                    self.changes = Changes::Unknown;
                } else {
                    // An append to (or attributes of) a watched `toc`.
                    match self.toc_key(wd) {
                        Some(k) => self.changes.merge(Changes::Datasets([k].into())),
                        None => self.changes = Changes::Unknown,
                    }
                }
                if mask & (libc::IN_IGNORED | libc::IN_MOVE_SELF) != 0 {
                    if let Some((p, _)) = self.paths.remove(&wd) {
                        if self.watched.get(&p).is_some_and(|(_, w)| *w == wd) {
                            self.watched.remove(&p);
                        }
                    }
                    if mask & libc::IN_MOVE_SELF != 0 {
                        // SAFETY: a valid descriptor; a stale wd is an error
                        // we ignore.
                        unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
                    }
                }
                at += header + len as usize;
            }
        }
    }

    /// The key of the dataset whose `toc` watch `wd` is: read from its
    /// `INIT` record the first time it is asked for. `None` when it cannot
    /// be read (then what changed is unknown).
    fn toc_key(&mut self, wd: i32) -> Option<DatasetKey> {
        let (path, Watched::Toc(key)) = self.paths.get_mut(&wd)? else {
            return None;
        };
        if key.is_none() {
            let read = std::fs::File::open(&*path)
                .ok()
                .and_then(|f| super::toc_reader::read_init(&f, path.as_path()).ok());
            *key = Some(read.map(|(k, _)| k));
        }
        key.clone().flatten()
    }
}

impl ChangeWaiter for InotifyWaiter {
    fn wait(&mut self, timeout: Duration) -> Result<Changes> {
        // Something new to watch: it may have changed before its watch.
        if self.rescan {
            self.rescan = false;
            if self.add_new() {
                return Ok(Changes::Unknown);
            }
        }
        if let Some(p) = &mut self.fallback {
            return p.wait(timeout);
        }
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Error::io("waiting for inotify events", e));
            }
        }
        self.drain();
        Ok(std::mem::replace(&mut self.changes, Changes::none()))
    }

    fn mechanism(&self) -> String {
        match &self.fallback {
            Some(p) => format!("{} (inotify refused a watch)", p.mechanism()),
            None => "inotify".into(),
        }
    }

    fn found(&mut self) {
        if let Some(p) = &mut self.fallback {
            p.found();
        }
    }
}
