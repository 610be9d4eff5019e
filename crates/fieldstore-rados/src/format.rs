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

use fieldstore_core::{Error, Key, Result};

pub(crate) const MAGIC: &[u8; 4] = b"FSRR";
pub(crate) const VERSION: u16 = 1;
pub(crate) const HEADER: usize = 20;

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

/// Append one framed record to `out`.
pub(crate) fn frame(out: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let start = out.len();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    let head = crc32c::crc32c(&out[start..start + 16]);
    out.extend_from_slice(&head.to_le_bytes());
    out.extend_from_slice(payload);
}

/// What [`unframe`] found.
pub(crate) enum Framed<'a> {
    /// A whole record: its type, payload and framed length.
    Record(u16, &'a [u8], usize),
    /// Fewer bytes than a whole record.
    Incomplete,
}

fn le32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

/// Decode the record at the start of `buf`; `what` names where it is.
///
/// # Errors
/// `Corrupt` for a bad magic, version or checksum.
pub(crate) fn unframe<'a>(buf: &'a [u8], what: &dyn Fn() -> String) -> Result<Framed<'a>> {
    if buf.len() < HEADER {
        return Ok(Framed::Incomplete);
    }
    if &buf[..4] != MAGIC {
        return Err(Error::corrupt(format!(
            "{}: not a fieldstore record (bad magic)",
            what()
        )));
    }
    if le32(&buf[16..20]) != crc32c::crc32c(&buf[..16]) {
        return Err(Error::corrupt(format!(
            "{}: record header checksum mismatch",
            what()
        )));
    }
    let version = le16(&buf[4..6]);
    if version != VERSION {
        return Err(Error::corrupt(format!(
            "{}: record format version {version}, this fieldstore reads {VERSION}",
            what()
        )));
    }
    let kind = le16(&buf[6..8]);
    let len = le32(&buf[8..12]) as usize;
    let Some(payload) = buf.get(HEADER..HEADER + len) else {
        return Ok(Framed::Incomplete);
    };
    if le32(&buf[12..16]) != crc32c::crc32c(payload) {
        return Err(Error::corrupt(format!(
            "{}: record payload checksum mismatch",
            what()
        )));
    }
    Ok(Framed::Record(kind, payload, HEADER + len))
}

/// A payload being encoded.
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
}

/// A payload being decoded; every read names `what` on failure.
pub(crate) struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'a dyn Fn() -> String,
}

impl<'a> Dec<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'a dyn Fn() -> String) -> Dec<'a> {
        Dec { buf, pos: 0, what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .buf
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or_else(|| Error::corrupt(format!("{}: record ends early", (self.what)())))?;
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(le32(self.take(4)?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    pub(crate) fn str(&mut self) -> Result<&'a str> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        std::str::from_utf8(b)
            .map_err(|_| Error::corrupt(format!("{}: a string is not UTF-8", (self.what)())))
    }
    pub(crate) fn key(&mut self) -> Result<Key> {
        let s = self.str()?;
        s.parse()
            .map_err(|e| Error::corrupt(format!("{}: bad key {s:?}: {e}", (self.what)())))
    }
    pub(crate) fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_damage_is_detected() {
        let mut b = Vec::new();
        frame(&mut b, FLUSH, b"hello");
        let what = || "x".to_string();
        match unframe(&b, &what).unwrap() {
            Framed::Record(k, p, n) => {
                assert_eq!((k, p, n), (FLUSH, &b"hello"[..], b.len()));
            }
            Framed::Incomplete => panic!("whole record read as incomplete"),
        }
        assert!(matches!(
            unframe(&b[..b.len() - 1], &what).unwrap(),
            Framed::Incomplete
        ));
        for i in [0, 9, 17, b.len() - 1] {
            let mut d = b.clone();
            d[i] ^= 1;
            let e = unframe(&d, &what)
                .err()
                .unwrap_or_else(|| panic!("flip at {i} undetected"));
            assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt);
        }
    }
}
