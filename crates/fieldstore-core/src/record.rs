//! The record framing and payload encoding shared by the backends' catalogue
//! formats (`docs/format/{posix,daos,rados}.md`). Bytes in, bytes out: no I/O.
//!
//! Every record is a 20-byte header and a payload:
//!
//! ```text
//! offset size
//! 0      4    magic, one per backend ("FSR1" POSIX, "FSD1" DAOS, "FSRR" RADOS)
//! 4      2    format version (POSIX 1; DAOS and RADOS 2)
//! 6      2    record type, numbered once for all backends ([`kind`])
//! 8      4    payload length N
//! 12     4    CRC-32C (Castagnoli) of the payload
//! 16     4    CRC-32C of bytes 0..16
//! 20     N    payload
//! ```
//!
//! All integers are little-endian. In payloads ([`Enc`], [`Dec`]), `str` is a
//! `u32` length and UTF-8 bytes, `short_str` (`sstr` in the format documents)
//! a `u16` length and UTF-8 bytes, and a key is a `str` holding the key's
//! canonical form.
//!
//! Invariants:
//! - [`Framing::unframe`] reads a record at the start of a buffer that may
//!   hold more after it, or less: fewer than 20 bytes, or fewer than 20 + N,
//!   is [`Framed::Incomplete`] (a writer's append in progress, or a torn
//!   tail), never an error.
//! - Any damage — another magic, a header or payload checksum mismatch,
//!   a version the framing does not read, a payload that does not decode, and for
//!   [`Framing::unframe_exact`] a value that is not exactly one record — is
//!   an [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt) error whose message
//!   starts with `what()`, the caller's name for the record's place (a file
//!   and offset, an object, a KV key).
//! - `what` is called only to build an error.
//!
//! The index blocks of the POSIX and RADOS catalogues, which differ only in
//! a value's length and the naming of units, are encoded by [`block`]; the
//! payloads of the WIPE, RECLAIM and CONTROL records of all three logs by
//! [`maintenance`]; the FLUSH records of POSIX and RADOS, which name
//! their blocks by place, by [`named`]; a writer's entries since its last
//! flush are kept, and grouped into those blocks, by [`pending`].

pub mod block;
pub mod inline;
pub mod kind;
pub mod maintenance;
pub mod named;
pub mod pending;

use crate::error::{Error, Result};
use crate::key::Key;

/// Bytes in a record's header.
pub const HEADER: usize = 20;

/// One backend's record framing: the header layout above with its magic
/// and the format version it writes, and the older version it still
/// reads, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    magic: [u8; 4],
    version: u16,
    older: Option<Older>,
}

/// An older format version a framing reads: its record types, mapped to
/// today's numbers ([`kind`]); a type missing from the map reads as
/// [`kind::UNKNOWN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Older {
    /// The older version.
    pub version: u16,
    /// `(its number, today's number)` per type.
    pub kinds: &'static [(u16, u16)],
}

/// What [`Framing::unframe`] found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framed<'a> {
    /// A whole, valid record: its type, its payload, and the bytes it took
    /// (header and payload).
    Record(u16, &'a [u8], usize),
    /// Not all of the record is there (yet): not visible.
    Incomplete,
}

/// The header fields of a record whose header checked out.
struct Header {
    kind: u16,
    len: usize,
    crc: u32,
}

