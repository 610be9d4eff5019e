//! fieldstore: a metadata-indexed, transactional store for weather fields.
//!
//! [`FieldStore`] is the handle: [`archive`](FieldStore::archive),
//! [`flush`](FieldStore::flush), [`retrieve`](FieldStore::retrieve),
//! [`list`](FieldStore::list), [`axes`](FieldStore::axes), and data
//! management ([`manage`]): [`wipe`](FieldStore::wipe),
//! [`purge`](FieldStore::purge), [`stats`](FieldStore::stats),
//! [`status`](FieldStore::status), [`control`](FieldStore::control),
//! [`move_datasets`](FieldStore::move_datasets). Backends pair a
//! [`Catalogue`] (which fields exist, and where) with a [`Store`] (the
//! bytes); each trait states its contract. Built in: the POSIX backend
//! ([`backends::posix`]) and an in-memory reference
//! ([`backends::memory`]).
//!
//! # Layers
//! Each module names only modules listed before it, never an item of the
//! crate root (the `layers` test of `fieldstore-testkit` checks the code
//! against this list; a module's unit tests may use the top).
//! - `sync`: locks taken whether or not a panic poisoned them; `flock(2)`.
//! - `failpoint`: named points where tests stop or kill a process.
//! - `process`: this process's identity across `fork`.
//! - `dataset_schema`: a dataset's own schema, applied below level 1.
//! - `text_file`: reading a configuration, schema or map file.
//! - `yaml`: bounded YAML parsing.
//! - `root`: a POSIX root and its flags.
//! - `placement`: which root a new dataset goes to.
//! - `routing`: `type: select`'s lanes and their selections.
//! - `config`: the store's configuration (FDB5's YAML shape).
//! - `fdb5_config`: finding the configuration as FDB5 does.
//! - `list`: what a listing yields, and its options.
//! - `readahead`: hints to the store of the fields read next.
//! - `stream`: a retrieve's fields as one stream of bytes.
//! - `retrieve`: a retrieve's fields, read in order.
//! - `backends`: the backends, and a configuration opened as one.
//! - `handle`: the handle, [`FieldStore`].
//! - `walk`: visiting the datasets and entries a request names.
//! - `resolve`: a request's fields, looked up or listed.
//! - `manage`: wipe, purge, stats, status, control, move.
//! - `annotate`: extensions added to stored fields.
//! - `shortfall`: what a retrieve did not find, and why.
//! - `watch`: following a request as writers flush.
//! - `crash`: crash images of real processes (test builds only).
//! - `races`: races of real processes (test builds only).
#![deny(rustdoc::broken_intra_doc_links)]
// Library code reports errors; it does not panic on them. Tests may unwrap.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod annotate;
pub mod backends;
pub mod config;
mod dataset_schema;
mod failpoint;
pub mod fdb5_config;
mod handle;
pub mod list;
pub mod manage;
pub mod placement;
mod process;
pub mod readahead;
pub mod resolve;
pub mod retrieve;
mod root;
pub mod routing;
pub mod shortfall;
mod stream;
mod sync;
mod text_file;
mod walk;
pub mod watch;
mod yaml;

/// The catalogue traits (defined in `fieldstore-core`).
pub mod catalogue {
    pub use fieldstore_core::catalogue::*;
}

/// The data-management vocabulary (defined in `fieldstore-core`).
pub mod maintenance {
    pub use fieldstore_core::maintenance::*;
}

/// The store traits (defined in `fieldstore-core`).
pub mod store {
    pub use fieldstore_core::store::*;
}

pub use config::{Config, Engine, Root, StoreKind};
pub use fieldstore_core::*;
pub use handle::FieldStore;
pub use list::{ListElement, ListOptions};
pub use manage::{
    DatasetPurge, DatasetStats, DatasetStatus, DatasetWipe, Kept, Moved, PurgeReport, WipeOptions,
    WipeReport,
};
pub use retrieve::DataReader;
pub use shortfall::Shortfall;
pub use stream::FieldStream;
pub use watch::{Since, Watch, WatchEvent, WatchOptions};

#[cfg(test)]
mod crash;
#[cfg(test)]
mod races;
