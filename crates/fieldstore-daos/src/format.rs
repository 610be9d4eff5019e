//! Byte encodings of the DAOS backend's values (`docs/format/daos.md`).
//!
//! Every value fieldstore writes into a KV or a catalogue array is one
//! framed record:
//!
//! ```text
//! 0   4  magic "FSD1"
//! 4   2  format version (1), little-endian
//! 6   2  record type
//! 8   4  payload length N
//! 12  4  CRC-32C (Castagnoli) of the payload
//! 16  4  CRC-32C of bytes 0..16
//! 20  N  payload
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use fieldstore_core::{
    Axes, AxesExt, CollocationKey, DatasetKey, ElementKey, Error, FieldLocation, Key, Result,
};

pub(crate) const MAGIC: &[u8; 4] = b"FSD1";
pub(crate) const VERSION: u16 = 1;
pub(crate) const HEADER: usize = 20;

/// The dataset KV's `meta` value.
pub(crate) const META: u16 = 1;
/// A log slot's value: one writer's flush.
pub(crate) const FLUSH: u16 = 2;
/// A log slot's value pointing at a flush too large to inline.
pub(crate) const INDIRECT: u16 = 3;
/// A root KV value.
pub(crate) const DATASET: u16 = 4;
/// A log slot's value: collocations hidden by a wipe.
pub(crate) const WIPE: u16 = 5;
/// A log slot's value: store units removed by a purge or wipe.
pub(crate) const RECLAIM: u16 = 6;
/// A log slot's value, and the dataset KV's `control` value: the
/// operations the dataset is locked against.
pub(crate) const CONTROL: u16 = 7;

/// Largest framed FLUSH record stored inline in a log slot; larger ones go
/// to a byte array and the slot holds an INDIRECT record. Readers fetch a
/// slot with a buffer of this size, so one `kv_get` always suffices.
pub(crate) const MAX_INLINE: usize = 256 * 1024;

/// Chunk size of the byte arrays holding spilled flush records.
pub(crate) const SPILL_CHUNK: u64 = 1 << 20;

