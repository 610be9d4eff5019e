//! The few ecCodes C functions fieldstore needs, declared by hand from
//! `eccodes.h` (stable since ecCodes 2.0) and looked up at run time in the
//! library [`load`] finds (ecCodes is not linked: see [`load`] for why and
//! where it is looked for). Every function here is `unsafe` to call; the
//! safe wrappers live in [`crate::eccodes`].

use std::ffi::{c_char, c_int, c_long, c_ulong, c_void, CStr, CString};
use std::sync::OnceLock;

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

/// `codes_assertion_failed_proc`: `void (*)(const char* message)`; may
/// throw (a C++ exception unwinds through it: "C-unwind").
pub(crate) type CodesAssertionProc = unsafe extern "C-unwind" fn(message: *const c_char);

/// `codes_set_codes_assertion_failed_proc(codes_assertion_failed_proc)`.
pub(crate) type CodesSetAssertionProc = unsafe extern "C" fn(proc_: Option<CodesAssertionProc>);

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

/// ecCodes' functions, looked up in the library [`load`] chose.
pub(crate) struct Api {
    codes_get_api_version: unsafe extern "C" fn() -> c_long,
    codes_get_error_message: unsafe extern "C" fn(c_int) -> *const c_char,
    codes_context_get_default: unsafe extern "C" fn() -> *mut CodesContext,
    codes_context_set_logging_proc: unsafe extern "C" fn(*mut CodesContext, CodesLogProc),
    codes_handle_new_from_message:
        unsafe extern "C" fn(*mut CodesContext, *const c_void, usize) -> *mut CodesHandle,
    codes_handle_delete: unsafe extern "C" fn(*mut CodesHandle) -> c_int,
    codes_keys_iterator_new:
        unsafe extern "C" fn(*mut CodesHandle, c_ulong, *const c_char) -> *mut CodesKeysIterator,
    codes_keys_iterator_next: unsafe extern "C" fn(*mut CodesKeysIterator) -> c_int,
    codes_keys_iterator_get_name: unsafe extern "C" fn(*const CodesKeysIterator) -> *const c_char,
    codes_keys_iterator_delete: unsafe extern "C" fn(*mut CodesKeysIterator) -> c_int,
    codes_get_string:
        unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut c_char, *mut usize) -> c_int,
    codes_get_length: unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut usize) -> c_int,
    codes_grib_handle_new_from_samples:
        unsafe extern "C" fn(*mut CodesContext, *const c_char) -> *mut CodesHandle,
    codes_set_string:
        unsafe extern "C" fn(*mut CodesHandle, *const c_char, *const c_char, *mut usize) -> c_int,
    codes_get_long: unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut c_long) -> c_int,
    codes_set_double: unsafe extern "C" fn(*mut CodesHandle, *const c_char, f64) -> c_int,
    codes_get_native_type:
        unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut c_int) -> c_int,
    codes_get_double: unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut f64) -> c_int,
    codes_get_size: unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut usize) -> c_int,
    codes_get_double_array:
        unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut f64, *mut usize) -> c_int,
    codes_get_float_array:
        unsafe extern "C" fn(*const CodesHandle, *const c_char, *mut f32, *mut usize) -> c_int,
    /// `codes_get_features` (ecCodes ≥ 2.34), absent from older libraries.
    pub(crate) codes_get_features: Option<CodesGetFeatures>,
    /// `codes_set_codes_assertion_failed_proc` (ecCodes ≥ 2.3), absent
    /// from older libraries (which then abort on a failed assertion).
    pub(crate) codes_set_codes_assertion_failed_proc: Option<CodesSetAssertionProc>,
    /// Where the library came from, for messages.
    pub(crate) origin: String,
    /// The library's `dlopen` handle (as an address), to look up symbols
    /// of its dependencies (the C++ runtime, `crate::eccodes::Throw`).
    pub(crate) handle: usize,
}

/// The sonames ecCodes' library goes by: the wheel's and a build's
/// (`libeccodes.so`), Debian's runtime package (`libeccodes.so.0`).
const SONAMES: [&CStr; 2] = [c"libeccodes.so", c"libeccodes.so.0"];

