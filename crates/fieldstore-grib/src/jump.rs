//! Jump info: what it takes to read any value of a GRIB field directly,
//! without decoding the field (`docs/extract.md`).
//!
//! [`JumpInfo::parse`] walks a message's sections through a [`ByteSource`]
//! that reads only the bytes asked for (a few hundred bytes of headers,
//! never the packed values or the bitmap), so it works on a whole message
//! in memory and on a field in a store alike. It understands:
//!
//! - GRIB2, one field per message, data representation template 5.0
//!   (simple packing) and 5.42 (CCSDS), bitmap indicator 0 (a bitmap in
//!   section 6) or 255 (none);
//! - GRIB1 grid-point data, simple packing (BDS flags 0 or integer), with
//!   or without a bitmap in the BMS.
//!
//! Anything else is [`Unsupported`] (with the reason): the caller falls
//! back to decoding the whole field with ecCodes.
//!
//! Values come out as ecCodes computes them: `(x × 2^E + R) × 10^−D` in
//! double precision, with `2^E` and `10^−D` built by repeated
//! multiplication or division as ecCodes does, so they are bit-identical
//! to ecCodes' `values` (checked by `tests/extract.rs` on fields written by
//! ecCodes). Missing points (bitmap bit 0) are NaN.

use std::fmt;

use fieldstore_core::{Error, ErrorKind, Result};

/// Reads byte ranges of one GRIB message.
pub trait ByteSource {
    /// The message's length in bytes.
    fn size(&self) -> u64;
    /// `len` bytes at `offset` from the message's start.
    ///
    /// # Errors
    /// I/O errors of the medium; `InvalidInput` if the range is outside
    /// the message.
    fn read(&mut self, offset: u64, len: usize) -> Result<Vec<u8>>;
}

/// A message in memory.
impl ByteSource for &[u8] {
    fn size(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read(&mut self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        self.get(start..start.saturating_add(len))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "bytes {offset}..{} are outside the {}-byte GRIB message",
                    offset + len as u64,
                    <[u8]>::len(self)
                ))
            })
    }
}

/// How the values are packed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packing {
    /// Simple packing: value k's bits start at bit `k × bits_per_value`.
    Simple,
    /// CCSDS (adaptive entropy coding, libaec): blocks of
    /// `reference sample interval × block size` values start at the
    /// recorded bit offsets.
    Ccsds {
        /// ecCodes' `ccsdsFlags` (libaec's flags).
        flags: u8,
        /// Samples per block.
        block_size: u8,
        /// Blocks per reference sample interval.
        rsi: u16,
        /// Bit offset of each reference sample interval in the data,
        /// filled in by [`crate::ccsds::index`]; empty until then.
        rsi_offsets: Vec<u64>,
    },
}

