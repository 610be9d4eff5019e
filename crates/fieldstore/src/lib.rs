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
pub mod routing;
pub mod shortfall;
mod stream;
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
