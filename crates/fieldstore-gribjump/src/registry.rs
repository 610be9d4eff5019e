//! The table of live objects: what C holds are tokens, looked up here (the
//! scheme of `fieldstore-capi`'s registry, without its hot-path caches:
//! GribJump's clients make few objects per extraction).
//!
//! A token is `serial << 8 | kind << 4`: never NULL, 16-byte aligned (it
//! looks like a pointer to C), tagged with the object's type, and unique for
//! the life of the process (serials are never reused). So a pointer of
//! another type, one deleted, or one this library never issued is
//! recognised and named in an error, never dereferenced.
//!
//! The fork handlers ([`install_fork_handlers`]) hold the table's lock,
//! the shared stores', the grid hashes' and ecCodes' around `fork()`, so that a child never inherits a lock held by a
//! thread that does not exist in it.

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use crate::error::CError;

/// The object types of the C API: the tag every token carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `gribjump_handle_t`.
    Handle = 1,
    /// `gribjump_extraction_request_t`.
    Request = 2,
    /// `gribjump_path_extraction_request_t`.
    PathRequest = 3,
    /// `gribjump_extraction_result_t`.
    Result = 4,
    /// `gribjump_extractioniterator_t`.
    Iterator = 5,
    /// `gribjump_axes_t`.
    Axes = 6,
}

impl Kind {
    /// The C type's name, for messages.
    pub fn c_name(self) -> &'static str {
        match self {
            Kind::Handle => "gribjump_handle_t",
            Kind::Request => "gribjump_extraction_request_t",
            Kind::PathRequest => "gribjump_path_extraction_request_t",
            Kind::Result => "gribjump_extraction_result_t",
            Kind::Iterator => "gribjump_extractioniterator_t",
            Kind::Axes => "gribjump_axes_t",
        }
    }

    fn from_tag(tag: u64) -> Option<Kind> {
        Some(match tag {
            1 => Kind::Handle,
            2 => Kind::Request,
            3 => Kind::PathRequest,
            4 => Kind::Result,
            5 => Kind::Iterator,
            6 => Kind::Axes,
            _ => return None,
        })
    }
}

/// A type C holds tokens of.
pub trait Object: Any + Send + Sync {
    /// Its C type.
    const KIND: Kind;
}

type Entry = Arc<dyn Any + Send + Sync>;

static NEXT: AtomicU64 = AtomicU64::new(1);
/// A `BTreeMap`: its nodes are pointed to from their start, so leak
/// checkers see the live table as reachable.
static TABLE: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());

fn table() -> MutexGuard<'static, BTreeMap<u64, Entry>> {
    install_fork_handlers();
    // Each critical section is one map operation: a panic leaves it whole.
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Register `object`; the token C gets for it.
pub fn insert<T: Object>(object: T) -> *mut c_void {
    let serial = NEXT.fetch_add(1, Ordering::Relaxed);
    table().insert(serial, Arc::new(object));
    (serial << 8 | (T::KIND as u64) << 4) as usize as *mut c_void
}

fn serial_of<T: Object>(token: *const c_void) -> Result<u64, CError> {
    let name = T::KIND.c_name();
    if token.is_null() {
        return Err(CError::new(format!("the {name} argument is NULL")));
    }
    let raw = token as usize as u64;
    let serial = raw >> 8;
    let issued = raw & 0xf == 0 && serial != 0 && serial < NEXT.load(Ordering::Relaxed);
    match Kind::from_tag((raw >> 4) & 0xf).filter(|_| issued) {
        Some(k) if k == T::KIND => Ok(serial),
        Some(k) => Err(CError::new(format!(
            "the {name} argument {token:p} is a {}, not a {name}",
            k.c_name()
        ))),
        None => Err(CError::new(format!(
            "the {name} argument {token:p} is not an object this library created"
        ))),
    }
}

fn gone<T: Object>(token: *const c_void) -> CError {
    CError::new(format!(
        "the {} argument {token:p} was deleted",
        T::KIND.c_name()
    ))
}

/// The object `token` names, shared for the length of the call.
///
/// # Errors
/// Naming the argument: NULL, not a `T`, deleted.
pub fn get<T: Object>(token: *const c_void) -> Result<Arc<T>, CError> {
    let serial = serial_of::<T>(token)?;
    let entry = table().get(&serial).cloned();
    entry
        .and_then(|e| e.downcast::<T>().ok())
        .ok_or_else(|| gone::<T>(token))
}

/// Unregister the object `token` names; it is freed when the last call
/// using it returns.
///
/// # Errors
/// As [`get`].
pub fn remove<T: Object>(token: *const c_void) -> Result<Arc<T>, CError> {
    let serial = serial_of::<T>(token)?;
    let entry = table().remove(&serial);
    entry
        .and_then(|e| e.downcast::<T>().ok())
        .ok_or_else(|| gone::<T>(token))
}

/// How many objects are live (not yet deleted).
pub fn live() -> usize {
    table().len()
}

thread_local! {
    /// The locks `prepare` took, released by `release` (both run in the
    /// thread that called `fork`).
    static HELD: std::cell::RefCell<Vec<Box<dyn Any>>> = const { std::cell::RefCell::new(Vec::new()) };
}

extern "C" fn prepare() {
    // Always in the same order: the shared stores, ecCodes', the grid
    // hashes, then the table. A code path holding one of them may take a
    // later one (opening a store under the first calls ecCodes), never an
    // earlier one.
    let _ = std::panic::catch_unwind(|| {
        let held: Vec<Box<dyn Any>> = vec![
            Box::new(
                crate::handle::opened_lock()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()),
            ),
            Box::new(fieldstore_grib::hold_for_fork()),
            Box::new(
                crate::grid_hash::cache_lock()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()),
            ),
            Box::new(TABLE.lock().unwrap_or_else(|p| p.into_inner())),
        ];
        HELD.with(|h| *h.borrow_mut() = held);
    });
}

extern "C" fn release() {
    let _ = std::panic::catch_unwind(|| {
        HELD.with(|h| {
            let mut held = std::mem::take(&mut *h.borrow_mut());
            while let Some(guard) = held.pop() {
                drop(guard);
            }
        });
    });
}

/// Take the library's lock and ecCodes' around `fork()` (installed once per
/// process, at the first use of the table or at `gribjump_initialise`).
pub fn install_fork_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: both functions are `extern "C"`, never unwind, and only
        // take and release these locks.
        unsafe {
            libc::pthread_atfork(Some(prepare), Some(release), Some(release));
        }
    });
}