/// `Corrupt`: `"<what()>: <problem>"`, how every decoding error names its
/// record.
pub(crate) fn corrupt(what: &dyn Fn() -> String, problem: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("{}: {problem}", what()))
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Framing {
    /// The framing of records starting with `magic`, format version 1.
    pub const fn new(magic: [u8; 4]) -> Self {
        Framing {
            magic,
            version: 1,
            older: None,
        }
    }

    /// The framing of records starting with `magic` written as format
    /// `version`, which also reads the records of `older`.
    pub const fn versioned(magic: [u8; 4], version: u16, older: Older) -> Self {
        Framing {
            magic,
            version,
            older: Some(older),
        }
    }

    /// The magic bytes records start with.
    pub const fn magic(&self) -> [u8; 4] {
        self.magic
    }

    /// Append one framed record of type `kind` to `out`.
    pub fn frame(&self, out: &mut Vec<u8>, kind: u16, payload: &[u8]) {
        self.frame_as(out, self.version, kind, payload);
    }

    /// Append one framed record of type `kind` to `out`, stamped with
    /// format `version`: the older version this framing reads, for a
    /// record that older readers can read (so that a store gains the new
    /// version only where it needs it), or the current one. The caller
    /// gives `kind` in today's numbering, which must be the older
    /// version's too.
    ///
    /// # Panics
    /// If the framing does not read `version`.
    pub fn frame_as(&self, out: &mut Vec<u8>, version: u16, kind: u16, payload: &[u8]) {
        assert!(
            version == self.version || self.older.is_some_and(|o| o.version == version),
            "framing {:?} does not write version {version}",
            self.magic
        );
        let start = out.len();
        out.reserve(HEADER + payload.len());
        out.extend_from_slice(&self.magic);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        let hcrc = crc32c::crc32c(&out[start..start + 16]);
        out.extend_from_slice(&hcrc.to_le_bytes());
        out.extend_from_slice(payload);
    }

    /// One framed record of type `kind`, on its own.
    pub fn framed(&self, kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + payload.len());
        self.frame(&mut out, kind, payload);
        out
    }

    /// Check the header at the start of `buf`, which holds at least
    /// [`HEADER`] bytes.
    fn header(&self, buf: &[u8], what: &dyn Fn() -> String) -> Result<Header> {
        if buf[0..4] != self.magic {
            return Err(corrupt(what, "not a fieldstore record (bad magic)"));
        }
        if crc32c::crc32c(&buf[0..16]) != le32(buf, 16) {
            return Err(corrupt(what, "record header checksum mismatch"));
        }
        let version = le16(buf, 4);
        let raw = le16(buf, 6);
        let kind = match self.older {
            _ if version == self.version => raw,
            Some(o) if o.version == version => o
                .kinds
                .iter()
                .find(|(old, _)| *old == raw)
                .map_or(kind::UNKNOWN, |(_, now)| *now),
            older => {
                let now = self.version;
                let reads = older.map_or(format!("version {now}"), |o| {
                    format!("versions {} and {now}", o.version)
                });
                return Err(corrupt(
                    what,
                    format!("record format version {version}, this build reads {reads}"),
                ));
            }
        };
        Ok(Header {
            kind,
            len: le32(buf, 8) as usize,
            crc: le32(buf, 12),
        })
    }

    /// Check a payload against its header's checksum.
    fn payload<'a>(h: &Header, payload: &'a [u8], what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        if crc32c::crc32c(payload) != h.crc {
            return Err(corrupt(what, "record payload checksum mismatch"));
        }
        Ok(payload)
    }

    /// The record at the start of `buf`, which may hold more records after
    /// it (a log, a file of records). A buffer too short for the header, or
    /// for the payload the header announces, is [`Framed::Incomplete`].
    ///
    /// # Errors
    /// [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt), naming `what`, for
    /// another magic, a checksum mismatch or another version.
    pub fn unframe<'a>(&self, buf: &'a [u8], what: &dyn Fn() -> String) -> Result<Framed<'a>> {
        if buf.len() < HEADER {
            return Ok(Framed::Incomplete);
        }
        let h = self.header(buf, what)?;
        let Some(payload) = buf.get(HEADER..HEADER.saturating_add(h.len)) else {
            return Ok(Framed::Incomplete);
        };
        let payload = Self::payload(&h, payload, what)?;
        Ok(Framed::Record(h.kind, payload, HEADER + h.len))
    }

    /// How many records the damaged bytes `region` are, if it is a run of
    /// records each damaged in one of its two parts: its header checks (its
    /// payload may not), or its payload checks at the length and against
    /// the checksum its header states (the rest of its header may not). A
    /// record damaged in its length or its payload checksum, or bytes of no
    /// record, make the count unknown (`None`): a damaged length that still
    /// frames a payload whose checksum holds is a 2⁻³² chance.
    pub fn records_in(&self, region: &[u8]) -> Option<u64> {
        let (mut at, mut n) = (0usize, 0u64);
        while at < region.len() {
            let head = region.get(at..at + HEADER)?;
            let len = match self.header(head, &String::new) {
                Ok(h) => h.len,
                Err(_) => {
                    let len = le32(head, 8) as usize;
                    let payload = region.get(at + HEADER..(at + HEADER).checked_add(len)?)?;
                    (crc32c::crc32c(payload) == le32(head, 12)).then_some(len)?
                }
            };
            at = (at + HEADER).checked_add(len)?;
            n += 1;
        }
        (at == region.len()).then_some(n)
    }

    /// Where the next whole, valid record starts in `buf` (magic, header
    /// checksum and payload checksum all hold), if one does.
    ///
    /// A log appended to by many writers with one `write(2)` each can hold
    /// damaged bytes (a short append on a full disk, a record cut short by
    /// truncation, a flipped byte) followed by records appended later. A
    /// reader skips to the first record that checks whole: a false match
    /// needs the 4-byte magic and two CRC-32Cs to agree by chance. A header
    /// that checks but whose payload is not all in `buf` yet is not a match
    /// (it may be an append in progress): the caller waits for more bytes.
    pub fn resync(&self, buf: &[u8]) -> Option<usize> {
        (0..buf.len()).find(|&i| {
            buf[i..].starts_with(&self.magic)
                && matches!(
                    self.unframe(&buf[i..], &String::new),
                    Ok(Framed::Record(..))
                )
        })
    }

    /// The record that is the whole of `buf` (a value stored atomically, so
    /// that it cannot be torn): its type and payload.
    ///
    /// # Errors
    /// [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt), naming `what`, as
    /// for [`unframe`](Self::unframe), and for a buffer shorter than the
    /// header or of another length than the header announces.
    pub fn unframe_exact<'a>(
        &self,
        buf: &'a [u8],
        what: &dyn Fn() -> String,
    ) -> Result<(u16, &'a [u8])> {
        if buf.len() < HEADER {
            return Err(corrupt(what, "record shorter than its header"));
        }
        let h = self.header(buf, what)?;
        if buf.len() - HEADER != h.len {
            let (n, says) = (buf.len(), HEADER as u64 + h.len as u64);
            let problem = format!("record of {n} bytes, its header says {says}");
            return Err(corrupt(what, problem));
        }
        let payload = Self::payload(&h, &buf[HEADER..], what)?;
        Ok((h.kind, payload))
    }

    /// As [`Framing::unframe_exact`], for a buffer that must hold one
    /// record of type `kind` (an index block, a spilled FLUSH): its payload.
    /// `name` names the type in the error.
    ///
    /// # Errors
    /// As [`Framing::unframe_exact`]; `Corrupt` for a record of another
    /// type.
    pub fn unframe_kind<'a>(
        &self,
        buf: &'a [u8],
        kind: u16,
        name: &str,
        what: &dyn Fn() -> String,
    ) -> Result<&'a [u8]> {
        match self.unframe_exact(buf, what)? {
            (k, payload) if k == kind => Ok(payload),
            (k, _) => Err(corrupt(
                what,
                format!("record type {k} where {name} was expected"),
            )),
        }
    }
}

