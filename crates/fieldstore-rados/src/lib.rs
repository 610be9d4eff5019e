//! fieldstore on Ceph RADOS: `engine: rados` ([`RadosCatalogue`]) and
//! `store: rados` ([`RadosStore`]), configured by the `rados:` section
//! ([`RadosConfig`]).
//!
//! - **Store**: field bytes in per-writer objects written at offsets, with
//!   roll-over before Ceph's object-size limit, asynchronous writes in
//!   flight, and a CRC-32C per field checked on every read. Each writer
//!   proves it is alive with a watch, so that purge reclaims what killed
//!   writers left and nothing a live one will flush (`liveness`).
//! - **Catalogue**: one object per dataset; its data is an append-only log
//!   of flush records, its omap the index blocks they name; one compound
//!   (atomic) write operation per flush. A root object's omap lists the
//!   datasets.
//! - **Waiting for flushes** (`watch`, `retrieve --wait`): librados
//!   watch/notify ([`RadosWaiter`]); writers notify a dataset's head object
//!   after each flush, asynchronously, and watchers poll every 50 ms at
//!   most in case a notify is lost.
//!
//! librados is loaded at run time (`dlopen` of `librados.so.2`, or the path
//! in `FIELDSTORE_LIBRADOS`): building needs no Ceph, and a missing library
//! is reported as an `Unsupported` error when a RADOS backend is opened.
//! Object and byte layout: `docs/format/rados.md`.
//!
//! # Layers
//! Each module names only modules listed before it (the `layers` test of
//! `fieldstore-testkit` checks the code against this list).
//! - `ffi`: librados's C functions, loaded at run time.
//! - `format`: the catalogue's record framing and numbering.
//! - `naming`: object names of datasets, segments and writers.
//! - `rados`: a safe pool handle over `ffi`.
//! - `liveness`: writers' watches, and telling a dead writer's.
//! - `config`: the `rados:` section.
//! - `waiter`: watch/notify for `watch` and `retrieve --wait`.
//! - `raw`: the hammer's raw object reads and writes.
//! - `store`: `store: rados`.
//! - `segments`: a dataset's log as objects: segments, seals, counts.
//! - `registry`: the root's registrations of datasets, and their count.
//! - `reader`: the engine's reader on a dataset's log.
//! - `catalogue`: `engine: rados`.
//! - `layout_bench`: a test-only measurement of object layouts.
//! - `log_bench`: a test-only measurement of log commits (appends against
//!   omap slots), with the catalogue's record counting.
#![deny(rustdoc::broken_intra_doc_links)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod catalogue;
mod config;
mod ffi;
mod format;
mod liveness;
mod naming;
mod rados;
mod raw;
mod reader;
mod registry;
mod segments;
mod store;
mod waiter;

#[cfg(test)]
mod layout_bench;
#[cfg(test)]
mod log_bench;

pub use catalogue::{RadosCatalogue, RadosMedium};
pub use config::RadosConfig;
pub use raw::RawObjects;
pub use reader::RadosReader;
pub use store::RadosStore;
pub use waiter::{RadosWaiter, Wake, POLL, RESCAN};
