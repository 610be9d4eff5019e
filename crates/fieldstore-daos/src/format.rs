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
/// Log slot values (FLUSH, INDIRECT: a flush too large to inline, WIPE,
/// RECLAIM, CONTROL — also the dataset KV's `control` value) and the root
/// KV's values (DATASET).
pub(crate) use kind::{CONTROL, DATASET, FLUSH, INDIRECT, RECLAIM, WIPE};

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
    let key = DatasetKey(d.key()?);
    let schema = d.str()?.to_string();
    let created_ns = d.u64()?;
    d.end()?;
    Ok(Meta {
        key,
        schema,
        created_ns,
    })
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
    use fieldstore_core::record::inline::{blocks, encode_flush, Flush};
    use fieldstore_core::record::maintenance as records;
    use fieldstore_core::record::pending::PendingEntries;
    use fieldstore_core::record::HEADER;
    use fieldstore_core::CollocationKey;
    use fieldstore_core::{ElementKey, FieldLocation};

    /// A WIPE record, framed (payload: `fieldstore_core::record::maintenance`).
    fn encode_wipe(collocations: &[CollocationKey], units: &[String], now: u64) -> Vec<u8> {
        FRAMING.framed(WIPE, &records::encode_wipe(collocations, units, now))
    }

    /// A RECLAIM record, framed.
    fn encode_reclaim(units: &[String], now: u64) -> Vec<u8> {
        FRAMING.framed(RECLAIM, &records::encode_reclaim(units, None, now))
    }

    /// A CONTROL record (the locked operations, `Locks::bits`), framed.
    fn encode_control(bits: u8, now: u64) -> Vec<u8> {
        FRAMING.framed(CONTROL, &records::encode_control(bits, now))
    }

    fn loc(uri: &str, off: u64) -> FieldLocation {
        FieldLocation::new(uri, off, 10).with_checksum(7)
    }

    #[test]
    fn flush_round_trips_and_shares_prefixes() {
        let c: CollocationKey = "type=fc,levtype=sfc".parse().unwrap();
        let e1: ElementKey = "step=0,param=167".parse().unwrap();
        let e2: ElementKey = "step=6,param=167".parse().unwrap();
        let e3: ElementKey = "step=,param=2".parse().unwrap();
        let mut pending = PendingEntries::new();
        pending.insert(&c, &e1, &loc("daos://p/c/0d01", 0));
        pending.insert(&c, &e2, &loc("daos://p/c/0d02", 0));
        pending.insert(&c, &e1, &FieldLocation::new("file:///x/y.data", 3, 4));
        pending.insert(
            &c,
            &e3,
            &loc("daos://p/c/0d03", 0).with_extension(&[0x4a, 1, 2][..]),
        );
        let f = Flush {
            timestamp_ns: 42,
            writer: "w".into(),
            blocks: blocks(pending),
        };
        assert_eq!(
            f.blocks.len(),
            1,
            "same collocation and keywords: one block"
        );
        assert_eq!(f.blocks[0].entries.len(), 4);
        let bytes = encode_flush(&f);
        let what = || "test".to_string();
        assert_eq!(decode_flush(&bytes, &what).unwrap(), f);
        let back = decode_flush(&bytes, &what).unwrap();
        let exts: Vec<_> = back.blocks[0]
            .entries
            .iter()
            .filter_map(|(_, l)| l.extension.as_deref())
            .collect();
        assert_eq!(exts, [&[0x4a, 1, 2][..]]);
        // (Damage to the framing is `fieldstore_core::record`'s tests.)
        let framed = FRAMING.framed(FLUSH, &bytes);
        assert_eq!(
            FRAMING.unframe_exact(&framed, &what).unwrap(),
            (FLUSH, &bytes[..])
        );
    }

    #[test]
    fn meta_and_indirect_round_trip() {
        let m = Meta {
            key: "class=od,expver=0001".parse().unwrap(),
            schema: "[ class, expver [ a [ b ]]]".into(),
            created_ns: 9,
        };
        let what = || "t".to_string();
        assert_eq!(decode_meta(&encode_meta(&m), &what).unwrap(), m);
        let i = Indirect {
            lo: 1,
            hi: 2,
            length: 3,
            crc: 4,
        };
        let framed = encode_indirect(&i);
        let (k, p) = FRAMING.unframe_exact(&framed, &what).unwrap();
        assert_eq!(k, INDIRECT);
        assert_eq!(decode_indirect(p, &what).unwrap(), i);
    }

    #[test]
    fn maintenance_records_round_trip() {
        let what = || "slot".to_string();
        let cols = vec![CollocationKey("type=fc,levtype=sfc".parse().unwrap())];
        let units = vec!["daos://p/c/0001".to_string()];
        let v = encode_wipe(&cols, &units, 7);
        let (kind, p) = FRAMING.unframe_exact(&v, &what).unwrap();
        assert_eq!(kind, WIPE);
        assert_eq!(
            {
                let w = records::decode_wipe(p, &what).unwrap();
                (w.collocations, w.units)
            },
            (cols, units.clone())
        );
        let v = encode_reclaim(&units, 8);
        let (kind, p) = FRAMING.unframe_exact(&v, &what).unwrap();
        assert_eq!(
            (kind, records::decode_reclaim(p, &what).unwrap().units),
            (RECLAIM, units)
        );
        let v = encode_control(9, 9);
        let (kind, p) = FRAMING.unframe_exact(&v, &what).unwrap();
        assert_eq!(
            (kind, records::decode_control(p, &what).unwrap()),
            (CONTROL, 9)
        );
        let mut bad = encode_control(9, 9)[HEADER..].to_vec();
        bad.push(0);
        assert!(
            records::decode_control(&bad, &what).is_err(),
            "trailing bytes"
        );
    }

    /// Every payload decoder, on bytes that a damaged slot (whose frame
    /// checksums were ignored) or a writer's bug could hand it.
    fn decode_all(p: &[u8]) {
        let what = || "slot".to_string();
        for r in [
            decode_meta(p, &what).map(|_| ()),
            decode_flush(p, &what).map(|_| ()),
            decode_indirect(p, &what).map(|_| ()),
            records::decode_wipe(p, &what).map(|_| ()),
            records::decode_reclaim(p, &what).map(|_| ()),
            records::decode_control(p, &what).map(|_| ()),
        ] {
            if let Err(e) = r {
                assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt, "{e}");
            }
        }
    }

    /// Valid payloads of every record type.
    fn valid_payloads() -> Vec<Vec<u8>> {
        let c: CollocationKey = "type=fc,levtype=sfc".parse().unwrap();
        let mut pending = PendingEntries::new();
        for i in 0..5u64 {
            let e: ElementKey = format!("step={i},param=167").parse().unwrap();
            pending.insert(&c, &e, &loc(&format!("daos://p/c/0d{i:02}"), i));
        }
        let flush = Flush {
            timestamp_ns: 1,
            writer: "w".into(),
            blocks: blocks(pending),
        };
        let units = vec!["daos://p/c/0001".to_string()];
        vec![
            encode_meta(&Meta {
                key: "class=od,expver=0001".parse().unwrap(),
                schema: "[ a [ b [ c ]]]".into(),
                created_ns: 2,
            }),
            encode_flush(&flush),
            encode_indirect(&Indirect {
                lo: 1,
                hi: 2,
                length: 3,
                crc: 4,
            })[HEADER..]
                .to_vec(),
            encode_wipe(&[c], &units, 3)[HEADER..].to_vec(),
            encode_reclaim(&units, 4)[HEADER..].to_vec(),
            encode_control(5, 5)[HEADER..].to_vec(),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1000, ..Default::default() })]

        #[test]
        fn decoders_take_arbitrary_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            decode_all(&bytes);
        }

        #[test]
        fn decoders_take_damaged_payloads(which in 0usize..6, at in proptest::prelude::any::<proptest::sample::Index>(), byte in proptest::prelude::any::<u8>(), cut in proptest::prelude::any::<bool>()) {
            let mut p = valid_payloads().swap_remove(which);
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
            (5, WIPE),
            (6, RECLAIM),
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
