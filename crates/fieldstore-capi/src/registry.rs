//! The tables of live objects: what C holds are tokens, looked up here.
//!
//! A token is `serial << 8 | kind << 4`: never NULL, 16-byte aligned (it
//! looks like a pointer to C), tagged with the object's type, and unique for
//! the life of the process (serials are never reused). So:
//! - a pointer of another type is recognised by its tag, even if live;
//! - a deleted object is recognised by its absence (its serial was issued);
//! - a pointer this library never issued (garbage, or FDB5's) fails the
//!   format or serial check.
//!
//! No token is ever dereferenced. The table is sharded by serial to keep
//! threads that use different objects off each other's locks; each shard's
//! lock is held only to clone or remove one `Arc`.
//!
//! List iterators and split keys, called many times per listed field, live
//! in two slabs of [`hot`](crate::hot) objects instead ([`LISTS`],
//! [`SPLIT_KEYS`]), with the same guarantees. The fork handlers
//! ([`install_fork_handlers`]), which hold the locks of all these tables
//! around `fork()`, are here: the lowest module that owns every one of
//! them.

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Once};

use crate::error::CError;
use crate::hot::Slab;
use crate::kind::Kind;
use crate::listing::ListState;
use crate::split_key::SplitState;

/// A type C holds tokens of.
pub trait Object: Any + Send + Sync {
    /// Its C type.
    const KIND: Kind;
}

type Entry = Arc<dyn Any + Send + Sync>;
/// A `BTreeMap`, not a `HashMap`: its nodes are pointed to from their
/// start, so leak checkers (valgrind) see the live table as reachable, not
/// "possibly lost" as with hashbrown's interior pointers.
type Shard = Mutex<BTreeMap<u64, Entry>>;

const SHARDS: usize = 16;

static NEXT: AtomicU64 = AtomicU64::new(1);
static TABLE: LazyLock<[Shard; SHARDS]> =
    LazyLock::new(|| std::array::from_fn(|_| Mutex::new(BTreeMap::new())));

fn shard(serial: u64) -> MutexGuard<'static, BTreeMap<u64, Entry>> {
    install_fork_handlers();
    // A panic while holding a shard's lock leaves the map consistent (the
    // critical sections are single map operations).
    TABLE[(serial % SHARDS as u64) as usize]
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Register `object`; the token C gets for it.
pub fn insert<T: Object>(object: T) -> *mut c_void {
    let serial = NEXT.fetch_add(1, Ordering::Relaxed);
    shard(serial).insert(serial, Arc::new(object));
    (serial << 8 | (T::KIND as u64) << 4) as usize as *mut c_void
}

/// The serial of `token` if it is a live-or-deleted object of type `T`.
fn serial_of<T: Object>(token: *const c_void) -> Result<u64, CError> {
    let name = T::KIND.c_name();
    if token.is_null() {
        return Err(CError::invalid(format!("the {name} argument is NULL")));
    }
    let raw = token as usize as u64;
    let serial = raw >> 8;
    let issued = raw & 0xf == 0 && serial != 0 && serial < NEXT.load(Ordering::Relaxed);
    let kind = Kind::from_tag((raw >> 4) & 0xf).filter(|_| issued);
    match kind {
        Some(k) if k == T::KIND => Ok(serial),
        Some(k) => Err(CError::invalid(format!(
            "the {name} argument {token:p} is a {}, not a {name}",
            k.c_name()
        ))),
        None => Err(CError::invalid(format!(
            "the {name} argument {token:p} is not an object this library created"
        ))),
    }
}

fn gone<T: Object>(token: *const c_void) -> CError {
    CError::invalid(format!(
        "the {} argument {token:p} was deleted",
        T::KIND.c_name()
    ))
}

/// The object `token` names, shared for the length of the call.
///
/// # Errors
/// `InvalidInput` naming the argument: NULL, not a `T`, deleted.
pub fn get<T: Object>(token: *const c_void) -> Result<Arc<T>, CError> {
    let serial = serial_of::<T>(token)?;
    let removals = REMOVALS.load(Ordering::Acquire);
    let entry = match recent(serial, removals) {
        Some(e) => Some(e),
        None => {
            let entry = shard(serial).get(&serial).cloned();
            if let Some(e) = &entry {
                remember(serial, removals, e);
            }
            entry
        }
    };
    entry
        .and_then(|e| e.downcast::<T>().ok())
        .ok_or_else(|| gone::<T>(token))
}

