//! Index blocks: the entries of one collocation written by one flush, as
//! the POSIX and RADOS catalogues store them (`docs/format/posix.md`,
//! `docs/format/rados.md`). Bytes in, bytes out: no I/O, no framing (a
//! block is the payload of a record of the backend's BLOCK type).
//!
//! A block's payload:
//!
//! ```text
//! collocation key                                   str (canonical form)
//! number of element keywords K, then K × keyword    u32, str
//! number of units U, then U × unit name             u32, str
//! number of entries E                               u32
//! E times: unit number (0-based into the U units)   u32
//!          offset                                   u64
//!          length                                   u64
//!          flags: bit 0 checksum valid,             u8
//!                 bit 1 extension follows (others 0)
//!          CRC-32C of the field's bytes (0 if none) u32
//!          if flag bit 1: the entry's extension     bytes (u32 length)
//!          K values of the element key, in keyword order
//!                                                   sstr (u16 length) or
//!                                                   str (u32 length)
//! ```
//!
//! Two things differ between backends, and a [`BlockFormat`] says which:
//! the width of a value's length ([`ValueLen`]), and how a unit is named
//! (POSIX: a data file's name relative to the dataset directory, RADOS: the
//! URI itself).
//!
//! Invariants:
//! - Every entry of a block has the keywords of its first entry, in the
//!   same order; a block of no entries has no keywords. Callers group
//!   entries by keyword list before [`encode`] (see [`super::pending`]).
//! - Units are numbered in order of first use by the entries; a unit is
//!   named once.
//! - Within a block a later entry for the same element key is newer;
//!   [`decode`] returns the entries in block order.
//! - [`decode`] reads the whole payload: damage (too short, a unit number
//!   out of range, an invalid key, bytes left over) is an
//!   [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt) error whose message
//!   starts with `what()`, never a panic; a count is never trusted for
//!   more memory than the payload could hold.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use super::{Dec, Enc};
use crate::axes::{Axes, AxesExt};
use crate::error::Result;
use crate::key::{CollocationKey, ElementKey, Key};
use crate::location::FieldLocation;

/// The length before each element value in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueLen {
    /// `u16` (`sstr`): POSIX.
    U16,
    /// `u32` (`str`): RADOS.
    U32,
}

/// What differs between one backend's index blocks and another's.
pub trait BlockFormat {
    /// The length before each element value.
    const VALUES: ValueLen;
    /// What the units are called in errors: `"data file"`, `"location"`.
    const UNIT: &'static str;
    /// The name the unit table keeps for the unit at `uri`.
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str>;
    /// The URI of the unit the table names `name`.
    fn unit_uri(&self, name: &str) -> Arc<str>;
}

/// A decoded block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'a> {
    /// The collocation key, in canonical form, as written (not parsed).
    pub collocation: &'a str,
    /// The element keywords, in key order.
    pub keywords: Vec<&'a str>,
    /// The entries, in block order (a later one for the same element is
    /// newer).
    pub entries: Vec<(ElementKey, FieldLocation)>,
}

/// Bytes of an entry without its values.
const ENTRY_FIXED: usize = 4 + 8 + 8 + 1 + 4;

/// The payload of a block of `entries` (which all have the keywords of the
/// first, see the module invariants), and the values each element keyword
/// takes in it.
pub fn encode<F: BlockFormat>(
    format: &F,
    collocation: &CollocationKey,
    entries: &[(ElementKey, FieldLocation)],
) -> (Vec<u8>, Axes) {
    let keywords: Vec<&str> = entries
        .first()
        .map(|(k, _)| k.keywords().collect())
        .unwrap_or_default();
    let mut names: Vec<Cow<'_, str>> = Vec::new();
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut body = Enc::default();
    let mut axes = Axes::new();
    for (key, loc) in entries {
        debug_assert!(
            key.keywords().eq(keywords.iter().copied()),
            "{key} in a block of {keywords:?}"
        );
        let id = *ids.entry(&loc.uri).or_insert_with(|| {
            names.push(format.unit_name(&loc.uri));
            names.len() as u32 - 1
        });
        body.u32(id);
        body.u64(loc.offset);
        body.u64(loc.length);
        body.entry_tail(loc);
        for v in key.values() {
            match F::VALUES {
                ValueLen::U16 => body.short_str(v),
                ValueLen::U32 => body.str(v),
            }
        }
        axes.add_key(key);
    }
    let mut e = Enc::default();
    e.str(&collocation.to_string());
    e.list(&keywords, |e, k| e.str(k));
    e.list(&names, |e, n| e.str(n));
    e.u32(entries.len() as u32);
    e.0.extend_from_slice(&body.0);
    (e.0, axes)
}

