//! Byte encodings of the POSIX backend's files (see `docs/format/posix.md`).
//!
//! Every record, in the table of contents and in index files, is framed:
//!
//! ```text
//! 0   4  magic "FSR1"
//! 4   2  format version (1), little-endian
//! 6   2  record type
//! 8   4  payload length N
//! 12  4  CRC-32C of the payload
//! 16  4  CRC-32C of bytes 0..16
//! 20  N  payload
//! ```
//!
//! All integers are little-endian. Strings are a u32 length and UTF-8 bytes.
//! The framing and the payload reader and writer are
//! [`fieldstore_core::record`]'s, shared with the other backends.

pub(crate) use fieldstore_core::record::{Dec, Enc, Framed, Framing};

/// The framing of every record in `toc` and index files.
pub(crate) const FRAMING: Framing = Framing::new(*b"FSR1");

/// Record types: the numbering shared by every backend (POSIX's own
/// numbering became it unchanged, so POSIX stays format version 1).
pub(crate) use fieldstore_core::record::kind::{BLOCK, CONTROL, FLUSH, INIT, RECLAIM, WIPE};