/// Why a field has no jump info: it is read by decoding it whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What it takes to read any value of one GRIB field directly.
#[derive(Debug, Clone, PartialEq)]
pub struct JumpInfo {
    /// GRIB edition, 1 or 2.
    pub edition: u8,
    /// How the values are packed.
    pub packing: Packing,
    /// The reference value R, as ecCodes reads it (IEEE or IBM).
    pub reference: f64,
    /// Binary scale factor E.
    pub binary_scale: i32,
    /// Decimal scale factor D.
    pub decimal_scale: i32,
    /// Bits per packed value (0: every value is the reference value).
    pub bits_per_value: u8,
    /// Byte offset of the packed values in the message.
    pub data_offset: u64,
    /// Their length in bytes.
    pub data_length: u64,
    /// Byte offset of the bitmap (one bit per point, 1 = present), if any.
    pub bitmap_offset: Option<u64>,
    /// Number of points (the length of ecCodes' `values`).
    pub points: u64,
    /// Number of packed values (points present).
    pub coded: u64,
    /// The grid's identity: CRC-32C of the grid section (GRIB2 section 3,
    /// GRIB1 GDS) and its length, so fields on one grid share it.
    pub grid: u64,
    /// Cumulative counts of the bitmap's set bits, so a point's packed
    /// value is found from a few bitmap bytes (`bitmap.rs`); `None`: not
    /// recorded (the bitmap is read from its start), and always `None`
    /// without a bitmap. Filled in by [`JumpInfo::count_bitmap`].
    pub bitmap_counts: Option<crate::bitmap::BitmapCounts>,
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

/// GRIB's signed integers: sign bit, then magnitude.
fn signed(b: &[u8]) -> i32 {
    let v = be(b);
    let bits = b.len() * 8;
    let mag = (v & ((1u64 << (bits - 1)) - 1)) as i32;
    if v >> (bits - 1) == 1 {
        -mag
    } else {
        mag
    }
}

/// An IBM single-precision float (GRIB1's reference value).
fn ibm(b: &[u8]) -> f64 {
    let sign = if b[0] & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from(b[0] & 0x7f);
    let mant = be(&b[1..4]) as f64;
    if mant == 0.0 {
        return 0.0;
    }
    sign * mant * 2f64.powi(4 * (exp - 64) - 24)
}

/// `n^s` as ecCodes builds its scale factors: repeated multiplication or
/// division by `n`, in double precision.
pub(crate) fn power(s: i32, n: f64) -> f64 {
    let mut v = 1.0;
    if s >= 0 {
        for _ in 0..s {
            v *= n;
        }
    } else {
        for _ in 0..-s {
            v /= n;
        }
    }
    v
}

/// Grid identity of a grid section's bytes.
fn grid_id(section: &[u8]) -> u64 {
    (section.len() as u64) << 32 | u64::from(crc32c::crc32c(section))
}

type Parsed = std::result::Result<JumpInfo, Unsupported>;

fn unsupported(why: impl Into<String>) -> Parsed {
    Err(Unsupported(why.into()))
}

impl JumpInfo {
    /// The jump info of the message `src` reads, or why there is none.
    ///
    /// # Errors
    /// `InvalidInput` if the bytes are not a well-formed GRIB message (a
    /// section runs past the end, a bitmap or data section is too short for
    /// what the header declares); `src`'s I/O errors.
    pub fn parse(src: &mut dyn ByteSource) -> Result<std::result::Result<JumpInfo, Unsupported>> {
        let total = src.size();
        if total < 16 {
            return Err(bad("shorter than a GRIB header"));
        }
        let s0 = src.read(0, 8)?;
        if &s0[..4] != b"GRIB" {
            return Err(bad("does not start with GRIB"));
        }
        let info = match s0[7] {
            2 => parse2(src, total)?,
            1 => parse1(src, total, &s0)?,
            e => return Err(bad(&format!("GRIB edition {e}"))),
        };
        if let Ok(j) = &info {
            j.check(total)?;
        }
        Ok(info)
    }

    /// The complete jump info of a whole message in memory (CCSDS block
    /// offsets included, which costs a walk of the field's blocks; bitmap
    /// counts), or `None` if it has none (other packings, damage, no
    /// libaec ≥ 1.1).
    pub fn of_message(message: &[u8]) -> Option<JumpInfo> {
        let mut src = message;
        let mut info = JumpInfo::parse(&mut src).ok()?.ok()?;
        info.complete(&mut src).ok()?;
        Some(info)
    }

    /// What [`JumpInfo::parse`] leaves out, read through `src`: the CCSDS
    /// block offsets (the data section read whole once and walked) and the
    /// bitmap counts (the bitmap read whole once). What a field's first
    /// extraction does when its entry has no jump info.
    ///
    /// # Errors
    /// `src`'s errors; `Unsupported` for CCSDS without libaec ≥ 1.1;
    /// `InvalidInput` if the data cannot be decoded.
    pub fn complete(&mut self, src: &mut dyn ByteSource) -> Result<()> {
        if matches!(self.packing, Packing::Ccsds { .. }) {
            let data = src.read(self.data_offset, self.data_length as usize)?;
            crate::ccsds::index(self, &data)?;
        }
        self.count_bitmap(src, crate::bitmap::DEFAULT_EVERY)
    }

