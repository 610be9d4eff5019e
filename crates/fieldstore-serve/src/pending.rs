//! Fields between FDB5's two archive steps.
//!
//! FDB5's client archives a field in two steps: the field's bytes go to a
//! store server, which answers with a location; then the field's key and
//! that location go to the catalogue. fieldstore's archive takes key and
//! bytes at once (so that its own ordering — data durable before the
//! catalogue makes it visible — holds), so the store step parks the bytes
//! here under a token, hands the client a location naming the token, and
//! the catalogue step takes them back and archives.
//!
//! Invariants: the bytes parked never exceed the limit (a store blob over
//! it is refused, so a client that never sends the catalogue step cannot
//! make the server grow); each entry belongs to the connection that parked
//! it and is dropped when that connection ends; a token is taken at most
//! once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use fieldstore::{Error, ErrorKind, Result};

/// The path prefix of the location a parked field is handed out under.
pub(crate) const PREFIX: &str = "/.fieldstore-pending/";

#[derive(Debug)]
struct Entry {
    connection: u64,
    bytes: Vec<u8>,
}

/// The parked fields of a server.
#[derive(Debug)]
pub(crate) struct Pending {
    limit: u64,
    next: AtomicU64,
    inner: Mutex<(HashMap<u64, Entry>, u64)>,
}

impl Pending {
    /// An empty table holding at most `limit` bytes.
    pub(crate) fn new(limit: u64) -> Pending {
        Pending {
            limit,
            next: AtomicU64::new(1),
            inner: Mutex::new((HashMap::new(), 0)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<u64, Entry>, u64)> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Park `bytes` for `connection`; the path naming them.
    ///
    /// # Errors
    /// `StorageFull` when the limit would be passed: the client should
    /// flush (archive fewer fields at once) or the server's
    /// `pendingLimit` be raised.
    pub(crate) fn park(&self, connection: u64, bytes: Vec<u8>) -> Result<String> {
        let mut g = self.lock();
        let size = bytes.len() as u64;
        if g.1 + size > self.limit {
            return Err(Error::new(
                ErrorKind::StorageFull,
                format!(
                    "{} bytes of fields are waiting for their catalogue entry; {size} more would \
                     pass the server's pendingLimit of {} bytes",
                    g.1, self.limit
                ),
            ));
        }
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        g.1 += size;
        g.0.insert(token, Entry { connection, bytes });
        Ok(format!("{PREFIX}{token}"))
    }

    /// Take the bytes parked under `path`.
    ///
    /// # Errors
    /// `NotFound` for a path that names nothing parked (taken already, its
    /// connection gone, or never handed out by this server).
    pub(crate) fn take(&self, path: &str) -> Result<Vec<u8>> {
        let token = path
            .strip_prefix(PREFIX)
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("location {path} was not handed out by this server's store"),
                )
            })?;
        let mut g = self.lock();
        let entry = g.0.remove(&token).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "no field is waiting under {path} (taken already, or its connection ended)"
                ),
            )
        })?;
        g.1 -= entry.bytes.len() as u64;
        Ok(entry.bytes)
    }

    /// Drop what `connection` parked.
    pub(crate) fn forget(&self, connection: u64) {
        let mut g = self.lock();
        let mut freed = 0;
        g.0.retain(|_, e| {
            let keep = e.connection != connection;
            if !keep {
                freed += e.bytes.len() as u64;
            }
            keep
        });
        g.1 -= freed;
    }

    /// Bytes parked now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.lock().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parked_bytes_are_bounded_taken_once_and_forgotten_with_their_connection() {
        let p = Pending::new(10);
        let a = p.park(1, vec![0; 6]).unwrap();
        assert_eq!(
            p.park(2, vec![0; 5]).unwrap_err().kind(),
            ErrorKind::StorageFull
        );
        let b = p.park(2, vec![0; 4]).unwrap();
        assert_eq!(p.take(&a).unwrap().len(), 6);
        assert_eq!(p.take(&a).unwrap_err().kind(), ErrorKind::NotFound);
        p.forget(2);
        assert_eq!(p.take(&b).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(p.bytes(), 0);
        assert_eq!(
            p.take("/etc/passwd").unwrap_err().kind(),
            ErrorKind::NotFound
        );
    }
}
