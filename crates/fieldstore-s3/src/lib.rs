//! fieldstore on S3: the store (`store: s3`), field bytes in S3 objects,
//! and the catalogue (`engine: s3`), each dataset's log a row of objects
//! created by conditional PUTs. Either pairs with any other backend's
//! half (FDB5's S3 branch keeps its catalogue on POSIX).
//!
//! - [`S3Store`]: one object per writer flush (`write_buffer` bounds a
//!   writer's memory: past it the writer PUTs early), reads by ranged GET,
//!   CRC-32C checked; units, orphans and wipe through writer leases
//!   (`lease`), with `confirm_published` fencing a writer stopped past its
//!   lease. The layout: `docs/format/s3.md`.
//! - [`S3Catalogue`]: the engine's slot catalogue on S3 objects ([`S3Medium`], `catalogue`).
//! - [`S3Config`]: the `s3:` section.
//! - [`RawObjects`]: whole objects with none of the store's format, for
//!   the hammer's raw (IOR-style) baseline.
//!
//! **Why rusty-s3 over ureq.** The `Store` traits are synchronous;
//! rusty-s3 signs requests (SigV4) and parses S3's XML without doing any
//! I/O, so the blocking `ureq` already in the tree sends them, with every
//! wait bounded by its time-outs — where `object_store` or `aws-sdk-s3`
//! would bring an async runtime to block on in every call.
//!
//! # Layers
//! Each module names only modules listed before it (the `layers` test
//! checks the code against this list):
//! - `config`: the `s3:` section.
//! - `naming`: object keys and location URIs.
//! - `client`: the S3 requests (rusty-s3 signing, ureq sending, errors).
//! - `lease`: writer leases and their renewal thread.
//! - `prefetch`: read-ahead of hinted fields.
//! - `store`: the store, its writers and its maintenance.
//! - `raw`: whole objects for the hammer's raw baseline.
//! - `catalogue`: the catalogue, on the engine's slot log.
//! - `herd_bench`: a test-only measurement of commits by many writers at
//!   once (racing for slots against combining).

mod catalogue;
mod client;
mod config;
mod lease;
mod naming;
mod prefetch;
mod raw;
mod store;

#[cfg(test)]
mod herd_bench;

pub use catalogue::{S3Catalogue, S3Medium};
pub use client::requests_sent;
pub use config::{S3Config, DEFAULT_LEASE};
pub use raw::RawObjects;
pub use store::S3Store;