/// Names the library to load instead of any other not yet loaded (a path).
pub(crate) const LIBRARY_VAR: &str = "FIELDSTORE_ECCODES_LIBRARY";

/// ecCodes, loaded at the first use in this process (see [`load`]).
static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// ecCodes' functions, loading the library at the first call.
///
/// One process must run one copy of ecCodes (and of eckit, which the
/// wheel's ecCodes needs: eckit aborts the process when a second copy
/// registers its libraries), whoever loads it first: this library, or
/// Python's `eccodes` package (earthkit-data, cfgrib, pyfdb's tests) in
/// the same process. So ecCodes is not a link-time dependency: it is
/// looked for, in order, as
/// 1. the ecCodes already loaded in the process (by its soname);
/// 2. the file `FIELDSTORE_ECCODES_LIBRARY` names;
/// 3. in a Python process whose Python has the `eccodes` package (its
///    module `gribapi`): the library that package would load, as it finds
///    it (`findlibs.find("eccodes")`, which also loads the `eckitlib`
///    wheel's libraries it needs), so that importing `eccodes` later finds
///    the same files loaded;
/// 4. `libeccodes.so` (then `libeccodes.so.0`) where this crate was built
///    against it: the rpath of the binary or library that calls this (the
///    `eccodeslib` wheel of `scripts/setup.sh`, `$ORIGIN` for fieldstore's
///    C library), then the system's search path.
///
/// # Errors
/// What every step said, when none gave a library with ecCodes' functions.
pub(crate) fn load() -> Result<&'static Api, &'static str> {
    API.get_or_init(find).as_ref().map_err(String::as_str)
}

/// The loaded functions; only called once [`load`] succeeded (every
/// session starts with it), so this never panics in practice.
fn api() -> &'static Api {
    match load() {
        Ok(api) => api,
        Err(e) => panic!("ecCodes used without being loaded: {e}"),
    }
}

fn find() -> Result<Api, String> {
    let mut tried = Vec::new();
    // 1. Already loaded (RTLD_NOLOAD: never loads anything).
    for soname in SONAMES {
        // SAFETY: a NUL-terminated name; RTLD_NOLOAD only looks.
        let lib = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if !lib.is_null() {
            return from_handle(lib, format!("{} already loaded", soname.to_string_lossy()));
        }
    }
    let dirs = search_dirs();
    // 2. Named.
    if let Some(path) = std::env::var_os(LIBRARY_VAR).filter(|p| !p.is_empty()) {
        let path = path.to_string_lossy().into_owned();
        return open_with_deps(&path, &dirs, 0)
            .and_then(|lib| from_handle(lib, path.clone()))
            .map_err(|e| format!("{LIBRARY_VAR}={path}: {e}"));
    }
    // 3. Python's choice.
    if let Some(path) = python_choice() {
        let origin = format!("{path} (Python's eccodes)");
        match open_with_deps(&path, &dirs, 0).and_then(|lib| from_handle(lib, origin)) {
            Ok(api) => return Ok(api),
            Err(e) => tried.push(format!("{path} (Python's eccodes): {e}")),
        }
    }
    // 4. The build's, or the system's.
    for soname in SONAMES {
        let name = soname.to_string_lossy();
        match open_with_deps(&name, &dirs, 0).and_then(|lib| from_handle(lib, name.to_string())) {
            Ok(api) => return Ok(api),
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "ecCodes' library not found ({}); install it (scripts/setup.sh, Debian's libeccodes0) \
         or name it with {LIBRARY_VAR}",
        tried.join("; ")
    ))
}

