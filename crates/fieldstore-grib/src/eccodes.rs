//! Safe wrappers over the ecCodes calls in [`crate::ffi`].
//!
//! # Threads
//! Debian's ecCodes is built without `ENABLE_ECCODES_THREADS` (it has
//! OpenMP critical sections instead), and even thread-enabled builds only
//! promise safety for handles that are never shared. Calls into ecCodes
//! therefore run under one process-wide lock. Key extraction holds it
//! exclusively for the whole of one message (handle creation to handle
//! deletion). Measured (see `benches/mars_key.rs` and `docs/grib.md`):
//! the uncontended lock is tens of nanoseconds against microseconds of
//! ecCodes work, and one process extracts keys far faster than it can store
//! 1 MiB fields, so the lock is not the bottleneck; processes do not share
//! it. Decoding values ([`crate::decode`]) holds it *shared* when the
//! library says it was built thread-safe (`ECCODES_THREADS` among
//! `codes_get_features`, as the `eccodeslib` wheel is), so several threads
//! decode their own handles at once; otherwise exclusively, as above.
//!
//! # Contexts
//! Every handle uses ecCodes' default context, created once per process:
//! definitions are parsed once and reused by every message.
//!
//! # Diagnostics
//! ecCodes reports problems through its logging procedure, which prints to
//! stderr by default. A process-wide logging procedure replaces it: while a
//! key extraction runs, what ecCodes says is collected and becomes part of
//! the error returned for that message; outside of it, warnings and errors
//! still go to stderr. ecCodes sometimes logs an error (an unknown template,
//! a damaged section) and still returns a handle with a partial key; an
//! extraction during which ecCodes logged an error fails with what it said.
//!
//! # Assertions
//! ecCodes checks some of its invariants with `ECCODES_ASSERT`, which calls
//! `codes_assertion_failed`: by default that prints the assertion and calls
//! `abort()`, so a bad message (a GRIB1 seasonal mean whose
//! `forecastMonth` disagrees with its `verifyingMonth`: `G1ForecastMonth.cc`)
//! would kill the whole process — a CLI, a Python interpreter, a C
//! program. A process-wide assertion procedure replaces it
//! (`codes_set_codes_assertion_failed_proc`, installed with the logging
//! procedure and again at every exclusive session, since ecCodes' own
//! `GribFromSpec` installs one of its own while it runs):
//! - inside a session (a fieldstore call into ecCodes on this thread), it
//!   records the assertion in a thread-local and stops the failed ecCodes
//!   call (below); every function of this crate checks
//!   [`Session::check`] after each ecCodes call and fails that message with
//!   [`Problem::EccodesAssertion`] (an `InvalidInput` error: a CLI exit
//!   code, a Python exception, a C error code), making no further call on
//!   the handle but its deletion;
//! - outside (another library's ecCodes call in this process), it does what
//!   ecCodes does by default: print, and abort unless `ECCODES_NO_ABORT` is
//!   set.
//!
//! How the failed call stops. If the procedure returns, ecCodes goes on
//! after the failed assertion (what `ECCODES_NO_ABORT=1` does, and what its
//! unit test of this hook, `test_assertion_catching`, expects). That is
//! safe at some assertions — after `gribForecastMonth == fcmonth` fails,
//! `G1ForecastMonth::unpack_long` returns the month it computed — and not
//! at others: after `Bitmap::compute_size` asserts on a GRIB1 bitmap
//! section of length 0, going on makes a section size that crashes
//! `grib_section_adjust_sizes` (found by `tests/damaged.rs`). A `longjmp`
//! out of the procedure would skip the destructors of ecCodes' C++ frames
//! (lock guards left locked deadlock the next call) and cross Rust frames,
//! which Rust does not allow. So the procedure **throws a C++ exception**
//! ([`Throw`]): from ecCodes 2.44 on, every API function runs its body in
//! `eccodes::ExceptionHandler`, which catches anything and returns an error
//! code (or NULL); the exception unwinds ecCodes' own frames only, running
//! their destructors, and the call returns an error at once. ECMWF's own
//! `GribFromSpec` installs a procedure that throws for the same reason.
//! With an older ecCodes (no such handler: an exception would escape into
//! Rust), the procedure returns instead — then it is as safe as ecCodes'
//! own `ECCODES_NO_ABORT`, and no safer. The GRIB fuzz test
//! (`tests/damaged.rs`) and fuzz target (`fuzz/fuzz_targets/grib.rs`) feed
//! ecCodes-made messages damaged in every way through every entry point to
//! keep checking that no input kills the process.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::Write as _;
use std::sync::{Once, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use fieldstore_core::Key;

use crate::error::Problem;
use crate::ffi;
use crate::identity::{real_value, IdentityKeys};

/// Serialises calls into ecCodes (see the module docs): exclusive for key
/// extraction, shared for decoding with a thread-safe library.
static ECCODES: RwLock<()> = RwLock::new(());
static INIT: Once = Once::new();

thread_local! {
    /// What ecCodes logged during the current extraction on this thread
    /// (`None`: not capturing).
    static CAPTURED: RefCell<Option<Vec<(c_int, String)>>> = const { RefCell::new(None) };
    /// The first ecCodes assertion that failed during the current session
    /// on this thread (see the module's "Assertions").
    static ASSERTED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Whether this thread is inside a session (a fieldstore call into
    /// ecCodes).
    static IN_SESSION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The assertion procedure installed into ecCodes (see the module's
/// "Assertions"): inside a session, records the assertion, then throws
/// out of the failed call when ecCodes converts exceptions into error
/// codes at its API ([`Throw`]), else returns; outside a session, aborts
/// as ecCodes would.
unsafe extern "C-unwind" fn assertion_proc(message: *const c_char) {
    let text = if message.is_null() {
        "ecCodes assertion failed".to_string()
    } else {
        // SAFETY: ecCodes passes a NUL-terminated buffer valid for this call.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    };
    let in_session = IN_SESSION.try_with(std::cell::Cell::get).unwrap_or(false);
    if in_session {
        let _ = ASSERTED.try_with(|a| {
            if let Ok(mut a) = a.try_borrow_mut() {
                a.get_or_insert(text);
            }
        });
        if let Some(throw) = Throw::get() {
            // SAFETY: called from ecCodes' `codes_assertion_failed`, inside
            // one of its API functions, which catch every exception
            // (`ExceptionHandler`, ecCodes ≥ 2.44: see [`Throw`]). Nothing
            // of this frame needs dropping.
            unsafe { throw.throw() }
        }
        return;
    }
    // Not fieldstore's call: ecCodes' default behaviour.
    let _ = writeln!(std::io::stderr(), "{text}");
    let no_abort = std::env::var("ECCODES_NO_ABORT")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .is_some_and(|v| v != 0);
    if !no_abort {
        std::process::abort();
    }
}

/// Throwing a C++ exception (an `int`) out of [`assertion_proc`], with the
/// C++ runtime ecCodes itself runs on (`libstdc++`'s
/// `__cxa_allocate_exception`, `__cxa_throw`, and `typeinfo for int`).
///
/// Only where it is safe: from ecCodes 2.44 on, every API function this
/// crate calls runs its body in `eccodes::ExceptionHandler`, which catches
/// any exception (`catch (...)`), logs "Unknown exception occurred." and
/// returns `GRIB_RUNTIME_ERROR` (or NULL): the exception unwinds ecCodes'
/// own C++ frames only — their destructors run, its lock guards are
/// released — and never reaches a Rust frame but this procedure's
/// (declared "C-unwind" for that). It stops the failed call where the
/// assertion failed, where returning would go on past it: ecCodes 2.50's
/// `Bitmap::compute_size` asserts on a GRIB1 bitmap section of length 0
/// and, if the procedure returns, makes a section size from it that
/// crashes `grib_section_adjust_sizes` (found by `tests/damaged.rs`).
/// ecCodes' own `GribFromSpec` installs a procedure that throws, too. What
/// the unwinding leaves behind is at worst the partial handle, leaked.
///
/// Before 2.44 an exception would escape ecCodes' `extern "C"` functions
/// into Rust, so the procedure returns instead (ecCodes' own
/// `ECCODES_NO_ABORT` behaviour).
#[derive(Clone, Copy)]
struct Throw {
    allocate: AllocateException,
    throw: CxaThrow,
    int_type: *const c_void,
}

/// `void* __cxa_allocate_exception(size_t)`.
type AllocateException = unsafe extern "C" fn(usize) -> *mut c_void;
/// `void __cxa_throw(void* object, std::type_info* type, void (*destructor)(void*))`.
type CxaThrow = unsafe extern "C-unwind" fn(*mut c_void, *const c_void, *const c_void) -> !;

// SAFETY: function pointers and the address of a static type_info.
unsafe impl Send for Throw {}
// SAFETY: as above; never written after it is made.
unsafe impl Sync for Throw {}

impl Throw {
    /// The C++ runtime's functions, if ecCodes is 2.44 or later and they
    /// are found; looked up once.
    fn get() -> Option<Throw> {
        static THROW: OnceLock<Option<Throw>> = OnceLock::new();
        *THROW.get_or_init(|| {
            let api = ffi::load().ok()?;
            // SAFETY: no arguments, no state.
            if unsafe { ffi::codes_get_api_version() } < 24400 {
                return None;
            }
            let find = |name: &CStr| {
                // SAFETY: ecCodes' live handle (never closed) and a
                // NUL-terminated name; with a handle, dlsym also searches
                // the library's dependencies (its libstdc++).
                let p = unsafe { libc::dlsym(api.handle as *mut c_void, name.as_ptr()) };
                (!p.is_null()).then_some(p)
            };
            let allocate = find(c"__cxa_allocate_exception")?;
            let throw = find(c"__cxa_throw")?;
            let int_type = find(c"_ZTIi")?;
            // SAFETY: the Itanium C++ ABI's prototypes of these functions.
            unsafe {
                Some(Throw {
                    allocate: std::mem::transmute::<*mut c_void, AllocateException>(allocate),
                    throw: std::mem::transmute::<*mut c_void, CxaThrow>(throw),
                    int_type: int_type.cast_const(),
                })
            }
        })
    }

    /// Throw an `int` (1).
    ///
    /// # Safety
    /// Only from a frame that a C++ `catch` will be reached from by
    /// unwinding through "C-unwind" or C++ frames only.
    unsafe fn throw(self) -> ! {
        // SAFETY: the Itanium ABI: allocate the exception object, fill it,
        // throw it with its type_info and no destructor.
        unsafe {
            let object = (self.allocate)(std::mem::size_of::<c_int>());
            object.cast::<c_int>().write(1);
            (self.throw)(object, self.int_type, std::ptr::null())
        }
    }
}

/// Install [`assertion_proc`] (if the library has the hook).
fn install_assertion_proc() {
    if let Some(set) = ffi::load()
        .ok()
        .and_then(|api| api.codes_set_codes_assertion_failed_proc)
    {
        // SAFETY: `assertion_proc` has the C signature ecCodes expects,
        // lives for the process and never unwinds.
        unsafe { set(Some(assertion_proc)) };
    }
}

/// The logging procedure installed into ecCodes' default context.
unsafe extern "C" fn log_proc(
    _ctx: *const ffi::CodesContext,
    level: c_int,
    message: *const c_char,
) {
    if message.is_null() || level == ffi::LOG_DEBUG {
        return;
    }
    // SAFETY: ecCodes passes a NUL-terminated string valid for this call.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    let text = text.trim();
    let captured = CAPTURED
        .try_with(|c| match c.try_borrow_mut() {
            Ok(mut c) => match c.as_mut() {
                Some(lines) => {
                    // ecCodes may say the same thing several times.
                    if !lines.iter().any(|(_, seen)| seen == text) {
                        lines.push((level, text.to_string()));
                    }
                    true
                }
                None => false,
            },
            Err(_) => false,
        })
        .unwrap_or(false);
    if !captured && level >= ffi::LOG_WARNING {
        // Never panic across the FFI boundary: ignore a failing stderr.
        let _ = writeln!(std::io::stderr(), "ecCodes: {text}");
    }
}

/// Hold the lock every ecCodes call of this process runs under, until the
/// guard is dropped: for `pthread_atfork` handlers (fieldstore's C library),
/// so that a child process is never forked in the middle of an ecCodes call
/// of another thread (ecCodes' own locks would stay held in the child).
pub fn hold_for_fork() -> RwLockWriteGuard<'static, ()> {
    ECCODES.write().unwrap_or_else(|e| e.into_inner())
}

/// Whether the ecCodes this process runs was built thread-safe
/// (`ECCODES_THREADS` among its enabled features), so that threads may use
/// handles of their own at once. Asked once; `false` for libraries too old
/// to say (before `codes_get_features`).
pub fn eccodes_thread_safe() -> bool {
    static SAFE: OnceLock<bool> = OnceLock::new();
    *SAFE.get_or_init(|| {
        let Some(get) = ffi::load().ok().and_then(|api| api.codes_get_features) else {
            return false;
        };
        let mut buf = vec![0u8; 1024];
        let mut len = buf.len();
        // SAFETY: `buf` is writable for `len` bytes; ecCodes writes a
        // NUL-terminated list of at most that.
        let code = unsafe { get(buf.as_mut_ptr().cast(), &mut len, ffi::FEATURES_ENABLED) };
        if code != ffi::CODES_SUCCESS {
            return false;
        }
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end])
            .split_whitespace()
            .any(|f| f == "ECCODES_THREADS")
    })
}

/// Take the lock exclusively (loading and initialising ecCodes once) and
/// start capturing its log.
///
/// # Errors
/// Why ecCodes' library cannot be loaded ([`ffi::load`]).
pub(crate) fn enter() -> Result<Session, String> {
    ffi::load().map_err(|e| e.to_string())?;
    // A panic while holding the lock cannot leave ecCodes half-updated in a
    // way the lock protects (each extraction owns its handle), so a poisoned
    // lock is still usable.
    let guard = ECCODES.write().unwrap_or_else(|e| e.into_inner());
    let session = start(Guard::Exclusive(guard));
    // Again at every exclusive session: another user of ecCodes in this
    // process may have installed its own (see the module docs).
    install_assertion_proc();
    Ok(session)
}

/// Take the lock for work on a handle of this thread's own: shared if
/// ecCodes is thread-safe ([`eccodes_thread_safe`]), else exclusive.
///
/// # Errors
/// As [`enter`].
pub(crate) fn enter_shared() -> Result<Session, String> {
    ffi::load().map_err(|e| e.to_string())?;
    if !eccodes_thread_safe() {
        return enter();
    }
    let guard = ECCODES.read().unwrap_or_else(|e| e.into_inner());
    Ok(start(Guard::Shared(guard)))
}

fn start(guard: Guard) -> Session {
    INIT.call_once(|| {
        // SAFETY: the default context is a process-wide singleton that lives
        // until exit; `log_proc` has the signature ecCodes expects and never
        // unwinds.
        unsafe {
            let ctx = ffi::codes_context_get_default();
            if !ctx.is_null() {
                ffi::codes_context_set_logging_proc(ctx, log_proc);
            }
        }
        install_assertion_proc();
    });
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    ASSERTED.with(|a| *a.borrow_mut() = None);
    IN_SESSION.with(|s| s.set(true));
    Session { _guard: guard }
}

/// How a session holds the lock (held until dropped).
enum Guard {
    Exclusive(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
}

/// The lock and the log capture of one extraction (per thread: the log is
/// captured into a thread-local).
pub(crate) struct Session {
    _guard: Guard,
}

impl Session {
    /// The ecCodes assertion that failed during this session, if one did:
    /// the message it was working on must fail, and its handle must not be
    /// read further (see the module's "Assertions").
    pub(crate) fn assertion(&self) -> Option<String> {
        ASSERTED.with(|a| a.borrow().clone())
    }

    /// `Err` with [`Problem::EccodesAssertion`] if an assertion failed.
    pub(crate) fn check(&self) -> Result<(), Problem> {
        match self.assertion() {
            Some(message) => Err(Problem::EccodesAssertion { message }),
            None => Ok(()),
        }
    }

    /// What ecCodes logged so far, joined, or `fallback`.
    pub(crate) fn said(&self, fallback: impl FnOnce() -> String) -> String {
        let lines = CAPTURED.with(|c| c.borrow_mut().as_mut().map(std::mem::take));
        match lines {
            Some(lines) if !lines.is_empty() => {
                let texts: Vec<String> = lines.into_iter().map(|(_, text)| text).collect();
                texts.join("; ")
            }
            _ => fallback(),
        }
    }

    /// The errors (not warnings) ecCodes logged so far, joined, if any.
    pub(crate) fn errors(&self) -> Option<String> {
        let lines = CAPTURED.with(|c| c.borrow_mut().as_mut().map(std::mem::take))?;
        let errors: Vec<String> = lines
            .into_iter()
            .filter(|(level, _)| *level >= ffi::LOG_ERROR && *level != ffi::LOG_DEBUG)
            .map(|(_, text)| text)
            .collect();
        (!errors.is_empty()).then(|| errors.join("; "))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        CAPTURED.with(|c| *c.borrow_mut() = None);
        IN_SESSION.with(|s| s.set(false));
        ASSERTED.with(|a| *a.borrow_mut() = None);
    }
}

/// ecCodes' text for an error code.
pub(crate) fn error_text(code: c_int) -> String {
    // SAFETY: returns a pointer to a static string (or NULL for unknown codes
    // in old versions).
    let text = unsafe { ffi::codes_get_error_message(code) };
    if text.is_null() {
        return format!("ecCodes error {code}");
    }
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// A handle over a message borrowed for `'a` (ecCodes does not copy it).
pub(crate) struct Handle<'a> {
    pub(crate) raw: *mut ffi::CodesHandle,
    _message: std::marker::PhantomData<&'a [u8]>,
    /// The bytes ecCodes parses (see [`SLACK`]); freed after the handle
    /// (its `Drop` deletes the handle first).
    _bytes: Option<Vec<u8>>,
}

/// Zero bytes that follow the copy of a message ecCodes parses, inside the
/// same allocation.
///
/// ecCodes reads past the end of a message whose section is shorter than
/// its template says ("Invalid size 33 found for section_4, assuming 34"
/// and reading on), and what it reads there steers its parsing: valgrind
/// showed reads just past the end of the buffer given to
/// `codes_handle_new_from_message`, and a later crash in
/// `grib_section_adjust_sizes` (`tests/damaged.rs`). A message given to
/// ecCodes is therefore copied with this much zeroed memory after it, so
/// that such reads stay within memory this crate owns and read zeros,
/// whoever's buffer the message came from. (Templates are a few hundred
/// bytes; the copy costs a `memcpy` of the message, small beside ecCodes'
/// parsing.)
const SLACK: usize = 16 * 1024;

impl<'a> Handle<'a> {
    pub(crate) fn new(_session: &Session, message: &'a [u8]) -> Option<Self> {
        let mut bytes = Vec::with_capacity(message.len() + SLACK);
        bytes.extend_from_slice(message);
        bytes.resize(message.len() + SLACK, 0);
        // SAFETY: `bytes` holds the message and the slack; it is owned by
        // the handle and freed only after the handle is deleted; ecCodes
        // only reads it.
        let raw = unsafe {
            ffi::codes_handle_new_from_message(
                std::ptr::null_mut(),
                bytes.as_ptr().cast(),
                message.len(),
            )
        };
        (!raw.is_null()).then_some(Handle {
            raw,
            _message: std::marker::PhantomData,
            _bytes: Some(bytes),
        })
    }

    /// The string value of `key`, into `buf` (grown as needed).
    pub(crate) fn get_string<'b>(
        &self,
        key: &CStr,
        buf: &'b mut Vec<u8>,
    ) -> Result<&'b [u8], c_int> {
        loop {
            let mut len = buf.len();
            // SAFETY: the handle is live; `key` is NUL-terminated; `buf` is
            // writable for `len` bytes and ecCodes writes at most that.
            let code = unsafe {
                ffi::codes_get_string(self.raw, key.as_ptr(), buf.as_mut_ptr().cast(), &mut len)
            };
            match code {
                ffi::CODES_SUCCESS => {
                    let written = &buf[..len.min(buf.len())];
                    let end = written
                        .iter()
                        .position(|b| *b == 0)
                        .unwrap_or(written.len());
                    return Ok(&buf[..end]);
                }
                ffi::CODES_BUFFER_TOO_SMALL => {
                    let mut need = 0usize;
                    // SAFETY: as above; `need` is a valid out-pointer.
                    let code = unsafe { ffi::codes_get_length(self.raw, key.as_ptr(), &mut need) };
                    if code != ffi::CODES_SUCCESS {
                        return Err(code);
                    }
                    if need <= buf.len() {
                        // No progress possible: report the original error.
                        return Err(ffi::CODES_BUFFER_TOO_SMALL);
                    }
                    buf.resize(need + 1, 0);
                }
                code => return Err(code),
            }
        }
    }
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `codes_handle_new_from_message`, is deleted
        // once, and no iterator over it outlives it (they borrow the handle).
        unsafe { ffi::codes_handle_delete(self.raw) };
    }
}

