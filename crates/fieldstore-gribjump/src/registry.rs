//! The table of live objects: what C holds are tokens, looked up here
//! (`fieldstore_cabi`'s [`Table`], the scheme `fieldstore-capi` uses too:
//! a token is never NULL, 16-byte aligned, typed, never reused, never
//! dereferenced; NULL, a token of another type, one deleted or one this
//! library never issued is an error naming the argument).
//!
//! The fork handlers ([`install_fork_handlers`]) hold the shared stores'
//! lock, ecCodes', the grid hashes' and the table's around `fork()`, so
//! that a child never inherits a lock held by a thread that does not exist
//! in it.

use std::any::Any;
use std::ffi::c_void;
use std::sync::{Arc, Once};

use fieldstore_cabi::fork_guard::{self, Held};
use fieldstore_cabi::table::Table;
use fieldstore_cabi::token::TokenError;

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
}

impl fieldstore_cabi::token::Kind for Kind {
    fn tag(self) -> u8 {
        self as u8
    }

    fn c_name(self) -> &'static str {
        Kind::c_name(self)
    }

    fn from_tag(tag: u8) -> Option<Kind> {
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

static TABLE: Table<Kind> = Table::new(install_fork_handlers);

impl From<TokenError> for CError {
    fn from(e: TokenError) -> CError {
        CError::new(e.0)
    }
}

/// Register `object`; the token C gets for it.
pub fn insert<T: Object>(object: T) -> *mut c_void {
    TABLE.insert(object, T::KIND)
}

/// The object `token` names, shared for the length of the call.
///
/// # Errors
/// Naming the argument: NULL, not a `T`, deleted.
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

/// How many objects are live (not yet deleted).
pub fn live() -> usize {
    TABLE.live()
}

/// The locks held around `fork()`, always in this order: the shared
/// stores, ecCodes', the grid hashes, then the table. A code path holding
/// one of them may take a later one (opening a store under the first calls
/// ecCodes), never an earlier one.
fn held() -> Held {
    let mut held: Held = vec![
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
    ];
    held.extend(TABLE.hold_for_fork());
    held
}

/// Take the library's locks and ecCodes' around `fork()` (registered once
/// per process, at the first use of the table or at `gribjump_initialise`).
pub fn install_fork_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| fork_guard::hold_around_fork(held));
}