/// `dlopen(name)`, first loading from `dirs` the dependencies the dynamic
/// linker does not find by itself.
///
/// A library `dlopen`ed by name is looked for along the search path of the
/// object that calls `dlopen` (this crate's binary or library: its rpath,
/// where the build's ecCodes is), but *its* dependencies only along its own
/// rpath and the executable's: the wheel's `libeccodes.so` names eckit's
/// libraries in a sibling wheel (`eckitlib/lib64`) it has no rpath to. So
/// each dependency `dlopen` says it cannot find is loaded from `dirs` (the
/// caller's search path, [`search_dirs`]) first, as linking did, and the
/// library is opened again.
fn open_with_deps(name: &str, dirs: &[String], depth: usize) -> Result<*mut c_void, String> {
    const NOT_FOUND: &str = ": cannot open shared object file";
    let own = name.rsplit('/').next().unwrap_or(name);
    let mut loaded = Vec::new();
    loop {
        let e = match open(name) {
            Ok(lib) => return Ok(lib),
            Err(e) => e,
        };
        let Some(missing) = e.split(NOT_FOUND).next().filter(|_| e.contains(NOT_FOUND)) else {
            return Err(e);
        };
        // The library itself is not found, the dependency was already
        // loaded (and still missing: another one of the same name), or the
        // chain is unreasonably deep.
        if missing == own
            || missing.contains('/')
            || loaded.iter().any(|l| l == missing)
            || depth > 8
        {
            return Err(e);
        }
        let Some(path) = dirs
            .iter()
            .map(|d| format!("{d}/{missing}"))
            .find(|p| std::path::Path::new(p).exists())
        else {
            return Err(e);
        };
        open_with_deps(&path, dirs, depth + 1)?;
        loaded.push(missing.to_string());
    }
}

/// The directories the dynamic linker searches for a `dlopen` from this
/// code's object (`RTLD_DI_SERINFO`: its rpath with `$ORIGIN` expanded,
/// the executable's, `LD_LIBRARY_PATH`, the system's), in that order.
fn search_dirs() -> Vec<String> {
    // SAFETY: dladdr and dlopen with valid pointers; the handle is closed
    // after use.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let here = search_dirs as *const c_void;
        let mut me = std::ptr::null_mut();
        if libc::dladdr(here, &mut info) != 0 && !info.dli_fname.is_null() {
            me = libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        }
        if me.is_null() {
            me = libc::dlopen(std::ptr::null(), libc::RTLD_LAZY);
        }
        if me.is_null() {
            return Vec::new();
        }
        let dirs = serinfo(me);
        libc::dlclose(me);
        dirs
    }
}

/// The search path of the object `me` (see [`search_dirs`]).
///
/// # Safety
/// `me` is a handle `dlopen` returned.
unsafe fn serinfo(me: *mut c_void) -> Vec<String> {
    #[repr(C)]
    struct SerPath {
        name: *const c_char,
        _flags: std::ffi::c_uint,
    }
    #[repr(C)]
    struct SerInfo {
        size: usize,
        count: std::ffi::c_uint,
        paths: [SerPath; 1],
    }
    // SAFETY: dlinfo with a valid handle; the buffer given to
    // RTLD_DI_SERINFO is as large as RTLD_DI_SERINFOSIZE said and aligned
    // for `SerInfo`; its strings live inside it.
    unsafe {
        let mut head = SerInfo {
            size: 0,
            count: 0,
            paths: [SerPath {
                name: std::ptr::null(),
                _flags: 0,
            }],
        };
        if libc::dlinfo(me, libc::RTLD_DI_SERINFOSIZE, (&raw mut head).cast()) != 0 {
            return Vec::new();
        }
        let words = head
            .size
            .div_ceil(8)
            .max(std::mem::size_of::<SerInfo>() / 8 + 1);
        let mut buf = vec![0u64; words];
        let info = buf.as_mut_ptr().cast::<SerInfo>();
        (*info).size = head.size;
        (*info).count = head.count;
        if libc::dlinfo(me, libc::RTLD_DI_SERINFO, info.cast()) != 0 {
            return Vec::new();
        }
        let paths = (&raw const (*info).paths).cast::<SerPath>();
        (0..(*info).count as usize)
            .map(|i| (*paths.add(i)).name)
            .filter(|p| !p.is_null())
            .map(|p| CStr::from_ptr(p).to_string_lossy().into_owned())
            .collect()
    }
}