/// A keys iterator over one namespace of a handle.
struct KeysIter<'h> {
    raw: *mut ffi::CodesKeysIterator,
    _handle: std::marker::PhantomData<&'h Handle<'h>>,
}

impl<'h> KeysIter<'h> {
    fn new(handle: &'h Handle<'_>, namespace: &CStr) -> Option<Self> {
        // SAFETY: the handle is live for `'h`; `namespace` is NUL-terminated.
        let raw = unsafe {
            ffi::codes_keys_iterator_new(
                handle.raw,
                ffi::KEYS_ITERATOR_ALL_KEYS,
                namespace.as_ptr(),
            )
        };
        (!raw.is_null()).then_some(KeysIter {
            raw,
            _handle: std::marker::PhantomData,
        })
    }

    /// The next key's name (copied: the pointer dies with the iterator step).
    fn next_name(&mut self) -> Option<CString> {
        // SAFETY: the iterator is live.
        if unsafe { ffi::codes_keys_iterator_next(self.raw) } == 0 {
            return None;
        }
        // SAFETY: after a successful `next`, the name is a NUL-terminated
        // string valid until the next call on the iterator; copied at once.
        let name = unsafe { ffi::codes_keys_iterator_get_name(self.raw) };
        if name.is_null() {
            return None;
        }
        // SAFETY: as above.
        Some(unsafe { CStr::from_ptr(name) }.to_owned())
    }
}

