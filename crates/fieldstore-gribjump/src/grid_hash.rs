//! The grid hash GribJump checks: ecCodes' `md5GridSection`, the MD5 of
//! the grid section's bytes (GRIB2 section 3, GRIB1's grid description
//! section), read from the field's first bytes through the store's ranged
//! reads and kept per field location for the life of the process.
//!
//! A location (data unit, offset, length, checksum) names bytes that never
//! change while an entry points at them, so its hash never goes stale; the
//! cache is emptied when it reaches [`CACHE_LIMIT`] entries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use fieldstore::{FieldLocation, Store};

use crate::error::CError;

/// Locations whose hash is kept before the cache is emptied.
pub const CACHE_LIMIT: usize = 1 << 20;

type CacheKey = (Arc<str>, u64, u64, Option<u32>);

static CACHE: Mutex<Option<HashMap<CacheKey, Arc<str>>>> = Mutex::new(None);

/// The cache's lock, for the fork handlers.
pub(crate) fn cache_lock() -> &'static Mutex<Option<HashMap<CacheKey, Arc<str>>>> {
    &CACHE
}

/// A way to read `out.len()` bytes of one message from `offset` (into it).
pub trait ReadAt {
    /// Fill `out` from `offset`.
    ///
    /// # Errors
    /// The medium's, or a range past the message.
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> Result<(), CError>;
    /// The message's length in bytes.
    fn size(&self) -> u64;
}

/// A field in a store, read through [`Store::read_range`].
pub struct InStore<'a> {
    /// The store.
    pub store: &'a dyn Store,
    /// The field.
    pub location: &'a FieldLocation,
}

impl ReadAt for InStore<'_> {
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> Result<(), CError> {
        Ok(self.store.read_range(self.location, offset, out)?)
    }
    fn size(&self) -> u64 {
        self.location.length
    }
}

/// A whole message in memory.
impl ReadAt for &[u8] {
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> Result<(), CError> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(out.len());
        let bytes = self
            .get(start..end)
            .ok_or_else(|| CError::new(format!("bytes {start}..{end} are past the message")))?;
        out.copy_from_slice(bytes);
        Ok(())
    }
    fn size(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
}

fn bytes(src: &mut dyn ReadAt, offset: u64, n: u64) -> Result<Vec<u8>, CError> {
    if offset.saturating_add(n) > src.size() {
        return Err(CError::new(format!(
            "the GRIB message's sections run past its end ({} bytes) at byte {offset}",
            src.size()
        )));
    }
    let mut out = vec![0u8; usize::try_from(n).unwrap_or(usize::MAX)];
    src.read_at(offset, &mut out)?;
    Ok(out)
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |n, &x| n << 8 | u64::from(x))
}

/// Where the grid section is in the message: (offset, length).
fn grid_section(src: &mut dyn ReadAt) -> Result<(u64, u64), CError> {
    let head = bytes(src, 0, 8)?;
    if &head[..4] != b"GRIB" {
        return Err(CError::new("the field does not start with 'GRIB'"));
    }
    match head[7] {
        1 => {
            let pds = bytes(src, 8, 8)?;
            let pds_len = be(&pds[..3]);
            if pds[7] & 0x80 == 0 {
                return Err(CError::new(
                    "the GRIB1 field has no grid description section: it has no grid hash",
                ));
            }
            let at = 8 + pds_len;
            let gds = bytes(src, at, 3)?;
            Ok((at, be(&gds)))
        }
        2 => {
            let mut at = 16;
            loop {
                let head = bytes(src, at, 5)?;
                let len = be(&head[..4]);
                if &head[..4] == b"7777" || len < 5 {
                    return Err(CError::new("the GRIB2 field has no grid section (3)"));
                }
                if head[4] == 3 {
                    return Ok((at, len));
                }
                at += len;
            }
        }
        e => Err(CError::new(format!("GRIB edition {e} is not supported"))),
    }
}

/// The MD5 (lower-case hex) of the grid section of the message `src`
/// reads, as ecCodes' `md5GridSection`.
///
/// # Errors
/// A message without a grid section, or a read error.
pub fn of_message(src: &mut dyn ReadAt) -> Result<String, CError> {
    let (at, len) = grid_section(src)?;
    let section = bytes(src, at, len)?;
    Ok(format!("{:x}", md5::compute(&section)))
}

/// [`of_message`] for the field at `location`, from the cache if its hash
/// was computed before in this process.
///
/// # Errors
/// As [`of_message`].
pub fn of_field(store: &dyn Store, location: &FieldLocation) -> Result<Arc<str>, CError> {
    let key: CacheKey = (
        location.uri.clone(),
        location.offset,
        location.length,
        location.checksum,
    );
    if let Some(h) = CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|c| c.get(&key))
    {
        return Ok(h.clone());
    }
    let hash: Arc<str> = of_message(&mut InStore { store, location })?.into();
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(key, hash.clone());
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash is ecCodes' `md5GridSection`, for GRIB1 and GRIB2 fields
    /// of every fixture (regular, reduced Gaussian, with and without a
    /// bitmap).
    #[test]
    fn the_hash_is_eccodes_md5_grid_section() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/grib");
        let mut files: Vec<_> = std::fs::read_dir(format!("{dir}/extract"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.push(format!("{dir}/rd-fc.grib").into());
        files.push(format!("{dir}/levtypes.grib").into());
        let mut checked = [0usize; 3];
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            for m in fieldstore_grib::split_messages(&bytes) {
                let m = m.unwrap();
                let want =
                    match &fieldstore_grib::read_keys(m.bytes(), &["md5GridSection"]).unwrap()[0] {
                        Some(fieldstore_grib::KeyValue::Str(s)) => s.clone(),
                        other => panic!("{}: md5GridSection is {other:?}", file.display()),
                    };
                let have = of_message(&mut m.bytes()).unwrap();
                assert_eq!(have, want, "{} message {}", file.display(), m.index());
                checked[usize::from(m.edition())] += 1;
            }
        }
        assert!(checked[1] > 0 && checked[2] > 0, "{checked:?}");
    }

    #[test]
    fn a_message_cut_short_is_an_error_not_a_panic() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/grib/extract"
        );
        let bytes = std::fs::read(format!("{dir}/simple-g2.grib")).unwrap();
        for cut in [0, 4, 8, 20, 40] {
            assert!(of_message(&mut &bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(of_message(&mut &b"GRIB\0\0\0\x03xxxxxxxxxxxx"[..]).is_err());
    }
}
