//! Self-describing field payloads and their verification.
//!
//! Every field written by the hammer carries a 40-byte header at the start
//! of its data section (the start of a synthetic field; GRIB section 7/BDS
//! of a template):
//!
//! ```text
//! magic "FSHAMMR1" (8) | identity hash (8) | unique id (8) | payload length (8)
//! | CRC-32C of every payload byte outside the header (4) | CRC-32C of the 36 bytes before (4)
//! ```
//! All integers little-endian. The identity hash is FNV-1a over the field's
//! (date, step, number, levelist, param) as integers, so a reader that gets
//! another field's bytes (wrong key, wrong repetition) notices; the unique id
//! is `rank << 32 | counter`. `--md-check` checks magic, identity and
//! length; `--full-check` also recomputes the CRC over every other byte.

use fieldstore::{Error, Key, Result};

/// Bytes of the header.
pub const HEADER: usize = 40;
const MAGIC: &[u8; 8] = b"FSHAMMR1";

/// A field's identity: the integers of the keys that vary in the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity {
    /// `date` as YYYYMMDD.
    pub date: u64,
    /// `step`.
    pub step: u64,
    /// `number`.
    pub number: u64,
    /// `levelist`.
    pub level: u64,
    /// `param`.
    pub param: u64,
}

impl Identity {
    /// The identity of the field at `step`, `number`, `level`, `param` of
    /// a task whose date is `date` (what the hammer's loops generate).
    pub fn new(date: u64, step: u32, number: u32, level: u32, param: u32) -> Identity {
        Identity {
            date,
            step: step.into(),
            number: number.into(),
            level: level.into(),
            param: param.into(),
        }
    }

    /// FNV-1a 64 over the five integers.
    pub fn hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for v in [self.date, self.step, self.number, self.level, self.param] {
            for b in v.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }

    /// The identity of a key as the store returns it (canonical values).
    ///
    /// # Errors
    /// `InvalidInput` if a keyword is missing or not an integer.
    pub fn of_key(key: &Key) -> Result<Identity> {
        let get = |kw: &str| -> Result<u64> {
            let v = key
                .get(kw)
                .ok_or_else(|| Error::invalid_input(format!("key {key} has no '{kw}'")))?;
            parse_int(v).ok_or_else(|| {
                Error::invalid_input(format!("key {key}: '{kw}={v}' is not an integer"))
            })
        };
        Ok(Identity {
            date: get("date")?,
            step: get("step")?,
            number: get("number")?,
            level: get("levelist")?,
            param: get("param")?,
        })
    }
}

/// An integer written as `12`, `12.0`, `0012`, or a step `12h`.
fn parse_int(v: &str) -> Option<u64> {
    let v = v.trim_end_matches('h');
    if let Ok(i) = v.parse::<u64>() {
        return Some(i);
    }
    let f: f64 = v.parse().ok()?;
    (f >= 0.0 && f.fract() == 0.0).then_some(f as u64)
}

/// xorshift64*: fast, good enough to defeat compression and dedup.
fn fill_random(buf: &mut [u8], seed: u64) {
    let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
    if x == 0 {
        x = 1;
    }
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        c.copy_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    for b in chunks.into_remainder() {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *b = x as u8;
    }
}

/// Where the data section of a GRIB message is (edition 1 or 2), if the
/// bytes are one; else the whole buffer.
pub fn data_section(msg: &[u8]) -> std::ops::Range<usize> {
    grib_data_section(msg).unwrap_or(0..msg.len())
}

fn be(b: &[u8]) -> usize {
    b.iter().fold(0usize, |a, &x| (a << 8) | usize::from(x))
}

fn grib_data_section(m: &[u8]) -> Option<std::ops::Range<usize>> {
    if m.len() < 16 || &m[..4] != b"GRIB" {
        return None;
    }
    match m[7] {
        2 => {
            let mut pos = 16;
            while pos + 5 <= m.len() && &m[pos..pos + 4] != b"7777" {
                let len = be(&m[pos..pos + 4]);
                if len < 5 || pos + len > m.len() {
                    return None;
                }
                if m[pos + 4] == 7 {
                    return Some(pos + 5..pos + len);
                }
                pos += len;
            }
            None
        }
        1 => {
            let mut pos = 8;
            let pds = be(m.get(pos..pos + 3)?);
            let flags = *m.get(pos + 7)?;
            pos += pds;
            if flags & 0x80 != 0 {
                pos += be(m.get(pos..pos + 3)?);
            }
            if flags & 0x40 != 0 {
                pos += be(m.get(pos..pos + 3)?);
            }
            let bds = be(m.get(pos..pos + 3)?);
            (bds > 11 && pos + bds <= m.len()).then_some(pos + 11..pos + bds)
        }
        _ => None,
    }
}

/// Makes the payload of each field.
#[derive(Debug)]
pub struct Generator {
    buf: Vec<u8>,
    section: std::ops::Range<usize>,
    randomise: bool,
    rank: u64,
    counter: u64,
    /// CRC of the bytes outside the header when they do not change.
    fixed_crc: Option<u32>,
}