impl Drop for KeysIter<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `codes_keys_iterator_new` and is deleted once,
        // before its handle (it borrows the handle).
        unsafe { ffi::codes_keys_iterator_delete(self.raw) };
    }
}

/// Which ecCodes library this process runs and how it was chosen (loading
/// it if no use did yet): `libeccodes.so already loaded`, a path, …
///
/// # Errors
/// Why no library could be loaded.
pub fn eccodes_library() -> Result<&'static str, &'static str> {
    ffi::load().map(|api| api.origin.as_str())
}

/// The ecCodes version this process runs, as `major.minor.patch` (loading
/// the library if no use did yet), or `unavailable (why)` when its library
/// cannot be loaded.
pub fn eccodes_version() -> String {
    if let Err(e) = ffi::load() {
        return format!("unavailable ({e})");
    }
    // SAFETY: no arguments, no state.
    let v = unsafe { ffi::codes_get_api_version() };
    format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
}

/// The parameter id ecCodes' parameter database gives the short name
/// `name` (`2t` → 167, `t` → 130; case-insensitive), as MARS resolves names
/// in requests; `None` if it knows no such name.
///
/// A GRIB1 sample is given the name and asked for its `paramId`, then, if
/// GRIB1 cannot carry it, a GRIB2 sample. GRIB1 first, because ECMWF's
/// table 128 is what MARS (metkit) resolves a name to when both editions
/// know it under different ids (`sst`: 34 in GRIB1, 151159 in GRIB2;
/// metkit says 34); names only GRIB2 carries (`2r` → 260242) still resolve.
/// What ecCodes logs about an unknown name is kept out of stderr.
pub fn param_id(name: &str) -> Option<i64> {
    let name = CString::new(name).ok()?;
    [c"GRIB1", c"GRIB2"]
        .into_iter()
        .find_map(|sample| lookup(sample, c"shortName", &name).map(|(id, _)| id))
}