// ---- the per-thread cache of recent lookups ------------------------------
//
// A client calls several functions on the same few objects in a row (a
// handle and a data reader; list iterators and split keys, called many
// times per element, live in the slabs instead): each thread keeps
// its last few lookups, so that those calls skip the table's lock. An entry
// is a `Weak` (it keeps no object alive: deleting a handle still closes its
// files) tagged with the number of removals from the table when it was
// looked up; any removal since makes every entry stale, so a deleted object
// is never found here after its `remove` returned (the increment is a
// release, the check an acquire).

/// Removals from the table so far.
static REMOVALS: AtomicU64 = AtomicU64::new(0);

const RECENT: usize = 4;

type Recent = [Option<(u64, u64, std::sync::Weak<dyn Any + Send + Sync>)>; RECENT];

thread_local! {
    static CACHE: std::cell::RefCell<(Recent, usize)> =
        const { std::cell::RefCell::new(([const { None }; RECENT], 0)) };
}

fn recent(serial: u64, removals: u64) -> Option<Entry> {
    CACHE
        .try_with(|c| {
            c.borrow().0.iter().flatten().find_map(|(s, r, weak)| {
                (*s == serial && *r == removals)
                    .then(|| weak.upgrade())
                    .flatten()
            })
        })
        .ok()
        .flatten()
}

fn remember(serial: u64, removals: u64, entry: &Entry) {
    let _ = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        let slot = c.1;
        c.0[slot] = Some((serial, removals, Arc::downgrade(entry)));
        c.1 = (slot + 1) % RECENT;
    });
}

/// Unregister the object `token` names; it is freed when the last call
/// using it returns.
///
/// # Errors
/// As [`get`].
pub fn remove<T: Object>(token: *const c_void) -> Result<Arc<T>, CError> {
    let serial = serial_of::<T>(token)?;
    let entry = shard(serial).remove(&serial);
    if entry.is_some() {
        REMOVALS.fetch_add(1, Ordering::Release);
    }
    entry
        .and_then(|e| e.downcast::<T>().ok())
        .ok_or_else(|| gone::<T>(token))
}

// ---- the slabs of hot objects ------------------------------------------

/// The list iterators (`fdb_listiterator_t`).
pub static LISTS: Slab<ListState> = Slab::new(Kind::ListIterator, install_fork_handlers);
/// The split keys (`fdb_split_key_t`).
pub static SPLIT_KEYS: Slab<SplitState> = Slab::new(Kind::SplitKey, install_fork_handlers);

/// How many objects are live (not yet deleted), in the table and in the
/// slabs.
pub fn live() -> usize {
    let table: usize = TABLE
        .iter()
        .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len())
        .sum();
    table + LISTS.live() + SPLIT_KEYS.live()
}

/// How many objects created through this library are not yet deleted: a
/// client can check it releases everything it creates (a fieldstore
/// extension).
#[no_mangle]
pub extern "C" fn fieldstore_live_objects() -> usize {
    std::panic::catch_unwind(live).unwrap_or(0)
}

// ---- fork -------------------------------------------------------------

thread_local! {
    /// The locks `prepare` took, released by `parent` and `child` (which run
    /// in the thread that called `fork`).
    static HELD: std::cell::RefCell<Vec<Box<dyn Any>>> = const { std::cell::RefCell::new(Vec::new()) };
}

extern "C" fn prepare() {
    // Always in the same order: ecCodes', the handler, the shards, then the
    // slabs of hot objects (no
    // code path takes one of them while holding a later one).
    let _ = std::panic::catch_unwind(|| {
        let mut held: Vec<Box<dyn Any>> = Vec::with_capacity(SHARDS + 4);
        held.push(Box::new(fieldstore_grib::hold_for_fork()));
        held.push(Box::new(
            crate::error::handler_lock()
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        ));
        for s in TABLE.iter() {
            held.push(Box::new(s.lock().unwrap_or_else(|p| p.into_inner())));
        }
        held.push(Box::new(LISTS.hold_for_fork()));
        held.push(Box::new(SPLIT_KEYS.hold_for_fork()));
        HELD.with(|h| *h.borrow_mut() = held);
    });
}

