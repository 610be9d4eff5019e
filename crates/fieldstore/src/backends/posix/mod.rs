//! The POSIX backend: `engine: toc` (catalogue) and `store: file` (store).
//!
//! ```text
//! <root>/<dataset name>/           one directory per dataset (FDB5's naming)
//!     toc                          append-only table of contents (INIT, then FLUSH records)
//!     <writer>.index               one per writer: index blocks, appended per flush
//!     <writer>.data                one per writer: field bytes, appended
//! ```
//! Writers share nothing but the `toc`, to which each flush appends one
//! record in one `O_APPEND` write. Byte layout: `docs/format/posix.md`.

mod catalogue;
mod end_mark;
mod format;
pub(crate) mod layout;
pub(crate) mod manage;
mod notify;
mod open_dir;
mod staging;
mod store;
mod toc_reader;
mod toc_writer;

use fieldstore_core::{Error, ErrorKind, Result};

pub use catalogue::{TocCatalogue, TocMedium};
pub use store::{DataWrites, FileStore};
pub use toc_reader::TocReader;

use crate::config::Root;

/// Every root must exist when the store is opened: a missing root is a
/// configuration error the user must hear about, not an empty store. The
/// exception is a root the first archive creates ([`Root::create`]: the
/// embedded store's): opening creates nothing, since a handle opened only
/// to read must leave no directory behind (a mistyped `FIELDSTORE_ROOT`
/// would otherwise be created in silence); readers then call [`present`].
pub(crate) fn check_roots(roots: &[Root]) -> Result<()> {
    if roots.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            "the POSIX backend needs at least one root",
        ));
    }
    let absent = roots
        .iter()
        .find(|r| (!r.create || r.path.exists()) && !r.path.is_dir());
    absent.map_or(Ok(()), |r| Err(missing(&r.path)))?;
    refuse_repeated_roots(roots)
}

/// `NotFound` naming a root that is missing (or not a directory).
fn missing(root: &std::path::Path) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!(
            "root {} does not exist or is not a directory",
            root.display()
        ),
    )
}

/// Whether readers skip `root` as empty: the implicit default root
/// ([`Root::implicit`]) that nothing has created yet.
pub(crate) fn absent_default(root: &Root) -> bool {
    root.implicit && !root.path.exists()
}

/// For readers: every visited root exists, except the implicit default
/// one, which reads as empty. Reading never creates a root.
///
/// # Errors
/// `NotFound` naming the first missing root.
pub(crate) fn present(roots: &[Root]) -> Result<()> {
    let absent = roots
        .iter()
        .find(|r| r.visit && !absent_default(r) && !r.path.is_dir());
    absent.map_or(Ok(()), |r| Err(missing(&r.path)))
}

/// For writers, before a new dataset is placed: create the missing roots
/// that may be created ([`Root::create`]; a first run needs nothing set
/// up). Placement then finds them, as it only chooses roots that exist.
///
/// # Errors
/// As [`Error::io`] if one cannot be created.
pub(crate) fn create_missing(roots: &[Root]) -> Result<()> {
    for r in roots.iter().filter(|r| r.create && !r.path.exists()) {
        std::fs::create_dir_all(&r.path)
            .map_err(|e| Error::io(format!("creating root {}", r.path.display()), e))?;
    }
    Ok(())
}

/// Every root is a different directory, compared by canonical path (two
/// spellings, a trailing slash, a symbolic link): a root listed twice would
/// list and retrieve each of its datasets twice, and purge or wipe would
/// act on one directory through two entries. The entries may also disagree
/// on `writable` and `visit`, so they are refused, not merged: the error
/// names both.
fn refuse_repeated_roots(roots: &[Root]) -> Result<()> {
    let mut seen: Vec<(std::path::PathBuf, usize)> = Vec::with_capacity(roots.len());
    // A root not created yet is compared when it exists (the next open).
    for (i, r) in roots.iter().enumerate().filter(|(_, r)| r.path.exists()) {
        let canonical = std::fs::canonicalize(&r.path)
            .map_err(|e| Error::io(format!("root {}", r.path.display()), e))?;
        if let Some((_, j)) = seen.iter().find(|(c, _)| *c == canonical) {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                format!(
                    "roots {} (entry {}) and {} (entry {}) are the same directory {}: list each root once",
                    roots[*j].path.display(),
                    j + 1,
                    r.path.display(),
                    i + 1,
                    canonical.display()
                ),
            ));
        }
        seen.push((canonical, i));
    }
    Ok(())
}
