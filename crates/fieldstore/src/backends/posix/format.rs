//! Byte encodings of the POSIX backend's files (see `docs/format/posix.md`).
//!
//! Every record, in the table of contents and in index files, is framed:
//!
//! ```text
//! 0   4  magic "FSR1"
//! 4   2  format version (1; 2 for an index block holding an entry
//!        extension), little-endian
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

use fieldstore_core::record::{kind, Older};
pub(crate) use fieldstore_core::record::{Enc, Framed, Framing};

/// The framing of every record in `toc` and index files. Records are
/// written as version 1, but an index block holding an entry extension
/// (issue 29), which a version-1 reader would misread, is version 2, so
/// that such a reader refuses it by name; version 2 numbers types as 1.
pub(crate) const FRAMING: Framing = Framing::versioned(
    *b"FSR1",
    2,
    Older {
        version: 1,
        kinds: &[
            (kind::INIT, kind::INIT),
            (kind::FLUSH, kind::FLUSH),
            (kind::WIPE, kind::WIPE),
            (kind::RECLAIM, kind::RECLAIM),
            (kind::CONTROL, kind::CONTROL),
            (kind::BLOCK, kind::BLOCK),
        ],
    },
);

/// The version written for records any reader of version 1 reads.
pub(crate) const V1: u16 = 1;

/// Frame a record as version 1 (every POSIX record but an index block
/// holding an entry extension).
pub(crate) fn frame(out: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    FRAMING.frame_as(out, V1, kind, payload);
}

/// Record types: the numbering shared by every backend (POSIX's own
/// numbering became it unchanged, so POSIX stays format version 1).
pub(crate) use fieldstore_core::record::kind::{BLOCK, CONTROL, FLUSH, INIT, RECLAIM, WIPE};

#[cfg(test)]
mod tests {
    use super::*;

    /// Records are version 1 unless they need 2; a version-1 reader
    /// (`Framing::new`, as builds before entry extensions read) refuses a
    /// version-2 record by name, and this build reads both.
    #[test]
    fn version_2_only_where_needed_and_refused_by_name_before() {
        let mut v1 = Vec::new();
        frame(&mut v1, BLOCK, b"plain");
        assert_eq!(&v1[4..8], &[1, 0, 10, 0], "version 1, BLOCK");
        let v2 = FRAMING.framed(BLOCK, b"extended");
        assert_eq!(&v2[4..8], &[2, 0, 10, 0], "version 2, BLOCK");
        for rec in [&v1, &v2] {
            assert!(matches!(
                FRAMING.unframe(rec, &String::new).unwrap(),
                Framed::Record(BLOCK, ..)
            ));
        }
        let before = Framing::new(*b"FSR1");
        let e = before.unframe(&v2, &|| "idx at 0".into()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "idx at 0: record format version 2, this build reads version 1"
        );
    }
}
