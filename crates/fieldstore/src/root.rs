//! A root directory of the POSIX backend and its flags.

use std::path::PathBuf;

use fieldstore_core::{Locks, Operation};

/// A root directory of the POSIX backend, with FDB5's four flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The directory.
    pub path: PathBuf,
    /// New datasets may be created here, and its datasets archived into
    /// (FDB5's `archive`, by default `writable`).
    pub writable: bool,
    /// Its datasets are found, listed and read (FDB5's `list`, by default
    /// `visit`).
    pub visit: bool,
    /// Its datasets' fields may be retrieved (FDB5's `retrieve`, by
    /// default `visit`).
    pub retrieve: bool,
    /// Its datasets may be wiped, purged and moved (FDB5's `wipe`, by
    /// default `writable`).
    pub wipe: bool,
    /// The index of its space in [`Config::spaces`](crate::config::Config::spaces).
    pub space: usize,
    /// Create the directory, if missing, when the first dataset is
    /// created in it (the embedded store's root: `FIELDSTORE_ROOT` or the
    /// default; configured roots must exist). Opening a store and reading
    /// never create a root: a missing one is `NotFound` for readers, unless
    /// it is [`Root::implicit`].
    pub create: bool,
    /// The implicit default root (`./fieldstore-data`: no configuration
    /// and no `FIELDSTORE_ROOT`): missing, it reads as empty. A root the
    /// user named (a config, `FIELDSTORE_ROOT`) that is missing is an error
    /// for readers, so that a typo is not taken for an empty store.
    pub implicit: bool,
}

impl Root {
    /// A writable, visited root that must exist, in the first space.
    pub fn new(path: impl Into<PathBuf>) -> Root {
        Root {
            path: path.into(),
            writable: true,
            visit: true,
            retrieve: true,
            wipe: true,
            space: 0,
            create: false,
            implicit: false,
        }
    }

    /// The operations its flags disable for every dataset in it (as FDB5
    /// adds a root's disabled operations to its databases' locks).
    pub fn disabled(&self) -> Locks {
        let flags = [
            (self.writable, Operation::Archive),
            (self.retrieve, Operation::Retrieve),
            (self.visit, Operation::List),
            (self.wipe, Operation::Wipe),
        ];
        Locks::from_iter(flags.into_iter().filter_map(|(on, op)| (!on).then_some(op)))
    }
}