/// Entry flag bit 0: the entry's CRC-32C is valid.
pub const ENTRY_CHECKSUM: u8 = 1;
/// Entry flag bit 1: an extension (`bytes`) follows the CRC-32C
/// ([`FieldLocation::extension`](crate::location::FieldLocation::extension)).
pub const ENTRY_EXTENSION: u8 = 2;
/// Entry flag bit 2: the entry is an annotation
/// ([`FieldLocation::annotates`](crate::location::FieldLocation::annotates)); it
/// always has an extension (bit 1). A reader that predates it refuses the
/// entry's block as damaged ("unknown entry flags"), never taking the
/// annotation for a field.
pub const ENTRY_ANNOTATION: u8 = 4;

/// A payload being written: little-endian integers, length-prefixed strings.
#[derive(Debug, Default, Clone)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    /// A `u8`.
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    /// A little-endian `u16`.
    pub fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A little-endian `u32`.
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A little-endian `u64`.
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A `u32` length and the string's bytes.
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    /// A `u32` count of `items`, then each as `item` writes it.
    pub fn list<I: IntoIterator>(&mut self, items: I, mut item: impl FnMut(&mut Self, I::Item))
    where
        I::IntoIter: ExactSizeIterator,
    {
        let items = items.into_iter();
        self.u32(items.len() as u32);
        items.for_each(|i| item(self, i));
    }
    /// A `u32` length and the bytes (`bytes` in the format documents).
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    /// An entry's flags byte and what follows it (`flags`, `crc`, and
    /// `extension` if flag bit 1 is set: see [`ENTRY_CHECKSUM`],
    /// [`ENTRY_EXTENSION`] and [`ENTRY_ANNOTATION`]): how every catalogue
    /// writes a location's checksum, extension and annotation flag.
    pub fn entry_tail(&mut self, loc: &crate::location::FieldLocation) {
        let mut flags = 0;
        if loc.checksum.is_some() {
            flags |= ENTRY_CHECKSUM;
        }
        if loc.extension.is_some() {
            flags |= ENTRY_EXTENSION;
        }
        if loc.annotates {
            debug_assert!(loc.extension.is_some(), "an annotation without extension");
            flags |= ENTRY_ANNOTATION;
        }
        self.u8(flags);
        self.u32(loc.checksum.unwrap_or(0));
        if let Some(x) = &loc.extension {
            self.bytes(x);
        }
    }
    /// A `u16` length and the string's bytes (`sstr`): for short values,
    /// such as a key's values, which `Schema::split` keeps within
    /// [`MAX_VALUE_BYTES`](crate::schema::MAX_VALUE_BYTES).
    pub fn short_str(&mut self, s: &str) {
        debug_assert!(
            s.len() <= usize::from(u16::MAX),
            "short_str of {} bytes",
            s.len()
        );
        self.u16(s.len() as u16);
        self.0.extend_from_slice(s.as_bytes());
    }
    /// A block's axes (`axes` in the format documents): a `u32` count of
    /// keywords, then each keyword as a `str` with a `u32` count of its
    /// values and each value as a `str`.
    pub fn axes(&mut self, axes: &crate::axes::Axes) {
        self.list(axes, |e, (kw, values)| {
            e.str(kw);
            e.list(values, |e, v| e.str(v));
        });
    }
}