/// The parameter id whose ecCodes `cfVarName` is `name` (the variable
/// names cfgrib and the array views give: `t2m`, `u10`, `fg10_6`, `p24`),
/// for a name that is not a short name; `None` if none is found.
///
/// ecCodes cannot be asked the other way round (`cfVarName` is read-only,
/// and its definitions are compiled in), so the short names a cfVarName
/// is made from are tried: the level moved back in front (`t2m` → `2t`,
/// `u100` → `100u`, `fg10_6` → `10fg6`, `d2sp` → `2dsp`) and `p<id>` for
/// parameters without a short name. A candidate counts only if ecCodes
/// gives its parameter exactly this `cfVarName` (`t2` → `2t` is refused:
/// its cfVarName is `t2m`), so a name never resolves to a parameter that
/// does not bear it. cfVarNames made otherwise (`siconc` for `ci`) are not
/// found.
pub fn param_id_of_cf_var_name(name: &str) -> Option<i64> {
    let wanted = name.to_ascii_lowercase();
    cf_var_name_candidates(&wanted)
        .into_iter()
        .filter_map(|(key, value)| Some((key, CString::new(value).ok()?)))
        .find_map(|(key, value)| {
            [c"GRIB1", c"GRIB2"].into_iter().find_map(|sample| {
                lookup(sample, key, &value)
                    .filter(|(_, cf)| cf.eq_ignore_ascii_case(&wanted))
                    .map(|(id, _)| id)
            })
        })
}

