//! `retrieve -o PATH`: the output file, and what may be removed after an
//! error.
//!
//! PATH may name anything writable: a new file, an existing file, a FIFO, a
//! device (`/dev/null`, `/dev/full`). After an error the command removes
//! partial output only when doing so destroys nothing that was there
//! before: **a file the command itself created** (`O_CREAT|O_EXCL`), and
//! only while PATH still names that very file (same device and inode, still
//! a regular file). An existing file is truncated and written as before but
//! never removed; a FIFO or a device is never removed (`-o /dev/full` once
//! deleted the system's `/dev/full`).
//!
//! A write that fails with `EPIPE` (the FIFO's reader went away) is an
//! error like any other: unlike a closed standard output (`| head`), the
//! caller named this file and did not get every field.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use fieldstore::{Error, ErrorKind, Result};

use crate::context::{display, file_error};

/// An error of writing to the output file `path`, naming it. `EPIPE` gets
/// its own message and no `BrokenPipe` source, so that it is never mistaken
/// for the quiet end of a closed standard output.
pub(crate) fn write_error(path: &Path, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Error::new(
            ErrorKind::Io,
            format!(
                "{}: the reader went away before every field was written ({e})",
                display(path)
            ),
        );
    }
    file_error(path, e)
}

/// An open output file.
pub(crate) struct Output {
    path: PathBuf,
    file: File,
    /// `(device, inode)` of the file if this command created it: the only
    /// case in which it may be removed after an error.
    created: Option<(u64, u64)>,
}

impl Output {
    /// Open `path` for writing: create it if it does not exist (remembering
    /// that this command did), else truncate it.
    ///
    /// # Errors
    /// The open's failure, naming `path` (`NotFound` for a missing
    /// directory, `PermissionDenied`, …).
    pub(crate) fn create(path: &Path) -> Result<Output> {
        // Two rounds: the file may be removed between a failed exclusive
        // create and the open of the existing file.
        let mut last = None;
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(file) => {
                    let meta = file.metadata().map_err(|e| file_error(path, e))?;
                    return Ok(Output {
                        path: path.to_path_buf(),
                        file,
                        created: Some((meta.dev(), meta.ino())),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(file_error(path, e)),
            }
            match OpenOptions::new().write(true).truncate(true).open(path) {
                Ok(file) => {
                    return Ok(Output {
                        path: path.to_path_buf(),
                        file,
                        created: None,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => last = Some(e),
                Err(e) => return Err(file_error(path, e)),
            }
        }
        Err(file_error(
            path,
            last.unwrap_or_else(|| io::Error::from(io::ErrorKind::NotFound)),
        ))
    }

    /// The file, to write to.
    pub(crate) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// After an error: remove the file if this command created it and PATH
    /// still names it (a regular file with the same device and inode).
    /// Anything else at PATH is left alone. Failures to remove are ignored:
    /// the command's error is what gets reported.
    pub(crate) fn abandon(self) {
        let Output {
            path,
            file,
            created,
        } = self;
        drop(file);
        let Some((dev, ino)) = created else {
            return;
        };
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if meta.file_type().is_file() && meta.dev() == dev && meta.ino() == ino {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_a_file_this_command_created_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let new = dir.path().join("new");
        let mut out = Output::create(&new).expect("create");
        out.file().write_all(b"partial").expect("write");
        out.abandon();
        assert!(!new.exists(), "created here: removed");

        let old = dir.path().join("old");
        std::fs::write(&old, b"before").expect("write");
        let mut out = Output::create(&old).expect("open");
        out.file().write_all(b"partial").expect("write");
        out.abandon();
        assert_eq!(std::fs::read(&old).expect("kept"), b"partial");

        // Replaced meanwhile: the other file stays.
        let mut out = Output::create(&new).expect("create");
        out.file().write_all(b"partial").expect("write");
        std::fs::remove_file(&new).expect("remove");
        std::fs::write(&new, b"someone else's").expect("write");
        out.abandon();
        assert_eq!(std::fs::read(&new).expect("kept"), b"someone else's");
    }

    #[test]
    fn a_broken_pipe_is_an_error_not_a_closed_stdout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = write_error(
            &dir.path().join("f"),
            io::Error::from(io::ErrorKind::BrokenPipe),
        );
        assert!(!crate::context::is_broken_pipe(&e), "{e:?}");
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(e.to_string().contains("the reader went away"), "{e}");
    }
}