/// Frame a payload.
pub(crate) fn frame(kind: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    let hcrc = crc32c::crc32c(&out[0..16]);
    out.extend_from_slice(&hcrc.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Check a framed record and return its type and payload; every error is
/// `Corrupt` and names `what`.
pub(crate) fn unframe<'a>(buf: &'a [u8], what: &dyn Fn() -> String) -> Result<(u16, &'a [u8])> {
    let bad = |m: &str| Error::corrupt(format!("{}: {m}", what()));
    if buf.len() < HEADER {
        return Err(bad("record shorter than its header"));
    }
    if &buf[0..4] != MAGIC {
        return Err(bad("not a fieldstore record (bad magic)"));
    }
    let word = |i: usize| u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    if crc32c::crc32c(&buf[0..16]) != word(16) {
        return Err(bad("record header checksum mismatch"));
    }
    let version = u16::from_le_bytes([buf[4], buf[5]]);
    if version != VERSION {
        return Err(bad(&format!(
            "record format version {version}, this build reads version {VERSION}"
        )));
    }
    let kind = u16::from_le_bytes([buf[6], buf[7]]);
    let len = word(8) as usize;
    if buf.len() != HEADER + len {
        return Err(bad(&format!(
            "record of {} bytes, its header says {}",
            buf.len(),
            HEADER + len
        )));
    }
    let payload = &buf[HEADER..];
    if crc32c::crc32c(payload) != word(12) {
        return Err(bad("record payload checksum mismatch"));
    }
    Ok((kind, payload))
}

/// Little-endian payload writer.
#[derive(Default)]
pub(crate) struct Enc(pub(crate) Vec<u8>);

impl Enc {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    pub(crate) fn sstr(&mut self, s: &str) {
        self.0.extend_from_slice(&(s.len() as u16).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// Little-endian payload reader; errors are `Corrupt` naming `what`.
pub(crate) struct Dec<'a, 'w> {
    buf: &'a [u8],
    pos: usize,
    what: &'w dyn Fn() -> String,
}

impl<'a, 'w> Dec<'a, 'w> {
    pub(crate) fn new(buf: &'a [u8], what: &'w dyn Fn() -> String) -> Self {
        Dec { buf, pos: 0, what }
    }

    fn err(&self, m: &str) -> Error {
        Error::corrupt(format!(
            "{}: {m} at payload byte {}",
            (self.what)(),
            self.pos
        ))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(self.err("payload ends early"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    pub(crate) fn str(&mut self) -> Result<&'a str> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| self.err("string is not UTF-8"))
    }
    pub(crate) fn sstr(&mut self) -> Result<&'a str> {
        let n = self.u16()? as usize;
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| self.err("string is not UTF-8"))
    }
    pub(crate) fn key(&mut self) -> Result<Key> {
        let s = self.str()?;
        s.parse()
            .map_err(|e| self.err(&format!("bad key {s:?}: {e}")))
    }
    pub(crate) fn end(&self) -> Result<()> {
        if self.pos != self.buf.len() {
            return Err(self.err("trailing bytes"));
        }
        Ok(())
    }
}

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
    frame(META, &e.0)
}

pub(crate) fn decode_meta(buf: &[u8], what: &dyn Fn() -> String) -> Result<Meta> {
    let (kind, p) = unframe(buf, what)?;
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
    frame(DATASET, &e.0)
}

/// One collocation's entries in a flush, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub(crate) collocation: CollocationKey,
    pub(crate) entries: Vec<(ElementKey, FieldLocation)>,
    /// Values per element keyword over the entries (filled by decoding;
    /// computed when encoding).
    pub(crate) axes: Axes,
}

/// One writer's flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Flush {
    pub(crate) timestamp_ns: u64,
    pub(crate) writer: String,
    pub(crate) blocks: Vec<Block>,
}

/// Group `(collocation, element, location)` inserts into blocks: one per
/// collocation and element keyword list, in order of first appearance,
/// entries in insertion order.
pub(crate) fn blocks(pending: Vec<(CollocationKey, ElementKey, FieldLocation)>) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut index: HashMap<(CollocationKey, Vec<String>), usize> = HashMap::new();
    for (c, e, l) in pending {
        let kws: Vec<String> = e.keywords().map(str::to_string).collect();
        let i = *index.entry((c.clone(), kws)).or_insert_with(|| {
            out.push(Block {
                collocation: c,
                entries: Vec::new(),
                axes: Axes::new(),
            });
            out.len() - 1
        });
        out[i].axes.add_key(&e);
        out[i].entries.push((e, l));
    }
    out
}

/// Split a URI into the prefix shared by a data file or container (up to
/// and including the last `/`) and the rest.
fn split_uri(uri: &str) -> (&str, &str) {
    match uri.rfind('/') {
        Some(i) => (&uri[..=i], &uri[i + 1..]),
        None => ("", uri),
    }
}

/// Encode a FLUSH payload (see `docs/format/daos.md`).
pub(crate) fn encode_flush(f: &Flush) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(f.timestamp_ns);
    e.str(&f.writer);
    e.u32(f.blocks.len() as u32);
    for b in &f.blocks {
        e.str(&b.collocation.to_string());
        let kws: Vec<&str> = b
            .entries
            .first()
            .map(|(k, _)| k.keywords().collect())
            .unwrap_or_default();
        e.u32(kws.len() as u32);
        for k in &kws {
            e.str(k);
        }
        // The block's axes: the values each keyword takes, so that readers
        // merge a few values per block instead of every entry's key.
        let mut axes: Vec<std::collections::BTreeSet<&str>> = vec![Default::default(); kws.len()];
        for (k, _) in &b.entries {
            for (i, v) in k.values().enumerate() {
                if let Some(a) = axes.get_mut(i) {
                    a.insert(v);
                }
            }
        }
        for values in &axes {
            e.u32(values.len() as u32);
            for v in values {
                e.sstr(v);
            }
        }
        let mut prefixes: Vec<&str> = Vec::new();
        let mut ids: HashMap<&str, u32> = HashMap::new();
        for (_, l) in &b.entries {
            let (p, _) = split_uri(&l.uri);
            if !ids.contains_key(p) {
                ids.insert(p, prefixes.len() as u32);
                prefixes.push(p);
            }
        }
        e.u32(prefixes.len() as u32);
        for p in &prefixes {
            e.str(p);
        }
        e.u32(b.entries.len() as u32);
        for (k, l) in &b.entries {
            let (p, rest) = split_uri(&l.uri);
            e.u32(ids[p]);
            e.str(rest);
            e.u64(l.offset);
            e.u64(l.length);
            e.u8(u8::from(l.checksum.is_some()));
            e.u32(l.checksum.unwrap_or(0));
            for v in k.values() {
                e.sstr(v);
            }
        }
    }
    e.0
}

