//! `gribjump_axes_t`: the values present per keyword among the fields a
//! partial request names ([`FieldStore::axes`](fieldstore::FieldStore::axes)),
//! as strings C can hold until the object is deleted.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CString};

use fieldstore::{Level, Request};

use crate::error::{entry, CError};
use crate::handle::{gribjump_handle_t, HandleObj};
use crate::registry::{self, Kind, Object};
use crate::util::{c_str, out, slice_mut};

/// Opaque C type `gribjump_axes_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct gribjump_axes_t {
    _private: [u8; 0],
}

/// `gribjump_axes_t`: keywords in order, each with its values.
#[derive(Debug)]
pub struct AxesObj {
    keys: Vec<CString>,
    values: BTreeMap<String, Vec<CString>>,
}

impl Object for AxesObj {
    const KIND: Kind = Kind::Axes;
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// The axes of the fields `reqstr` names, down to `level` (1: dataset, 2:
/// collocation, 3: element; GribJump's default is 3).
///
/// # Safety
/// `reqstr` is NULL (an error) or NUL-terminated; `axes` is NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn gribjump_new_axes(
    gj: *mut gribjump_handle_t,
    reqstr: *const c_char,
    level: c_int,
    ctx: *const c_char,
    axes: *mut *mut gribjump_axes_t,
) -> c_int {
    let _ = ctx;
    entry("gribjump_new_axes", || {
        // SAFETY: the caller's promises.
        let axes = unsafe { out(axes, "axes (the out-pointer)") }?;
        let h = registry::get::<HandleObj>(gj as *const c_void)?;
        h.fs.check_process()?;
        // SAFETY: as above.
        let text = unsafe { c_str(reqstr, "reqstr") }?;
        let request: Request = if text.trim().is_empty() {
            Request::new()
        } else {
            text.parse()
                .map_err(|e| CError::new(format!("the request {text:?}: {e}")))?
        };
        let depth = match level {
            1 => Level::Dataset,
            2 => Level::Collocation,
            3 => Level::Element,
            n => {
                return Err(CError::new(format!(
                    "level {n}: expected 1 (dataset), 2 (collocation) or 3 (element)"
                )))
            }
        };
        let found = h.fs.axes(&request, depth)?;
        let obj = AxesObj {
            keys: found.keys().map(|k| cstring(k)).collect(),
            values: found
                .into_iter()
                .map(|(k, v)| (k, v.iter().map(|s| cstring(s)).collect()))
                .collect(),
        };
        *axes = registry::insert(obj).cast();
        Ok(())
    })
}

/// How many keywords.
///
/// # Safety
/// `size` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn gribjump_axes_keys_size(
    axes: *mut gribjump_axes_t,
    size: *mut usize,
) -> c_int {
    entry("gribjump_axes_keys_size", || {
        // SAFETY: the caller's promise.
        let size = unsafe { out(size, "size") }?;
        *size = registry::get::<AxesObj>(axes as *const c_void)?.keys.len();
        Ok(())
    })
}

/// The keywords, into `keys` (which holds `size` pointers; `size` must be
/// the number of keywords). The strings live as long as the axes.
///
/// # Safety
/// `keys` points to `size` writable pointers.
#[no_mangle]
pub unsafe extern "C" fn gribjump_axes_keys(
    axes: *mut gribjump_axes_t,
    keys: *mut *const c_char,
    size: usize,
) -> c_int {
    entry("gribjump_axes_keys", || {
        let a = registry::get::<AxesObj>(axes as *const c_void)?;
        if size != a.keys.len() {
            return Err(CError::new(format!(
                "size is {size} but the axes have {} keys",
                a.keys.len()
            )));
        }
        // SAFETY: the caller's promise.
        let keys = unsafe { slice_mut(keys, size, "keys") }?;
        for (slot, k) in keys.iter_mut().zip(&a.keys) {
            // The string is owned by the axes object, which the registry
            // keeps until the caller deletes it.
            *slot = k.as_ptr();
        }
        Ok(())
    })
}

fn values_of(a: &AxesObj, key: *const c_char) -> Result<&[CString], CError> {
    // SAFETY: the caller of the entry point promises a NUL-terminated
    // string or NULL.
    let key = unsafe { c_str(key, "key") }?;
    a.values
        .get(key)
        .map(Vec::as_slice)
        .ok_or_else(|| CError::new(format!("the axes have no key {key:?}")))
}

/// How many values `key` has.
///
/// # Safety
/// `key` is NUL-terminated; `size` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn gribjump_axes_values_size(
    axes: *mut gribjump_axes_t,
    key: *const c_char,
    size: *mut usize,
) -> c_int {
    entry("gribjump_axes_values_size", || {
        // SAFETY: the caller's promise.
        let size = unsafe { out(size, "size") }?;
        let a = registry::get::<AxesObj>(axes as *const c_void)?;
        *size = values_of(&a, key)?.len();
        Ok(())
    })
}

/// The values of `key`, into `values` (`size` pointers, the number of
/// values). The strings live as long as the axes.
///
/// # Safety
/// `key` is NUL-terminated; `values` points to `size` writable pointers.
#[no_mangle]
pub unsafe extern "C" fn gribjump_axes_values(
    axes: *mut gribjump_axes_t,
    key: *const c_char,
    values: *mut *const c_char,
    size: usize,
) -> c_int {
    entry("gribjump_axes_values", || {
        let a = registry::get::<AxesObj>(axes as *const c_void)?;
        let vs = values_of(&a, key)?;
        if size != vs.len() {
            return Err(CError::new(format!(
                "size is {size} but the key has {} values",
                vs.len()
            )));
        }
        // SAFETY: the caller's promise.
        let out = unsafe { slice_mut(values, size, "values") }?;
        for (slot, v) in out.iter_mut().zip(vs) {
            *slot = v.as_ptr();
        }
        Ok(())
    })
}

/// Delete axes (the strings they handed out go with them).
#[no_mangle]
pub extern "C" fn gribjump_delete_axes(axes: *mut gribjump_axes_t) -> c_int {
    entry("gribjump_delete_axes", || {
        registry::remove::<AxesObj>(axes as *const c_void)?;
        Ok(())
    })
}
