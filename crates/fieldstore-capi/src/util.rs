//! Reading the caller's arguments: C strings and out-pointers, NULL-checked.

use std::ffi::{c_char, CStr};
use std::sync::{Mutex, MutexGuard};

use crate::error::CError;

/// The string `p` points to, as UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays unchanged
/// for the lifetime `'a` (the call).
pub(crate) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str, CError> {
    if p.is_null() {
        return Err(CError::invalid(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, and the caller promises a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| CError::invalid(format!("{what} is not UTF-8: {s:?}")))
}

/// The out-pointer `p`, to be written.
///
/// # Safety
/// `p` is NULL or points to writable, aligned memory for a `T` for the
/// lifetime `'a` (the call).
pub(crate) unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, CError> {
    // SAFETY: the caller promises `p` is NULL or valid for writes.
    unsafe { p.as_mut() }.ok_or_else(|| CError::invalid(format!("{what} is NULL")))
}

/// Lock an object's state. A panic in an earlier call on the object (a
/// bug, reported then) leaves its state usable: each call leaves it
/// consistent before any step that can fail.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