/// Decode a block's payload; `what` names the block for errors.
///
/// # Errors
/// [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt), starting with
/// `what()`: [`Dec`]'s errors (`payload ends early`, `string is not
/// UTF-8`, each `at payload byte N`), `<unit> index out of range`, an
/// invalid element key, `trailing bytes in index block`.
pub fn decode<'a, F: BlockFormat>(
    format: &F,
    payload: &'a [u8],
    what: &dyn Fn() -> String,
) -> Result<Block<'a>> {
    let mut d = Dec::new(payload, what);
    let collocation = d.str()?;
    let keywords = d.list(|d| d.str())?;
    let units = d.list(|d| Ok(format.unit_uri(d.str()?)))?;
    let count = d.u32()? as usize;
    let value_len = match F::VALUES {
        ValueLen::U16 => 2,
        ValueLen::U32 => 4,
    };
    let entry_min = ENTRY_FIXED + keywords.len() * value_len;
    // The keywords are checked once for the block's entries.
    for (i, kw) in keywords.iter().enumerate() {
        if !crate::key::is_valid_keyword(kw) || keywords[..i].contains(kw) {
            let problem = format!("invalid or repeated keyword '{kw}' in the index block");
            return Err(super::corrupt(what, problem));
        }
    }
    // Each entry's key is one allocation, built in a reused buffer.
    let mut scratch = String::new();
    let mut values: Vec<&str> = Vec::with_capacity(keywords.len());
    let mut entries = Vec::with_capacity(count.min(payload.len() / entry_min));
    for _ in 0..count {
        let id = d.u32()? as usize;
        let offset = d.u64()?;
        let length = d.u64()?;
        let uri = units
            .get(id)
            .ok_or_else(|| super::corrupt(what, format!("{} index out of range", F::UNIT)))?;
        let mut loc = FieldLocation::new(uri.clone(), offset, length);
        d.entry_tail(&mut loc)?;
        values.clear();
        for _ in 0..keywords.len() {
            values.push(match F::VALUES {
                ValueLen::U16 => d.short_str()?,
                ValueLen::U32 => d.str()?,
            });
        }
        let key = Key::from_checked_keywords(&keywords, values.iter().copied(), &mut scratch)
            .map_err(|e| super::corrupt(what, e))?;
        entries.push((ElementKey(key), loc));
    }
    d.end_of("index block")?;
    Ok(Block {
        collocation,
        keywords,
        entries,
    })
}

