//! `fdb_listiterator_t` and `fdb_split_key_t`: the results of `fdb_list`,
//! and the calls on them. Their states are
//! [`ListState`](crate::listing::ListState) and [`SplitState`]; they live
//! in the [`registry`](crate::registry)'s slabs of hot objects.

use std::ffi::{c_char, c_int};

use crate::error::{entry, FDB_ITERATION_COMPLETE, FDB_SUCCESS};
use crate::registry::{LISTS, SPLIT_KEYS};
use crate::split_key::SplitState;
use crate::util::out;

/// Opaque C type `fdb_split_key_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_split_key_t {
    _private: [u8; 0],
}

/// Opaque C type `fdb_listiterator_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_listiterator_t {
    _private: [u8; 0],
}

/// A new, empty split key.
///
/// # Safety
/// `key` is NULL (an error) or points to writable memory for a pointer.
#[no_mangle]
pub unsafe extern "C" fn fdb_new_splitkey(key: *mut *mut fdb_split_key_t) -> c_int {
    entry("fdb_new_splitkey", || {
        // SAFETY: the caller's promise.
        let key = unsafe { out(key, "key (the out-pointer)") }?;
        *key = SPLIT_KEYS.insert(SplitState::default())?.cast();
        Ok(FDB_SUCCESS)
    })
}

/// The next keyword, value and level (0–2) of the split key;
/// `FDB_ITERATION_COMPLETE` after the last. The strings stay valid until
/// the split key is filled again or deleted.
///
/// # Safety
/// `key` and `value` are NULL (an error) or writable; `level` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_splitkey_next_metadata(
    it: *mut fdb_split_key_t,
    key: *mut *const c_char,
    value: *mut *const c_char,
    level: *mut usize,
) -> c_int {
    entry("fdb_splitkey_next_metadata", || {
        // SAFETY: the caller's promises.
        let (key, value) = unsafe { (out(key, "key")?, out(value, "value")?) };
        SPLIT_KEYS.with(it.cast(), |state| {
            match state.next_entry()? {
                None => Ok(FDB_ITERATION_COMPLETE),
                Some((k, v, l)) => {
                    // The strings are NUL-terminated in `buf` (see SplitState),
                    // which lives as long as the split key and is not modified
                    // until the next fill.
                    *key = k;
                    *value = v;
                    // SAFETY: NULL or writable (the caller's promise).
                    if let Some(level) = unsafe { level.as_mut() } {
                        *level = l;
                    }
                    Ok(FDB_SUCCESS)
                }
            }
        })
    })
}

/// Release a split key.
#[no_mangle]
pub extern "C" fn fdb_delete_splitkey(key: *mut fdb_split_key_t) -> c_int {
    entry("fdb_delete_splitkey", || {
        SPLIT_KEYS.remove(key.cast())?;
        Ok(FDB_SUCCESS)
    })
}

/// Move to the next element; `FDB_ITERATION_COMPLETE` after the last (and
/// at every call after that).
#[no_mangle]
pub extern "C" fn fdb_listiterator_next(it: *mut fdb_listiterator_t) -> c_int {
    entry("fdb_listiterator_next", || {
        LISTS.with(it.cast(), |state| {
            Ok(if state.advance() {
                FDB_SUCCESS
            } else {
                FDB_ITERATION_COMPLETE
            })
        })
    })
}

/// Where the current element's bytes are: the path (the URI for object
/// stores), offset and length. Only elements listed at depth 3 have one.
/// The string stays valid until the next call on the iterator.
///
/// # Safety
/// `uri`, `off` and `len` are NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_listiterator_attrs(
    it: *mut fdb_listiterator_t,
    uri: *mut *const c_char,
    off: *mut usize,
    len: *mut usize,
) -> c_int {
    entry("fdb_listiterator_attrs", || {
        // SAFETY: the caller's promises.
        let (uri, off, len) = unsafe { (out(uri, "uri")?, out(off, "off")?, out(len, "len")?) };
        LISTS.with(it.cast(), |state| {
            let (u, o, l) = state.attrs()?;
            *off = o;
            *len = l;
            *uri = u;
            Ok(FDB_SUCCESS)
        })
    })
}

/// Fill `key` with the current element's keys (see [`SplitState::fill`]).
#[no_mangle]
pub extern "C" fn fdb_listiterator_splitkey(
    it: *mut fdb_listiterator_t,
    key: *mut fdb_split_key_t,
) -> c_int {
    entry("fdb_listiterator_splitkey", || {
        LISTS.with(it.cast(), |state| {
            SPLIT_KEYS.with(key.cast(), |sk| {
                sk.fill(state.current()?);
                Ok(FDB_SUCCESS)
            })
        })
    })
}

/// Release a list iterator.
#[no_mangle]
pub extern "C" fn fdb_delete_listiterator(it: *mut fdb_listiterator_t) -> c_int {
    entry("fdb_delete_listiterator", || {
        LISTS.remove(it.cast())?;
        Ok(FDB_SUCCESS)
    })
}