/// Decode a FLUSH payload.
pub(crate) fn decode_flush(p: &[u8], what: &dyn Fn() -> String) -> Result<Flush> {
    let mut d = Dec::new(p, what);
    let timestamp_ns = d.u64()?;
    let writer = d.str()?.to_string();
    let nblocks = d.u32()? as usize;
    let mut blocks = Vec::with_capacity(nblocks.min(4096));
    for _ in 0..nblocks {
        let collocation = CollocationKey(d.key()?);
        let nk = d.u32()? as usize;
        let mut kws = Vec::with_capacity(nk.min(64));
        for _ in 0..nk {
            kws.push(d.str()?.to_string());
        }
        let mut axes = Axes::new();
        for k in &kws {
            let nv = d.u32()? as usize;
            let set = axes.entry(k.clone()).or_default();
            for _ in 0..nv {
                set.insert(d.sstr()?.to_string());
            }
        }
        let np = d.u32()? as usize;
        let mut prefixes = Vec::with_capacity(np.min(4096));
        for _ in 0..np {
            prefixes.push(d.str()?);
        }
        let ne = d.u32()? as usize;
        let mut entries = Vec::with_capacity(ne.min(1 << 20));
        // Consecutive entries of one data file share their URI.
        let mut last: Option<(u32, &str, Arc<str>)> = None;
        for _ in 0..ne {
            let pid = d.u32()?;
            let rest = d.str()?;
            let offset = d.u64()?;
            let length = d.u64()?;
            let has = d.u8()?;
            let crc = d.u32()?;
            let uri = match &last {
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
            let mut loc = FieldLocation::new(uri, offset, length);
            if has == 1 {
                loc = loc.with_checksum(crc);
            }
            let mut pairs = Vec::with_capacity(kws.len());
            for k in &kws {
                pairs.push((k.as_str(), d.sstr()?));
            }
            let key = Key::from_pairs(pairs)
                .map_err(|e| Error::corrupt(format!("{}: bad element key: {e}", what())))?;
            entries.push((ElementKey(key), loc));
        }
        for (e, _) in &entries {
            for (k, v) in e.iter() {
                if !axes.get(k).is_some_and(|a| a.contains(v)) {
                    return Err(Error::corrupt(format!(
                        "{}: element {e} is not in its block's axes",
                        what()
                    )));
                }
            }
        }
        blocks.push(Block {
            collocation,
            entries,
            axes,
        });
    }
    d.end()?;
    Ok(Flush {
        timestamp_ns,
        writer,
        blocks,
    })
}

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
    frame(INDIRECT, &e.0)
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

/// A WIPE record: collocations hidden, units left to remove.
pub(crate) fn encode_wipe(collocations: &[CollocationKey], units: &[String], now: u64) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(now);
    e.u32(collocations.len() as u32);
    for c in collocations {
        e.str(&c.to_string());
    }
    e.u32(units.len() as u32);
    for u in units {
        e.str(u);
    }
    frame(WIPE, &e.0)
}

