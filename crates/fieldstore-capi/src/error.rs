//! Return codes, the per-thread last error, the failure handler, and the
//! wrapper every entry point runs its body in ([`entry`]).
//!
//! FDB5 keeps one error string for the whole process, so a thread can read
//! another thread's message; here each thread has its own
//! (`fieldstore_cabi::last_error`), which no client written for FDB5 can
//! tell apart except by getting the right message. Panics are caught by
//! `fieldstore_cabi::panic_guard`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Mutex;

use fieldstore::ErrorKind;

/// `FDB_SUCCESS`.
pub const FDB_SUCCESS: c_int = 0;
/// `FDB_ERROR_GENERAL_EXCEPTION`: an error fieldstore reports.
pub const FDB_ERROR_GENERAL_EXCEPTION: c_int = 1;
/// `FDB_ERROR_UNKNOWN_EXCEPTION`: an internal failure (a panic).
pub const FDB_ERROR_UNKNOWN_EXCEPTION: c_int = 2;
/// `FDB_ITERATION_COMPLETE`: an iterator is at its end.
pub const FDB_ITERATION_COMPLETE: c_int = 3;

/// An error on its way to C: what kind, and the message.
#[derive(Debug, Clone)]
pub struct CError {
    /// What the caller should do.
    pub kind: ErrorKind,
    /// What went wrong, naming the argument or the thing.
    pub message: String,
}

impl CError {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> CError {
        CError {
            kind,
            message: message.into(),
        }
    }

    /// A bad argument: fix the call.
    pub fn invalid(message: impl Into<String>) -> CError {
        CError::new(ErrorKind::InvalidInput, message)
    }
}

impl From<fieldstore::Error> for CError {
    fn from(e: fieldstore::Error) -> CError {
        CError::new(e.kind(), e.message().to_string())
    }
}

impl From<fieldstore::RequestError> for CError {
    fn from(e: fieldstore::RequestError) -> CError {
        fieldstore::Error::from(e).into()
    }
}

impl From<fieldstore::KeyError> for CError {
    fn from(e: fieldstore::KeyError) -> CError {
        fieldstore::Error::from(e).into()
    }
}

/// The result of an entry point's body: a return code or an error.
pub type CResult = Result<c_int, CError>;

/// The number `fieldstore_last_error_kind` returns for a kind (the
/// `FieldstoreErrorKind` enum of the header).
pub fn kind_code(kind: ErrorKind) -> c_int {
    match kind {
        ErrorKind::InvalidInput => 1,
        ErrorKind::InvalidConfig => 2,
        ErrorKind::NotFound => 3,
        ErrorKind::PermissionDenied => 4,
        ErrorKind::StorageFull => 5,
        ErrorKind::Unavailable => 6,
        ErrorKind::Corrupt => 7,
        ErrorKind::Locked => 8,
        ErrorKind::Unsupported => 9,
        ErrorKind::Io => 10,
        _ => 11,
    }
}

/// The failure handler and its context (as an address: the context is the
/// caller's, and only passed back to it).
type Handler = Option<(unsafe extern "C" fn(*mut c_void, c_int), usize)>;

static HANDLER: Mutex<Handler> = Mutex::new(None);

/// The failure handler's lock, for the fork handlers.
pub(crate) fn handler_lock() -> &'static Mutex<Handler> {
    &HANDLER
}

fn record(code: c_int, kind: c_int, message: String) {
    fieldstore_cabi::last_error::record(message, kind);
    let handler = *HANDLER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((f, context)) = handler {
        // SAFETY: the caller registered `f` with `fdb_set_failure_handler`
        // and promised it may be called with its context and a code.
        unsafe { f(context as *mut c_void, code) };
    }
}

/// Run an entry point's body: its return code, or, on error, the error
/// recorded for the thread (and the failure handler called) and
/// `FDB_ERROR_GENERAL_EXCEPTION`; a panic becomes
/// `FDB_ERROR_UNKNOWN_EXCEPTION`. Messages start with the function's name.
pub fn entry(function: &'static str, body: impl FnOnce() -> CResult) -> c_int {
    match fieldstore_cabi::panic_guard::catch(body) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            record(
                FDB_ERROR_GENERAL_EXCEPTION,
                kind_code(e.kind),
                format!("{function}: {}: {}", e.kind, e.message),
            );
            FDB_ERROR_GENERAL_EXCEPTION
        }
        Err(panic) => {
            record(
                FDB_ERROR_UNKNOWN_EXCEPTION,
                kind_code(ErrorKind::Internal),
                format!("{function}: {panic}"),
            );
            FDB_ERROR_UNKNOWN_EXCEPTION
        }
    }
}

/// Human-readable text for a return code: for the two error codes, the
/// calling thread's last error message.
///
/// The pointer stays valid until the thread's next failing call (or its
/// exit); the constant texts are static.
#[no_mangle]
pub extern "C" fn fdb_error_string(err: c_int) -> *const c_char {
    let fixed: &'static CStr = match err {
        FDB_SUCCESS => c"Success",
        FDB_ITERATION_COMPLETE => c"Iteration complete",
        FDB_ERROR_GENERAL_EXCEPTION | FDB_ERROR_UNKNOWN_EXCEPTION => {
            return fieldstore_cabi::last_error::message();
        }
        _ => c"<unknown>",
    };
    fixed.as_ptr()
}

/// Register `handler`, called with `context` and the code after every
/// failed call, in the thread that failed. NULL removes it.
///
/// # Safety
/// `handler`, if not NULL, must be a function that may be called from any
/// thread with `context` for as long as it stays registered.
#[no_mangle]
pub unsafe extern "C" fn fdb_set_failure_handler(
    handler: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
    context: *mut c_void,
) -> c_int {
    entry("fdb_set_failure_handler", || {
        *HANDLER.lock().unwrap_or_else(|p| p.into_inner()) = handler.map(|h| (h, context as usize));
        Ok(FDB_SUCCESS)
    })
}

/// What to do about the calling thread's last error (the header's
/// `FieldstoreErrorKind`); 0 if no call has failed on this thread.
#[no_mangle]
pub extern "C" fn fieldstore_last_error_kind() -> c_int {
    fieldstore_cabi::last_error::kind(kind_code(ErrorKind::Internal))
}
