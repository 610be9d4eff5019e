//! Raw objects as RADOS objects, striped (a RADOS object has a maximum
//! size).

use std::collections::HashMap;

use fieldstore::{ErrorKind, Result};
use fieldstore_rados::{RadosConfig, RawObjects};

use super::target::RawTarget;

/// Objects in the store's pool and namespace. A RADOS object has a
/// maximum size (`osd_max_object_size`), so a raw object is striped over
/// RADOS objects of the config's `object_size`, as the store's data objects
/// roll over: `<name>.<n>` holds bytes `[n·size, (n+1)·size)`.
pub(crate) struct RadosTarget {
    objects: RawObjects,
    pool: String,
    stripe: u64,
    /// Stripes written, per raw object (for `remove`).
    written: HashMap<String, u64>,
}

/// The pieces of `[offset, offset + len)` over stripes of `stripe` bytes:
/// (stripe, offset in it, offset in the caller's buffer, length).
fn stripe_pieces(stripe: u64, offset: u64, len: usize) -> Vec<(u64, u64, usize, usize)> {
    let mut out = Vec::new();
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let (n, within) = (at / stripe, at % stripe);
        let take = usize::try_from(stripe - within).map_or(len - done, |s| s.min(len - done));
        out.push((n, within, done, take));
        done += take;
    }
    out
}

impl RadosTarget {
    /// Objects in the pool and namespace of `config`, striped over its
    /// `object_size`.
    ///
    /// # Errors
    /// As [`RawObjects::open`].
    pub(crate) fn open(config: &RadosConfig) -> Result<RadosTarget> {
        Ok(RadosTarget {
            objects: RawObjects::open(config)?,
            pool: config.pool.clone(),
            stripe: config.object_size.max(1),
            written: HashMap::new(),
        })
    }

    fn pieces(&self, offset: u64, len: usize) -> Vec<(u64, u64, usize, usize)> {
        stripe_pieces(self.stripe, offset, len)
    }
}

impl RawTarget for RadosTarget {
    fn describe(&self) -> String {
        format!(
            "RADOS objects in pool {} (striped over objects of {} B)",
            self.pool, self.stripe
        )
    }
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()> {
        for (n, within, at, len) in self.pieces(offset, data.len()) {
            self.objects
                .write(&format!("{object}.{n}"), within, &data[at..at + len])?;
            let w = self.written.entry(object.to_string()).or_default();
            *w = (*w).max(n + 1);
        }
        Ok(())
    }
    fn sync(&mut self, _object: &str) -> Result<()> {
        // A RADOS write is acknowledged once committed on every replica.
        Ok(())
    }
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut total = 0;
        for (n, within, at, len) in self.pieces(offset, buf.len()) {
            let got =
                match self
                    .objects
                    .read(&format!("{object}.{n}"), within, &mut buf[at..at + len])
                {
                    Err(e) if e.kind() == ErrorKind::NotFound => 0,
                    r => r?,
                };
            total += got;
            if got < len {
                break;
            }
        }
        Ok(total)
    }
    fn remove(&mut self, object: &str) -> Result<()> {
        // Stripes this process wrote, and beyond until one is missing
        // (another process may have written them).
        let known = self.written.remove(object).unwrap_or(0);
        let mut n = 0;
        loop {
            let name = format!("{object}.{n}");
            let mut probe = [0u8; 1];
            let exists = match self.objects.read(&name, 0, &mut probe) {
                Err(e) if e.kind() == ErrorKind::NotFound => false,
                r => {
                    r?;
                    true
                }
            };
            if !exists && n >= known {
                return Ok(());
            }
            self.objects.remove(&name)?;
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RADOS raw objects are striped: a transfer across a stripe's end is
    /// split, each piece at its offset within its own object.
    #[test]
    fn rados_stripes_split_transfers_at_object_ends() {
        let pieces = stripe_pieces;
        assert_eq!(pieces(100, 0, 50), [(0, 0, 0, 50)]);
        assert_eq!(pieces(100, 80, 50), [(0, 80, 0, 20), (1, 0, 20, 30)]);
        assert_eq!(
            pieces(100, 250, 200),
            [(2, 50, 0, 50), (3, 0, 50, 100), (4, 0, 150, 50)]
        );
    }
}