/// What to set (key, value) to find a parameter whose cfVarName is `name`
/// (lower case): see [`param_id_of_cf_var_name`].
fn cf_var_name_candidates(name: &str) -> Vec<(&'static CStr, String)> {
    let mut out = Vec::new();
    if let Some(id) = name.strip_prefix('p') {
        if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
            out.push((c"paramId", id.to_string()));
        }
    }
    let (head, tail) = match name.split_once('_') {
        Some((h, t)) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => (h, t),
        _ => (name, ""),
    };
    let letters = head.trim_end_matches(|c: char| c.is_ascii_digit() || c == 'm');
    let rest = &head[letters.len()..];
    // `t2m`: the level's digits, then ecCodes' "m" (metres) of 2 m names.
    let digits = rest.strip_suffix('m').unwrap_or(rest);
    if !letters.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        out.push((c"shortName", format!("{digits}{letters}{tail}")));
    }
    if !letters.is_empty() && !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
        out.push((c"shortName", format!("{rest}{letters}{tail}")));
    }
    // `d2sp`: one letter, the level, then the rest (`2dsp`).
    let mut chars = name.char_indices();
    if let (Some((_, first)), Some((at, _))) = (chars.next(), chars.next()) {
        let after = &name[at..];
        let level = after.trim_start_matches(|c: char| c.is_ascii_digit());
        if first.is_ascii_alphabetic() && level.len() < after.len() && !level.is_empty() {
            out.push((
                c"shortName",
                format!("{}{first}{level}", &after[..after.len() - level.len()]),
            ));
        }
    }
    out.dedup();
    out
}