pub(crate) fn decode_wipe(
    p: &[u8],
    what: &dyn Fn() -> String,
) -> Result<(Vec<CollocationKey>, Vec<String>)> {
    let mut d = Dec::new(p, what);
    let _now = d.u64()?;
    let mut cols = Vec::new();
    for _ in 0..d.u32()? {
        cols.push(CollocationKey(d.key()?));
    }
    let mut units = Vec::new();
    for _ in 0..d.u32()? {
        units.push(d.str()?.to_string());
    }
    d.end()?;
    Ok((cols, units))
}

/// A RECLAIM record: units removed.
pub(crate) fn encode_reclaim(units: &[String], now: u64) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(now);
    e.u32(units.len() as u32);
    for u in units {
        e.str(u);
    }
    frame(RECLAIM, &e.0)
}

pub(crate) fn decode_reclaim(p: &[u8], what: &dyn Fn() -> String) -> Result<Vec<String>> {
    let mut d = Dec::new(p, what);
    let _now = d.u64()?;
    let mut units = Vec::new();
    for _ in 0..d.u32()? {
        units.push(d.str()?.to_string());
    }
    d.end()?;
    Ok(units)
}

/// A CONTROL record: the locked operations (`Locks::bits`).
pub(crate) fn encode_control(bits: u8, now: u64) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(now);
    e.u8(bits);
    frame(CONTROL, &e.0)
}

pub(crate) fn decode_control(p: &[u8], what: &dyn Fn() -> String) -> Result<u8> {
    let mut d = Dec::new(p, what);
    let _now = d.u64()?;
    let bits = d.u8()?;
    d.end()?;
    Ok(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(uri: &str, off: u64) -> FieldLocation {
        FieldLocation::new(uri, off, 10).with_checksum(7)
    }

    #[test]
    fn flush_round_trips_and_shares_prefixes() {
        let c: CollocationKey = "type=fc,levtype=sfc".parse().unwrap();
        let e1: ElementKey = "step=0,param=167".parse().unwrap();
        let e2: ElementKey = "step=6,param=167".parse().unwrap();
        let e3: ElementKey = "step=,param=2".parse().unwrap();
        let pending = vec![
            (c.clone(), e1.clone(), loc("daos://p/c/0d01", 0)),
            (c.clone(), e2.clone(), loc("daos://p/c/0d02", 0)),
            (
                c.clone(),
                e1.clone(),
                FieldLocation::new("file:///x/y.data", 3, 4),
            ),
            (c.clone(), e3, loc("daos://p/c/0d03", 0)),
        ];
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
        // Framing detects any flipped bit.
        let framed = frame(FLUSH, &bytes);
        for i in [0, 7, 13, 19, 20, framed.len() - 1] {
            let mut bad = framed.clone();
            bad[i] ^= 0x10;
            let e = unframe(&bad, &what).unwrap_err();
            assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt, "byte {i}");
        }
        assert_eq!(unframe(&framed, &what).unwrap(), (FLUSH, &bytes[..]));
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
        let (k, p) = unframe(&framed, &what).unwrap();
        assert_eq!(k, INDIRECT);
        assert_eq!(decode_indirect(p, &what).unwrap(), i);
    }

    #[test]
    fn maintenance_records_round_trip() {
        let what = || "slot".to_string();
        let cols = vec![CollocationKey("type=fc,levtype=sfc".parse().unwrap())];
        let units = vec!["daos://p/c/0001".to_string()];
        let v = encode_wipe(&cols, &units, 7);
        let (kind, p) = unframe(&v, &what).unwrap();
        assert_eq!(kind, WIPE);
        assert_eq!(decode_wipe(p, &what).unwrap(), (cols, units.clone()));
        let v = encode_reclaim(&units, 8);
        let (kind, p) = unframe(&v, &what).unwrap();
        assert_eq!((kind, decode_reclaim(p, &what).unwrap()), (RECLAIM, units));
        let v = encode_control(9, 9);
        let (kind, p) = unframe(&v, &what).unwrap();
        assert_eq!((kind, decode_control(p, &what).unwrap()), (CONTROL, 9));
        let mut bad = encode_control(9, 9)[HEADER..].to_vec();
        bad.push(0);
        assert!(decode_control(&bad, &what).is_err(), "trailing bytes");
    }
}
