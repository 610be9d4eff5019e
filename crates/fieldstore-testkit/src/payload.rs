//! Self-verifying field payloads.
//!
//! Every byte string the checks archive says which key it belongs to, which
//! version of that key it is, how long it is, and carries a checksum of
//! itself, so a reader that gets one back can tell a whole, correct field
//! from a partial, torn, mixed or misplaced one without knowing what was
//! written.
//!
//! Layout (little-endian):
//!
//! | bytes | what |
//! |---|---|
//! | 0..4 | magic `FSTK` |
//! | 4..12 | FNV-1a 64 of the canonical key (`a=1,b=2`, as `Schema::split(key).full_key()` prints it) |
//! | 12..16 | version |
//! | 16..20 | total length |
//! | 20..len-8 | filler derived from the key hash and the version |
//! | len-8..len | FNV-1a 64 of bytes 0..len-8 |

/// The smallest payload: header and checksum, no filler.
pub const MIN_LEN: usize = 28;

const MAGIC: &[u8; 4] = b"FSTK";

/// FNV-1a 64 of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The hash a payload carries for a canonical key string.
pub fn key_hash(canonical_key: &str) -> u64 {
    fnv1a(canonical_key.as_bytes())
}

/// A length between `min` and `max` (inclusive, both at least
/// [`MIN_LEN`]) that depends on the key and the version, so that versions of
/// one key and neighbouring keys have different lengths.
pub fn length_for(canonical_key: &str, version: u32, min: usize, max: usize) -> usize {
    let min = min.max(MIN_LEN);
    let max = max.max(min);
    let h = crate::rng::mix(key_hash(canonical_key) ^ u64::from(version).rotate_left(32));
    min + (h % (max - min + 1) as u64) as usize
}

/// The payload of `version` of the field whose canonical key is
/// `canonical_key`, `len` bytes long (at least [`MIN_LEN`]).
///
/// # Panics
/// If `len` is below [`MIN_LEN`] or above `u32::MAX`.
pub fn make(canonical_key: &str, version: u32, len: usize) -> Vec<u8> {
    assert!(
        len >= MIN_LEN,
        "a payload needs at least {MIN_LEN} bytes, not {len}"
    );
    let total = u32::try_from(len).expect("payload length fits in u32");
    let hash = key_hash(canonical_key);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&hash.to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    let mut rng = crate::rng::Rng::new(hash ^ u64::from(version));
    while out.len() < len - 8 {
        let word = rng.next_u64().to_le_bytes();
        let n = word.len().min(len - 8 - out.len());
        out.extend_from_slice(&word[..n]);
    }
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// What a payload says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The key hash it carries.
    pub key_hash: u64,
    /// The version it carries.
    pub version: u32,
    /// Its length.
    pub len: usize,
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

/// Check that `bytes` is one whole, undamaged payload, and return its
/// header. The error says what is wrong.
///
/// # Errors
/// A description of the first defect found.
pub fn parse(bytes: &[u8]) -> Result<Header, String> {
    if bytes.len() < MIN_LEN {
        return Err(format!(
            "{} bytes: shorter than any payload ({MIN_LEN})",
            bytes.len()
        ));
    }
    if &bytes[..4] != MAGIC {
        return Err(format!(
            "bad magic {:02x?} (want {MAGIC:02x?})",
            &bytes[..4]
        ));
    }
    let len = u32_at(bytes, 16) as usize;
    if len != bytes.len() {
        return Err(format!(
            "header says {len} bytes, got {} (partial or concatenated field)",
            bytes.len()
        ));
    }
    let sum = u64_at(bytes, len - 8);
    let want = fnv1a(&bytes[..len - 8]);
    if sum != want {
        return Err(format!(
            "checksum mismatch: stored {sum:016x}, computed {want:016x} (damaged or mixed field)"
        ));
    }
    Ok(Header {
        key_hash: u64_at(bytes, 4),
        version: u32_at(bytes, 12),
        len,
    })
}

/// Check that `bytes` is a whole, undamaged payload written for
/// `canonical_key`, and return its version.
///
/// # Errors
/// A description of the defect, naming the key.
pub fn verify(bytes: &[u8], canonical_key: &str) -> Result<u32, String> {
    let h = parse(bytes).map_err(|e| format!("field {canonical_key}: {e}"))?;
    if h.key_hash != key_hash(canonical_key) {
        return Err(format!(
            "field {canonical_key}: payload belongs to another key (hash {:016x}, want {:016x})",
            h.key_hash,
            key_hash(canonical_key)
        ));
    }
    Ok(h.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_defect_is_caught() {
        let k = "class=od,step=6";
        for len in [MIN_LEN, MIN_LEN + 1, 100, 4097] {
            let p = make(k, 7, len);
            assert_eq!(p.len(), len);
            assert_eq!(verify(&p, k), Ok(7));
            assert!(verify(&p, "class=od,step=12").is_err());
            assert!(verify(&p[..len - 1], k).is_err());
            let mut longer = p.clone();
            longer.push(0);
            assert!(verify(&longer, k).is_err());
            for i in 0..len {
                let mut bad = p.clone();
                bad[i] ^= 0x10;
                assert!(verify(&bad, k).is_err(), "flip at {i} of {len} not caught");
            }
        }
        assert_ne!(make(k, 1, 64), make(k, 2, 64));
        let l = length_for(k, 3, 30, 40);
        assert!((30..=40).contains(&l));
    }
}