    /// Record the bitmap's counts every `every` points (a positive
    /// multiple of 8), reading it whole through `src`; nothing without a
    /// bitmap.
    ///
    /// # Errors
    /// `src`'s errors; `InvalidInput` for a bad `every`.
    pub fn count_bitmap(&mut self, src: &mut dyn ByteSource, every: u64) -> Result<()> {
        if let Some(at) = self.bitmap_offset {
            let bitmap = src.read(at, self.points.div_ceil(8) as usize)?;
            self.bitmap_counts = Some(crate::bitmap::BitmapCounts::of(
                &bitmap,
                self.points,
                every,
            )?);
        }
        Ok(())
    }

    /// The packed data and bitmap fit the message, the counts agree.
    fn check(&self, total: u64) -> Result<()> {
        if self.data_offset + self.data_length > total {
            return Err(bad("the data section runs past the message"));
        }
        if let Some(b) = self.bitmap_offset {
            if b + self.points.div_ceil(8) > total {
                return Err(bad("the bitmap runs past the message"));
            }
        } else if self.coded != self.points {
            return Err(bad(&format!(
                "{} packed values for {} points and no bitmap",
                self.coded, self.points
            )));
        }
        if self.packing == Packing::Simple
            && (self.coded * u64::from(self.bits_per_value)).div_ceil(8) > self.data_length
        {
            return Err(bad(&format!(
                "{} values of {} bits do not fit {} bytes of data",
                self.coded, self.bits_per_value, self.data_length
            )));
        }
        Ok(())
    }

    /// `2^E`, as ecCodes computes it.
    pub fn binary_factor(&self) -> f64 {
        power(self.binary_scale, 2.0)
    }

    /// `10^−D`, as ecCodes computes it.
    pub fn decimal_factor(&self) -> f64 {
        power(-self.decimal_scale, 10.0)
    }

    /// The value of packed integer `x`; with 0 bits per value, the
    /// reference value itself, unscaled, as ecCodes gives it.
    #[inline]
    pub fn value(&self, x: u64) -> f64 {
        self.scale().value(x)
    }

    /// [`JumpInfo::value`] with its factors computed once, for the values
    /// of one field (two `power` calls per value cost more than the
    /// unpacking of a long range).
    pub fn scale(&self) -> Scale {
        Scale {
            constant: (self.bits_per_value == 0).then_some(self.reference),
            binary: self.binary_factor(),
            reference: self.reference,
            decimal: self.decimal_factor(),
        }
    }
}

/// A field's packed integer to value: [`JumpInfo::scale`].
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    constant: Option<f64>,
    binary: f64,
    reference: f64,
    decimal: f64,
}

impl Scale {
    /// The value of packed integer `x` (the very expression of
    /// [`JumpInfo::value`], so bit-identical).
    #[inline]
    pub fn value(&self, x: u64) -> f64 {
        match self.constant {
            Some(c) => c,
            None => ((x as f64) * self.binary + self.reference) * self.decimal,
        }
    }
}

fn bad(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!("not a well-formed GRIB message: {what}"),
    )
}

