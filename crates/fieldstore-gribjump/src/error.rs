//! Return codes, the per-thread last error, and the wrapper every entry
//! point runs its body in ([`entry`]): no panic crosses the boundary.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

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

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::from(c"no error recorded on this thread"));
}

/// Record `message` as the calling thread's last error.
pub fn record(message: String) {
    // A message cannot hold NUL: replace any, so that C sees all of it.
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: a call from a thread-local destructor after ours is gone
    // still returns its code.
    let _ = LAST.try_with(|l| *l.borrow_mut() = message);
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
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
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            record(format!("{function}: {}", e.0));
            failed
        }
        Err(panic) => {
            record(format!(
                "{function}: internal error (a bug in fieldstore, please report it): {}",
                panic_text(panic.as_ref())
            ));
            let _ = ok;
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
    catch_unwind(|| {
        LAST.try_with(|l| l.borrow().as_ptr())
            .unwrap_or(c"the thread is exiting".as_ptr())
    })
    .unwrap_or(c"internal error".as_ptr())
}