/// Set `key` to `value` in a handle made from the sample `sample`, and
/// read the `paramId` and `cfVarName` that gives; `None` if ecCodes refuses
/// the value or knows no parameter for it.
fn lookup(sample: &CStr, key: &CStr, value: &CStr) -> Option<(i64, String)> {
    let session = enter().ok()?;
    // SAFETY: the default context (NULL) and a NUL-terminated sample name;
    // the handle owns a copy of the sample.
    let raw =
        unsafe { ffi::codes_grib_handle_new_from_samples(std::ptr::null_mut(), sample.as_ptr()) };
    if raw.is_null() {
        let _ = session.errors();
        return None;
    }
    let handle: Handle<'static> = Handle {
        raw,
        _message: std::marker::PhantomData,
        _bytes: None,
    };
    let mut len = value.to_bytes().len();
    // SAFETY: the handle is live; key and value are NUL-terminated; `len`
    // is the value's length.
    let code = unsafe { ffi::codes_set_string(handle.raw, key.as_ptr(), value.as_ptr(), &mut len) };
    let mut id: std::ffi::c_long = 0;
    // SAFETY: the handle is live; `id` is a valid out-pointer.
    let found = code == ffi::CODES_SUCCESS
        && unsafe { ffi::codes_get_long(handle.raw, c"paramId".as_ptr(), &mut id) }
            == ffi::CODES_SUCCESS;
    let mut buf = vec![0u8; 64];
    let cf = if found {
        handle
            .get_string(c"cfVarName", &mut buf)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    } else {
        String::new()
    };
    drop(handle);
    let _ = session.errors();
    if session.assertion().is_some() {
        return None;
    }
    // `c_long` is `i64` here, `i32` on some platforms.
    #[allow(clippy::useless_conversion)]
    (found && id > 0).then_some((i64::from(id), cf))
}

