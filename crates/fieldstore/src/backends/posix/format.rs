//! Byte encodings of the POSIX backend's files (see `docs/format/posix.md`).
//!
//! Every record, in the table of contents and in index files, is framed:
//!
//! ```text
//! 0   4  magic "FSR1"
//! 4   2  format version (1), little-endian
//! 6   2  record type
//! 8   4  payload length N
//! 12  4  CRC-32C of the payload
//! 16  4  CRC-32C of bytes 0..16
//! 20  N  payload
//! ```
//!
//! All integers are little-endian. Strings are a u32 length and UTF-8 bytes.

use fieldstore_core::{Error, Key, Result};

pub(crate) const MAGIC: &[u8; 4] = b"FSR1";
pub(crate) const VERSION: u16 = 1;
pub(crate) const HEADER: usize = 20;

/// Record types.
pub(crate) const INIT: u16 = 1;
pub(crate) const FLUSH: u16 = 2;
pub(crate) const WIPE: u16 = 3;
pub(crate) const RECLAIM: u16 = 4;
pub(crate) const CONTROL: u16 = 5;
pub(crate) const BLOCK: u16 = 10;

/// Appends a framed record to `out`.
pub(crate) fn frame(out: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let start = out.len();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    let hcrc = crc32c::crc32c(&out[start..start + 16]);
    out.extend_from_slice(&hcrc.to_le_bytes());
    out.extend_from_slice(payload);
}

/// Result of looking for a record at the start of `buf`.
pub(crate) enum Framed<'a> {
    /// A whole, valid record: type, payload, total bytes used.
    Record(u16, &'a [u8], usize),
    /// Not all of the record is there yet (a writer's append in progress,
    /// or never finished): not visible.
    Incomplete,
}

/// Decode the record at the start of `buf`; `what` names the file and
/// offset for errors.
pub(crate) fn unframe<'a>(buf: &'a [u8], what: &dyn Fn() -> String) -> Result<Framed<'a>> {
    if buf.len() < HEADER {
        return Ok(Framed::Incomplete);
    }
    if &buf[0..4] != MAGIC {
        return Err(Error::corrupt(format!(
            "{}: not a fieldstore record (bad magic)",
            what()
        )));
    }
    let hcrc = u32::from_le_bytes([buf[16], buf[17], buf[18], buf[19]]);
    if crc32c::crc32c(&buf[0..16]) != hcrc {
        return Err(Error::corrupt(format!(
            "{}: record header checksum mismatch",
            what()
        )));
    }
    let version = u16::from_le_bytes([buf[4], buf[5]]);
    if version != VERSION {
        return Err(Error::corrupt(format!(
            "{}: record format version {version}, this build reads version {VERSION}",
            what()
        )));
    }
    let kind = u16::from_le_bytes([buf[6], buf[7]]);
    let len = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
    let crc = u32::from_le_bytes([buf[12], buf[13], buf[14], buf[15]]);
    if buf.len() < HEADER + len {
        return Ok(Framed::Incomplete);
    }
    let payload = &buf[HEADER..HEADER + len];
    if crc32c::crc32c(payload) != crc {
        return Err(Error::corrupt(format!(
            "{}: record payload checksum mismatch",
            what()
        )));
    }
    Ok(Framed::Record(kind, payload, HEADER + len))
}

/// Little-endian writer for payloads.
#[derive(Default)]
pub(crate) struct Enc(pub(crate) Vec<u8>);

impl Enc {
    pub(crate) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
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
    /// A key's values only; its keywords are written once elsewhere.
    pub(crate) fn short_str(&mut self, s: &str) {
        self.u16(s.len() as u16);
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// Little-endian reader for payloads; every error names `what`.
pub(crate) struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'a dyn Fn() -> String,
}

impl<'a> Dec<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'a dyn Fn() -> String) -> Self {
        Dec { buf, pos: 0, what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(Error::corrupt(format!(
                "{}: record payload ends early",
                (self.what)()
            )));
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
    fn utf8(&self, b: &'a [u8]) -> Result<&'a str> {
        std::str::from_utf8(b)
            .map_err(|_| Error::corrupt(format!("{}: invalid UTF-8 in record", (self.what)())))
    }
    pub(crate) fn str(&mut self) -> Result<&'a str> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        self.utf8(b)
    }
    pub(crate) fn short_str(&mut self) -> Result<&'a str> {
        let n = self.u16()? as usize;
        let b = self.take(n)?;
        self.utf8(b)
    }
    pub(crate) fn key(&mut self) -> Result<Key> {
        let s = self.str()?;
        s.parse()
            .map_err(|e| Error::corrupt(format!("{}: invalid key in record: {e}", (self.what)())))
    }
    pub(crate) fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_detect_damage() {
        let mut buf = Vec::new();
        frame(&mut buf, FLUSH, b"hello");
        let what = || "toc at 0".to_string();
        match unframe(&buf, &what).unwrap() {
            Framed::Record(k, p, n) => {
                assert_eq!((k, p, n), (FLUSH, &b"hello"[..], HEADER + 5));
            }
            Framed::Incomplete => panic!("complete record seen as incomplete"),
        }
        assert!(matches!(
            unframe(&buf[..buf.len() - 1], &what).unwrap(),
            Framed::Incomplete
        ));
        let mut bad = buf.clone();
        bad[HEADER + 1] ^= 1;
        assert_eq!(
            unframe(&bad, &what).err().unwrap().to_string(),
            "toc at 0: record payload checksum mismatch"
        );
        let mut bad = buf.clone();
        bad[8] ^= 1;
        assert_eq!(
            unframe(&bad, &what).err().unwrap().to_string(),
            "toc at 0: record header checksum mismatch"
        );
        bad[0] = b'X';
        assert_eq!(
            unframe(&bad, &what).err().unwrap().to_string(),
            "toc at 0: not a fieldstore record (bad magic)"
        );
    }
}