/// A payload being read. Every error is
/// [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt):
/// `"<what>: <problem> at payload byte <N>"`, N being where the value that
/// failed to decode starts (for trailing bytes, where they start).
pub struct Dec<'a, 'w> {
    buf: &'a [u8],
    pos: usize,
    what: &'w dyn Fn() -> String,
}

impl<'a, 'w> Dec<'a, 'w> {
    /// A reader of `buf` from its start; `what` names the record for
    /// errors.
    pub fn new(buf: &'a [u8], what: &'w dyn Fn() -> String) -> Self {
        Dec { buf, pos: 0, what }
    }

    fn err(&self, m: &str, at: usize) -> Error {
        Error::corrupt(format!("{}: {m} at payload byte {at}", (self.what)()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let Some(s) = self.buf.get(self.pos..self.pos.saturating_add(n)) else {
            return Err(self.err("payload ends early", self.pos));
        };
        self.pos += n;
        Ok(s)
    }

    fn utf8(&self, b: &'a [u8], at: usize) -> Result<&'a str> {
        std::str::from_utf8(b).map_err(|_| self.err("string is not UTF-8", at))
    }

    /// A `u8`.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    /// A little-endian `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(le16(self.take(2)?, 0))
    }
    /// A little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(le32(self.take(4)?, 0))
    }
    /// A little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    /// A string with a `u32` length.
    pub fn str(&mut self) -> Result<&'a str> {
        let at = self.pos;
        let b = self.bytes()?;
        self.utf8(b, at)
    }
    /// A `u32` count, then that many items as `item` reads them.
    pub fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        let n = self.u32()? as usize;
        // Capped by what the payload could hold and by a page of items: a
        // damaged count cannot ask for a huge allocation (an item may be
        // ~100 times its smallest encoding); longer lists grow as read.
        let mut out = Vec::with_capacity(n.min(self.buf.len() - self.pos).min(4096));
        for _ in 0..n {
            out.push(item(self)?);
        }
        Ok(out)
    }
    /// A `u32` count, then that many strings with a `u32` length, owned.
    pub fn strings(&mut self) -> Result<Vec<String>> {
        self.list(|d| Ok(d.str()?.to_string()))
    }
    /// Bytes with a `u32` length.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// What [`Enc::entry_tail`] wrote, applied to `loc`.
    ///
    /// # Errors
    /// `Corrupt` for flags this version does not know (a newer writer's:
    /// refused rather than misread) or a payload that ends early.
    pub fn entry_tail(&mut self, loc: &mut crate::location::FieldLocation) -> Result<()> {
        let at = self.pos;
        let flags = self.u8()?;
        if flags & !(ENTRY_CHECKSUM | ENTRY_EXTENSION | ENTRY_ANNOTATION) != 0 {
            return Err(self.err(&format!("unknown entry flags {flags:#04x}"), at));
        }
        if flags & ENTRY_ANNOTATION != 0 && flags & ENTRY_EXTENSION == 0 {
            return Err(self.err("an annotation entry without an extension", at));
        }
        loc.annotates = flags & ENTRY_ANNOTATION != 0;
        let crc = self.u32()?;
        if flags & ENTRY_CHECKSUM != 0 {
            loc.checksum = Some(crc);
        }
        if flags & ENTRY_EXTENSION != 0 {
            loc.extension = Some(std::sync::Arc::from(self.bytes()?));
        }
        Ok(())
    }
    /// A string with a `u16` length (`sstr`).
    pub fn short_str(&mut self) -> Result<&'a str> {
        let at = self.pos;
        let n = self.u16()? as usize;
        let b = self.take(n)?;
        self.utf8(b, at)
    }
    /// A key: a `str` holding its canonical form.
    pub fn key(&mut self) -> Result<Key> {
        let at = self.pos;
        let s = self.str()?;
        s.parse()
            .map_err(|e| self.err(&format!("bad key {s:?}: {e}"), at))
    }
    /// A block's axes, as [`Enc::axes`] writes them.
    pub fn axes(&mut self) -> Result<crate::axes::Axes> {
        let axes = self.list(|d| Ok((d.str()?.to_string(), d.strings()?.into_iter().collect())))?;
        Ok(axes.into_iter().collect())
    }
    /// Whether the whole payload has been read.
    pub fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
    /// Check that the whole payload has been read.
    ///
    /// # Errors
    /// `Corrupt` ("trailing bytes") if it has not.
    pub fn end(&self) -> Result<()> {
        if !self.done() {
            return Err(self.err("trailing bytes", self.pos));
        }
        Ok(())
    }
    /// Check that the whole payload of a `record` (`"FLUSH record"`,
    /// `"index block"`) has been read.
    ///
    /// # Errors
    /// `Corrupt` (`"<what>: trailing bytes in <record>"`) if it has not.
    pub fn end_of(&self, record: &str) -> Result<()> {
        if !self.done() {
            return Err(corrupt(self.what, format!("trailing bytes in {record}")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const F: Framing = Framing::new(*b"FSR1");

    fn what() -> String {
        "toc at 0".to_string()
    }

    /// The bytes of a record, pinned: the on-disk format must not change.
    #[test]
    fn frame_writes_the_documented_bytes() {
        let mut out = b"xy".to_vec();
        F.frame(&mut out, 2, b"hello");
        #[rustfmt::skip]
        let want = [
            b'x', b'y',
            0x46, 0x53, 0x52, 0x31, // magic "FSR1"
            0x01, 0x00, // version 1
            0x02, 0x00, // type 2
            0x05, 0x00, 0x00, 0x00, // payload length 5
            0x4c, 0xbb, 0x71, 0x9a, // CRC-32C of "hello"
            0xb7, 0x19, 0xa7, 0x95, // CRC-32C of the 16 bytes before
            b'h', b'e', b'l', b'l', b'o',
        ];
        assert_eq!(out, want);
        assert_eq!(F.framed(2, b"hello"), want[2..]);
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283, "Castagnoli");
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_incomplete() {
        let mut buf = Vec::new();
        F.frame(&mut buf, 2, b"hello");
        F.frame(&mut buf, 10, b"");
        let first = HEADER + 5;
        assert_eq!(
            F.unframe(&buf, &what).unwrap(),
            Framed::Record(2, b"hello", first)
        );
        assert_eq!(
            F.unframe(&buf[first..], &what).unwrap(),
            Framed::Record(10, b"", HEADER)
        );
        for n in 0..first {
            assert_eq!(
                F.unframe(&buf[..n], &what).unwrap(),
                Framed::Incomplete,
                "{n} bytes"
            );
        }
        let one = F.framed(2, b"hello");
        assert_eq!(F.unframe_exact(&one, &what).unwrap(), (2, &b"hello"[..]));
    }

    /// Damaged records are counted when one of their two parts checks
    /// (the header, or the payload at the length the header states), and
    /// not when their length or payload checksum is damaged, or the bytes
    /// are not whole records.
    #[test]
    fn records_in_counts_records_damaged_in_one_part() {
        let rec = F.framed(2, b"hello");
        assert_eq!(F.records_in(&rec), Some(1));
        for i in 0..rec.len() {
            let mut bad = rec.clone();
            bad[i] ^= 0x10;
            let want = (!(8..16).contains(&i)).then_some(1);
            assert_eq!(F.records_in(&bad), want, "byte {i} flipped");
        }
        let mut two = [rec.clone(), F.framed(3, b"world!")].concat();
        two[17] ^= 0x01;
        two[rec.len() + HEADER + 2] ^= 0x01;
        assert_eq!(F.records_in(&two), Some(2));
        assert_eq!(F.records_in(&two[..two.len() - 1]), None);
        assert_eq!(F.records_in(&rec[..HEADER]), None);
        assert_eq!(F.records_in(b"junk"), None);
        assert_eq!(F.records_in(&[]), Some(0));
    }

    #[test]
    fn any_flipped_bit_is_corrupt_naming_what() {
        let rec = F.framed(2, b"hello");
        for i in 0..rec.len() {
            for bit in 0..8 {
                let mut bad = rec.clone();
                bad[i] ^= 1 << bit;
                // A flip in the length field may make the record look
                // longer than the buffer, but the header checksum sees it
                // first.
                let e = F.unframe(&bad, &what).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Corrupt, "byte {i} bit {bit}");
                assert!(e.to_string().starts_with("toc at 0: "), "{e}");
                let e = F.unframe_exact(&bad, &what).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Corrupt, "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn damage_is_named() {
        let rec = F.framed(2, b"hello");
        let msg = |b: &[u8]| F.unframe(b, &what).unwrap_err().to_string();
        let mut bad = rec.clone();
        bad[HEADER + 1] ^= 1;
        assert_eq!(msg(&bad), "toc at 0: record payload checksum mismatch");
        let mut bad = rec.clone();
        bad[8] ^= 1;
        assert_eq!(msg(&bad), "toc at 0: record header checksum mismatch");
        bad[0] = b'X';
        assert_eq!(msg(&bad), "toc at 0: not a fieldstore record (bad magic)");
        assert_eq!(
            msg(&Framing::new(*b"FSD1").framed(2, b"hello")),
            "toc at 0: not a fieldstore record (bad magic)",
            "another backend's record"
        );
        // Another version, with a header checksum that matches it.
        let mut v2 = rec.clone();
        v2[4] = 2;
        let hcrc = crc32c::crc32c(&v2[0..16]);
        v2[16..20].copy_from_slice(&hcrc.to_le_bytes());
        assert_eq!(
            msg(&v2),
            "toc at 0: record format version 2, this build reads version 1"
        );
    }

    /// Re-stamp a record's version (and its header checksum).
    fn with_version(rec: &[u8], version: u16) -> Vec<u8> {
        let mut r = rec.to_vec();
        r[4..6].copy_from_slice(&version.to_le_bytes());
        let hcrc = crc32c::crc32c(&r[0..16]);
        r[16..20].copy_from_slice(&hcrc.to_le_bytes());
        r
    }

    #[test]
    fn a_versioned_framing_reads_its_older_numbering() {
        const V: Framing = Framing::versioned(
            *b"FSRR",
            2,
            Older {
                version: 1,
                kinds: &[(1, kind::INIT), (4, kind::WIPE)],
            },
        );
        let now = V.framed(kind::WIPE, b"w");
        assert_eq!(&now[4..8], &[2, 0, 3, 0], "written as version 2, WIPE is 3");
        assert_eq!(
            V.unframe(&now, &what).unwrap(),
            Framed::Record(kind::WIPE, b"w", 21)
        );
        // Version 1 numbered WIPE 4: read as today's WIPE.
        let old = with_version(&Framing::new(*b"FSRR").framed(4, b"w"), 1);
        assert_eq!(
            V.unframe_exact(&old, &what).unwrap(),
            (kind::WIPE, &b"w"[..])
        );
        // A version-1 type with no number today is unknown, not another type.
        let odd = Framing::new(*b"FSRR").framed(3, b"s");
        assert_eq!(
            V.unframe(&odd, &what).unwrap(),
            Framed::Record(kind::UNKNOWN, b"s", 21)
        );
        let v3 = with_version(&now, 3);
        assert_eq!(
            V.unframe(&v3, &what).unwrap_err().to_string(),
            "toc at 0: record format version 3, this build reads versions 1 and 2"
        );
    }

    #[test]
    fn unframe_exact_wants_one_whole_record() {
        let rec = F.framed(2, b"hello");
        let msg = |b: &[u8]| F.unframe_exact(b, &what).unwrap_err().to_string();
        assert_eq!(msg(&rec[..19]), "toc at 0: record shorter than its header");
        assert_eq!(
            msg(&rec[..24]),
            "toc at 0: record of 24 bytes, its header says 25"
        );
        let mut long = rec.clone();
        long.push(0);
        assert_eq!(
            msg(&long),
            "toc at 0: record of 26 bytes, its header says 25"
        );
        // The prefix reading takes the first record and leaves the rest.
        assert_eq!(
            F.unframe(&long, &what).unwrap(),
            Framed::Record(2, b"hello", 25)
        );
    }

    #[test]
    fn payloads_round_trip() {
        let mut e = Enc::default();
        e.u8(7);
        e.u16(0xbeef);
        e.u32(0xdead_beef);
        e.u64(u64::MAX - 1);
        e.str("param=167");
        e.short_str("");
        e.short_str("é");
        e.str("class=od,levelist=");
        assert_eq!(&e.0[..7], [7, 0xef, 0xbe, 0xef, 0xbe, 0xad, 0xde]);
        let w = what;
        let mut d = Dec::new(&e.0, &w);
        assert_eq!(d.u8().unwrap(), 7);
        assert_eq!(d.u16().unwrap(), 0xbeef);
        assert_eq!(d.u32().unwrap(), 0xdead_beef);
        assert_eq!(d.u64().unwrap(), u64::MAX - 1);
        assert_eq!(d.str().unwrap(), "param=167");
        assert_eq!(d.short_str().unwrap(), "");
        assert_eq!(d.short_str().unwrap(), "é");
        assert!(!d.done());
        let k = d.key().unwrap();
        assert_eq!(k.to_string(), "class=od,levelist=");
        assert!(d.done());
        d.end().unwrap();
        d.end_of("FLUSH record").unwrap();
        // Bytes left over after the first value: named as trailing.
        let mut d = Dec::new(&e.0, &w);
        d.u8().unwrap();
        let err = d.end_of("FLUSH record").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt);
        assert_eq!(
            err.to_string(),
            format!("{}: trailing bytes in FLUSH record", what())
        );
    }

    #[test]
    fn payload_errors_name_what_and_the_byte() {
        let w = what;
        let msg = |r: Result<()>| {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt);
            e.to_string()
        };
        let mut e = Enc::default();
        e.u32(1);
        e.str("ab");
        let mut d = Dec::new(&e.0, &w);
        d.u32().unwrap();
        assert_eq!(
            msg(d.u64().map(drop)),
            "toc at 0: payload ends early at payload byte 4"
        );
        assert_eq!(msg(d.end()), "toc at 0: trailing bytes at payload byte 4");
        // A length beyond the payload.
        let mut d = Dec::new(&[0xff, 0xff, 0xff, 0xff, b'a'], &w);
        assert_eq!(
            msg(d.str().map(drop)),
            "toc at 0: payload ends early at payload byte 4"
        );
        let mut d = Dec::new(&[0, 2, 0, 0xc3, 0x28], &w);
        d.u8().unwrap();
        assert_eq!(
            msg(d.short_str().map(drop)),
            "toc at 0: string is not UTF-8 at payload byte 1"
        );
        let mut e = Enc::default();
        e.u8(0);
        e.str("novalue");
        let mut d = Dec::new(&e.0, &w);
        d.u8().unwrap();
        let m = msg(d.key().map(drop));
        assert!(
            m.starts_with("toc at 0: bad key \"novalue\": ") && m.ends_with(" at payload byte 1"),
            "{m}"
        );
    }
}
