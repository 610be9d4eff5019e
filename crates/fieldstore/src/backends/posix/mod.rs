//! The POSIX backend (being written: this placeholder refuses to open).
use std::sync::Arc;

use fieldstore_core::{Error, ErrorKind, Result};

use crate::catalogue::Catalogue;
use crate::config::{Engine, Root, StoreKind};
use crate::store::Store;

/// Open the catalogue/store pair for a config that uses POSIX.
pub(crate) fn open_pair(
    _roots: &[Root],
    _e: Engine,
    _s: StoreKind,
) -> Result<(Arc<dyn Catalogue>, Arc<dyn Store>)> {
    Err(Error::new(
        ErrorKind::Unsupported,
        "the POSIX backend is not built yet",
    ))
}
