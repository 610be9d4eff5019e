//! Which store a task opens, and the schema it opens it with.

use std::path::PathBuf;

use fieldstore::{Config, Error, FieldStore, Result, Schema};
use serde::{Deserialize, Serialize};

/// The hammer schema (FDB5's fdb-hammer schema), used with `--root`.
pub const HAMMER_SCHEMA: &str = include_str!("hammer.schema");

/// Which store to open.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StoreSpec {
    /// A YAML config file.
    pub config: Option<PathBuf>,
    /// An embedded POSIX root (hammer schema).
    pub root: Option<PathBuf>,
}

impl StoreSpec {
    /// Open the store, always with the hammer's own schema (fdb-hammer's):
    /// its keys (no `domain`, `number` on every type) fit it, not every
    /// schema a config names — ECMWF's requires `domain` — and the datasets
    /// it writes (their own `expver`) keep to themselves whatever else the
    /// store holds. The report says so.
    ///
    /// # Errors
    /// Configuration and I/O errors.
    pub fn open(&self) -> Result<FieldStore> {
        let mut config = if let Some(c) = &self.config {
            Config::from_file(c)?
        } else if let Some(root) = &self.root {
            std::fs::create_dir_all(root)
                .map_err(|e| Error::io(format!("creating root {}", root.display()), e))?;
            Config::embedded(root)
        } else {
            Config::from_env()?
        };
        config.schema = Schema::parse("hammer.schema", HAMMER_SCHEMA)?;
        FieldStore::open(config)
    }

    /// The first directory of the store, if it is on a file system (for
    /// the barrier directory and the physical limits).
    pub fn directory(&self) -> Option<PathBuf> {
        if let Some(r) = &self.root {
            return Some(r.clone());
        }
        let config = match &self.config {
            Some(c) => Config::from_file(c).ok()?,
            None => Config::from_env().ok()?,
        };
        config.roots.first().map(|r| r.path.clone())
    }
}