fn parse2(src: &mut dyn ByteSource, total: u64) -> Result<Parsed> {
    let s0 = src.read(0, 16)?;
    if be(&s0[8..16]) != total {
        return Err(bad("the length in section 0 is not the message's"));
    }
    let mut pos = 16u64;
    let mut points = None;
    let mut grid = None;
    let mut rep: Option<Vec<u8>> = None;
    let mut bitmap = None;
    let mut data = None;
    loop {
        if pos + 4 > total {
            return Err(bad("no 7777 at the end"));
        }
        let head = src.read(pos, (total - pos).min(5) as usize)?;
        if &head[..4] == b"7777" {
            break;
        }
        if head.len() < 5 {
            return Err(bad("a section header is cut short"));
        }
        let len = be(&head[..4]);
        let num = head[4];
        if len < 5 || pos + len > total {
            return Err(bad(&format!(
                "section {num} at byte {pos} runs past the end"
            )));
        }
        if data.is_some() {
            return Ok(unsupported(
                "a GRIB2 message of several fields (sections after section 7)",
            ));
        }
        match num {
            3 => {
                let s = src.read(pos, len as usize)?;
                if s.len() < 14 {
                    return Err(bad("section 3 too short"));
                }
                points = Some(be(&s[6..10]));
                grid = Some(grid_id(&s));
            }
            5 => {
                let s = src.read(pos, len as usize)?;
                if s.len() < 11 {
                    return Err(bad("section 5 too short"));
                }
                rep = Some(s);
            }
            6 => {
                let s = src.read(pos, 6)?;
                bitmap = Some(match s[5] {
                    0 => Some(pos + 6),
                    255 => None,
                    254 => return Ok(unsupported("a bitmap defined by an earlier field")),
                    i => return Ok(unsupported(format!("bitmap indicator {i}"))),
                });
            }
            7 => data = Some((pos + 5, len - 5)),
            _ => {}
        }
        pos += len;
    }
    let (Some(points), Some(grid), Some(rep), Some((data_offset, data_length))) =
        (points, grid, rep, data)
    else {
        return Err(bad("a section 3, 5 or 7 is missing"));
    };
    let bitmap_offset = bitmap.flatten();
    let coded = be(&rep[5..9]);
    let template = be(&rep[9..11]);
    let packing = match template {
        0 if rep.len() >= 21 => Packing::Simple,
        42 if rep.len() >= 25 => Packing::Ccsds {
            flags: rep[21],
            block_size: rep[22],
            rsi: be(&rep[23..25]) as u16,
            rsi_offsets: Vec::new(),
        },
        t => {
            return Ok(unsupported(format!(
                "GRIB2 data representation template 5.{t}"
            )))
        }
    };
    let bits_per_value = rep[19];
    if bits_per_value > 32 {
        return Ok(unsupported(format!("{bits_per_value} bits per value")));
    }
    Ok(Ok(JumpInfo {
        edition: 2,
        packing,
        reference: f64::from(f32::from_bits(be(&rep[11..15]) as u32)),
        binary_scale: signed(&rep[15..17]),
        decimal_scale: signed(&rep[17..19]),
        bits_per_value,
        data_offset,
        data_length,
        bitmap_offset,
        points,
        coded,
        grid,
        bitmap_counts: None,
    }))
}

