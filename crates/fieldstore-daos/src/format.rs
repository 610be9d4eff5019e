//! Byte encodings of the DAOS backend's values (`docs/format/daos.md`).
//!
//! Every value fieldstore writes into a KV or a catalogue array is one
//! framed record:
//!
//! ```text
//! 0   4  magic "FSD1"
//! 4   2  format version (2; version 1 is read too), little-endian
//! 6   2  record type (`fieldstore_core::record::kind`)
//! 8   4  payload length N
//! 12  4  CRC-32C (Castagnoli) of the payload
//! 16  4  CRC-32C of bytes 0..16
//! 20  N  payload
//! ```
//!
//! The framing and the payload reader and writer are
//! [`fieldstore_core::record`]'s, shared with the other backends.

use fieldstore_core::record::{kind, Dec, Enc, Framing, Older};
use fieldstore_core::{DatasetKey, Error, Result};

/// The framing of every value: one record, the whole value
/// ([`Framing::unframe_exact`]), format version 2 (the shared numbering of
/// record types); version 1 values, DAOS's own numbering, read as the
/// same types.
pub(crate) const FRAMING: Framing = Framing::versioned(
    *b"FSD1",
    2,
    Older {
        version: 1,
        kinds: &[
            (1, kind::INIT),
            (2, kind::FLUSH),
            (3, kind::INDIRECT),
            (4, kind::DATASET),
            (5, kind::WIPE),
            (6, kind::RECLAIM),
            (7, kind::CONTROL),
        ],
    },
);

/// The dataset KV's `meta` value: the dataset's creation record.
pub(crate) const META: u16 = kind::INIT;
/// Log slot values of DAOS's own (FLUSH and INDIRECT: a flush too large
/// to inline; the others, WIPE, RECLAIM, CONTROL, are the slot engine's
/// `SlotRecord::decode`), the dataset KV's `control` value (CONTROL) and
/// the root KV's values (DATASET).
pub(crate) use kind::{CONTROL, DATASET, FLUSH, INDIRECT};

/// Largest framed FLUSH record stored inline in a log slot; larger ones go
/// to a byte array and the slot holds an INDIRECT record. Readers fetch a
/// slot with a buffer of this size, so one `kv_get` always suffices.
pub(crate) const MAX_INLINE: usize = 256 * 1024;

/// Chunk size of the byte arrays holding spilled flush records.
pub(crate) const SPILL_CHUNK: u64 = 1 << 20;

/// The `meta` value of a dataset KV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) key: DatasetKey,
    pub(crate) schema: String,
    pub(crate) created_ns: u64,
}

pub(crate) fn encode_meta(m: &Meta) -> Vec<u8> {
    let mut e = Enc::default();
    e.str(&m.key.to_string());
    e.str(&m.schema);
    e.u64(m.created_ns);
    FRAMING.framed(META, &e.0)
}

pub(crate) fn decode_meta(buf: &[u8], what: &dyn Fn() -> String) -> Result<Meta> {
    let (kind, p) = FRAMING.unframe_exact(buf, what)?;
    if kind != META {
        return Err(Error::corrupt(format!(
            "{}: record type {kind}, expected META",
            what()
        )));
    }
    let mut d = Dec::new(p, what);
    let m = Meta {
        key: DatasetKey(d.key()?),
        schema: d.str()?.to_string(),
        created_ns: d.u64()?,
    };
    d.end()?;
    Ok(m)
}

/// A root KV value: where the dataset lives.
pub(crate) fn encode_dataset(label: &str, created_ns: u64) -> Vec<u8> {
    let mut e = Enc::default();
    e.str(label);
    e.u64(created_ns);
    FRAMING.framed(DATASET, &e.0)
}

/// FLUSH payloads: the core's codec of flushes whose blocks ride inline
/// in their record ([`fieldstore_core::record::inline`]), shared with S3.
pub(crate) use fieldstore_core::record::inline::decode_flush;