/// The MARS key of one complete GRIB message (see [`crate::mars_key`]).
#[cfg(test)]
pub(crate) fn mars_key(message: &[u8]) -> Result<Key, Problem> {
    key_with(message, &IdentityKeys::default())
}

/// The MARS key of one complete GRIB message and the keys of `extra` it
/// has (a key the message lacks is left out: the schema says whether it
/// may be).
pub(crate) fn key_with(message: &[u8], extra: &IdentityKeys) -> Result<Key, Problem> {
    let session = enter().map_err(|reason| Problem::NoEccodes { reason })?;
    let handle = Handle::new(&session, message);
    session.check()?;
    let handle = handle.ok_or_else(|| Problem::Undecodable {
        reason: session.said(|| "no handle (not a valid GRIB message)".to_string()),
    })?;
    let iter = KeysIter::new(&handle, c"mars");
    session.check()?;
    let mut iter = iter.ok_or_else(|| Problem::Undecodable {
        reason: session.said(|| "cannot iterate over the 'mars' namespace".to_string()),
    })?;
    let mut key = Key::new();
    let mut buf = vec![0u8; 128];
    loop {
        let name = iter.next_name();
        session.check()?;
        let Some(name) = name else { break };
        let keyword = name.to_string_lossy();
        let value = handle.get_string(&name, &mut buf);
        session.check()?;
        let value = value.map_err(|code| Problem::KeyUnreadable {
            keyword: keyword.to_string(),
            reason: session.said(|| error_text(code)),
        })?;
        let value = String::from_utf8_lossy(value);
        if key.contains(&keyword) {
            // ecCodes may list a key twice; by name it has one value.
            continue;
        }
        if let Err(source) = key.push(keyword.as_ref(), value.as_ref()) {
            return Err(Problem::BadKey {
                keyword: keyword.into_owned(),
                value: value.into_owned(),
                source,
            });
        }
    }
    if key.is_empty() {
        return Err(Problem::NoMarsKeys);
    }
    for k in extra.iter() {
        if key.contains(&k.keyword) {
            continue;
        }
        let value = if k.real {
            let mut v = 0.0;
            // SAFETY: the handle is live; the name is NUL-terminated; `v`
            // is a valid out-pointer.
            let code = unsafe { ffi::codes_get_double(handle.raw, k.name.as_ptr(), &mut v) };
            (code == ffi::CODES_SUCCESS).then(|| real_value(v))
        } else {
            handle
                .get_string(&k.name, &mut buf)
                .ok()
                .map(|v| String::from_utf8_lossy(v).into_owned())
        };
        session.check()?;
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            continue;
        };
        if let Err(source) = key.push(&k.keyword, &value) {
            return Err(Problem::BadKey {
                keyword: k.keyword.clone(),
                value,
                source,
            });
        }
    }
    if let Some(errors) = session.errors() {
        // ecCodes says what it could not decode, yet returns a handle and a
        // partial key (an unknown template, a damaged section): refuse it.
        return Err(Problem::Undecodable { reason: errors });
    }
    Ok(key)
}
