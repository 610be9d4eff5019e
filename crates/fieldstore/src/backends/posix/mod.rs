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
mod format;
mod layout;
pub(crate) mod manage;
mod notify;
mod open_dir;
mod staging;
mod store;

use fieldstore_core::{Error, ErrorKind, Result};

pub use catalogue::{TocCatalogue, TocReader};
pub use store::{DataWrites, FileStore};

use crate::config::Root;

/// Every visited root must exist: a missing root is a configuration error
/// the user must hear about, not an empty store.
pub(crate) fn check_roots(roots: &[Root]) -> Result<()> {
    if roots.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            "the POSIX backend needs at least one root",
        ));
    }
    for r in roots {
        if r.create && !r.path.exists() {
            // A first run needs nothing set up.
            std::fs::create_dir_all(&r.path)
                .map_err(|e| Error::io(format!("creating root {}", r.path.display()), e))?;
        }
        if !r.path.is_dir() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "root {} does not exist or is not a directory",
                    r.path.display()
                ),
            ));
        }
    }
    refuse_repeated_roots(roots)
}

/// Every root is a different directory, compared by canonical path (two
/// spellings, a trailing slash, a symbolic link): a root listed twice would
/// list and retrieve each of its datasets twice, and purge or wipe would
/// act on one directory through two entries. The entries may also disagree
/// on `writable` and `visit`, so they are refused, not merged: the error
/// names both.
fn refuse_repeated_roots(roots: &[Root]) -> Result<()> {
    let mut seen: Vec<(std::path::PathBuf, usize)> = Vec::with_capacity(roots.len());
    for (i, r) in roots.iter().enumerate() {
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