/// `dlopen(name)`, or what `dlerror` said.
fn open(name: &str) -> Result<*mut c_void, String> {
    let c = CString::new(name).map_err(|_| format!("{name:?}: has a NUL byte"))?;
    // SAFETY: a NUL-terminated name; the handle is never closed (ecCodes
    // stays loaded for the process's life).
    let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW) };
    if lib.is_null() {
        return Err(dlerror());
    }
    Ok(lib)
}

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until
    // the next dl call of this thread; copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".to_string()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Look `name` up in `lib`, as a function pointer of type `F`.
///
/// # Safety
/// `F` must be the C type of the symbol `name`.
unsafe fn sym<F: Copy>(lib: *mut c_void, name: &CStr) -> Result<F, String> {
    // SAFETY: a handle from dlopen and a NUL-terminated name.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if p.is_null() {
        return Err(format!("no {} in it", name.to_string_lossy()));
    }
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: the caller says `F` is the symbol's type; function pointers
    // and data pointers have the same size on the platforms glibc serves.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

fn from_handle(lib: *mut c_void, origin: String) -> Result<Api, String> {
    // SAFETY: each field's type is the function's C prototype in eccodes.h.
    unsafe {
        Ok(Api {
            codes_get_api_version: sym(lib, c"codes_get_api_version")?,
            codes_get_error_message: sym(lib, c"codes_get_error_message")?,
            codes_context_get_default: sym(lib, c"codes_context_get_default")?,
            codes_context_set_logging_proc: sym(lib, c"codes_context_set_logging_proc")?,
            codes_handle_new_from_message: sym(lib, c"codes_handle_new_from_message")?,
            codes_handle_delete: sym(lib, c"codes_handle_delete")?,
            codes_keys_iterator_new: sym(lib, c"codes_keys_iterator_new")?,
            codes_keys_iterator_next: sym(lib, c"codes_keys_iterator_next")?,
            codes_keys_iterator_get_name: sym(lib, c"codes_keys_iterator_get_name")?,
            codes_keys_iterator_delete: sym(lib, c"codes_keys_iterator_delete")?,
            codes_get_string: sym(lib, c"codes_get_string")?,
            codes_get_length: sym(lib, c"codes_get_length")?,
            codes_grib_handle_new_from_samples: sym(lib, c"codes_grib_handle_new_from_samples")?,
            codes_set_string: sym(lib, c"codes_set_string")?,
            codes_get_long: sym(lib, c"codes_get_long")?,
            codes_set_double: sym(lib, c"codes_set_double")?,
            codes_get_native_type: sym(lib, c"codes_get_native_type")?,
            codes_get_double: sym(lib, c"codes_get_double")?,
            codes_get_size: sym(lib, c"codes_get_size")?,
            codes_get_double_array: sym(lib, c"codes_get_double_array")?,
            codes_get_float_array: sym(lib, c"codes_get_float_array")?,
            codes_get_features: sym(lib, c"codes_get_features").ok(),
            codes_set_codes_assertion_failed_proc: sym(
                lib,
                c"codes_set_codes_assertion_failed_proc",
            )
            .ok(),
            origin,
            handle: lib as usize,
        })
    }
}