impl Generator {
    /// A generator over a base payload (synthetic or a template message).
    ///
    /// # Errors
    /// `InvalidInput` if the data section is smaller than the header.
    pub fn new(base: Vec<u8>, randomise: bool, rank: u32) -> Result<Generator> {
        let section = data_section(&base);
        if section.len() < HEADER {
            return Err(Error::invalid_input(format!(
                "fields of {} bytes (data section {} bytes) are too small for the {HEADER}-byte check header",
                base.len(),
                section.len()
            )));
        }
        let mut g = Generator {
            buf: base,
            section,
            randomise,
            rank: u64::from(rank),
            counter: 0,
            fixed_crc: None,
        };
        if !randomise {
            g.fixed_crc = Some(g.outside_crc());
        }
        Ok(g)
    }

    /// A synthetic base payload of `size` bytes (random, not compressible).
    pub fn synthetic(size: usize) -> Vec<u8> {
        let mut v = vec![0u8; size];
        fill_random(&mut v, 0x5eed);
        v
    }

    fn outside_crc(&self) -> u32 {
        let h = self.section.start;
        let c = crc32c::crc32c(&self.buf[..h]);
        crc32c::crc32c_append(c, &self.buf[h + HEADER..])
    }

    /// The payload for the field `id`, valid until the next call.
    pub fn field(&mut self, id: &Identity) -> &[u8] {
        let uid = (self.rank << 32) | self.counter;
        self.counter += 1;
        let h = self.section.start;
        if self.randomise {
            let end = self.section.end;
            fill_random(&mut self.buf[h + HEADER..end], uid ^ id.hash());
        }
        let crc = match self.fixed_crc {
            Some(c) => c,
            None => self.outside_crc(),
        };
        let len = self.buf.len() as u64;
        let hdr = &mut self.buf[h..h + HEADER];
        hdr[..8].copy_from_slice(MAGIC);
        hdr[8..16].copy_from_slice(&id.hash().to_le_bytes());
        hdr[16..24].copy_from_slice(&uid.to_le_bytes());
        hdr[24..32].copy_from_slice(&len.to_le_bytes());
        hdr[32..36].copy_from_slice(&crc.to_le_bytes());
        let hcrc = crc32c::crc32c(&hdr[..36]);
        hdr[36..40].copy_from_slice(&hcrc.to_le_bytes());
        &self.buf
    }
}

/// What to verify on read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Check {
    /// Nothing.
    None,
    /// Header: magic, identity, length.
    Metadata,
    /// Header and every other byte (CRC).
    Full,
}

/// Verify a field read back for the key `id`; `Err` describes the mismatch.
pub fn verify(data: &[u8], id: &Identity, check: Check) -> std::result::Result<(), String> {
    if check == Check::None {
        return Ok(());
    }
    let h = data_section(data).start;
    let Some(hdr) = data.get(h..h + HEADER) else {
        return Err(format!("{} bytes: too short for a header", data.len()));
    };
    if &hdr[..8] != MAGIC {
        return Err("no hammer header (was it written by fieldstore hammer?)".into());
    }
    let word = |r: std::ops::Range<usize>| {
        let mut b = [0u8; 8];
        b[..r.len()].copy_from_slice(&hdr[r]);
        u64::from_le_bytes(b)
    };
    if word(36..40) as u32 != crc32c::crc32c(&hdr[..36]) {
        return Err("header checksum mismatch".into());
    }
    if word(8..16) != id.hash() {
        return Err(format!(
            "identity mismatch: the bytes belong to another field than {id:?}"
        ));
    }
    if word(24..32) != data.len() as u64 {
        return Err(format!(
            "length mismatch: header says {}, read {}",
            word(24..32),
            data.len()
        ));
    }
    if check == Check::Full {
        let c = crc32c::crc32c_append(crc32c::crc32c(&data[..h]), &data[h + HEADER..]);
        if c != word(32..36) as u32 {
            return Err("payload checksum mismatch".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(param: u64) -> Identity {
        Identity {
            date: 20240101,
            step: 1,
            number: 2,
            level: 3,
            param,
        }
    }

    #[test]
    fn round_trip_and_detection() {
        for randomise in [false, true] {
            let mut g = Generator::new(Generator::synthetic(1000), randomise, 3).unwrap();
            let f = g.field(&id(1)).to_vec();
            assert_eq!(verify(&f, &id(1), Check::Full), Ok(()));
            assert!(verify(&f, &id(2), Check::Metadata).is_err());
            let mut bad = f.clone();
            bad[500] ^= 1;
            assert_eq!(verify(&bad, &id(1), Check::Metadata), Ok(()));
            assert!(verify(&bad, &id(1), Check::Full).is_err());
            assert!(verify(&f[..999], &id(1), Check::Metadata).is_err());
            let g2 = g.field(&id(1)).to_vec();
            assert_ne!(f, g2, "unique ids differ");
        }
    }

    #[test]
    fn grib_sections_are_found() {
        let tmpl = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/grib/template.grib"
        ))
        .unwrap();
        let s = data_section(&tmpl);
        assert!(
            s.start > 16 && s.end < tmpl.len() && s.len() > 1000,
            "{s:?}"
        );
        assert_eq!(data_section(b"not grib at all"), 0..15);
    }

    #[test]
    fn identities_parse_canonical_values() {
        let k: Key = "date=20240101,step=6,number=1,levelist=500.0,param=130"
            .parse()
            .unwrap();
        let i = Identity::of_key(&k).unwrap();
        assert_eq!((i.step, i.level, i.param), (6, 500, 130));
    }
}
