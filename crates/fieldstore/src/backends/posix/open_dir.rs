//! An open dataset directory: writers create, lock and sync their files
//! through its descriptor, never through its path.
//!
//! A move within one file system renames the dataset directory into
//! another root. A writer that named its files by path would then create
//! them where the dataset no longer is — re-creating the old directory,
//! with an index file that no reader of the moved dataset finds, while its
//! FLUSH record went to the moved `toc` through the descriptor it holds.
//! A descriptor names the directory's inode, which moves along: files
//! created through it are always in the dataset the writer's `toc`
//! belongs to.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use fieldstore_core::{Error, Locks, Operation, Result};

use super::layout;

/// An open directory, and the path it had when it was opened (for
/// messages and for naming files by URI; the directory may be elsewhere
/// now).
#[derive(Debug)]
pub(crate) struct OpenDir {
    dir: File,
    opened_at: PathBuf,
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

impl OpenDir {
    /// Open the directory at `path`.
    ///
    /// # Errors
    /// `NotFound` if there is none (wiped or moved away meanwhile).
    pub(crate) fn open(path: &Path) -> Result<OpenDir> {
        if path.as_os_str().as_bytes().contains(&0) {
            return Err(Error::invalid_input(format!(
                "{}: NUL in a path",
                path.display()
            )));
        }
        // O_RDONLY | O_DIRECTORY | O_CLOEXEC (std adds O_CLOEXEC).
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(path)
            .map_err(|e| Error::io(format!("dataset directory {}", path.display()), e))?;
        Ok(OpenDir {
            dir,
            opened_at: path.to_path_buf(),
        })
    }

    /// The path the directory had when opened.
    pub(crate) fn opened_at(&self) -> &Path {
        &self.opened_at
    }

    /// Where the directory is now, as the kernel names it (`None` once it
    /// is deleted).
    pub(crate) fn current_path(&self) -> Option<PathBuf> {
        let p = std::fs::read_link(format!("/proc/self/fd/{}", self.dir.as_raw_fd())).ok()?;
        (!p.as_os_str().as_bytes().ends_with(b" (deleted)")).then_some(p)
    }

    /// The path of `name` in the directory as it was when opened (for
    /// messages).
    pub(crate) fn display_path(&self, name: &str) -> PathBuf {
        self.opened_at.join(name)
    }

    /// `(device, inode)` of the entry `name`, `None` if there is none.
    pub(crate) fn identity_of(&self, name: &str) -> Result<Option<(u64, u64)>> {
        match self.stat_raw(name) {
            Ok(id) => Ok(Some(id)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(self.display_path(name).display(), e)),
        }
    }

    fn stat_raw(&self, name: &str) -> io::Result<(u64, u64)> {
        let c = c_name(name)?;
        let flags = libc::AT_SYMLINK_NOFOLLOW;
        // SAFETY: zeroed `stat` is a valid out-parameter; the descriptor
        // is open and the name NUL-terminated.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::fstatat(self.dir.as_raw_fd(), c.as_ptr(), &mut st, flags) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((st.st_dev, st.st_ino))
    }

