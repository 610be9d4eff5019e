//! fieldstore's DAOS backends: a catalogue ([`DaosCatalogue`], `engine:
//! daos`) and a store ([`DaosStore`], `store: daos`), each usable with the
//! other or with the POSIX ones.
//!
//! libdaos is loaded at run time ([`client::Daos`]): `$FIELDSTORE_DAOS_LIBRARY`,
//! else the config's `daos.library`, else `libdaos.so.2`. Without it, or
//! without a reachable `daos_agent`, opening a DAOS backend fails with
//! [`ErrorKind::Unavailable`](fieldstore_core::ErrorKind::Unavailable); the
//! rest of fieldstore needs no DAOS at all. Tests run the same code over
//! `daos-standin`, a library with libdaos's ABI.
//!
//! The layout follows Manubens et al. (PASC'24) — root KV, a container per
//! dataset, a dataset KV, one byte array per field with pre-allocated OIDs,
//! opened with attributes, sizes in the location — with one change that
//! makes listing cheap and flushes atomic: a flush's index entries are
//! written together, as one value in the dataset KV's log, instead of one
//! KV put per field into per-collocation index KVs and axis KVs. See
//! `docs/format/daos.md` for the bytes and `docs/backends.md` for the why.
//!
//! # Layers
//! Each module names only modules listed before it (the `layers` test of
//! `fieldstore-testkit` checks the code against this list).
//! - `ffi`: libdaos's C functions and types, loaded at run time.
//! - `format`: the catalogue's record framing and payloads.
//! - `config`: the `daos:` section and its defaults.
//! - `layout`: container labels and KV keys.
//! - `client`: safe pool, container, KV and array handles over `ffi`.
//! - `lease`: a writer's lease on a container, and telling a dead writer's.
//! - `session`: the process's open pools and containers, and the thread
//!   renewing their leases.
//! - `store`: `store: daos`.
//! - `catalogue`: `engine: daos`.
#![deny(rustdoc::broken_intra_doc_links)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod catalogue;
pub mod client;
pub mod config;
pub mod ffi;
mod format;
pub mod layout;
mod lease;
mod session;
pub mod store;

pub use catalogue::{DaosCatalogue, DaosMedium};
pub use config::DaosConfig;
pub use store::DaosStore;
