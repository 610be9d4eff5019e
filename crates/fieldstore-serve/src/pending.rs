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
//! make the server grow), and they keep the room their frame took in the
//! budgets until taken; each entry belongs to its [`Owner`] — only a
//! connection of the same client process (host and process id of its
//! session: FDB5's client opens the store and the catalogue connections
//! separately, each with a session of its own, and a client with several
//! network addresses may reach them from different ones) can take it —
//! and is dropped when the connection that parked it ends; a token is
//! taken at most once, and tokens are not guessable (a keyed hash of a
//! counter, the key random per server): a token is only ever sent to the
//! connection that parked its field, so the owner check is a second
//! fence, not the first.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fieldstore::{Error, ErrorKind, Result};

use crate::frames::Frame;

/// The path prefix of the location a parked field is handed out under.
pub(crate) const PREFIX: &str = "/.fieldstore-pending/";

/// Who may take a parked field: the client process that parked it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Owner {
    /// The host its session names.
    pub(crate) host: String,
    /// The process id its session names.
    pub(crate) pid: i32,
}

/// A parked field: part of the frame that carried it (its room in the
/// budgets held until the last part of the frame is taken).
#[derive(Debug, Clone)]
pub(crate) struct Parked {
    frame: Arc<Frame>,
    range: Range<usize>,
}

impl Parked {
    /// The part `range` of `frame`'s payload.
    pub(crate) fn new(frame: Arc<Frame>, range: Range<usize>) -> Parked {
        Parked { frame, range }
    }

    /// The field's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.frame.payload[self.range.clone()]
    }
}

#[derive(Debug)]
struct Entry {
    connection: u64,
    owner: Owner,
    field: Parked,
}

/// The parked fields of a server.
#[derive(Debug)]
pub(crate) struct Pending {
    limit: u64,
    next: AtomicU64,
    key: RandomState,
    inner: Mutex<(HashMap<u64, Entry>, u64)>,
}

impl Pending {
    /// An empty table holding at most `limit` bytes.
    pub(crate) fn new(limit: u64) -> Pending {
        Pending {
            limit,
            next: AtomicU64::new(1),
            key: RandomState::new(),
            inner: Mutex::new((HashMap::new(), 0)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<u64, Entry>, u64)> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Park `field` for `owner` on `connection`; the path naming it.
    ///
    /// # Errors
    /// `StorageFull` when the limit would be passed: the client should
    /// flush (archive fewer fields at once) or the server's
    /// `pendingLimit` be raised.
    pub(crate) fn park(&self, connection: u64, owner: &Owner, field: Parked) -> Result<String> {
        let mut g = self.lock();
        let size = field.range.len() as u64;
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
        let token = loop {
            let t = self.key.hash_one(self.next.fetch_add(1, Ordering::Relaxed));
            if !g.0.contains_key(&t) {
                break t;
            }
        };
        g.1 += size;
        g.0.insert(
            token,
            Entry {
                connection,
                owner: owner.clone(),
                field,
            },
        );
        Ok(format!("{PREFIX}{token:016x}"))
    }

    /// Take the field parked under `path` for `owner`.
    ///
    /// # Errors
    /// `NotFound` for a path that names nothing parked (taken already, its
    /// connection gone, never handed out by this server); `PermissionDenied`
    /// for another client's field (left parked for its owner).
    pub(crate) fn take(&self, owner: &Owner, path: &str) -> Result<Parked> {
        let token = path
            .strip_prefix(PREFIX)
            .and_then(|t| u64::from_str_radix(t, 16).ok())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("location {path} was not handed out by this server's store"),
                )
            })?;
        let mut g = self.lock();
        match g.0.get(&token) {
            None => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "no field is waiting under {path} (taken already, or its connection ended)"
                    ),
                ))
            }
            Some(e) if e.owner != *owner => {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    format!("the field under {path} was parked by another client"),
                ))
            }
            Some(_) => {}
        }
        let entry =
            g.0.remove(&token)
                .ok_or_else(|| Error::internal("entry gone"))?;
        g.1 -= entry.field.range.len() as u64;
        Ok(entry.field)
    }

    /// Drop what `connection` parked.
    pub(crate) fn forget(&self, connection: u64) {
        let mut g = self.lock();
        let mut freed = 0;
        g.0.retain(|_, e| {
            let keep = e.connection != connection;
            if !keep {
                freed += e.field.range.len() as u64;
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
    use crate::budget::Permit;
    use fieldstore_remote::frame::Header;
    use fieldstore_remote::Message;

    fn field(n: usize) -> Parked {
        let frame = Frame {
            header: Header::new(Message::Blob, false, 1, 1, 0),
            payload: vec![0; n + 2],
            permit: Permit::default(),
        };
        Parked::new(Arc::new(frame), 1..n + 1)
    }

    fn owner(pid: i32) -> Owner {
        Owner {
            host: "h".into(),
            pid,
        }
    }

    #[test]
    fn parked_bytes_are_bounded_taken_once_by_their_owner_and_forgotten_with_their_connection() {
        let p = Pending::new(10);
        let a = p.park(1, &owner(1), field(6)).unwrap();
        assert_eq!(
            p.park(2, &owner(2), field(5)).unwrap_err().kind(),
            ErrorKind::StorageFull
        );
        let b = p.park(2, &owner(2), field(4)).unwrap();
        // Another client's token is refused and stays for its owner.
        assert_eq!(
            p.take(&owner(2), &a).unwrap_err().kind(),
            ErrorKind::PermissionDenied
        );
        assert_eq!(p.take(&owner(1), &a).unwrap().bytes().len(), 6);
        assert_eq!(
            p.take(&owner(1), &a).unwrap_err().kind(),
            ErrorKind::NotFound
        );
        p.forget(2);
        assert_eq!(
            p.take(&owner(2), &b).unwrap_err().kind(),
            ErrorKind::NotFound
        );
        assert_eq!(p.bytes(), 0);
        assert_eq!(
            p.take(&owner(1), "/etc/passwd").unwrap_err().kind(),
            ErrorKind::NotFound
        );
        // Tokens are not a counter's values.
        let c = p.park(3, &owner(3), field(1)).unwrap();
        let d = p.park(3, &owner(3), field(1)).unwrap();
        let n = |s: &str| u64::from_str_radix(s.strip_prefix(PREFIX).unwrap(), 16).unwrap();
        assert!(n(&d).abs_diff(n(&c)) > 1, "{c} {d}");
    }
}