/// In a Python process (the interpreter's symbols are in the global
/// scope, and it runs), the ecCodes library Python's `eccodes` package
/// would load, if that package is installed: `findlibs.find("eccodes")`,
/// as its `gribapi.bindings` does. `None` otherwise, or when Python says
/// anything else (an exception, which is cleared).
fn python_choice() -> Option<String> {
    type NoArgs = unsafe extern "C" fn() -> c_int;
    type Release = unsafe extern "C" fn(c_int);
    type NewDict = unsafe extern "C" fn() -> *mut c_void;
    type RunString =
        unsafe extern "C" fn(*const c_char, c_int, *mut c_void, *mut c_void) -> *mut c_void;
    type AsUtf8 = unsafe extern "C" fn(*mut c_void) -> *const c_char;
    type DecRef = unsafe extern "C" fn(*mut c_void);
    type Clear = unsafe extern "C" fn();
    /// `Py_eval_input`.
    const EVAL_INPUT: c_int = 258;
    let global = |name: &CStr| {
        // SAFETY: RTLD_DEFAULT and a NUL-terminated name.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    // SAFETY (the transmutes): CPython's C API prototypes.
    unsafe {
        let initialized: NoArgs = std::mem::transmute(global(c"Py_IsInitialized")?);
        if initialized() == 0 {
            return None;
        }
        for finalizing in [c"Py_IsFinalizing", c"_Py_IsFinalizing"] {
            if let Some(f) = global(finalizing) {
                let f: NoArgs = std::mem::transmute(f);
                if f() != 0 {
                    return None;
                }
            }
        }
        let ensure: NoArgs = std::mem::transmute(global(c"PyGILState_Ensure")?);
        let release: Release = std::mem::transmute(global(c"PyGILState_Release")?);
        let new_dict: NewDict = std::mem::transmute(global(c"PyDict_New")?);
        let run: RunString = std::mem::transmute(global(c"PyRun_String")?);
        let as_utf8: AsUtf8 = std::mem::transmute(global(c"PyUnicode_AsUTF8")?);
        let dec_ref: DecRef = std::mem::transmute(global(c"Py_DecRef")?);
        let clear: Clear = std::mem::transmute(global(c"PyErr_Clear")?);
        let state = ensure();
        let mut out = None;
        let globals = new_dict();
        if !globals.is_null() {
            let found = run(
                c"__import__('importlib.util').util.find_spec('gribapi') is not None \
                  and __import__('findlibs').find('eccodes') or None"
                    .as_ptr(),
                EVAL_INPUT,
                globals,
                globals,
            );
            if !found.is_null() {
                let text = as_utf8(found);
                if !text.is_null() {
                    out = Some(CStr::from_ptr(text).to_string_lossy().into_owned());
                }
                dec_ref(found);
            }
            dec_ref(globals);
        }
        clear();
        release(state);
        out
    }
}

pub(crate) unsafe fn codes_get_api_version() -> c_long {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_api_version)() }
}

pub(crate) unsafe fn codes_get_error_message(code: c_int) -> *const c_char {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_error_message)(code) }
}

pub(crate) unsafe fn codes_context_get_default() -> *mut CodesContext {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_context_get_default)() }
}

pub(crate) unsafe fn codes_context_set_logging_proc(ctx: *mut CodesContext, proc_: CodesLogProc) {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_context_set_logging_proc)(ctx, proc_) }
}

/// Parses `data` in place (no copy): `data` must outlive the handle.
pub(crate) unsafe fn codes_handle_new_from_message(
    ctx: *mut CodesContext,
    data: *const c_void,
    len: usize,
) -> *mut CodesHandle {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_handle_new_from_message)(ctx, data, len) }
}

pub(crate) unsafe fn codes_handle_delete(handle: *mut CodesHandle) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_handle_delete)(handle) }
}

pub(crate) unsafe fn codes_keys_iterator_new(
    handle: *mut CodesHandle,
    filter_flags: c_ulong,
    name_space: *const c_char,
) -> *mut CodesKeysIterator {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_keys_iterator_new)(handle, filter_flags, name_space) }
}

pub(crate) unsafe fn codes_keys_iterator_next(iter: *mut CodesKeysIterator) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_keys_iterator_next)(iter) }
}

pub(crate) unsafe fn codes_keys_iterator_get_name(iter: *const CodesKeysIterator) -> *const c_char {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_keys_iterator_get_name)(iter) }
}

pub(crate) unsafe fn codes_keys_iterator_delete(iter: *mut CodesKeysIterator) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_keys_iterator_delete)(iter) }
}

/// `*length`: in, the buffer's size; out, the string's length including
/// its NUL (or the size needed, with `CODES_BUFFER_TOO_SMALL`).
pub(crate) unsafe fn codes_get_string(
    handle: *const CodesHandle,
    key: *const c_char,
    buffer: *mut c_char,
    length: *mut usize,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_string)(handle, key, buffer, length) }
}

