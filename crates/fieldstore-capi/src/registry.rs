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
//! No token is ever dereferenced. The table is `fieldstore_cabi`'s
//! ([`Table`], shared with `libgribjump`): sharded by serial to keep
//! threads that use different objects off each other's locks, each shard's
//! lock held only to clone or remove one `Arc`, with a per-thread cache of
//! recent lookups.
//!
//! List iterators and split keys, called many times per listed field, live
//! in two slabs of [`hot`](crate::hot) objects instead ([`LISTS`],
//! [`SPLIT_KEYS`]), with the same guarantees. The fork handlers
//! ([`install_fork_handlers`]), which hold the locks of all these tables
//! around `fork()`, are here: the lowest module that owns every one of
//! them.

use std::ffi::c_void;
use std::sync::{Arc, Once};

use fieldstore_cabi::fork_guard::{self, Held};
use fieldstore_cabi::table::Table;
use fieldstore_cabi::token::TokenError;

use crate::error::CError;
use crate::hot::Slab;
use crate::kind::Kind;
use crate::listing::ListState;
use crate::split_key::SplitState;

/// A type C holds tokens of.
pub trait Object: std::any::Any + Send + Sync {
    /// Its C type.
    const KIND: Kind;
}

/// The table (`fieldstore_cabi`'s: sharded, with a per-thread cache of
/// recent lookups that never finds a deleted object nor keeps one alive).
static TABLE: Table<Kind> = Table::new(install_fork_handlers);

impl From<TokenError> for CError {
    fn from(e: TokenError) -> CError {
        CError::invalid(e.0)
    }
}

/// Register `object`; the token C gets for it.
pub fn insert<T: Object>(object: T) -> *mut c_void {
    TABLE.insert(object, T::KIND)
}

/// The object `token` names, shared for the length of the call.
///
/// # Errors
/// `InvalidInput` naming the argument: NULL, not a `T`, deleted.
pub fn get<T: Object>(token: *const c_void) -> Result<Arc<T>, CError> {
    Ok(TABLE.get(token, T::KIND)?)
}

/// Unregister the object `token` names; it is freed when the last call
/// using it returns.
///
/// # Errors
/// As [`get`].
pub fn remove<T: Object>(token: *const c_void) -> Result<Arc<T>, CError> {
    Ok(TABLE.remove(token, T::KIND)?)
}

// ---- the slabs of hot objects ------------------------------------------

/// The list iterators (`fdb_listiterator_t`).
pub static LISTS: Slab<ListState> = Slab::new(Kind::ListIterator, install_fork_handlers);
/// The split keys (`fdb_split_key_t`).
pub static SPLIT_KEYS: Slab<SplitState> = Slab::new(Kind::SplitKey, install_fork_handlers);

/// How many objects are live (not yet deleted), in the table and in the
/// slabs.
pub fn live() -> usize {
    TABLE.live() + LISTS.live() + SPLIT_KEYS.live()
}

/// How many objects created through this library are not yet deleted: a
/// client can check it releases everything it creates (a fieldstore
/// extension).
#[no_mangle]
pub extern "C" fn fieldstore_live_objects() -> usize {
    std::panic::catch_unwind(live).unwrap_or(0)
}

// ---- fork -------------------------------------------------------------

/// The locks held around `fork()`, always in this order: ecCodes', the
/// failure handler's, the table's shards, then the slabs of hot objects (no
/// code path takes one of them while holding a later one).
fn held() -> Held {
    let mut held: Held = vec![
        Box::new(fieldstore_grib::hold_for_fork()),
        Box::new(
            crate::error::handler_lock()
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        ),
    ];
    held.extend(TABLE.hold_for_fork());
    held.push(Box::new(LISTS.hold_for_fork()));
    held.push(Box::new(SPLIT_KEYS.hold_for_fork()));
    held
}

/// Take the library's own locks — and the lock every ecCodes call runs
/// under ([`fieldstore_grib::hold_for_fork`]) — around `fork()` (registered
/// once per process, at the first use of the table or at `fdb_initialise`),
/// so that the child never inherits a lock held by a thread that does not
/// exist in it.
///
/// Objects in use by another thread at the moment of the fork (a handle in
/// the middle of an archive) keep their own state locked in the child: the
/// child should use objects it creates, or ones no other thread was using.
pub fn install_fork_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| fork_guard::hold_around_fork(held));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
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
            let shards = TABLE.hold_for_fork();
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
                && (0..32).all(|_| remove::<Thing>(insert(Thing)).is_ok())
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
