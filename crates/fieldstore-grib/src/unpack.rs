//! Values at given points of a field with jump info, reading only the
//! bytes that hold them: the bitmap from the count before each point
//! (`bitmap.rs`; from its start without counts), and the packed bits of
//! each point (nearby reads merged).

use fieldstore_core::{Error, Result};

use crate::jump::{ByteSource, JumpInfo, Packing};

/// Reads closer than this are merged into one: one read of a few KiB
/// costs less than two round trips.
const MERGE_GAP: u64 = 4096;

/// What an extraction read from the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCost {
    /// Ranged reads.
    pub reads: u64,
    /// Bytes read.
    pub bytes: u64,
}

impl ReadCost {
    /// Both counts of `other` added.
    pub fn add(&mut self, other: ReadCost) {
        self.reads += other.reads;
        self.bytes += other.bytes;
    }
}

/// A source that counts what is read through it.
pub(crate) struct Counted<'a> {
    pub(crate) src: &'a mut dyn ByteSource,
    pub(crate) cost: ReadCost,
}

impl ByteSource for Counted<'_> {
    fn size(&self) -> u64 {
        self.src.size()
    }
    fn read(&mut self, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.cost.reads += 1;
        self.cost.bytes += len as u64;
        self.src.read(offset, len)
    }
}

/// `bits` bits (≤ 32) at bit `bit` of `buf`, big-endian.
#[inline]
fn bits_at(buf: &[u8], bit: u64, bits: u8) -> u64 {
    let byte = (bit / 8) as usize;
    let mut word = 0u64;
    for i in 0..5 {
        word = (word << 8) | u64::from(buf.get(byte + i).copied().unwrap_or(0));
    }
    let shift = 40 - (bit % 8) - u64::from(bits);
    (word >> shift) & ((1u64 << bits) - 1)
}

/// The values at `indices` (any order, repeats allowed; each below
/// `info.points`) of the field `src` reads, into `out` in the same order:
/// missing points NaN. What was read is counted in `cost`.
///
/// # Errors
/// `InvalidInput` for an index out of range (naming it and the number of
/// points); `src`'s errors; CCSDS fields whose block offsets are not
/// recorded are `InvalidInput` (call [`crate::ccsds::index`] first).
pub fn values_at(
    info: &JumpInfo,
    src: &mut dyn ByteSource,
    indices: &[u64],
    out: &mut Vec<f64>,
    cost: &mut ReadCost,
) -> Result<()> {
    if let Some(&bad) = indices.iter().find(|&&i| i >= info.points) {
        return Err(Error::invalid_input(format!(
            "index {bad} is out of range: the field has {} points",
            info.points
        )));
    }
    out.clear();
    out.resize(indices.len(), f64::NAN);
    if indices.is_empty() {
        return Ok(());
    }
    let mut src = Counted {
        src,
        cost: ReadCost::default(),
    };
    // The working vectors are the thread's, kept between fields: a long
    // range's are hundreds of KiB, and allocating them for each of a
    // thousand fields cost their pages' faults each time.
    let (mut order, mut packed) = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    order.clear();
    order.extend(0..indices.len());
    // Ranges come in order: no sort then.
    if !indices.windows(2).all(|w| w[0] <= w[1]) {
        order.sort_unstable_by_key(|&s| indices[s]);
    }
    // (slot in `out`, rank among packed values), ranks ascending.
    packed.clear();
    packed.reserve(order.len());
    let result = packed_values(info, &mut src, indices, &order, &mut packed, out);
    cost.add(src.cost);
    SCRATCH.with(|s| *s.borrow_mut() = (order, packed));
    result
}

thread_local! {
    /// [`values_at`]'s working vectors (sort order, packed ranks).
    #[allow(clippy::type_complexity)]
    static SCRATCH: std::cell::RefCell<(Vec<usize>, Vec<(usize, u64)>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// [`values_at`] once the order is known: the ranks of the present
/// points, then their values.
fn packed_values(
    info: &JumpInfo,
    src: &mut Counted<'_>,
    indices: &[u64],
    order: &[usize],
    packed: &mut Vec<(usize, u64)>,
    out: &mut [f64],
) -> Result<()> {
    match info.bitmap_offset {
        None => packed.extend(order.iter().map(|&s| (s, indices[s]))),
        Some(at) => {
            crate::bitmap::ranks(src, at, info.bitmap_counts.as_ref(), indices, order, packed)?
        }
    }
    if let Some(&(_, k)) = packed.last() {
        if k >= info.coded {
            return Err(Error::corrupt(format!(
                "the bitmap marks more points present than the {} packed values",
                info.coded
            )));
        }
    }
    if info.bits_per_value == 0 {
        for &(s, _) in packed.iter() {
            out[s] = info.value(0);
        }
        return Ok(());
    }
    match &info.packing {
        Packing::Simple => simple(info, src, packed, out),
        Packing::Ccsds { .. } => crate::ccsds::values(info, src, packed, out),
    }
}

/// Simple packing: each value's bits read where they are.
fn simple(
    info: &JumpInfo,
    src: &mut dyn ByteSource,
    packed: &[(usize, u64)],
    out: &mut [f64],
) -> Result<()> {
    let bpv = u64::from(info.bits_per_value);
    let scale = info.scale();
    let mut i = 0;
    while i < packed.len() {
        // One read for a run of values whose bytes are close.
        let lo = packed[i].1 * bpv / 8;
        let mut hi = ((packed[i].1 + 1) * bpv).div_ceil(8);
        let mut j = i + 1;
        while j < packed.len() {
            let start = packed[j].1 * bpv / 8;
            if start > hi + MERGE_GAP {
                break;
            }
            hi = hi.max(((packed[j].1 + 1) * bpv).div_ceil(8));
            j += 1;
        }
        let buf = src.read(info.data_offset + lo, (hi - lo) as usize)?;
        for &(s, k) in &packed[i..j] {
            let x = bits_at(&buf, k * bpv - lo * 8, info.bits_per_value);
            out[s] = scale.value(x);
        }
        i = j;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_at_reads_big_endian_fields() {
        let buf = [0b1010_1100, 0b0101_0011, 0xff, 0, 0];
        assert_eq!(bits_at(&buf, 0, 4), 0b1010);
        assert_eq!(bits_at(&buf, 4, 8), 0b1100_0101);
        assert_eq!(bits_at(&buf, 12, 12), 0b0011_1111_1111);
        assert_eq!(bits_at(&[0xff; 5], 3, 32), 0xffff_ffff);
    }
}
