//! Jump info as an entry extension (`FieldLocation::extension`): the bytes
//! the catalogue keeps with a GRIB field's entry (`docs/extract.md`,
//! "What jump info holds").
//!
//! ```text
//! 'J' (0x4a)                                     u8   what the extension is
//! version (1)                                    u8
//! edition                                        u8
//! packing: 0 simple, 1 CCSDS                     u8
//! bits per value                                 u8
//! reference value R (as ecCodes reads it)        f64 little-endian
//! binary scale E, decimal scale D                varint (zigzag) each
//! data offset, data length                       varint each
//! bitmap offset + 1 (0: no bitmap)               varint
//! points, packed values                          varint each
//! grid identity                                  u64 little-endian
//! version 2: bitmap counts every E points        varint (0: none recorded)
//!            if E > 0: number of counts N        varint
//!            N counts, each as the difference   varint
//!            from the previous one
//! CCSDS only: flags, block size                  u8 each
//!             reference sample interval          varint
//!             number of RSI offsets N            varint
//!   version 1: N offsets (bits), each as the     varint
//!              difference from the previous one
//!   version 2, if N > 0: the first offset (bits) varint
//!              mean RSI length B (bits):         varint
//!              (last − first) / (N − 1), 0 if N = 1
//!              N − 1 deviations: each RSI's      varint (zigzag)
//!              length minus B
//! ```
//!
//! Version 1 (no bitmap counts) is still read: entries archived before
//! version 2 keep their jump info. Varints are LEB128 (7 bits a byte, low bits first). Decoding checks
//! every length: damage is an error, never a panic or a wrong answer the
//! checks could catch ([`JumpInfo::parse`]'s consistency rules apply).

use fieldstore_core::{Error, Result};

use crate::jump::{JumpInfo, Packing};

/// The extension's first byte: GRIB jump info.
pub(crate) const TAG: u8 = b'J';
/// The version this code writes (it reads it and version 1).
pub(crate) const VERSION: u8 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i32) -> u64 {
    u64::from(((v << 1) ^ (v >> 31)) as u32)
}

