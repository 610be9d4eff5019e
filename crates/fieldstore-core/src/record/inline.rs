//! FLUSH records whose blocks ride inline: one writer's whole flush, every
//! entry of every collocation it flushed, in one record. The codec of the
//! media whose log is a row of whole records, one per flush (DAOS's KV
//! slots, S3's log objects), where a reader fetches a flush in one request
//! and needs no block loader.
//!
//! A FLUSH payload (`docs/format/daos.md`, `docs/format/s3.md`):
//! timestamp, writer id, then per block its collocation key, element
//! keywords, axes (each keyword's values), the URI prefixes its entries
//! share, and its entries (prefix number, rest of the URI, offset, length,
//! the shared entry tail, the element's values).

use std::collections::HashMap;
use std::sync::Arc;

use super::pending::PendingEntries;
use super::{Dec, Enc};
use crate::axes::{Axes, AxesExt};
use crate::error::{Error, Result};
use crate::key::{CollocationKey, ElementKey, Key};
use crate::location::FieldLocation;

/// One collocation's entries in a flush, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The collocation the entries belong to.
    pub collocation: CollocationKey,
    /// The entries, oldest first.
    pub entries: Vec<(ElementKey, FieldLocation)>,
    /// Values per element keyword over the entries (filled by decoding;
    /// computed when encoding).
    pub axes: Axes,
}

/// One writer's flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flush {
    /// When the writer flushed (its clock, ns since the epoch).
    pub timestamp_ns: u64,
    /// The writer's id (`crate::writer_id`).
    pub writer: String,
    /// The flush's entries, a block per collocation and keyword list.
    pub blocks: Vec<Block>,
}

/// The blocks of a writer's pending entries: one per run of one collocation
/// and element keyword list ([`PendingEntries::groups`]), entries as
/// `order_block` orders them (FDB5's list order read backwards; one key's
/// entries in insertion order), each with its axes.
pub fn blocks(mut pending: PendingEntries) -> Vec<Block> {
    pending
        .take()
        .groups()
        .map(|(collocation, entries)| {
            let mut axes = Axes::new();
            for (e, _) in entries {
                axes.add_key(e);
            }
            Block {
                collocation: collocation.clone(),
                entries: entries.to_vec(),
                axes,
            }
        })
        .collect()
}

/// Split a URI into the prefix shared by a data file or container (up to
/// and including the last `/`) and the rest.
fn split_uri(uri: &str) -> (&str, &str) {
    uri.rfind('/')
        .map_or(("", uri), |i| (&uri[..=i], &uri[i + 1..]))
}

/// Encode a FLUSH payload.
pub fn encode_flush(f: &Flush) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(f.timestamp_ns);
    e.str(&f.writer);
    e.list(&f.blocks, |e, b| {
        e.str(&b.collocation.to_string());
        let kws: Vec<&str> = b
            .entries
            .first()
            .map(|(k, _)| k.keywords().collect())
            .unwrap_or_default();
        e.list(&kws, |e, k| e.str(k));
        // The block's axes: the values each keyword takes, so that readers
        // merge a few values per block instead of every entry's key.
        let mut axes: Vec<std::collections::BTreeSet<&str>> = vec![Default::default(); kws.len()];
        for (k, _) in &b.entries {
            for (a, v) in axes.iter_mut().zip(k.values()) {
                a.insert(v);
            }
        }
        for values in &axes {
            e.list(values, |e, v| e.short_str(v));
        }
        let mut prefixes: Vec<&str> = Vec::new();
        let mut ids: HashMap<&str, u32> = HashMap::new();
        for (_, l) in &b.entries {
            ids.entry(split_uri(&l.uri).0).or_insert_with_key(|p| {
                prefixes.push(p);
                prefixes.len() as u32 - 1
            });
        }
        e.list(&prefixes, |e, p| e.str(p));
        e.list(&b.entries, |e, (k, l)| {
            let (p, rest) = split_uri(&l.uri);
            e.u32(ids[p]);
            e.str(rest);
            e.u64(l.offset);
            e.u64(l.length);
            e.entry_tail(l);
            for v in k.values() {
                e.short_str(v);
            }
        });
    });
    e.0
}

