//! `fdb_key_t`: the metadata of one field, for `fdb_archive`.

use std::ffi::{c_char, c_int};
use std::sync::Mutex;

use fieldstore::Key;

use crate::error::{entry, FDB_SUCCESS};
use crate::kind::Kind;
use crate::registry::{self, Object};
use crate::util::{c_str, lock, out};

/// A key being built: `keyword=value` pairs in the order first given.
#[derive(Debug, Default)]
pub struct KeyObj(pub(crate) Mutex<Key>);

impl Object for KeyObj {
    const KIND: Kind = Kind::Key;
}

/// Opaque C type `fdb_key_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_key_t {
    _private: [u8; 0],
}

/// A new, empty key.
///
/// # Safety
/// `key` is NULL (an error) or points to writable memory for a pointer.
#[no_mangle]
pub unsafe extern "C" fn fdb_new_key(key: *mut *mut fdb_key_t) -> c_int {
    entry("fdb_new_key", || {
        // SAFETY: the caller's promise.
        let key = unsafe { out(key, "key (the out-pointer)") }?;
        *key = registry::insert(KeyObj::default()).cast();
        Ok(FDB_SUCCESS)
    })
}

/// Set `param=value` (replacing a value given before for `param`). The
/// keyword is lower-cased; the value is kept as given and canonicalised by
/// the schema when archived.
///
/// # Safety
/// `param` and `value` are NULL (an error) or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn fdb_key_add(
    key: *mut fdb_key_t,
    param: *const c_char,
    value: *const c_char,
) -> c_int {
    entry("fdb_key_add", || {
        let k = registry::get::<KeyObj>(key.cast())?;
        // SAFETY: the caller's promise.
        let (param, value) = unsafe { (c_str(param, "param")?, c_str(value, "value")?) };
        lock(&k.0).set(param, value)?;
        Ok(FDB_SUCCESS)
    })
}

/// Release a key.
#[no_mangle]
pub extern "C" fn fdb_delete_key(key: *mut fdb_key_t) -> c_int {
    entry("fdb_delete_key", || {
        registry::remove::<KeyObj>(key.cast())?;
        Ok(FDB_SUCCESS)
    })
}
