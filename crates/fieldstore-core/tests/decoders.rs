//! The decoders of stored bytes against damage, bounded in time for CI
//! (the deeper, unbounded runs are the cargo-fuzz targets `record` and
//! `block`, `scripts/fuzz.sh`): record framing and index blocks, given
//! arbitrary bytes and valid records with bytes flipped, cut or inserted,
//! never panic, never allocate what the bytes merely claim, and never take
//! damaged bytes for a record.

use std::borrow::Cow;
use std::sync::Arc;

use fieldstore_core::record::block::{self, BlockFormat, ValueLen};
use fieldstore_core::record::{Framed, Framing, HEADER};
use fieldstore_core::{CollocationKey, ElementKey, ErrorKind, FieldLocation};
use proptest::prelude::*;

const FRAMING: Framing = Framing::new(*b"FSR1");

/// Index blocks as POSIX writes them (units named by their URIs).
struct Files;

impl BlockFormat for Files {
    const VALUES: ValueLen = ValueLen::U16;
    const UNIT: &'static str = "data file";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        Cow::Borrowed(uri)
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(name)
    }
}

fn nothing() -> String {
    String::new()
}

/// A valid block of `n` entries, framed.
fn framed_block(n: u32, payload_seed: u8) -> Vec<u8> {
    let collocation = CollocationKey("type=fc,levtype=pl".parse().unwrap());
    let entries: Vec<(ElementKey, FieldLocation)> = (0..n)
        .map(|i| {
            (
                ElementKey(
                    format!("step={i},param={}", 130 + u32::from(payload_seed))
                        .parse()
                        .unwrap(),
                ),
                FieldLocation::new(format!("file:///d/{}.data", i % 3), u64::from(i) * 100, 100),
            )
        })
        .collect();
    let (payload, _) = block::encode(&Files, &collocation, &entries);
    FRAMING.framed(10, &payload)
}

/// What a damaged copy of `original` may decode as: an error, incomplete,
/// or — when the damage left the record intact — the very same record.
fn check_damaged(original: &[u8], damaged: &[u8]) {
    let _ = FRAMING.resync(damaged);
    match FRAMING.unframe(damaged, &nothing) {
        Ok(Framed::Record(kind, payload, n)) => {
            // Only bytes after the record may differ.
            assert_eq!(
                &damaged[..n],
                &original[..n],
                "damaged bytes read as a record"
            );
            assert_eq!(kind, 10);
            assert!(block::decode(&Files, payload, &nothing).is_ok());
        }
        Ok(Framed::Incomplete) => {}
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}"),
    }
    if let Ok((_, payload)) = FRAMING.unframe_exact(damaged, &nothing) {
        assert_eq!(damaged, original, "damaged bytes read as an exact record");
        assert!(block::decode(&Files, payload, &nothing).is_ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Arbitrary bytes: no panic anywhere, errors are `Corrupt`.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = FRAMING.resync(&bytes);
        match FRAMING.unframe(&bytes, &nothing) {
            Ok(_) => {}
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corrupt),
        }
        let _ = FRAMING.unframe_exact(&bytes, &nothing);
        if let Err(e) = block::decode(&Files, &bytes, &nothing) {
            prop_assert_eq!(e.kind(), ErrorKind::Corrupt);
        }
    }

    /// A header that checks but claims a huge payload is incomplete, not
    /// an allocation: the caller waits for bytes that never come.
    #[test]
    fn claimed_lengths_are_not_trusted(len in any::<u32>(), kind in any::<u16>()) {
        let mut rec = FRAMING.framed(kind, b"");
        rec[8..12].copy_from_slice(&len.to_le_bytes());
        // Re-checksum the header so that only the length lies.
        let crc = crc32c::crc32c(&rec[..16]);
        rec[16..20].copy_from_slice(&crc.to_le_bytes());
        match FRAMING.unframe(&rec, &nothing) {
            Ok(Framed::Incomplete) => prop_assert!(len > 0),
            Ok(Framed::Record(_, p, n)) => prop_assert!(len == 0 && p.is_empty() && n == HEADER),
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corrupt),
        }
    }

    /// A valid block record with one byte flipped.
    #[test]
    fn flipped_bytes_are_never_a_record(n in 0u32..40, seed in any::<u8>(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let original = framed_block(n, seed);
        let mut damaged = original.clone();
        let i = at.index(damaged.len());
        damaged[i] ^= 1 << bit;
        check_damaged(&original, &damaged);
    }

    /// A valid block record cut short, or with bytes inserted.
    #[test]
    fn cut_or_grown_records_are_never_a_record(n in 0u32..40, seed in any::<u8>(), at in any::<prop::sample::Index>(), extra in prop::collection::vec(any::<u8>(), 1..8)) {
        let original = framed_block(n, seed);
        let i = at.index(original.len());
        check_damaged(&original, &original[..i]);
        let mut grown = original[..i].to_vec();
        grown.extend_from_slice(&extra);
        grown.extend_from_slice(&original[i..]);
        check_damaged(&original, &grown);
    }

    /// A block payload (unframed, so no checksum protects it) with bytes
    /// flipped: decoded or `Corrupt`, never a panic.
    #[test]
    fn damaged_block_payloads_never_panic(n in 0u32..40, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let framed = framed_block(n, 0);
        let mut payload = framed[HEADER..].to_vec();
        let i = at.index(payload.len());
        payload[i] = byte;
        if let Err(e) = block::decode(&Files, &payload, &nothing) {
            prop_assert_eq!(e.kind(), ErrorKind::Corrupt);
        }
    }
}