extern "C" fn release() {
    let _ = std::panic::catch_unwind(|| {
        HELD.with(|h| {
            // In the reverse order of locking.
            let mut held = std::mem::take(&mut *h.borrow_mut());
            while let Some(guard) = held.pop() {
                drop(guard);
            }
        });
    });
}

/// Take the library's own locks — and the lock every ecCodes call runs
/// under ([`fieldstore_grib::hold_for_fork`]) — around `fork()` (installed
/// once per process, at the first use of the table or at `fdb_initialise`),
/// so that the child never inherits a lock held by a thread that does not
/// exist in it.
///
/// Objects in use by another thread at the moment of the fork (a handle in
/// the middle of an archive) keep their own state locked in the child: the
/// child should use objects it creates, or ones no other thread was using.
pub fn install_fork_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the three functions are `extern "C"`, never unwind, and
        // only take and release this module's locks.
        unsafe {
            libc::pthread_atfork(Some(prepare), Some(release), Some(release));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[derive(Debug)]
    struct Thing;
    impl Object for Thing {
        const KIND: Kind = Kind::Key;
    }

    #[derive(Debug)]
    struct Counted(Arc<std::sync::atomic::AtomicUsize>);
    impl Object for Counted {
        const KIND: Kind = Kind::Request;
    }
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The per-thread cache neither finds a deleted object nor keep it
    /// alive: after `remove` returns, every thread gets "was deleted", and
    /// the object was dropped although two threads had looked it up.
    #[test]
    fn a_deleted_object_is_gone_for_every_thread_and_kept_alive_by_no_cache() {
        let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let token = insert(Counted(dropped.clone())) as usize;
        assert!(get::<Counted>(token as *const c_void).is_ok());
        let (looked_tx, looked_rx) = std::sync::mpsc::channel();
        let (removed_tx, removed_rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            assert!(get::<Counted>(token as *const c_void).is_ok());
            assert!(get::<Counted>(token as *const c_void).is_ok()); // from the cache
            looked_tx.send(()).unwrap();
            removed_rx.recv().unwrap();
            get::<Counted>(token as *const c_void).unwrap_err().message
        });
        looked_rx.recv().unwrap();
        remove::<Counted>(token as *const c_void).unwrap();
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "dropped at once");
        removed_tx.send(()).unwrap();
        assert!(other.join().unwrap().contains("was deleted"));
        assert!(get::<Counted>(token as *const c_void)
            .unwrap_err()
            .message
            .contains("was deleted"));
    }

    /// Fork while another thread holds every lock of the library for a
    /// while; the child then takes them all. With the fork handlers, the
    /// fork waits for the holder, and the child finishes; without them the
    /// child would inherit held locks and hang (it is killed after 10 s).
    #[test]
    fn a_child_forked_while_a_thread_holds_the_locks_does_not_hang() {
        install_fork_handlers();
        let token = insert(Thing);
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let eccodes = fieldstore_grib::hold_for_fork();
            let handler = crate::error::handler_lock().lock().unwrap();
            let shards: Vec<_> = TABLE.iter().map(|s| s.lock().unwrap()).collect();
            held_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            drop(shards);
            drop(handler);
            drop(eccodes);
        });
        held_rx.recv().unwrap();
        // SAFETY: the child only takes this module's locks, allocates
        // (glibc's malloc is fork-safe) and calls `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = get::<Thing>(token).is_ok()
                && (0..2 * SHARDS).all(|_| remove::<Thing>(insert(Thing)).is_ok())
                && crate::error::handler_lock().lock().is_ok()
                && fieldstore_grib::param_id("2t") == Some(167);
            // SAFETY: ends the child without running the parent's atexit
            // handlers or test harness.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        let mut waited = 0;
        loop {
            // SAFETY: waiting for our own child.
            let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if done == pid {
                break;
            }
            if waited > 10_000 {
                // SAFETY: killing and reaping our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("the child hung on a lock it inherited");
            }
            std::thread::sleep(Duration::from_millis(10));
            waited += 10;
        }
        holder.join().unwrap();
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "status {status}"
        );
        remove::<Thing>(token).unwrap();
    }
}
