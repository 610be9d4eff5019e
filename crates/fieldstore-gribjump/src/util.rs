//! Reading the caller's arguments: C strings, arrays and out-pointers,
//! NULL-checked.

use std::ffi::{c_char, CStr};

use crate::error::CError;

/// The string `p` points to, as UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays unchanged
/// for the lifetime `'a` (the call).
pub(crate) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str, CError> {
    if p.is_null() {
        return Err(CError::new(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, and the caller promises a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| CError::new(format!("{what} is not UTF-8: {s:?}")))
}

/// The string `p` points to, or `None` for NULL.
///
/// # Safety
/// As [`c_str`].
pub(crate) unsafe fn opt_str<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, CError> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: the caller's promise.
        unsafe { c_str(p, what) }.map(Some)
    }
}

/// The out-pointer `p`, to be written.
///
/// # Safety
/// `p` is NULL or points to writable, aligned memory for a `T` for the
/// lifetime `'a` (the call).
pub(crate) unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, CError> {
    // SAFETY: the caller promises `p` is NULL or valid for writes.
    unsafe { p.as_mut() }.ok_or_else(|| CError::new(format!("{what} is NULL")))
}

/// The `n` elements at `p` (NULL allowed only when `n` is 0).
///
/// # Safety
/// `p` is NULL or points to `n` readable elements for the lifetime `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T], CError> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CError::new(format!(
            "{what} is NULL but {n} elements were promised"
        )));
    }
    // SAFETY: the caller promises `n` readable elements at `p`.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// The `n` writable elements at `p`.
///
/// # Safety
/// `p` is NULL or points to `n` writable elements for the lifetime `'a`.
pub(crate) unsafe fn slice_mut<'a, T>(
    p: *mut T,
    n: usize,
    what: &str,
) -> Result<&'a mut [T], CError> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(CError::new(format!(
            "{what} is NULL but {n} elements were promised"
        )));
    }
    // SAFETY: the caller promises `n` writable elements at `p`.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Half-open ranges from a flat array of `[start, end)` pairs, each
/// checked (`start < end`).
///
/// # Safety
/// As [`slice`].
pub(crate) unsafe fn ranges(p: *const usize, n: usize) -> Result<Vec<(u64, u64)>, CError> {
    if n % 2 != 0 {
        return Err(CError::new(format!(
            "the range array has {n} numbers: it must hold pairs [start, end)"
        )));
    }
    // SAFETY: the caller's promise.
    let flat = unsafe { slice(p, n, "the range array") }?;
    flat.chunks_exact(2)
        .map(|c| {
            if c[0] < c[1] {
                Ok((c[0] as u64, c[1] as u64))
            } else {
                Err(CError::new(format!(
                    "the range [{}, {}) is empty or reversed: expected start < end",
                    c[0], c[1]
                )))
            }
        })
        .collect()
}