pub(crate) unsafe fn codes_get_length(
    handle: *const CodesHandle,
    key: *const c_char,
    length: *mut usize,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_length)(handle, key, length) }
}

/// A new handle over a copy of the named sample (`GRIB2`).
pub(crate) unsafe fn codes_grib_handle_new_from_samples(
    ctx: *mut CodesContext,
    sample_name: *const c_char,
) -> *mut CodesHandle {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_grib_handle_new_from_samples)(ctx, sample_name) }
}

/// `*length`: in, the value's length; out, what was written.
pub(crate) unsafe fn codes_set_string(
    handle: *mut CodesHandle,
    key: *const c_char,
    value: *const c_char,
    length: *mut usize,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_set_string)(handle, key, value, length) }
}

pub(crate) unsafe fn codes_get_long(
    handle: *const CodesHandle,
    key: *const c_char,
    value: *mut c_long,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_long)(handle, key, value) }
}

/// Sets a key of the handle; for transient keys (`missingValue`) only
/// the handle's memory changes, never the message it was made from.
pub(crate) unsafe fn codes_set_double(
    handle: *mut CodesHandle,
    key: *const c_char,
    value: f64,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_set_double)(handle, key, value) }
}

/// `*kind`: `GRIB_TYPE_LONG` (1), `_DOUBLE` (2), `_STRING` (3), …
pub(crate) unsafe fn codes_get_native_type(
    handle: *const CodesHandle,
    key: *const c_char,
    kind: *mut c_int,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_native_type)(handle, key, kind) }
}

pub(crate) unsafe fn codes_get_double(
    handle: *const CodesHandle,
    key: *const c_char,
    value: *mut f64,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_double)(handle, key, value) }
}

/// The number of elements of an array key (`values`, `latitudes`).
pub(crate) unsafe fn codes_get_size(
    handle: *const CodesHandle,
    key: *const c_char,
    size: *mut usize,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_size)(handle, key, size) }
}

/// `*length`: in, the buffer's capacity in elements; out, how many
/// were written.
pub(crate) unsafe fn codes_get_double_array(
    handle: *const CodesHandle,
    key: *const c_char,
    values: *mut f64,
    length: *mut usize,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_double_array)(handle, key, values, length) }
}

/// As `codes_get_double_array`, decoding to single precision.
pub(crate) unsafe fn codes_get_float_array(
    handle: *const CodesHandle,
    key: *const c_char,
    values: *mut f32,
    length: *mut usize,
) -> c_int {
    // SAFETY: the caller keeps ecCodes' contract for this function.
    unsafe { (api().codes_get_float_array)(handle, key, values, length) }
}

/// `codes_get_features(char* result, size_t* length, int select)` (ecCodes
/// ≥ 2.34): older libraries lack it.
pub(crate) type CodesGetFeatures =
    unsafe extern "C" fn(result: *mut c_char, length: *mut usize, select: c_int) -> c_int;
/// `CODES_FEATURES_ENABLED`.
pub(crate) const FEATURES_ENABLED: c_int = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_once_and_says_from_where() {
        let api = load().expect("ecCodes loads");
        // SAFETY: no arguments.
        assert!(unsafe { (api.codes_get_api_version)() } >= 20000);
        // The test binary has no ecCodes of its own linked: it came from
        // the rpath (the build's) or the system, by soname.
        assert!(api.origin.starts_with("libeccodes.so"), "{}", api.origin);
        // A second look finds the same table.
        assert!(std::ptr::eq(api, load().expect("loaded")));
    }

    #[test]
    fn a_missing_or_foreign_library_is_refused_by_name() {
        let e = open("/nonexistent/libeccodes.so").expect_err("no such file");
        assert!(e.contains("/nonexistent/libeccodes.so"), "{e}");
        // libc is loaded, and is not ecCodes.
        let lib = open("libc.so.6").expect("libc");
        let e = from_handle(lib, "libc.so.6".into())
            .err()
            .expect("libc has no ecCodes functions");
        assert_eq!(e, "no codes_get_api_version in it");
    }
}
