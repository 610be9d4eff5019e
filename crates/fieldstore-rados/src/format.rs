//! Byte encoding of the catalogue's records (`docs/format/rados.md`).
//!
//! Every record — in a dataset object's log and in its omap values — is
//! framed:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `FSRR` |
//! | 4 | 2 | format version, `2` (version 1 is read too) |
//! | 6 | 2 | record type ([`fieldstore_core::record::kind`]) |
//! | 8 | 4 | payload length N |
//! | 12 | 4 | CRC-32C of the payload |
//! | 16 | 4 | CRC-32C of bytes 0..16 |
//! | 20 | N | payload |
//!
//! Integers are little-endian; `str` is a `u32` length and UTF-8 bytes.
//! The framing and the payload reader and writer are
//! [`fieldstore_core::record`]'s, shared with the other backends.

use fieldstore_core::record::{kind, Older};
pub(crate) use fieldstore_core::record::{Dec, Enc, Framed, Framing, HEADER};

/// The framing of every log record and index block: format version 2
/// (the shared numbering of record types); version 1 records, RADOS's own
/// numbering, read as the same types.
pub(crate) const FRAMING: Framing = Framing::versioned(
    *b"FSRR",
    2,
    Older {
        version: 1,
        kinds: &[
            (1, kind::INIT),
            (2, kind::FLUSH),
            (3, kind::SEAL),
            (4, kind::WIPE),
            (5, kind::RECLAIM),
            (6, kind::CONTROL),
            (7, kind::WIPED),
            (10, kind::BLOCK),
        ],
    },
);

/// Record types (`kind` has what each means).
pub(crate) use kind::{BLOCK, CONTROL, FLUSH, INIT, SEAL, WIPED};

#[cfg(test)]
mod tests {
    use super::*;

    fn what() -> String {
        "log".into()
    }

    /// Records of version 1 (RADOS's own numbering) read as the same
    /// types; records are written as version 2 with the shared numbers.
    #[test]
    fn version_1_records_read_as_their_types() {
        let v1 = Framing::new(*b"FSRR");
        let old = [
            (1, INIT),
            (2, FLUSH),
            (3, SEAL),
            (4, kind::WIPE),
            (5, kind::RECLAIM),
            (6, CONTROL),
            (7, WIPED),
            (10, BLOCK),
        ];
        for (number, kind) in old {
            let rec = v1.framed(number, b"p");
            assert_eq!(
                FRAMING.unframe(&rec, &what).unwrap(),
                Framed::Record(kind, b"p", HEADER + 1),
                "version 1 type {number}"
            );
        }
        let rec = FRAMING.framed(SEAL, b"");
        assert_eq!(&rec[..8], b"FSRR\x02\x00\x06\x00", "version 2, SEAL is 6");
    }
}