impl JumpInfo {
    /// The entry extension holding this jump info.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = vec![
            TAG,
            VERSION,
            self.edition,
            u8::from(matches!(self.packing, Packing::Ccsds { .. })),
            self.bits_per_value,
        ];
        o.extend_from_slice(&self.reference.to_le_bytes());
        varint(&mut o, zigzag(self.binary_scale));
        varint(&mut o, zigzag(self.decimal_scale));
        varint(&mut o, self.data_offset);
        varint(&mut o, self.data_length);
        varint(&mut o, self.bitmap_offset.map_or(0, |b| b + 1));
        varint(&mut o, self.points);
        varint(&mut o, self.coded);
        o.extend_from_slice(&self.grid.to_le_bytes());
        match &self.bitmap_counts {
            None => varint(&mut o, 0),
            Some(c) => {
                varint(&mut o, c.every);
                varint(&mut o, c.counts.len() as u64);
                let mut last = 0;
                for &n in &c.counts {
                    varint(&mut o, n - last);
                    last = n;
                }
            }
        }
        if let Packing::Ccsds {
            flags,
            block_size,
            rsi,
            rsi_offsets,
        } = &self.packing
        {
            o.push(*flags);
            o.push(*block_size);
            varint(&mut o, u64::from(*rsi));
            varint(&mut o, rsi_offsets.len() as u64);
            if let Some((&first, rest)) = rsi_offsets.split_first() {
                // RSIs hold equally many samples: their lengths in bits
                // differ from their mean by far less than they are long
                // (2 bytes a deviation, against 3 a length, for 16-bit
                // values).
                varint(&mut o, first);
                let base = match rest.last() {
                    Some(&l) => (l - first) / rest.len() as u64,
                    None => 0,
                };
                varint(&mut o, base);
                let mut last = first;
                for &b in rest {
                    let deviation = (b - last) as i64 - base as i64;
                    varint(&mut o, ((deviation << 1) ^ (deviation >> 63)) as u64);
                    last = b;
                }
            }
        }
        o
    }

    /// Jump info from an entry extension, `None` if the extension is not
    /// jump info (another tag) or of a version this code does not read.
    ///
    /// # Errors
    /// `Corrupt` if it says it is jump info of this version and does not
    /// decode whole, or its numbers contradict each other.
    pub fn decode(ext: &[u8]) -> Result<Option<JumpInfo>> {
        if ext.len() < 2 || ext[0] != TAG || !(1..=VERSION).contains(&ext[1]) {
            return Ok(None);
        }
        let version = ext[1];
        let mut r = Reader { b: ext, at: 2 };
        let edition = r.u8()?;
        let ccsds = r.u8()?;
        let bits_per_value = r.u8()?;
        let reference = f64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"));
        let binary_scale = r.zigzag()?;
        let decimal_scale = r.zigzag()?;
        let data_offset = r.varint()?;
        let data_length = r.varint()?;
        let bitmap = r.varint()?;
        let points = r.varint()?;
        let coded = r.varint()?;
        let grid = u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"));
        let every = if version >= 2 { r.varint()? } else { 0 };
        let bitmap_counts = if every == 0 {
            None
        } else {
            let n = r.varint()?;
            if n > (ext.len() - r.at) as u64 {
                return Err(corrupt("more bitmap counts than bytes"));
            }
            let mut counts = Vec::with_capacity(n as usize);
            let mut last = 0u64;
            for _ in 0..n {
                last = last
                    .checked_add(r.varint()?)
                    .ok_or_else(|| corrupt("a bitmap count overflows"))?;
                counts.push(last);
            }
            let c = crate::bitmap::BitmapCounts { every, counts };
            if bitmap == 0 || !c.fits(points) {
                return Err(corrupt("bitmap counts that do not fit the bitmap"));
            }
            Some(c)
        };
        let packing = match ccsds {
            0 => Packing::Simple,
            1 => {
                let flags = r.u8()?;
                let block_size = r.u8()?;
                let rsi = u16::try_from(r.varint()?).map_err(|_| corrupt("RSI too large"))?;
                let n = r.varint()?;
                if n > (ext.len() - r.at) as u64 {
                    return Err(corrupt("more RSI offsets than bytes"));
                }
                let mut rsi_offsets = Vec::with_capacity(n as usize);
                if version == 1 {
                    let mut last = 0u64;
                    for _ in 0..n {
                        last = last
                            .checked_add(r.varint()?)
                            .ok_or_else(|| corrupt("RSI offset overflows"))?;
                        rsi_offsets.push(last);
                    }
                } else if n > 0 {
                    let mut last = r.varint()?;
                    rsi_offsets.push(last);
                    let base =
                        i64::try_from(r.varint()?).map_err(|_| corrupt("RSI length too large"))?;
                    for _ in 1..n {
                        let z = r.varint()?;
                        let deviation = (z >> 1) as i64 ^ -((z & 1) as i64);
                        let length = base
                            .checked_add(deviation)
                            .and_then(|l| u64::try_from(l).ok())
                            .ok_or_else(|| corrupt("a negative RSI length"))?;
                        last = last
                            .checked_add(length)
                            .ok_or_else(|| corrupt("RSI offset overflows"))?;
                        rsi_offsets.push(last);
                    }
                }
                Packing::Ccsds {
                    flags,
                    block_size,
                    rsi,
                    rsi_offsets,
                }
            }
            p => return Err(corrupt(&format!("packing {p}"))),
        };
        if r.at != ext.len() {
            return Err(corrupt("trailing bytes"));
        }
        if bits_per_value > 32 || !(1..=2).contains(&edition) {
            return Err(corrupt("bits per value or edition out of range"));
        }
        if bitmap == 0 && coded != points || coded > points {
            return Err(corrupt("packed values and points disagree"));
        }
        if let Packing::Ccsds { rsi_offsets, .. } = &packing {
            if rsi_offsets.last().is_some_and(|&b| b > data_length * 8) {
                return Err(corrupt("an RSI offset is past the data"));
            }
        }
        Ok(Some(JumpInfo {
            edition,
            packing,
            reference,
            binary_scale,
            decimal_scale,
            bits_per_value,
            data_offset,
            data_length,
            bitmap_offset: bitmap.checked_sub(1),
            points,
            coded,
            grid,
            bitmap_counts,
        }))
    }
}

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("damaged jump info in the index entry: {what}"))
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .b
            .get(self.at..self.at + n)
            .ok_or_else(|| corrupt("ends early"))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(corrupt("varint too long"))
    }
    fn zigzag(&mut self) -> Result<i32> {
        let v = u32::try_from(self.varint()?).map_err(|_| corrupt("scale too large"))?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simple() -> JumpInfo {
        JumpInfo {
            edition: 2,
            packing: Packing::Simple,
            reference: 273.5,
            binary_scale: -3,
            decimal_scale: 2,
            bits_per_value: 16,
            data_offset: 200,
            data_length: 2000,
            bitmap_offset: Some(150),
            points: 1200,
            coded: 1000,
            grid: 0x0102_0304_0506_0708,
            bitmap_counts: Some(crate::bitmap::BitmapCounts {
                every: 400,
                counts: vec![0, 350, 700],
            }),
        }
    }

    fn unhex(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Version 1 (before bitmap counts), as fieldstore wrote it: still
    /// read, without counts.
    #[test]
    fn version_1_is_read() {
        let v1 = "4a0102001000000000001871400504c801d00f9701b009e8070807060504030201";
        let want = JumpInfo {
            bitmap_counts: None,
            ..simple()
        };
        assert_eq!(JumpInfo::decode(&unhex(v1)).unwrap(), Some(want.clone()));
        let c = "4a0102011000000000001871400504c801d00f00b009b0090807060504030201\
                 0e2080010300ac029003";
        let got = JumpInfo::decode(&unhex(c)).unwrap().unwrap();
        assert_eq!(got.bitmap_counts, None);
        assert!(
            matches!(got.packing, Packing::Ccsds { ref rsi_offsets, .. } if rsi_offsets == &[0, 300, 700])
        );
    }

    /// The bytes of one simple and one CCSDS jump info, pinned.
    #[test]
    fn golden_bytes() {
        let s = simple();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(
            hex(&s.encode()),
            "4a0202001000000000001871400504c801d00f9701b009e8070807060504030201\
             90030300de02de02"
        );
        let c = JumpInfo {
            packing: Packing::Ccsds {
                flags: 14,
                block_size: 32,
                rsi: 128,
                rsi_offsets: vec![0, 300, 700],
            },
            bitmap_offset: None,
            bitmap_counts: None,
            coded: 1200,
            ..s
        };
        assert_eq!(
            hex(&c.encode()),
            "4a0202011000000000001871400504c801d00f00b009b0090807060504030201\
             000e2080010300de026364"
        );
        // Counts that do not fit the field are damage.
        let mut bad = simple();
        bad.bitmap_counts = Some(crate::bitmap::BitmapCounts {
            every: 400,
            counts: vec![0, 350],
        });
        assert!(JumpInfo::decode(&bad.encode()).is_err());
        for j in [simple(), c] {
            assert_eq!(JumpInfo::decode(&j.encode()).unwrap(), Some(j));
        }
    }

    /// RSI offsets of every shape come back: none, one, lengths above and
    /// below their mean by much, a last RSI much shorter.
    #[test]
    fn rsi_offsets_round_trip() {
        let sets: [Vec<u64>; 5] = [
            vec![],
            vec![0],
            vec![5, 6],
            vec![0, 48_000, 96_500, 140_000, 200_000, 200_001],
            (0..254u64)
                .map(|i| i * 47_000 + (i * i * 7919) % 3001)
                .collect(),
        ];
        for offsets in sets {
            let j = JumpInfo {
                packing: Packing::Ccsds {
                    flags: 14,
                    block_size: 32,
                    rsi: 128,
                    rsi_offsets: offsets.clone(),
                },
                bitmap_offset: None,
                bitmap_counts: None,
                coded: 1200,
                data_length: 1 << 30,
                ..simple()
            };
            assert_eq!(
                JumpInfo::decode(&j.encode()).unwrap(),
                Some(j),
                "{offsets:?}"
            );
        }
    }

    #[test]
    fn other_extensions_are_not_jump_info() {
        assert_eq!(JumpInfo::decode(b"").unwrap(), None);
        assert_eq!(JumpInfo::decode(b"X\x01").unwrap(), None);
        assert_eq!(JumpInfo::decode(b"J\x03rest").unwrap(), None);
        assert_eq!(JumpInfo::decode(b"J\x00rest").unwrap(), None);
    }

    #[test]
    fn damage_is_corrupt_never_a_panic() {
        let bytes = simple().encode();
        for n in 2..bytes.len() {
            let e = JumpInfo::decode(&bytes[..n]).unwrap_err();
            assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt, "{n}: {e}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(JumpInfo::decode(&long).is_err());
        for i in 2..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                let _ = JumpInfo::decode(&b);
            }
        }
    }
}
