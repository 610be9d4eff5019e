//! Return codes, the per-thread last error, and the wrapper every entry
//! point runs its body in ([`entry`]): no panic crosses the boundary
//! (`fieldstore_cabi`'s last error and panic guard, with GribJump's codes).

use std::ffi::{c_char, c_int};

/// `GRIBJUMP_SUCCESS`.
pub const GRIBJUMP_SUCCESS: c_int = 0;
/// `GRIBJUMP_ERROR`.
pub const GRIBJUMP_ERROR: c_int = 1;
/// `GRIBJUMP_ITERATOR_SUCCESS`: a result was returned.
pub const GRIBJUMP_ITERATOR_SUCCESS: c_int = 0;
/// `GRIBJUMP_ITERATOR_COMPLETE`: every result was returned.
pub const GRIBJUMP_ITERATOR_COMPLETE: c_int = 1;
/// `GRIBJUMP_ITERATOR_ERROR`.
pub const GRIBJUMP_ITERATOR_ERROR: c_int = 2;

/// An error on its way to C: its message, naming the argument or the
/// thing.
#[derive(Debug, Clone)]
pub struct CError(pub String);

impl CError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> CError {
        CError(message.into())
    }
}

impl From<fieldstore::Error> for CError {
    fn from(e: fieldstore::Error) -> CError {
        CError(format!("{}: {}", e.kind(), e.message()))
    }
}

impl From<fieldstore::RequestError> for CError {
    fn from(e: fieldstore::RequestError) -> CError {
        fieldstore::Error::from(e).into()
    }
}

/// Record `message` as the calling thread's last error.
pub fn record(message: String) {
    fieldstore_cabi::last_error::record(message, 0);
}

/// Run an entry point's body: `ok` on success; on an error or a panic, the
/// message recorded for the thread (starting with the function's name) and
/// `failed`.
pub fn guarded(
    function: &'static str,
    ok: c_int,
    failed: c_int,
    body: impl FnOnce() -> Result<c_int, CError>,
) -> c_int {
    let _ = ok;
    match fieldstore_cabi::panic_guard::catch(body) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            record(format!("{function}: {}", e.0));
            failed
        }
        Err(panic) => {
            record(format!("{function}: {panic}"));
            failed
        }
    }
}

/// [`guarded`] for the functions returning `gribjump_error_t`.
pub fn entry(function: &'static str, body: impl FnOnce() -> Result<(), CError>) -> c_int {
    guarded(function, GRIBJUMP_SUCCESS, GRIBJUMP_ERROR, || {
        body().map(|()| GRIBJUMP_SUCCESS)
    })
}

/// The calling thread's last error message. The pointer stays valid until
/// the thread's next failing call (or its exit).
#[no_mangle]
pub extern "C" fn gribjump_error_string() -> *const c_char {
    fieldstore_cabi::last_error::message()
}