/// An INDIRECT record: the flush is in a byte array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Indirect {
    pub(crate) lo: u64,
    pub(crate) hi: u64,
    pub(crate) length: u64,
    pub(crate) crc: u32,
}

pub(crate) fn encode_indirect(i: &Indirect) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(i.lo);
    e.u64(i.hi);
    e.u64(i.length);
    e.u32(i.crc);
    FRAMING.framed(INDIRECT, &e.0)
}

pub(crate) fn decode_indirect(p: &[u8], what: &dyn Fn() -> String) -> Result<Indirect> {
    let mut d = Dec::new(p, what);
    let i = Indirect {
        lo: d.u64()?,
        hi: d.u64()?,
        length: d.u64()?,
        crc: d.u32()?,
    };
    d.end()?;
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_core::record::HEADER;

    // The FLUSH and maintenance payloads are the core's, tested there
    // (`fieldstore_core::record::inline`, `record::maintenance`).

    fn meta() -> Meta {
        Meta {
            key: "class=od,expver=0001".parse().unwrap(),
            schema: "[ class, expver [ a [ b ]]]".into(),
            created_ns: 9,
        }
    }

    const INDIRECT_VALUE: Indirect = Indirect {
        lo: 1,
        hi: 2,
        length: 3,
        crc: 4,
    };

    #[test]
    fn meta_and_indirect_round_trip() {
        let what = || "t".to_string();
        assert_eq!(decode_meta(&encode_meta(&meta()), &what).unwrap(), meta());
        let framed = encode_indirect(&INDIRECT_VALUE);
        let (k, p) = FRAMING.unframe_exact(&framed, &what).unwrap();
        assert_eq!(k, INDIRECT);
        assert_eq!(decode_indirect(p, &what).unwrap(), INDIRECT_VALUE);
    }

    /// DAOS's own decoders, on bytes that a damaged value (whose frame
    /// checksums were ignored) or a writer's bug could hand them.
    fn decode_all(p: &[u8]) {
        let what = || "slot".to_string();
        for r in [
            decode_meta(p, &what).map(|_| ()),
            decode_indirect(p, &what).map(|_| ()),
        ] {
            if let Err(e) = r {
                assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt, "{e}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1000, ..Default::default() })]

        #[test]
        fn decoders_take_arbitrary_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            decode_all(&bytes);
        }

        #[test]
        fn decoders_take_damaged_values(indirect in proptest::prelude::any::<bool>(), at in proptest::prelude::any::<proptest::sample::Index>(), byte in proptest::prelude::any::<u8>(), cut in proptest::prelude::any::<bool>()) {
            let mut p = if indirect {
                encode_indirect(&INDIRECT_VALUE)[HEADER..].to_vec()
            } else {
                encode_meta(&meta())
            };
            let i = at.index(p.len().max(1));
            if cut {
                p.truncate(i);
            } else if let Some(b) = p.get_mut(i) {
                *b = byte;
            }
            decode_all(&p);
        }
    }
}

#[cfg(test)]
mod numbering {
    use super::*;

    /// Values of version 1 (DAOS's own numbering) read as the same types;
    /// values are written as version 2 with the shared numbers.
    #[test]
    fn version_1_values_read_as_their_types() {
        let v1 = Framing::new(*b"FSD1");
        let old = [
            (1, META),
            (2, FLUSH),
            (3, INDIRECT),
            (4, DATASET),
            (5, kind::WIPE),
            (6, kind::RECLAIM),
            (7, CONTROL),
        ];
        for (number, kind) in old {
            let value = v1.framed(number, b"p");
            assert_eq!(
                FRAMING.unframe_exact(&value, &String::new).unwrap(),
                (kind, &b"p"[..]),
                "version 1 type {number}"
            );
        }
        let value = FRAMING.framed(CONTROL, b"");
        assert_eq!(
            &value[..8],
            b"FSD1\x02\x00\x05\x00",
            "version 2, CONTROL is 5"
        );
    }
}
