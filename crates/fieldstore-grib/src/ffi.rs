//! The few ecCodes C functions fieldstore needs, declared by hand from
//! `eccodes.h` (stable since ecCodes 2.0). Every function here is `unsafe` to
//! call; the safe wrappers live in [`crate::eccodes`].

use std::ffi::{c_char, c_int, c_long, c_ulong, c_void};

/// `codes_context` (opaque).
#[repr(C)]
pub(crate) struct CodesContext {
    _opaque: [u8; 0],
}

/// `codes_handle` (opaque).
#[repr(C)]
pub(crate) struct CodesHandle {
    _opaque: [u8; 0],
}

/// `codes_keys_iterator` (opaque).
#[repr(C)]
pub(crate) struct CodesKeysIterator {
    _opaque: [u8; 0],
}

/// `codes_log_proc`: `void (*)(const codes_context*, int level, const char* mesg)`.
pub(crate) type CodesLogProc =
    unsafe extern "C" fn(ctx: *const CodesContext, level: c_int, message: *const c_char);

/// `GRIB_SUCCESS`.
pub(crate) const CODES_SUCCESS: c_int = 0;
/// `GRIB_BUFFER_TOO_SMALL`.
pub(crate) const CODES_BUFFER_TOO_SMALL: c_int = -3;
/// `GRIB_TYPE_LONG`.
pub(crate) const TYPE_LONG: c_int = 1;
/// `GRIB_TYPE_DOUBLE`.
pub(crate) const TYPE_DOUBLE: c_int = 2;
/// `GRIB_KEYS_ITERATOR_ALL_KEYS`: what `grib_ls -m`, pyeccodes and FDB5 use.
pub(crate) const KEYS_ITERATOR_ALL_KEYS: c_ulong = 0;
/// `GRIB_LOG_WARNING`; `GRIB_LOG_INFO` is 0, `ERROR` 2, `FATAL` 3, `DEBUG` 4.
pub(crate) const LOG_WARNING: c_int = 1;
/// `GRIB_LOG_ERROR` (`GRIB_LOG_FATAL` is 3).
pub(crate) const LOG_ERROR: c_int = 2;
/// `GRIB_LOG_DEBUG`.
pub(crate) const LOG_DEBUG: c_int = 4;

#[link(name = "eccodes")]
extern "C" {
    pub(crate) fn codes_get_api_version() -> c_long;
    pub(crate) fn codes_get_error_message(code: c_int) -> *const c_char;
    pub(crate) fn codes_context_get_default() -> *mut CodesContext;
    pub(crate) fn codes_context_set_logging_proc(ctx: *mut CodesContext, proc_: CodesLogProc);

    /// Parses `data` in place (no copy): `data` must outlive the handle.
    pub(crate) fn codes_handle_new_from_message(
        ctx: *mut CodesContext,
        data: *const c_void,
        len: usize,
    ) -> *mut CodesHandle;
    pub(crate) fn codes_handle_delete(handle: *mut CodesHandle) -> c_int;

    pub(crate) fn codes_keys_iterator_new(
        handle: *mut CodesHandle,
        filter_flags: c_ulong,
        name_space: *const c_char,
    ) -> *mut CodesKeysIterator;
    pub(crate) fn codes_keys_iterator_next(iter: *mut CodesKeysIterator) -> c_int;
    pub(crate) fn codes_keys_iterator_get_name(iter: *const CodesKeysIterator) -> *const c_char;
    pub(crate) fn codes_keys_iterator_delete(iter: *mut CodesKeysIterator) -> c_int;

    /// `*length`: in, the buffer's size; out, the string's length including
    /// its NUL (or the size needed, with `CODES_BUFFER_TOO_SMALL`).
    pub(crate) fn codes_get_string(
        handle: *const CodesHandle,
        key: *const c_char,
        buffer: *mut c_char,
        length: *mut usize,
    ) -> c_int;
    pub(crate) fn codes_get_length(
        handle: *const CodesHandle,
        key: *const c_char,
        length: *mut usize,
    ) -> c_int;

    /// A new handle over a copy of the named sample (`GRIB2`).
    pub(crate) fn codes_grib_handle_new_from_samples(
        ctx: *mut CodesContext,
        sample_name: *const c_char,
    ) -> *mut CodesHandle;
    /// `*length`: in, the value's length; out, what was written.
    pub(crate) fn codes_set_string(
        handle: *mut CodesHandle,
        key: *const c_char,
        value: *const c_char,
        length: *mut usize,
    ) -> c_int;
    pub(crate) fn codes_get_long(
        handle: *const CodesHandle,
        key: *const c_char,
        value: *mut c_long,
    ) -> c_int;
    /// Sets a key of the handle; for transient keys (`missingValue`) only
    /// the handle's memory changes, never the message it was made from.
    pub(crate) fn codes_set_double(
        handle: *mut CodesHandle,
        key: *const c_char,
        value: f64,
    ) -> c_int;
    /// `*kind`: `GRIB_TYPE_LONG` (1), `_DOUBLE` (2), `_STRING` (3), …
    pub(crate) fn codes_get_native_type(
        handle: *const CodesHandle,
        key: *const c_char,
        kind: *mut c_int,
    ) -> c_int;
    pub(crate) fn codes_get_double(
        handle: *const CodesHandle,
        key: *const c_char,
        value: *mut f64,
    ) -> c_int;
    /// The number of elements of an array key (`values`, `latitudes`).
    pub(crate) fn codes_get_size(
        handle: *const CodesHandle,
        key: *const c_char,
        size: *mut usize,
    ) -> c_int;
    /// `*length`: in, the buffer's capacity in elements; out, how many
    /// were written.
    pub(crate) fn codes_get_double_array(
        handle: *const CodesHandle,
        key: *const c_char,
        values: *mut f64,
        length: *mut usize,
    ) -> c_int;
    /// As `codes_get_double_array`, decoding to single precision.
    pub(crate) fn codes_get_float_array(
        handle: *const CodesHandle,
        key: *const c_char,
        values: *mut f32,
        length: *mut usize,
    ) -> c_int;
}

/// `codes_get_features(char* result, size_t* length, int select)` (ecCodes
/// ≥ 2.34), looked up at run time with [`dlsym`]: older libraries lack it.
pub(crate) type CodesGetFeatures =
    unsafe extern "C" fn(result: *mut c_char, length: *mut usize, select: c_int) -> c_int;
/// `CODES_FEATURES_ENABLED`.
pub(crate) const FEATURES_ENABLED: c_int = 1;

extern "C" {
    /// From libc (glibc ≥ 2.34 has it in libc itself, older in libdl,
    /// which Rust's std links).
    pub(crate) fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
/// glibc's `RTLD_DEFAULT`: search the global symbol scope.
pub(crate) const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();