    /// Open the entry `name` with `flags` (`O_CLOEXEC` added), creating it
    /// with mode 0644 when `flags` asks.
    fn open_at(&self, name: &str, flags: libc::c_int) -> io::Result<File> {
        let c = c_name(name)?;
        // SAFETY: an open directory descriptor and a NUL-terminated name;
        // returns a new descriptor or -1.
        let fd = unsafe {
            libc::openat(
                self.dir.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor we own.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Open the entry `name` for reading.
    pub(crate) fn open_read(&self, name: &str) -> io::Result<File> {
        self.open_at(name, libc::O_RDONLY)
    }

    fn rename_within(&self, from: &str, to: &str) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        let fd = self.dir.as_raw_fd();
        // SAFETY: an open directory descriptor and NUL-terminated names.
        let rc = unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn remove(&self, name: &str) {
        if let Ok(c) = c_name(name) {
            // SAFETY: an open directory descriptor and a NUL-terminated
            // name. Best effort: a failure leaves a private file that purge
            // removes.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), c.as_ptr(), 0) };
        }
    }

    /// Create `<writer>.<ext>` (`<prefix>.<writer>.<ext>` with a prefix) for
    /// one writer, holding a shared `flock` on
    /// it for as long as the file is open, so that purge and wipe can tell a
    /// live writer's file from a dead one's. The file is created under a
    /// private name, locked, then renamed into place: it is never visible
    /// unlocked while its writer lives. Returns its name and the file.
    ///
    /// # Errors
    /// `NotFound` when the directory was deleted (wiped).
    pub(crate) fn create_writer_file(
        &self,
        prefix: Option<&str>,
        ext: &str,
    ) -> Result<(String, File)> {
        // Between `open` and `flock` the private file is unlocked, so a
        // purge may take it for a killed writer's and remove it; the rename
        // then fails with `NotFound` and the writer starts again under a
        // new id.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let name = match prefix {
                Some(p) => format!("{p}.{}.{ext}", layout::writer_id()),
                None => format!("{}.{ext}", layout::writer_id()),
            };
            let tmp = format!(".{name}.new");
            let what = |e| {
                Error::io(
                    format!("creating {}", self.display_path(&name).display()),
                    e,
                )
            };
            let file = self
                .open_at(&tmp, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)
                .map_err(what)?;
            layout::flock(&file, libc::LOCK_SH).map_err(what)?;
            match self.rename_within(&tmp, &name) {
                Ok(()) => return Ok((name, file)),
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempt < 3 => continue,
                Err(e) => {
                    self.remove(&tmp);
                    return Err(what(e));
                }
            }
        }
    }

    /// Make the directory's entries durable (after creating or renaming
    /// files in it).
    pub(crate) fn sync(&self) -> Result<()> {
        self.dir
            .sync_all()
            .map_err(|e| Error::io(format!("syncing directory {}", self.opened_at.display()), e))?;
        // Where it is now (a readlink): only the crash-image tests ask.
        #[cfg(test)]
        if let Some(now) = self.current_path() {
            crate::failpoint::synced(&now);
        }
        Ok(())
    }

    /// The dataset's lock state, from its `control` file (see
    /// [`layout::read_control`]).
    pub(crate) fn read_control(&self) -> Result<Locks> {
        use std::io::Read;
        let mut text = String::new();
        let read = self
            .open_at(layout::CONTROL, libc::O_RDONLY)
            .and_then(|f| f.take(64 * 1024).read_to_string(&mut text));
        match read {
            Ok(_) => Ok(text
                .lines()
                .filter_map(|l| Operation::from_name(l.trim()))
                .collect()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Locks::NONE),
            Err(e) => Err(Error::io(self.display_path(layout::CONTROL).display(), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_created_through_it_follow_a_renamed_directory() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        let dir = OpenDir::open(&a).unwrap();
        std::fs::rename(&a, &b).unwrap();
        let (name, _file) = dir.create_writer_file(None, "index").unwrap();
        assert!(b.join(&name).is_file(), "created in the moved directory");
        assert!(!a.exists(), "the old path is not created again");
        assert_eq!(
            dir.current_path().unwrap(),
            std::fs::canonicalize(&b).unwrap()
        );
        assert!(dir.identity_of(&name).unwrap().is_some());
        assert!(dir.identity_of("nothing").unwrap().is_none());
        dir.sync().unwrap();
        std::fs::write(b.join(layout::CONTROL), "archive\n").unwrap();
        assert!(dir.read_control().unwrap().contains(Operation::Archive));
    }

    #[test]
    fn a_deleted_directory_is_not_found() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let dir = OpenDir::open(&a).unwrap();
        std::fs::remove_dir(&a).unwrap();
        let e = dir.create_writer_file(None, "data").unwrap_err();
        assert_eq!(e.kind(), fieldstore_core::ErrorKind::NotFound, "{e}");
        assert!(OpenDir::open(&a).is_err());
    }
}