/// Order one flush's entries of one collocation (a block, or the run a
/// writer cuts into blocks) as they are written: by
/// [`Key::cmp_fingerprint`], descending, and
/// several entries of one key in the order they were inserted. Visited
/// backwards ([`visit_newest_first`](crate::catalogue::visit_newest_first)), a flush then comes in FDB5's order
/// for one index (one flush of one collocation: its B-tree's key order,
/// measured with FDB5 5.25), and every key's entries still newest first
/// (what lookups and masking rely on: a later entry of a key is newer). The
/// cost is the writer's, once per flush, not every listing's: each key's
/// fingerprint is made once, and a run already in order is left as it is.
pub fn order_block(entries: &mut [(ElementKey, FieldLocation)]) {
    use std::cmp::Ordering;
    let ordered = entries
        .windows(2)
        .all(|w| w[0].0.cmp_fingerprint(&w[1].0) != Ordering::Less);
    if !ordered {
        // Stable: one key's entries keep their insertion order.
        entries.sort_by_cached_key(|(k, _)| std::cmp::Reverse(k.fingerprint()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::record::Framing;

    /// POSIX-like: short values, data files in `/ds` named `./<name>`.
    struct Files;
    impl BlockFormat for Files {
        const VALUES: ValueLen = ValueLen::U16;
        const UNIT: &'static str = "data file";
        fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
            match uri.strip_prefix("file:///ds/") {
                Some(n) => Cow::Owned(format!("./{n}")),
                None => Cow::Borrowed(uri),
            }
        }
        fn unit_uri(&self, name: &str) -> Arc<str> {
            match name.strip_prefix("./") {
                Some(n) => Arc::from(format!("file:///ds/{n}")),
                None => Arc::from(name),
            }
        }
    }

    /// RADOS-like: long values, units named by their URI.
    struct Uris;
    impl BlockFormat for Uris {
        const VALUES: ValueLen = ValueLen::U32;
        const UNIT: &'static str = "location";
        fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
            Cow::Borrowed(uri)
        }
        fn unit_uri(&self, name: &str) -> Arc<str> {
            Arc::from(name)
        }
    }

    fn what() -> String {
        "blk".to_string()
    }

    fn collocation() -> CollocationKey {
        "type=pf,levtype=pl".parse().unwrap()
    }

    /// Two units, one used twice; with and without checksums.
    fn entries(a: &str, b: &str) -> Vec<(ElementKey, FieldLocation)> {
        let k = |s: &str| ElementKey(s.parse().unwrap());
        vec![
            (
                k("step=0,param=130"),
                FieldLocation::new(a, 0, 10).with_checksum(0xdead_beef),
            ),
            (k("step=6,param=130"), FieldLocation::new(b, 1024, 20)),
            (
                k("step=0,param=t2m"),
                FieldLocation::new(a, 10, 5).with_checksum(1),
            ),
        ]
    }

    fn posix_entries() -> Vec<(ElementKey, FieldLocation)> {
        entries("file:///ds/w1.data", "file:///other/w2.data")
    }

    fn rados_entries() -> Vec<(ElementKey, FieldLocation)> {
        entries("rados://pool/ns/obj1", "rados://pool/ns/obj2")
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Written by the POSIX catalogue's own encoder before it used this
    /// module, for [`posix_entries`] in a dataset directory `/ds`.
    const POSIX_BLOCK: &str = concat!(
        "12000000747970653d70662c6c6576747970653d706c02000000040000007374",
        "657005000000706172616d02000000090000002e2f77312e6461746115000000",
        "66696c653a2f2f2f6f746865722f77322e646174610300000000000000000000",
        "00000000000a0000000000000001efbeadde0100300300313330010000000004",
        "000000000000140000000000000000000000000100360300313330000000000a",
        "0000000000000005000000000000000101000000010030030074326d",
    );

    /// Written (and framed) by the RADOS catalogue's own encoder before it
    /// used this module, for [`rados_entries`].
    const RADOS_RECORD: &str = concat!(
        "4653525201000a00d2000000acf1a69a01ce530712000000747970653d70662c",
        "6c6576747970653d706c02000000040000007374657005000000706172616d02",
        "000000140000007261646f733a2f2f706f6f6c2f6e732f6f626a311400000072",
        "61646f733a2f2f706f6f6c2f6e732f6f626a3203000000000000000000000000",
        "0000000a0000000000000001efbeadde01000000300300000031333001000000",
        "0004000000000000140000000000000000000000000100000036030000003133",
        "30000000000a0000000000000005000000000000000101000000010000003003",
        "00000074326d",
    );

    /// The old encoders' output for a block of no entries.
    const POSIX_EMPTY: &str = concat!(
        "12000000747970653d70662c6c6576747970653d706c00000000000000000000",
        "0000",
    );
    const RADOS_EMPTY: &str = concat!(
        "4653525201000a0022000000878feaa54ede7d1e12000000747970653d70662c",
        "6c6576747970653d706c000000000000000000000000",
    );

    const RADOS_FRAMING: Framing = Framing::new(*b"FSRR");

    fn expected_axes() -> Axes {
        let mut axes = Axes::new();
        axes.insert("param".into(), ["130".into(), "t2m".into()].into());
        axes.insert("step".into(), ["0".into(), "6".into()].into());
        axes
    }

    #[test]
    fn posix_blocks_are_the_old_bytes() {
        let (payload, axes) = encode(&Files, &collocation(), &posix_entries());
        assert_eq!(payload, unhex(POSIX_BLOCK));
        assert_eq!(axes, expected_axes());
        let (payload, axes) = encode(&Files, &collocation(), &[]);
        assert_eq!(payload, unhex(POSIX_EMPTY));
        assert!(axes.is_empty());
    }

    #[test]
    fn rados_blocks_are_the_old_bytes() {
        let (payload, axes) = encode(&Uris, &collocation(), &rados_entries());
        assert_eq!(RADOS_FRAMING.framed(10, &payload), unhex(RADOS_RECORD));
        assert_eq!(axes, expected_axes());
        let (payload, _) = encode(&Uris, &collocation(), &[]);
        assert_eq!(RADOS_FRAMING.framed(10, &payload), unhex(RADOS_EMPTY));
    }

    #[test]
    fn blocks_round_trip() {
        let c = collocation();
        let want = posix_entries();
        let (payload, _) = encode(&Files, &c, &want);
        let got = decode(&Files, &payload, &what).unwrap();
        assert_eq!(got.collocation, "type=pf,levtype=pl");
        assert_eq!(got.keywords, ["step", "param"]);
        assert_eq!(got.entries, want);
        // One allocation per unit, shared by its entries.
        assert!(Arc::ptr_eq(&got.entries[0].1.uri, &got.entries[2].1.uri));

        let want = rados_entries();
        let (payload, _) = encode(&Uris, &c, &want);
        let got = decode(&Uris, &payload, &what).unwrap();
        assert_eq!(got.entries, want);

        for payload in [encode(&Files, &c, &[]).0, encode(&Uris, &c, &[]).0] {
            let got = decode(&Uris, &payload, &what).unwrap();
            assert!(got.keywords.is_empty() && got.entries.is_empty());
        }

        // Long values, and values of another script.
        let long = "x".repeat(usize::from(u16::MAX));
        let want = vec![(
            ElementKey(Key::from_pairs([("param", long.as_str()), ("step", "é")]).unwrap()),
            FieldLocation::new("file:///ds/w.data", u64::MAX, 0),
        )];
        let (payload, _) = encode(&Files, &c, &want);
        assert_eq!(decode(&Files, &payload, &what).unwrap().entries, want);
        let (payload, _) = encode(&Uris, &c, &want);
        assert_eq!(decode(&Uris, &payload, &what).unwrap().entries, want);
    }

    /// An entry with an extension (flag bit 1): the block's bytes pinned.
    /// Entry: unit 0, offset 7, length 9, flags 3 (checksum and
    /// extension), CRC 0x01020304, extension `bytes` of 3 (`J`, 1, 0xff),
    /// then the values.
    const POSIX_EXTENDED: &str = concat!(
        "12000000747970653d70662c6c6576747970653d706c02000000040000007374",
        "657005000000706172616d01000000090000002e2f77312e6461746101000000",
        "00000000070000000000000009000000000000000304030201030000004a01ff",
        "0100300300313330",
    );

    #[test]
    fn extensions_are_carried_and_pinned() {
        let k = |s: &str| ElementKey(s.parse().unwrap());
        let want = vec![(
            k("step=0,param=130"),
            FieldLocation::new("file:///ds/w1.data", 7, 9)
                .with_checksum(0x0102_0304)
                .with_extension(&b"J\x01\xff"[..]),
        )];
        let (payload, _) = encode(&Files, &collocation(), &want);
        assert_eq!(payload, unhex(POSIX_EXTENDED));
        assert_eq!(decode(&Files, &payload, &what).unwrap().entries, want);
        let (payload, _) = encode(&Uris, &collocation(), &want);
        assert_eq!(decode(&Uris, &payload, &what).unwrap().entries, want);
        // An annotation: flag bit 2, the rest as before.
        let mut annotated = unhex(POSIX_EXTENDED);
        annotated[64 + 20] = 0x07; // the entry starts at byte 64; its flags 20 bytes in
        let got = decode(&Files, &annotated, &what).unwrap().entries;
        assert!(got[0].1.annotates && got[0].1.extension == want[0].1.extension);
        let annotation = vec![(want[0].0.clone(), want[0].1.annotation(&b"J\x01\xff"[..]))];
        assert_eq!(encode(&Files, &collocation(), &annotation).0, annotated);
        // Flags this version does not know are refused, not misread; so is
        // an annotation without an extension.
        for (flags, says) in [
            (0x0f, "unknown entry flags 0x0f"),
            (0x05, "an annotation entry without an extension"),
        ] {
            let mut bad = unhex(POSIX_EXTENDED);
            bad[64 + 20] = flags;
            let e = decode(&Files, &bad, &what).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt);
            assert!(e.to_string().contains(says), "{e}");
        }
        check_damage(&Files, &unhex(POSIX_EXTENDED));
    }

    /// Any damage is an error naming the block (or, for a flipped bit, at
    /// most another valid block): never a panic.
    fn check_damage<F: BlockFormat>(format: &F, payload: &[u8]) {
        for n in 0..payload.len() {
            let e = decode(format, &payload[..n], &what).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{n} bytes");
            assert!(e.to_string().starts_with("blk: "), "{e}");
        }
        for i in 0..payload.len() {
            for bit in 0..8 {
                let mut bad = payload.to_vec();
                bad[i] ^= 1 << bit;
                if let Err(e) = decode(format, &bad, &what) {
                    assert_eq!(e.kind(), ErrorKind::Corrupt, "byte {i} bit {bit}");
                    assert!(e.to_string().starts_with("blk: "), "{e}");
                }
            }
        }
        let mut long = payload.to_vec();
        long.push(0);
        assert_eq!(
            decode(format, &long, &what).unwrap_err().to_string(),
            "blk: trailing bytes in index block"
        );
    }

    #[test]
    fn damaged_blocks_are_corrupt_never_a_panic() {
        check_damage(&Files, &unhex(POSIX_BLOCK));
        check_damage(&Uris, &unhex(&RADOS_RECORD[40..]));
        check_damage(&Files, &unhex(POSIX_EMPTY));
    }

    /// The error for a payload with its first entry's unit number,
    /// expected 0 at byte `at`, set to 2 (one past the units).
    fn unit_out_of_range<F: BlockFormat>(format: &F, payload: &[u8], at: usize) -> String {
        let mut bad = payload.to_vec();
        assert_eq!(bad[at..at + 4], [0, 0, 0, 0]);
        bad[at] = 2;
        let e = decode(format, &bad, &what).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        e.to_string()
    }

    #[test]
    fn damage_is_named() {
        let msg = |r: Result<Block<'_>>| {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt);
            e.to_string()
        };
        let posix = unhex(POSIX_BLOCK);
        let rados = unhex(&RADOS_RECORD[40..]);
        // The first entry starts after collocation (22 bytes), keywords
        // (4 + 8 + 9), units (POSIX 4 + 13 + 25, RADOS 4 + 2 × 24) and
        // count (4).
        assert_eq!(
            unit_out_of_range(&Files, &posix, 89),
            "blk: data file index out of range"
        );
        assert_eq!(
            unit_out_of_range(&Uris, &rados, 99),
            "blk: location index out of range"
        );
        // The other backend's block reads as damage.
        assert!(decode(&Uris, &posix, &what).is_err());
        assert!(decode(&Files, &rados, &what).is_err());
        // Counts of keywords, units or entries far beyond the payload: an
        // error, not an allocation.
        for zeros in 0..3 {
            let mut e = Enc::default();
            e.str("a=1");
            for _ in 0..zeros {
                e.u32(0);
            }
            e.u32(u32::MAX);
            assert_eq!(
                msg(decode(&Files, &e.0, &what)),
                format!("blk: payload ends early at payload byte {}", 11 + 4 * zeros)
            );
        }
        // An invalid keyword.
        let mut e = Enc::default();
        e.str("a=1");
        e.u32(1);
        e.str("Not a keyword");
        e.u32(1);
        e.str("u");
        e.u32(1);
        e.0.extend_from_slice(&[0; ENTRY_FIXED]);
        e.short_str("v");
        let m = msg(decode(&Files, &e.0, &what));
        assert!(m.starts_with("blk: ") && m.contains("keyword"), "{m}");
    }
}