/// Decode a FLUSH payload.
pub fn decode_flush(p: &[u8], what: &dyn Fn() -> String) -> Result<Flush> {
    let mut d = Dec::new(p, what);
    let timestamp_ns = d.u64()?;
    let writer = d.str()?.to_string();
    let blocks = d.list(|d| {
        let collocation = CollocationKey(d.key()?);
        let kws = d.strings()?;
        let mut axes = Axes::new();
        for k in &kws {
            let values = d.list(|d| Ok(d.short_str()?.to_string()))?;
            axes.entry(k.clone()).or_default().extend(values);
        }
        let prefixes = d.list(|d| d.str())?;
        // Consecutive entries of one data file share their URI.
        let mut last: Option<(u32, &str, Arc<str>)> = None;
        let entries = d.list(|d| {
            let pid = d.u32()?;
            let rest = d.str()?;
            let mut loc = FieldLocation::new("", d.u64()?, d.u64()?);
            d.entry_tail(&mut loc)?;
            loc.uri = match &last {
                Some((lp, lr, u)) if *lp == pid && *lr == rest => u.clone(),
                _ => {
                    let prefix = prefixes.get(pid as usize).ok_or_else(|| {
                        Error::corrupt(format!("{}: URI prefix {pid} out of range", what()))
                    })?;
                    let u: Arc<str> = Arc::from(format!("{prefix}{rest}"));
                    last = Some((pid, rest, u.clone()));
                    u
                }
            };
            let mut pairs = Vec::with_capacity(kws.len());
            for k in &kws {
                pairs.push((k.as_str(), d.short_str()?));
            }
            let key = Key::from_pairs(pairs)
                .map_err(|e| super::corrupt(what, format!("bad element key: {e}")))?;
            Ok((ElementKey(key), loc))
        })?;
        for (e, _) in &entries {
            for (k, v) in e.iter() {
                if !axes.get(k).is_some_and(|a| a.contains(v)) {
                    let problem = format!("element {e} is not in its block's axes");
                    return Err(super::corrupt(what, problem));
                }
            }
        }
        Ok(Block {
            collocation,
            entries,
            axes,
        })
    })?;
    d.end()?;
    Ok(Flush {
        timestamp_ns,
        writer,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::maintenance as records;

    fn loc(uri: &str, off: u64) -> FieldLocation {
        FieldLocation::new(uri, off, 10).with_checksum(7)
    }

    fn what() -> String {
        "slot".to_string()
    }

    #[test]
    fn flush_round_trips_one_block_per_collocation_and_keywords() {
        let c: CollocationKey = "type=fc,levtype=sfc".parse().unwrap();
        let e1: ElementKey = "step=0,param=167".parse().unwrap();
        let e2: ElementKey = "step=6,param=167".parse().unwrap();
        let e3: ElementKey = "step=,param=2".parse().unwrap();
        let mut pending = PendingEntries::new();
        pending.insert(&c, &e1, &loc("daos://p/c/0d01", 0));
        pending.insert(&c, &e2, &loc("daos://p/c/0d02", 0));
        pending.insert(&c, &e1, &FieldLocation::new("file:///x/y.data", 3, 4));
        let extended = loc("daos://p/c/0d03", 0).with_extension(&[0x4a, 1, 2][..]);
        pending.insert(&c, &e3, &extended);
        let f = Flush {
            timestamp_ns: 42,
            writer: "w".into(),
            blocks: blocks(pending),
        };
        assert_eq!(f.blocks.len(), 1, "one collocation, one keyword list");
        assert_eq!(f.blocks[0].entries.len(), 4);
        let back = decode_flush(&encode_flush(&f), &what).unwrap();
        assert_eq!(back, f);
        let exts: Vec<_> = (back.blocks[0].entries.iter())
            .filter_map(|(_, l)| l.extension.as_deref())
            .collect();
        assert_eq!(exts, [&[0x4a, 1, 2][..]]);
    }

    /// A valid FLUSH payload of five entries.
    fn valid_flush() -> Vec<u8> {
        let c: CollocationKey = "type=fc,levtype=sfc".parse().unwrap();
        let mut pending = PendingEntries::new();
        for i in 0..5u64 {
            let e: ElementKey = format!("step={i},param=167").parse().unwrap();
            pending.insert(&c, &e, &loc(&format!("daos://p/c/0d{i:02}"), i));
        }
        encode_flush(&Flush {
            timestamp_ns: 1,
            writer: "w".into(),
            blocks: blocks(pending),
        })
    }

    /// Every payload decoder of the slot media's logs, on bytes that a
    /// damaged slot (whose frame checksums were ignored) or a writer's bug
    /// could hand it: an answer or `Corrupt`, never a panic.
    fn decode_all(p: &[u8]) {
        for r in [
            decode_flush(p, &what).map(|_| ()),
            records::decode_wipe(p, &what).map(|_| ()),
            records::decode_reclaim(p, &what).map(|_| ()),
            records::decode_control(p, &what).map(|_| ()),
        ] {
            if let Err(e) = r {
                assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{e}");
            }
        }
    }

    fn valid_payloads() -> Vec<Vec<u8>> {
        let c = CollocationKey("type=fc,levtype=sfc".parse().unwrap());
        let units = vec!["daos://p/c/0001".to_string()];
        vec![
            valid_flush(),
            records::encode_wipe(&[c], &units, 3),
            records::encode_reclaim(&units, None, 4),
            records::encode_control(5, 5),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1000, ..Default::default() })]

        #[test]
        fn decoders_take_arbitrary_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            decode_all(&bytes);
        }

        #[test]
        fn decoders_take_damaged_payloads(which in 0usize..4, at in proptest::prelude::any::<proptest::sample::Index>(), byte in proptest::prelude::any::<u8>(), cut in proptest::prelude::any::<bool>()) {
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
