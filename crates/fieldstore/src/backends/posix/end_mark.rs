//! A table of contents' end mark: the extended attribute that tells a
//! `toc` cut at a record boundary (its last records lost, the rest a
//! whole log) from one that never held them. Writers raise it after each
//! synced append and refuse to append below it; readers compare it with
//! the file's length (`docs/format/posix.md`).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use fieldstore_core::{Error, Result};

/// The extended attribute of a table of contents holding where an append
/// ended (`u64`, little-endian), set once the append is synced: a table of
/// contents found shorter was cut behind fieldstore's back (its last
/// records lost at a record boundary read as a whole log); it is only
/// raised, and writers refuse to append to a shorter one, so later appends
/// cannot hide the cut ([`refuse_if_cut`]). Best effort: a file system
/// without user attributes has none, and racing writers may leave it below
/// the end; readers only check that the file is not shorter. A move's copy
/// to another file system starts without it.
const END_ATTR: &std::ffi::CStr = c"user.fieldstore.end";

/// Raise [`END_ATTR`] to where this descriptor's last append ended (its
/// offset: `O_APPEND` leaves it after the bytes it wrote); never lower it:
/// an append ending short of the mark came before another writer's, or
/// after a cut that the mark goes on telling.
pub(super) fn mark_end(toc: &File) {
    use std::io::Seek;
    let Ok(end) = (&*toc).stream_position() else {
        return;
    };
    if marked_end(toc).is_some_and(|marked| marked >= end) {
        return;
    }
    let value = end.to_le_bytes();
    // SAFETY: a valid descriptor, a NUL-terminated name and 8 readable
    // bytes; the call copies them.
    unsafe {
        libc::fsetxattr(
            toc.as_raw_fd(),
            END_ATTR.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
}

/// Fail `Corrupt`, appending nothing, if `toc` is shorter than
/// [`END_ATTR`] says a synced append left it: its last records were cut
/// off, and an append could grow it past the mark and hide the loss from
/// every reader. Race-free without a lock: the mark is read first, and it
/// is only ever set to a length the file had, so an uncut file is never
/// shorter than a mark read before its length. Costs an `fgetxattr` and
/// an `fstat`.
pub(super) fn refuse_if_cut(toc: &File, path: &Path) -> Result<()> {
    let Some(end) = marked_end(toc) else {
        return Ok(());
    };
    let len = toc
        .metadata()
        .map_err(|e| Error::io(path.display(), e))?
        .len();
    if len >= end {
        return Ok(());
    }
    Err(Error::corrupt(format!(
        "{}; nothing appended (an append could reach past the mark and hide the loss from \
         readers): `fieldstore status` names the damage, docs/maintenance.md says what to do",
        cut_off(path, len, end)
    )))
}

/// What a `toc` of `len` bytes whose [`END_ATTR`] says `end` lost.
pub(super) fn cut_off(path: &Path, len: u64, end: u64) -> String {
    format!(
        "{}: it ends at offset {len}, but an append to it that was synced ended at offset {end} \
         (its `{}` attribute): its last records were cut off behind fieldstore's back",
        path.display(),
        END_ATTR.to_string_lossy(),
    )
}

/// [`END_ATTR`] of a table of contents, if it has one.
pub(super) fn marked_end(toc: &File) -> Option<u64> {
    let mut value = [0u8; 8];
    // SAFETY: a valid descriptor, a NUL-terminated name and 8 writable
    // bytes.
    let n = unsafe {
        libc::fgetxattr(
            toc.as_raw_fd(),
            END_ATTR.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    (n == 8).then(|| u64::from_le_bytes(value))
}
