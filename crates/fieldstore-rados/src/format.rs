//! Byte encoding of the catalogue's records (`docs/format/rados.md`).
//!
//! Every record — in a dataset object's log and in its omap values — is
//! framed:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `FSRR` |
//! | 4 | 2 | format version, `1` |
//! | 6 | 2 | record type |
//! | 8 | 4 | payload length N |
//! | 12 | 4 | CRC-32C of the payload |
//! | 16 | 4 | CRC-32C of bytes 0..16 |
//! | 20 | N | payload |
//!
//! Integers are little-endian; `str` is a `u32` length and UTF-8 bytes.
//! The framing and the payload reader and writer are
//! [`fieldstore_core::record`]'s, shared with the other backends.

pub(crate) use fieldstore_core::record::{Dec, Enc, Framed, Framing, HEADER};

/// The framing of every log record and index block.
pub(crate) const FRAMING: Framing = Framing::new(*b"FSRR");

/// Record types.
pub(crate) const INIT: u16 = 1;
pub(crate) const FLUSH: u16 = 2;
pub(crate) const SEAL: u16 = 3;
/// Collocations wiped (and units left to remove).
pub(crate) const WIPE: u16 = 4;
/// Units removed by a purge or a wipe.
pub(crate) const RECLAIM: u16 = 5;
/// The dataset's locks from now on.
pub(crate) const CONTROL: u16 = 6;
/// The whole dataset is wiped: nothing before it is visible.
pub(crate) const WIPED: u16 = 7;
pub(crate) const BLOCK: u16 = 10;