fn parse1(src: &mut dyn ByteSource, total: u64, s0: &[u8]) -> Result<Parsed> {
    let declared = be(&s0[4..7]);
    if declared & 0x80_0000 != 0 {
        return Ok(unsupported("a GRIB1 message of 8 MiB or more"));
    }
    if declared != total {
        return Err(bad("the length in section 0 is not the message's"));
    }
    let mut pos = 8u64;
    let sec = |src: &mut dyn ByteSource, pos: u64, what: &str| -> Result<Vec<u8>> {
        if pos + 3 > total {
            return Err(bad(&format!("the {what} runs past the end")));
        }
        let len = be(&src.read(pos, 3)?);
        if len < 3 || pos + len > total {
            return Err(bad(&format!("the {what} runs past the end")));
        }
        Ok(len.to_be_bytes().to_vec())
    };
    let pds_len = be(&sec(src, pos, "product definition section")?);
    let pds = src.read(pos, pds_len.min(28) as usize)?;
    if pds.len() < 28 {
        return Err(bad("the product definition section is too short"));
    }
    let has_gds = pds[7] & 0x80 != 0;
    let has_bms = pds[7] & 0x40 != 0;
    let decimal_scale = signed(&pds[26..28]);
    pos += pds_len;
    let mut grid = 0;
    let mut grid_points = None;
    if has_gds {
        let len = be(&sec(src, pos, "grid description section")?);
        let gds = src.read(pos, len as usize)?;
        grid = grid_id(&gds);
        if gds.len() >= 10 && matches!(gds[5], 0 | 4 | 10 | 14) {
            let (ni, nj) = (be(&gds[6..8]), be(&gds[8..10]));
            if ni != 0xFFFF && nj != 0xFFFF {
                grid_points = Some(ni * nj);
            }
        }
        pos += len;
    }
    let mut bitmap = None;
    if has_bms {
        let len = be(&sec(src, pos, "bit-map section")?);
        let bms = src.read(pos, 6)?;
        if be(&bms[4..6]) != 0 {
            return Ok(unsupported("a GRIB1 predefined bitmap"));
        }
        let unused = u64::from(bms[3]);
        if len < 6 || (len - 6) * 8 < unused {
            return Err(bad("the bit-map section is too short"));
        }
        bitmap = Some((pos + 6, (len - 6) * 8 - unused));
        pos += len;
    }
    let len = be(&sec(src, pos, "binary data section")?);
    let bds = src.read(pos, 11.min(len as usize))?;
    if bds.len() < 11 {
        return Err(bad("the binary data section is too short"));
    }
    let flags = bds[3] >> 4;
    if flags & 0b1101 != 0 {
        return Ok(unsupported(format!(
            "GRIB1 packing flags {flags:04b} (spherical harmonics, complex or second-order)"
        )));
    }
    let unused = u64::from(bds[3] & 0x0f);
    let bits_per_value = bds[10];
    if bits_per_value > 32 {
        return Ok(unsupported(format!("{bits_per_value} bits per value")));
    }
    let data_bits = (len - 11) * 8;
    if data_bits < unused {
        return Err(bad("the binary data section is too short"));
    }
    let coded = if bits_per_value == 0 {
        None
    } else {
        Some((data_bits - unused) / u64::from(bits_per_value))
    };
    let (bitmap_offset, points, coded) = match (bitmap, coded, grid_points) {
        (Some((off, bits)), Some(c), _) => (Some(off), grid_points.unwrap_or(bits), c),
        (None, Some(c), _) => (None, c, c),
        (None, None, Some(p)) => (None, p, p),
        _ => {
            return Ok(unsupported(
                "a constant GRIB1 field whose number of points the grid does not give",
            ))
        }
    };
    if let Some(b) = bitmap {
        if b.1 < points {
            return Err(bad("the bitmap has fewer bits than the grid has points"));
        }
    }
    Ok(Ok(JumpInfo {
        edition: 1,
        packing: Packing::Simple,
        reference: ibm(&bds[6..10]),
        binary_scale: signed(&bds[4..6]),
        decimal_scale,
        bits_per_value,
        data_offset: pos + 11,
        data_length: len - 11,
        bitmap_offset,
        points,
        coded,
        grid,
        bitmap_counts: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_is_sign_and_magnitude() {
        assert_eq!(signed(&[0x80, 0x03]), -3);
        assert_eq!(signed(&[0x00, 0x03]), 3);
        assert_eq!(signed(&[0xff, 0xff]), -0x7fff);
    }

    #[test]
    fn ibm_floats() {
        // 0x4110_0000: 16^1 × 1/16 = 1.0
        assert_eq!(ibm(&[0x41, 0x10, 0, 0]), 1.0);
        assert_eq!(ibm(&[0xc1, 0x10, 0, 0]), -1.0);
        // 0x42_64_00_00 = 16^2 × 0x64/0x100 = 100
        assert_eq!(ibm(&[0x42, 0x64, 0, 0]), 100.0);
    }

    #[test]
    fn power_divides_as_eccodes_does() {
        assert_eq!(power(-2, 10.0), 1.0 / 10.0 / 10.0);
        assert_eq!(power(3, 2.0), 8.0);
    }

    #[test]
    fn garbage_is_invalid_input_not_a_panic() {
        for bytes in [
            &b""[..],
            b"GRIB",
            b"GRIB\0\0\0\x02\0\0\0\0\0\0\0\x10",
            b"GRIB\0\0\x10\x01\0\0\0\0\0\0\0\0",
            b"XXXX\0\0\0\x02\0\0\0\0\0\0\0\x10",
        ] {
            let mut src = bytes;
            let e = JumpInfo::parse(&mut src).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        }
    }
}
