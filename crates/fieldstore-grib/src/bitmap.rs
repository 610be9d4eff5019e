//! Where a point's packed value is, from the bitmap: its rank among the
//! points present (bit 1), read from as few bitmap bytes as possible.
//!
//! A GRIB bitmap has one bit per point (1: present); the packed values
//! hold only the points present, so point i's value is the packed value
//! numbered by the count of set bits before i. Without help that count
//! needs the bitmap from its start: up to 127 KiB for a million points.
//! [`BitmapCounts`] (part of jump info) keeps the cumulative count every
//! `every` points, so a point needs only the bitmap bytes from the count
//! before it: at most `every / 8` bytes (512 bytes at the default 4,096
//! points, within one or two pages of the medium), for 2 bytes of index
//! per 4,096 points.

use fieldstore_core::{Error, Result};

use crate::jump::ByteSource;

/// Points between two recorded counts, by default: ≤ 512 bitmap bytes
/// read per point, ~2 index bytes per 4,096 points (254 counts, ~500
/// bytes, for a million points).
pub const DEFAULT_EVERY: u64 = 4096;

/// Reads closer than this are merged into one.
const MERGE_GAP: u64 = 4096;

/// Cumulative counts of a bitmap's set bits.
///
/// Invariant: `every` is a positive multiple of 8 (each count starts on a
/// bitmap byte) and `counts[c]` is the number of set bits among points
/// `0 .. c × every`, for every `c × every < points` (so `counts[0] == 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitmapCounts {
    /// Points between two counts.
    pub every: u64,
    /// The counts, one per `every` points.
    pub counts: Vec<u64>,
}

impl BitmapCounts {
    /// The counts of `bitmap` (the whole bitmap of `points` points) every
    /// `every` points (a positive multiple of 8).
    ///
    /// # Errors
    /// `InvalidInput` if `every` is not a positive multiple of 8 or the
    /// bitmap is shorter than `points` bits.
    pub fn of(bitmap: &[u8], points: u64, every: u64) -> Result<BitmapCounts> {
        if every == 0 || every % 8 != 0 {
            return Err(Error::invalid_input(format!(
                "bitmap counts every {every} points: must be a positive multiple of 8"
            )));
        }
        if (bitmap.len() as u64) < points.div_ceil(8) {
            return Err(Error::invalid_input(format!(
                "a bitmap of {} bytes for {points} points",
                bitmap.len()
            )));
        }
        let per = (every / 8) as usize;
        let chunks = points.div_ceil(every) as usize;
        let mut counts = Vec::with_capacity(chunks);
        let mut total = 0u64;
        for c in 0..chunks {
            counts.push(total);
            let bytes = &bitmap[c * per..((c + 1) * per).min(bitmap.len())];
            total += bytes.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        }
        Ok(BitmapCounts { every, counts })
    }

    /// Whether the counts fit a field of `points` points (what decoding
    /// stored counts checks).
    pub fn fits(&self, points: u64) -> bool {
        self.every > 0
            && self.every % 8 == 0
            && self.counts.len() as u64 == points.div_ceil(self.every)
            && self.counts.first().is_none_or(|&c| c == 0)
            && self
                .counts
                .windows(2)
                .all(|w| w[1] >= w[0] && w[1] - w[0] <= self.every)
    }
}

/// For `order` (slots of `indices`, ascending by index), the (slot, rank)
/// of each point present, ranks ascending, reading the bitmap at byte
/// `at` through `src`: from its start to the last point without counts;
/// with them, from the count before each run of nearby points.
///
/// # Errors
/// `src`'s errors.
pub(crate) fn ranks(
    src: &mut dyn ByteSource,
    at: u64,
    counts: Option<&BitmapCounts>,
    indices: &[u64],
    order: &[usize],
    packed: &mut Vec<(usize, u64)>,
) -> Result<()> {
    let mut i = 0;
    while i < order.len() {
        // A run: points whose bitmap bytes are close, read at once from
        // the count before the first (without counts: from the start,
        // and every point in one run).
        let first = indices[order[i]];
        let (start, mut rank) = match counts {
            Some(c) => {
                let k = (first / c.every) as usize;
                (k as u64 * c.every, c.counts[k])
            }
            None => (0, 0),
        };
        let mut j = i + 1;
        while j < order.len() {
            let next = indices[order[j]];
            let from = counts.map_or(0, |c| next / c.every * c.every);
            if counts.is_some() && from / 8 > indices[order[j - 1]] / 8 + MERGE_GAP {
                break;
            }
            j += 1;
        }
        let last = indices[order[j - 1]];
        let bitmap = src.read(at + start / 8, (last / 8 + 1 - start / 8) as usize)?;
        let bit = |p: u64| bitmap[((p - start) / 8) as usize] >> (7 - p % 8) & 1;
        let mut counted = start;
        for &s in &order[i..j] {
            let p = indices[s];
            // Count the set bits in [counted, p).
            while counted < p {
                if counted % 8 == 0 && counted + 8 <= p {
                    rank += u64::from(bitmap[((counted - start) / 8) as usize].count_ones());
                    counted += 8;
                } else {
                    rank += u64::from(bit(counted));
                    counted += 1;
                }
            }
            if bit(p) == 1 {
                packed.push((s, rank));
            }
        }
        i = j;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_cumulative_and_checked() {
        // 20 points: bits 1111_0000 1010_1010 0001
        let bitmap = [0xf0, 0xaa, 0x10];
        let c = BitmapCounts::of(&bitmap, 20, 8).unwrap();
        assert_eq!(c.counts, vec![0, 4, 8]);
        assert!(c.fits(20));
        assert!(!c.fits(30));
        assert!(BitmapCounts::of(&bitmap, 20, 12).is_err());
        assert!(BitmapCounts::of(&bitmap, 30, 8).is_err());
        for every in [8, 16, 24] {
            let c = BitmapCounts::of(&bitmap, 20, every).unwrap();
            let indices: Vec<u64> = (0..20).collect();
            let order: Vec<usize> = (0..20).collect();
            let (mut with, mut without) = (Vec::new(), Vec::new());
            ranks(&mut &bitmap[..], 0, Some(&c), &indices, &order, &mut with).unwrap();
            ranks(&mut &bitmap[..], 0, None, &indices, &order, &mut without).unwrap();
            assert_eq!(with, without, "every {every}");
            assert_eq!(with.len(), 9);
        }
    }
}
