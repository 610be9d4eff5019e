//! The bit offset of every reference sample interval (RSI) of a CCSDS
//! stream, found by walking its block structure (CCSDS 121.0-B: each
//! block's option identifier, then what that option holds) without
//! decoding samples: what archive records in jump info, several times
//! cheaper than decoding the field with libaec. Written from the
//! standard's description of the coded data set; checked against libaec's
//! own offsets (`tests/extract.rs`). Anything unexpected answers `None`,
//! and the caller asks libaec instead.

/// libaec's flag bits this walk reads.
const PREPROCESS: u32 = 8;
const RESTRICTED: u32 = 16;
const PAD_RSI: u32 = 32;
/// The fundamental-sequence value that means "to the end of the segment"
/// in a zero-block run.
const ROS: u64 = 5;

struct Bits<'a> {
    data: &'a [u8],
    pos: u64,
    end: u64,
}

impl Bits<'_> {
    /// 64 bits from `pos` (zeros past the end).
    #[inline]
    fn peek64(&self) -> u64 {
        let byte = (self.pos / 8) as usize;
        let mut b = [0u8; 16];
        let n = self.data.len().saturating_sub(byte).min(16);
        b[..n].copy_from_slice(&self.data[byte..byte + n]);
        let hi = u128::from_be_bytes(b);
        (hi >> (64 - (self.pos % 8))) as u64
    }

    #[inline]
    fn skip(&mut self, n: u64) -> Option<()> {
        self.pos += n;
        (self.pos <= self.end).then_some(())
    }

    #[inline]
    fn get(&mut self, n: u32) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        let v = self.peek64() >> (64 - n);
        self.skip(u64::from(n))?;
        Some(v)
    }

    /// A fundamental-sequence codeword: the number of 0 bits before a 1.
    #[inline]
    fn fs(&mut self) -> Option<u64> {
        let mut zeros = 0;
        loop {
            let w = self.peek64();
            if w != 0 {
                let z = u64::from(w.leading_zeros());
                self.skip(z + 1)?;
                return Some(zeros + z);
            }
            zeros += 64;
            self.skip(64)?;
        }
    }

    /// `count` fundamental-sequence codewords: whole 64-bit words while
    /// they end fewer codewords than are left (each 1 bit ends one), then
    /// one codeword at a time.
    #[inline]
    fn skip_fs(&mut self, mut count: u32) -> Option<()> {
        loop {
            let ones = self.peek64().count_ones();
            if ones >= count {
                break;
            }
            self.skip(64)?;
            count -= ones;
        }
        // The word holds the rest: walk its 1 bits in a register.
        let mut w = self.peek64();
        let mut used = 0u64;
        for _ in 0..count {
            let z = w.leading_zeros() + 1;
            w = w.checked_shl(z).unwrap_or(0);
            used += u64::from(z);
        }
        self.skip(used)
    }
}

/// The bit offsets of the RSIs of `data` holding `samples` samples of
/// `bits` bits, coded with `flags` (libaec's), `block` samples a block and
/// `rsi` blocks an RSI; `None` if the stream does not walk cleanly.
pub(crate) fn rsi_offsets(
    data: &[u8],
    bits: u8,
    flags: u32,
    block: u32,
    rsi: u32,
    samples: u64,
) -> Option<Vec<u64>> {
    if bits == 0 || bits > 32 || block == 0 || rsi == 0 {
        return None;
    }
    let id_len: u32 = if bits > 16 {
        5
    } else if bits > 8 {
        4
    } else if flags & RESTRICTED != 0 && bits <= 4 {
        if bits <= 2 {
            1
        } else {
            2
        }
    } else {
        3
    };
    let uncompressed = (1u64 << id_len) - 1;
    let pp = flags & PREPROCESS != 0;
    let n = u32::from(bits);
    let blocks_total = samples.div_ceil(u64::from(block));
    let mut b = Bits {
        data,
        pos: 0,
        end: data.len() as u64 * 8,
    };
    let mut offsets = vec![0u64];
    let mut done = 0u64; // blocks
    let mut in_rsi = 0u32; // blocks of the current RSI
    while done < blocks_total {
        if in_rsi == rsi {
            if flags & PAD_RSI != 0 {
                b.pos = b.pos.div_ceil(8) * 8;
            }
            offsets.push(b.pos);
            in_rsi = 0;
        }
        let reference = u32::from(pp && in_rsi == 0);
        let id = b.get(id_len)?;
        let mut blocks = 1u32;
        if id == 0 {
            let second_extension = b.get(1)? == 1;
            b.skip(u64::from(reference * n))?;
            if second_extension {
                for _ in 0..block / 2 {
                    b.fs()?;
                }
            } else {
                let mut zero = b.fs()? + 1;
                if zero == ROS {
                    let used = u64::from(in_rsi);
                    zero = (u64::from(rsi) - used).min(64 - used % 64);
                } else if zero > ROS {
                    zero -= 1;
                }
                blocks = u32::try_from(zero).ok()?;
            }
        } else if id == uncompressed {
            b.skip(u64::from(block) * u64::from(n))?;
        } else {
            let k = (id - 1) as u32;
            b.skip(u64::from(reference * n))?;
            let count = block - reference;
            b.skip_fs(count)?;
            b.skip(u64::from(count) * u64::from(k))?;
        }
        if blocks == 0 || in_rsi + blocks > rsi {
            return None;
        }
        in_rsi += blocks;
        done += u64::from(blocks);
    }
    Some(offsets)
}
