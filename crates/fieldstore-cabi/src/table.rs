//! The table of live objects behind the tokens of one C API ([`token`]).
//!
//! Objects are held as `Arc`s: a call clones the `Arc` ([`Table::get`]), so
//! an object deleted by one thread while another uses it lives until that
//! call returns. The table is sharded by serial, to keep threads that use
//! different objects off each other's locks; each shard's lock is held
//! only for one map operation (so a panic leaves the map whole, and a
//! poisoned lock is taken anyway).
//!
//! # The per-thread cache of recent lookups
//! A client calls several functions on the same few objects in a row, so
//! each thread keeps its last few lookups and those calls skip the shard's
//! lock. An entry is a `Weak` (it keeps no object alive: deleting a handle
//! still closes its files) tagged with the table and the number of removals
//! from it when it was looked up; any removal since makes every entry
//! stale, so a deleted object is never found there after its
//! [`Table::remove`] returned (the count's increment is a release, its
//! check an acquire).
//!
//! [`token`]: crate::token

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::fork_guard::Held;
use crate::token::{self, Kind, TokenError};

type Entry = Arc<dyn Any + Send + Sync>;
/// A `BTreeMap`, not a `HashMap`: its nodes are pointed to from their
/// start, so leak checkers (valgrind) see the live table as reachable, not
/// "possibly lost" as with hashbrown's interior pointers.
type Map = BTreeMap<u64, Entry>;

const SHARDS: usize = 16;

/// The live objects of one C API, whose types are `K`.
pub struct Table<K> {
    /// Run before every use of a shard's lock: where the library registers
    /// the fork guard that holds the shards' locks around `fork()`.
    on_use: fn(),
    next: AtomicU64,
    removals: AtomicU64,
    shards: [Mutex<Map>; SHARDS],
    kinds: PhantomData<fn() -> K>,
}

impl<K: Kind> Table<K> {
    /// An empty table; `on_use` runs before each use of its locks (see
    /// [`Table::hold_for_fork`]).
    pub const fn new(on_use: fn()) -> Table<K> {
        Table {
            on_use,
            next: AtomicU64::new(1),
            removals: AtomicU64::new(0),
            shards: [const { Mutex::new(BTreeMap::new()) }; SHARDS],
            kinds: PhantomData,
        }
    }

    fn shard(&self, serial: u64) -> MutexGuard<'_, Map> {
        (self.on_use)();
        self.shards[(serial % SHARDS as u64) as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Register `object` of type `kind`; the token C gets for it.
    pub fn insert<T: Any + Send + Sync>(&self, object: T, kind: K) -> *mut c_void {
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        self.shard(serial).insert(serial, Arc::new(object));
        token::encode(serial, kind)
    }

    fn serial_of(&self, token: *const c_void, kind: K) -> Result<u64, TokenError> {
        token::serial_of(token, kind, |s| s < self.next.load(Ordering::Relaxed))
    }

    /// The object `token` names, a `T` of type `kind`, shared for the
    /// length of the call.
    ///
    /// # Errors
    /// Naming the argument: NULL, not a token of this table, of another
    /// type, deleted.
    pub fn get<T: Any + Send + Sync>(
        &self,
        token: *const c_void,
        kind: K,
    ) -> Result<Arc<T>, TokenError> {
        let serial = self.serial_of(token, kind)?;
        let removals = self.removals.load(Ordering::Acquire);
        let entry = match recent(self.id(), serial, removals) {
            Some(e) => Some(e),
            None => {
                let entry = self.shard(serial).get(&serial).cloned();
                if let Some(e) = &entry {
                    remember(self.id(), serial, removals, e);
                }
                entry
            }
        };
        entry
            .and_then(|e| e.downcast::<T>().ok())
            .ok_or_else(|| token::deleted(token, kind))
    }

    /// Unregister the object `token` names; it is freed when the last call
    /// using it returns.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub fn remove<T: Any + Send + Sync>(
        &self,
        token: *const c_void,
        kind: K,
    ) -> Result<Arc<T>, TokenError> {
        let serial = self.serial_of(token, kind)?;
        let entry = self.shard(serial).remove(&serial);
        if entry.is_some() {
            self.removals.fetch_add(1, Ordering::Release);
        }
        entry
            .and_then(|e| e.downcast::<T>().ok())
            .ok_or_else(|| token::deleted(token, kind))
    }

    /// How many objects are live (not yet deleted).
    pub fn live(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }

    /// Every shard's lock, in order: for the library's fork guard
    /// ([`crate::fork_guard`]), taken after any lock a code path may hold
    /// while it uses the table.
    pub fn hold_for_fork(&'static self) -> Held {
        self.shards
            .iter()
            .map(|s| Box::new(s.lock().unwrap_or_else(|p| p.into_inner())) as Box<dyn Any>)
            .collect()
    }

    fn id(&self) -> usize {
        self as *const Table<K> as usize
    }
}

const RECENT: usize = 4;

type Recent = [Option<(usize, u64, u64, Weak<dyn Any + Send + Sync>)>; RECENT];

thread_local! {
    static CACHE: std::cell::RefCell<(Recent, usize)> =
        const { std::cell::RefCell::new(([const { None }; RECENT], 0)) };
}

fn recent(table: usize, serial: u64, removals: u64) -> Option<Entry> {
    CACHE
        .try_with(|c| {
            c.borrow().0.iter().flatten().find_map(|(t, s, r, weak)| {
                (*t == table && *s == serial && *r == removals)
                    .then(|| weak.upgrade())
                    .flatten()
            })
        })
        .ok()
        .flatten()
}

fn remember(table: usize, serial: u64, removals: u64, entry: &Entry) {
    let _ = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        let slot = c.1;
        c.0[slot] = Some((table, serial, removals, Arc::downgrade(entry)));
        c.1 = (slot + 1) % RECENT;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tests::TestKind;
    use std::sync::atomic::AtomicUsize;

    static TABLE: Table<TestKind> = Table::new(|| {});

    #[derive(Debug)]
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The per-thread cache neither finds a deleted object nor keeps it
    /// alive: after `remove` returns, every thread gets "was deleted", and
    /// the object was dropped although two threads had looked it up.
    #[test]
    fn a_deleted_object_is_gone_for_every_thread_and_kept_alive_by_no_cache() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let token = TABLE.insert(Counted(dropped.clone()), TestKind::A) as usize;
        let get = move || TABLE.get::<Counted>(token as *const c_void, TestKind::A);
        assert!(get().is_ok());
        let (looked_tx, looked_rx) = std::sync::mpsc::channel();
        let (removed_tx, removed_rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            assert!(get().is_ok());
            assert!(get().is_ok()); // from the cache
            looked_tx.send(()).unwrap();
            removed_rx.recv().unwrap();
            get().unwrap_err().0
        });
        looked_rx.recv().unwrap();
        let live = TABLE.live();
        TABLE
            .remove::<Counted>(token as *const c_void, TestKind::A)
            .unwrap();
        assert_eq!(TABLE.live(), live - 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "dropped at once");
        removed_tx.send(()).unwrap();
        assert!(other.join().unwrap().contains("was deleted"));
        assert!(get().unwrap_err().0.contains("was deleted"));
        assert!(TABLE
            .get::<Counted>(token as *const c_void, TestKind::B)
            .unwrap_err()
            .0
            .contains("is a a_t, not a b_t"));
    }
}
