//! `daos-standin`: a shared library that stands in for libdaos in tests.
//!
//! It exports the libdaos symbols that fieldstore (and FDB5's DAOS backend)
//! use, with libdaos's signatures, x86-64 struct layouts, constant values and
//! error codes (DAOS 2.2 to 2.8; `shared/docs/reference/daos.md`), so that
//! `fieldstore-daos` runs the very code path it runs on a real pool. The
//! renamed symbols are exported under their real names (`daos_pool_connect2`,
//! `daos_cont_open2`, `daos_cont_create2`, `daos_cont_destroy2`,
//! `daos_obj_generate_oid2`) with the unsuffixed pool and container aliases;
//! the plain `daos_obj_generate_oid` is **not** exported, so a binding that
//! resolves it fails to load.
//!
//! It is stricter than libdaos, never looser:
//! - handles are cookies with libdaos's type tags in the low 4 bits; a
//!   closed handle or a handle of the wrong type (`daos_obj_close` on a KV)
//!   is `-DER_NO_HDL`; closing a container with open objects or
//!   disconnecting a pool with open containers is `-DER_BUSY`;
//! - event queues (`ev != NULL`) and transactions (`th != DAOS_TX_NONE`)
//!   are `-DER_NOSYS`;
//! - object classes are resolved against a pool of `DAOS_STANDIN_TARGETS`
//!   targets (default 8) and checked against the container's redundancy
//!   factor (`-DER_INVAL`); opening an OID that was not generated, or of the
//!   wrong type for the API, is `-DER_INVAL`;
//! - a byte array reopened with other cell or chunk sizes than it was
//!   written with is `-DER_INVAL` (libdaos would silently misread it);
//! - `daos_kv_list` lists one shard per call (an `OC_S2` KV needs two calls
//!   even when empty), keeps all its state in the anchor, and reports
//!   `-DER_KEY2BIG` with the needed length;
//! - short array reads set `arr_nr_short_read` and leave the missing bytes
//!   poisoned (0xA5), never zeroed;
//! - successive `daos_cont_alloc_oids` ranges are never contiguous.
//!
//! Storage: in this process's memory, or, when `DAOS_STANDIN_DIR` names a
//! directory (or [`daos_standin_configure`] was called), in that directory,
//! shared by every process that names it (see [`backend::Directory`]).
//! A pool is created with [`daos_standin_pool_create`] (or, for the
//! directory backend, `mkdir <dir>/<label>`); `DAOS_STANDIN_POOLS=a,b`
//! creates pools at `daos_init`.
//!
//! Counters: every call is counted, with the RPCs it would cost on a real
//! pool ([`counters`]), per process and per thread, readable through
//! [`daos_standin_count`] and [`daos_standin_rpc_count`]; with
//! `DAOS_STANDIN_COUNTERS=<file>` each process appends one line of counts to
//! the file when it exits. [`daos_standin_inject`] makes the n-th next call
//! of a function (on the calling thread) fail with a given code.
//!
//! Other settings: `DAOS_STANDIN_SYNC=1` fdatasyncs every put and write;
//! `DAOS_STANDIN_NO_AGENT=1` makes `daos_init` fail as it does without a
//! reachable `daos_agent`.

// Every export has libdaos's contract: the pointers it takes are valid for
// the call as libdaos documents them. Documenting that on each of ~45
// functions would only repeat it.
#![allow(clippy::missing_safety_doc)]

pub mod backend;
pub mod counters;
pub mod oclass;
pub mod types;

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use backend::{Backend, Cond, ContMeta, ObjRef};
use types::*;

type R<T> = Result<T, i32>;

// ------------------------------------------------------------------ state

#[derive(Debug, Clone)]
enum Handle {
    Pool {
        pool: String,
        rw: bool,
        conts: u32,
    },
    Cont {
        poh: u64,
        pool: String,
        meta: ContMeta,
        rw: bool,
        objs: u32,
    },
    Obj {
        coh: u64,
        o: ObjRef,
        rw: bool,
    },
    Kv {
        coh: u64,
        o: ObjRef,
        rw: bool,
    },
    Array {
        coh: u64,
        o: ObjRef,
        rw: bool,
        cell: u64,
        chunk: u64,
        /// Cell and chunk sizes came from the array's metadata (create,
        /// open), not from the caller (open with attributes).
        from_meta: bool,
    },
}

impl Handle {
    fn tag(&self) -> u64 {
        match self {
            Handle::Pool { .. } => HTYPE_POOL,
            Handle::Cont { .. } => HTYPE_CO,
            Handle::Obj { .. } => HTYPE_OBJ,
            Handle::Kv { .. } => HTYPE_KV,
            Handle::Array { .. } => HTYPE_ARRAY,
        }
    }
}

struct State {
    refs: u32,
    handles: std::collections::BTreeMap<u64, Handle>,
    next: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    refs: 0,
    handles: std::collections::BTreeMap::new(),
    next: 0,
});

static BACKEND: OnceLock<Box<dyn Backend>> = OnceLock::new();
static CONFIGURED: Mutex<Option<(PathBuf, bool)>> = Mutex::new(None);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn targets() -> u32 {
    static T: OnceLock<u32> = OnceLock::new();
    *T.get_or_init(|| {
        std::env::var("DAOS_STANDIN_TARGETS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|t| *t > 0)
            .unwrap_or(8)
    })
}

/// The backend, chosen on first use: [`daos_standin_configure`]'s
/// directory, else `DAOS_STANDIN_DIR`, else memory.
fn backend_init() -> R<&'static dyn Backend> {
    if let Some(b) = BACKEND.get() {
        return Ok(b.as_ref());
    }
    let configured = CONFIGURED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let dir = configured.or_else(|| {
        std::env::var_os("DAOS_STANDIN_DIR")
            .filter(|d| !d.is_empty())
            .map(|d| (PathBuf::from(d), env_flag("DAOS_STANDIN_SYNC")))
    });
    let b: Box<dyn Backend> = match dir {
        Some((d, sync)) => {
            if !d.is_dir() {
                // Like a client whose agent cannot be reached.
                return Err(-der::MISC);
            }
            Box::new(backend::Directory::new(d, sync))
        }
        None => Box::new(backend::Memory::default()),
    };
    let _ = BACKEND.set(b);
    BACKEND.get().map(|b| b.as_ref()).ok_or(-der::MISC)
}

fn be() -> &'static dyn Backend {
    match BACKEND.get() {
        Some(b) => b.as_ref(),
        // Unreachable once daos_init succeeded; memory is a safe default.
        None => {
            let _ = BACKEND.set(Box::new(backend::Memory::default()));
            BACKEND.get().map(|b| b.as_ref()).unwrap_or_else(|| {
                unreachable!("the backend was just set");
            })
        }
    }
}

thread_local! {
    /// Injected failures: (function, calls to let through, code).
    static INJECT: RefCell<Vec<(usize, u64, i32)>> = const { RefCell::new(Vec::new()) };
}

fn injected(f: usize) -> Option<i32> {
    INJECT.with(|v| {
        let mut v = v.borrow_mut();
        let i = v.iter().position(|(g, _, _)| *g == f)?;
        if v[i].1 > 1 {
            v[i].1 -= 1;
            return None;
        }
        let rc = v[i].2;
        v.remove(i);
        Some(rc)
    })
}

/// Run an export: count it, refuse events, catch panics, map the result.
fn api(name: &str, ev: *mut c_void, body: impl FnOnce(usize) -> R<()>) -> c_int {
    let f = counters::index(name).unwrap_or(0);
    counters::count(f, 0);
    if !ev.is_null() {
        return -der::NOSYS;
    }
    if let Some(rc) = injected(f) {
        return rc;
    }
    match std::panic::catch_unwind(AssertUnwindSafe(|| body(f))) {
        Ok(Ok(())) => 0,
        Ok(Err(rc)) => rc,
        Err(_) => -der::MISC,
    }
}

fn initialised() -> R<()> {
    if state().refs == 0 {
        return Err(-der::UNINIT);
    }
    Ok(())
}

fn new_handle(h: Handle) -> R<u64> {
    let mut s = state();
    if s.refs == 0 {
        return Err(-der::UNINIT);
    }
    if s.next == 0 {
        // Cookies differ between processes and runs.
        s.next = u64::from(std::process::id()) << 20;
    }
    s.next += 1;
    let cookie = (s.next << 4) | h.tag();
    s.handles.insert(cookie, h);
    Ok(cookie)
}

fn get_handle(cookie: u64, tag: u64) -> R<Handle> {
    let s = state();
    if s.refs == 0 {
        return Err(-der::UNINIT);
    }
    if cookie & 0xf != tag {
        return Err(-der::NO_HDL);
    }
    s.handles.get(&cookie).cloned().ok_or(-der::NO_HDL)
}

fn adjust_parent(s: &mut State, parent: u64, delta: i32) {
    match s.handles.get_mut(&parent) {
        Some(Handle::Pool { conts, .. }) => *conts = conts.saturating_add_signed(delta),
        Some(Handle::Cont { objs, .. }) => *objs = objs.saturating_add_signed(delta),
        _ => {}
    }
}

fn no_tx(th: DaosHandle) -> R<()> {
    if th.cookie != 0 {
        return Err(-der::NOSYS);
    }
    Ok(())
}

fn rpc(f: usize, n: u64) {
    counters::add_rpcs(f, n);
}

/// A C string argument.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
unsafe fn cstr<'a>(p: *const c_char) -> R<&'a str> {
    if p.is_null() {
        return Err(-der::INVAL);
    }
    // SAFETY: the caller passes a NUL-terminated string (checked non-null).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| -der::INVAL)
}

/// Store `v` through an output pointer.
///
/// # Safety
/// `p` is null or valid for writes of a `T`.
unsafe fn out<T>(p: *mut T, v: T) -> R<()> {
    if p.is_null() {
        return Err(-der::INVAL);
    }
    // SAFETY: non-null, and valid for writes by the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// `daos_label_is_valid`.
fn label_is_valid(label: &str) -> bool {
    (1..=DAOS_PROP_LABEL_MAX_LEN).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'.' | b'_' | b'-'))
        && !backend::is_uuid(label)
}

// ------------------------------------------------------- library, pools

/// `int daos_init(void)`.
#[no_mangle]
pub extern "C" fn daos_init() -> c_int {
    api("daos_init", std::ptr::null_mut(), |_| {
        if env_flag("DAOS_STANDIN_NO_AGENT") {
            return Err(-der::MISC);
        }
        let b = backend_init()?;
        let mut s = state();
        s.refs += 1;
        if s.refs == 1 {
            drop(s);
            if let Ok(pools) = std::env::var("DAOS_STANDIN_POOLS") {
                for p in pools.split(',').filter(|p| !p.is_empty()) {
                    let _ = b.pool_create(p);
                }
            }
            register_report();
        }
        Ok(())
    })
}

fn register_report() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn report() {
        if let Some(path) = std::env::var_os("DAOS_STANDIN_COUNTERS") {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(format!("{}\n", counters::report_line()).as_bytes());
            }
        }
    }
    ONCE.call_once(|| {
        if std::env::var_os("DAOS_STANDIN_COUNTERS").is_some() {
            // SAFETY: registers a function without arguments that only
            // appends to a file; safe to run at exit.
            unsafe { libc::atexit(report) };
        }
    });
}

/// `int daos_fini(void)`.
#[no_mangle]
pub extern "C" fn daos_fini() -> c_int {
    api("daos_fini", std::ptr::null_mut(), |_| {
        let mut s = state();
        if s.refs == 0 {
            return Err(-der::UNINIT);
        }
        s.refs -= 1;
        if s.refs == 0 {
            s.handles.clear();
        }
        Ok(())
    })
}

/// `daos_pool_connect2` (the symbol behind the `daos_pool_connect` macro).
#[no_mangle]
pub unsafe extern "C" fn daos_pool_connect2(
    pool: *const c_char,
    sys: *const c_char,
    flags: c_uint,
    poh: *mut DaosHandle,
    _info: *mut c_void,
    ev: *mut c_void,
) -> c_int {
    api("daos_pool_connect", ev, |f| {
        initialised()?;
        // SAFETY: C strings from the caller.
        let name = unsafe { cstr(pool) }?;
        if !sys.is_null() {
            // SAFETY: as above.
            let sys = unsafe { cstr(sys) }?;
            if sys != "daos_server" {
                return Err(-der::INVAL);
            }
        }
        if ![DAOS_PC_RO, DAOS_PC_RW, DAOS_PC_EX].contains(&flags) || poh.is_null() {
            return Err(-der::INVAL);
        }
        rpc(f, 1);
        let pool = be().pool_lookup(name)?;
        let cookie = new_handle(Handle::Pool {
            pool,
            rw: flags != DAOS_PC_RO,
            conts: 0,
        })?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { out(poh, DaosHandle { cookie }) }
    })
}

/// `daos_pool_connect`: the weak alias of [`daos_pool_connect2`].
#[no_mangle]
pub unsafe extern "C" fn daos_pool_connect(
    pool: *const c_char,
    sys: *const c_char,
    flags: c_uint,
    poh: *mut DaosHandle,
    info: *mut c_void,
    ev: *mut c_void,
) -> c_int {
    // SAFETY: same contract.
    unsafe { daos_pool_connect2(pool, sys, flags, poh, info, ev) }
}

/// `int daos_pool_disconnect(daos_handle_t poh, daos_event_t *ev)`.
#[no_mangle]
pub extern "C" fn daos_pool_disconnect(poh: DaosHandle, ev: *mut c_void) -> c_int {
    api("daos_pool_disconnect", ev, |f| {
        let Handle::Pool { conts, .. } = get_handle(poh.cookie, HTYPE_POOL)? else {
            return Err(-der::NO_HDL);
        };
        if conts > 0 {
            return Err(-der::BUSY);
        }
        rpc(f, 1);
        state().handles.remove(&poh.cookie);
        Ok(())
    })
}

/// `int daos_pool_list_cont(poh, daos_size_t *ncont, struct daos_pool_cont_info *cbuf, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_pool_list_cont(
    poh: DaosHandle,
    ncont: *mut u64,
    cbuf: *mut DaosPoolContInfo,
    ev: *mut c_void,
) -> c_int {
    api("daos_pool_list_cont", ev, |f| {
        let Handle::Pool { pool, .. } = get_handle(poh.cookie, HTYPE_POOL)? else {
            return Err(-der::NO_HDL);
        };
        if ncont.is_null() {
            return Err(-der::INVAL);
        }
        rpc(f, 1);
        let conts = be().cont_list(&pool)?;
        // SAFETY: checked non-null; in/out count of the caller.
        let room = unsafe { *ncont };
        // SAFETY: as above.
        unsafe { out(ncont, conts.len() as u64) }?;
        if cbuf.is_null() {
            return Ok(());
        }
        if room < conts.len() as u64 {
            return Err(-der::TRUNC);
        }
        for (i, c) in conts.iter().enumerate() {
            let mut info = DaosPoolContInfo {
                pci_uuid: c.uuid,
                pci_label: [0; DAOS_PROP_LABEL_MAX_LEN + 1],
            };
            if let Some(l) = &c.label {
                info.pci_label[..l.len()].copy_from_slice(l.as_bytes());
            }
            // SAFETY: the caller's buffer holds `room` >= len entries.
            unsafe { cbuf.add(i).write(info) };
        }
        Ok(())
    })
}

// ------------------------------------------------------------ containers

/// Properties of a container to create: label (if given as a property),
/// redundancy factor.
///
/// # Safety
/// `prop` is null or a valid property list.
unsafe fn read_props(prop: *const DaosProp) -> R<(Option<String>, u32)> {
    let mut label = None;
    let mut rf = 0;
    if prop.is_null() {
        return Ok((label, rf));
    }
    // SAFETY: non-null property list from the caller.
    let p = unsafe { &*prop };
    if p.dpp_nr > DAOS_PROP_ENTRIES_MAX_NR || (p.dpp_nr > 0 && p.dpp_entries.is_null()) {
        return Err(-der::INVAL);
    }
    for i in 0..p.dpp_nr as usize {
        // SAFETY: `dpp_nr` entries follow `dpp_entries`.
        let e = unsafe { &*p.dpp_entries.add(i) };
        match e.dpe_type {
            DAOS_PROP_CO_LABEL => {
                // SAFETY: a label entry holds a C string.
                let l = unsafe { cstr(e.dpe_val as usize as *const c_char) }?;
                label = Some(l.to_string());
            }
            DAOS_PROP_CO_REDUN_FAC => {
                if e.dpe_val > 4 {
                    return Err(-der::INVAL);
                }
                rf = e.dpe_val as u32;
            }
            t if t > 0x1000 && t < 0x1100 => {} // other container properties
            _ => return Err(-der::INVAL),
        }
    }
    Ok((label, rf))
}

fn cont_create(f: usize, poh: DaosHandle, label: Option<String>, rf: u32) -> R<[u8; 16]> {
    let Handle::Pool { pool, rw, .. } = get_handle(poh.cookie, HTYPE_POOL)? else {
        return Err(-der::NO_HDL);
    };
    if let Some(l) = &label {
        if !label_is_valid(l) {
            return Err(-der::INVAL);
        }
    }
    if !rw {
        return Err(-der::NO_PERM);
    }
    rpc(f, 1);
    let uuid = backend::new_uuid();
    be().cont_create(&pool, &ContMeta { uuid, label, rf })?;
    Ok(uuid)
}

/// `daos_cont_create2` (behind the `daos_cont_create` macro).
#[no_mangle]
pub unsafe extern "C" fn daos_cont_create2(
    poh: DaosHandle,
    uuid: *mut [u8; 16],
    prop: *const DaosProp,
    ev: *mut c_void,
) -> c_int {
    api("daos_cont_create", ev, |f| {
        // SAFETY: the caller's property list.
        let (label, rf) = unsafe { read_props(prop) }?;
        let u = cont_create(f, poh, label, rf)?;
        if !uuid.is_null() {
            // SAFETY: non-null output UUID.
            unsafe { out(uuid, u) }?;
        }
        Ok(())
    })
}

/// `daos_cont_create`: alias of [`daos_cont_create2`].
#[no_mangle]
pub unsafe extern "C" fn daos_cont_create(
    poh: DaosHandle,
    uuid: *mut [u8; 16],
    prop: *const DaosProp,
    ev: *mut c_void,
) -> c_int {
    // SAFETY: same contract.
    unsafe { daos_cont_create2(poh, uuid, prop, ev) }
}

/// `int daos_cont_create_with_label(poh, label, prop, uuid_t *uuid, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_create_with_label(
    poh: DaosHandle,
    label: *const c_char,
    prop: *const DaosProp,
    uuid: *mut [u8; 16],
    ev: *mut c_void,
) -> c_int {
    api("daos_cont_create_with_label", ev, |f| {
        // SAFETY: the caller's label.
        let label = unsafe { cstr(label) }?.to_string();
        // SAFETY: the caller's property list.
        let (plabel, rf) = unsafe { read_props(prop) }?;
        if plabel.is_some() {
            return Err(-der::INVAL);
        }
        let u = cont_create(f, poh, Some(label), rf)?;
        if !uuid.is_null() {
            // SAFETY: non-null output UUID.
            unsafe { out(uuid, u) }?;
        }
        Ok(())
    })
}

/// `daos_cont_open2` (behind the `daos_cont_open` macro).
#[no_mangle]
pub unsafe extern "C" fn daos_cont_open2(
    poh: DaosHandle,
    cont: *const c_char,
    flags: c_uint,
    coh: *mut DaosHandle,
    _info: *mut c_void,
    ev: *mut c_void,
) -> c_int {
    api("daos_cont_open", ev, |f| {
        let Handle::Pool { pool, rw: prw, .. } = get_handle(poh.cookie, HTYPE_POOL)? else {
            return Err(-der::NO_HDL);
        };
        // SAFETY: the caller's container name.
        let name = unsafe { cstr(cont) }?;
        let mode = flags & !DAOS_COO_FORCE;
        if ![DAOS_COO_RO, DAOS_COO_RW, DAOS_COO_EX].contains(&mode) || coh.is_null() {
            return Err(-der::INVAL);
        }
        let rw = mode != DAOS_COO_RO;
        if rw && !prw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        let meta = be().cont_lookup(&pool, name)?;
        let cookie = new_handle(Handle::Cont {
            poh: poh.cookie,
            pool,
            meta,
            rw,
            objs: 0,
        })?;
        adjust_parent(&mut state(), poh.cookie, 1);
        // SAFETY: checked non-null.
        unsafe { out(coh, DaosHandle { cookie }) }
    })
}

/// `daos_cont_open`: alias of [`daos_cont_open2`].
#[no_mangle]
pub unsafe extern "C" fn daos_cont_open(
    poh: DaosHandle,
    cont: *const c_char,
    flags: c_uint,
    coh: *mut DaosHandle,
    info: *mut c_void,
    ev: *mut c_void,
) -> c_int {
    // SAFETY: same contract.
    unsafe { daos_cont_open2(poh, cont, flags, coh, info, ev) }
}

/// `int daos_cont_close(daos_handle_t coh, daos_event_t *ev)`.
#[no_mangle]
pub extern "C" fn daos_cont_close(coh: DaosHandle, ev: *mut c_void) -> c_int {
    api("daos_cont_close", ev, |f| {
        let Handle::Cont { poh, objs, .. } = get_handle(coh.cookie, HTYPE_CO)? else {
            return Err(-der::NO_HDL);
        };
        if objs > 0 {
            return Err(-der::BUSY);
        }
        rpc(f, 1);
        let mut s = state();
        s.handles.remove(&coh.cookie);
        adjust_parent(&mut s, poh, -1);
        Ok(())
    })
}

/// `daos_cont_destroy2` (behind the `daos_cont_destroy` macro).
#[no_mangle]
pub unsafe extern "C" fn daos_cont_destroy2(
    poh: DaosHandle,
    cont: *const c_char,
    force: c_int,
    ev: *mut c_void,
) -> c_int {
    api("daos_cont_destroy", ev, |f| {
        let Handle::Pool { pool, rw, .. } = get_handle(poh.cookie, HTYPE_POOL)? else {
            return Err(-der::NO_HDL);
        };
        // SAFETY: the caller's container name.
        let name = unsafe { cstr(cont) }?;
        if !rw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        let meta = be().cont_lookup(&pool, name)?;
        let open = state().handles.values().any(
            |h| matches!(h, Handle::Cont { pool: p, meta: m, .. } if *p == pool && m.uuid == meta.uuid),
        );
        if open && force == 0 {
            return Err(-der::BUSY);
        }
        be().cont_destroy(&pool, &meta)
    })
}

/// `daos_cont_destroy`: alias of [`daos_cont_destroy2`].
#[no_mangle]
pub unsafe extern "C" fn daos_cont_destroy(
    poh: DaosHandle,
    cont: *const c_char,
    force: c_int,
    ev: *mut c_void,
) -> c_int {
    // SAFETY: same contract.
    unsafe { daos_cont_destroy2(poh, cont, force, ev) }
}

/// `int daos_cont_alloc_oids(coh, daos_size_t num_oids, uint64_t *oid, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_alloc_oids(
    coh: DaosHandle,
    num_oids: u64,
    oid: *mut u64,
    ev: *mut c_void,
) -> c_int {
    api("daos_cont_alloc_oids", ev, |f| {
        let Handle::Cont { pool, meta, .. } = get_handle(coh.cookie, HTYPE_CO)? else {
            return Err(-der::NO_HDL);
        };
        if num_oids == 0 || oid.is_null() {
            return Err(-der::INVAL);
        }
        rpc(f, 1);
        let first = be().alloc_oids(&pool, &meta.uuid, num_oids)?;
        // SAFETY: checked non-null.
        unsafe { out(oid, first) }
    })
}

// --------------------------------------------------------------- objects

/// `daos_obj_generate_oid2`. (The plain `daos_obj_generate_oid` is not
/// exported: in DAOS 2.2 it has another meaning.)
#[no_mangle]
pub unsafe extern "C" fn daos_obj_generate_oid2(
    coh: DaosHandle,
    oid: *mut DaosObjId,
    otype: c_uint,
    cid: u32,
    _hints: u16,
    args: u32,
) -> c_int {
    api("daos_obj_generate_oid", std::ptr::null_mut(), |_| {
        let Handle::Cont { meta, .. } = get_handle(coh.cookie, HTYPE_CO)? else {
            return Err(-der::NO_HDL);
        };
        if oid.is_null() || otype > DAOS_OT_MAX || args != 0 {
            return Err(-der::INVAL);
        }
        // SAFETY: checked non-null; in/out OID of the caller.
        let o = unsafe { &mut *oid };
        o.hi = oclass::generate(o.hi, otype, cid, targets(), meta.rf)?;
        Ok(())
    })
}

/// Open an object of container `coh`: validates the handle, the mode, the
/// OID's class against the container's redundancy factor, and the type.
fn open_obj(coh: DaosHandle, oid: DaosObjId, mode: c_uint, types: &[u32]) -> R<(ObjRef, bool)> {
    let Handle::Cont { pool, meta, rw, .. } = get_handle(coh.cookie, HTYPE_CO)? else {
        return Err(-der::NO_HDL);
    };
    let m = mode & !DAOS_OO_EXCL;
    if m != DAOS_OO_RO && m != DAOS_OO_RW {
        return Err(-der::INVAL);
    }
    if !types.is_empty() && !types.contains(&oclass::otype(oid.hi)) {
        return Err(-der::INVAL);
    }
    if oclass::tolerated(oid.hi)? < meta.rf {
        return Err(-der::INVAL);
    }
    let orw = m == DAOS_OO_RW;
    if orw && !rw {
        return Err(-der::NO_PERM);
    }
    Ok((
        ObjRef {
            pool,
            cont: meta.uuid,
            oid,
        },
        orw,
    ))
}

fn add_obj(h: Handle, coh: u64) -> R<u64> {
    let cookie = new_handle(h)?;
    adjust_parent(&mut state(), coh, 1);
    Ok(cookie)
}

fn close_obj(cookie: u64, tag: u64) -> R<()> {
    let h = get_handle(cookie, tag)?;
    let coh = match h {
        Handle::Obj { coh, .. } | Handle::Kv { coh, .. } | Handle::Array { coh, .. } => coh,
        _ => return Err(-der::NO_HDL),
    };
    let mut s = state();
    s.handles.remove(&cookie);
    adjust_parent(&mut s, coh, -1);
    Ok(())
}

/// `int daos_obj_open(coh, daos_obj_id_t oid, unsigned int mode, daos_handle_t *oh, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_open(
    coh: DaosHandle,
    oid: DaosObjId,
    mode: c_uint,
    oh: *mut DaosHandle,
    ev: *mut c_void,
) -> c_int {
    api("daos_obj_open", ev, |_| {
        if oh.is_null() {
            return Err(-der::INVAL);
        }
        let (o, rw) = open_obj(coh, oid, mode, &[])?;
        let cookie = add_obj(
            Handle::Obj {
                coh: coh.cookie,
                o,
                rw,
            },
            coh.cookie,
        )?;
        // SAFETY: checked non-null.
        unsafe { out(oh, DaosHandle { cookie }) }
    })
}

/// `int daos_obj_close(daos_handle_t oh, daos_event_t *ev)`: object handles
/// only (a KV handle is `-DER_NO_HDL`, where libdaos leaks it).
#[no_mangle]
pub extern "C" fn daos_obj_close(oh: DaosHandle, ev: *mut c_void) -> c_int {
    api("daos_obj_close", ev, |_| close_obj(oh.cookie, HTYPE_OBJ))
}

/// `int daos_obj_punch(oh, th, uint64_t flags, ev)`.
#[no_mangle]
pub extern "C" fn daos_obj_punch(
    oh: DaosHandle,
    th: DaosHandle,
    _flags: u64,
    ev: *mut c_void,
) -> c_int {
    api("daos_obj_punch", ev, |f| {
        no_tx(th)?;
        let Handle::Obj { o, rw, .. } = get_handle(oh.cookie, HTYPE_OBJ)? else {
            return Err(-der::NO_HDL);
        };
        if !rw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        be().punch(&o)
    })
}

// ------------------------------------------------------------------- KV

const KV_TYPES: &[u32] = &[DAOS_OT_KV_HASHED, DAOS_OT_KV_UINT64, DAOS_OT_KV_LEXICAL];

fn kv(oh: DaosHandle) -> R<(ObjRef, bool)> {
    match get_handle(oh.cookie, HTYPE_KV)? {
        Handle::Kv { o, rw, .. } => Ok((o, rw)),
        _ => Err(-der::NO_HDL),
    }
}

/// A KV key argument: a non-empty C string.
///
/// # Safety
/// As [`cstr`].
unsafe fn kv_key<'a>(key: *const c_char) -> R<&'a [u8]> {
    if key.is_null() {
        return Err(-der::INVAL);
    }
    // SAFETY: the caller's NUL-terminated key.
    let k = unsafe { CStr::from_ptr(key) }.to_bytes();
    if k.is_empty() {
        return Err(-der::INVAL);
    }
    Ok(k)
}

/// `int daos_kv_open(coh, oid, mode, daos_handle_t *oh, ev)`: local.
#[no_mangle]
pub unsafe extern "C" fn daos_kv_open(
    coh: DaosHandle,
    oid: DaosObjId,
    mode: c_uint,
    oh: *mut DaosHandle,
    ev: *mut c_void,
) -> c_int {
    api("daos_kv_open", ev, |_| {
        if oh.is_null() {
            return Err(-der::INVAL);
        }
        let (o, rw) = open_obj(coh, oid, mode, KV_TYPES)?;
        let cookie = add_obj(
            Handle::Kv {
                coh: coh.cookie,
                o,
                rw,
            },
            coh.cookie,
        )?;
        // SAFETY: checked non-null.
        unsafe { out(oh, DaosHandle { cookie }) }
    })
}

/// `int daos_kv_close(daos_handle_t oh, daos_event_t *ev)`.
#[no_mangle]
pub extern "C" fn daos_kv_close(oh: DaosHandle, ev: *mut c_void) -> c_int {
    api("daos_kv_close", ev, |_| close_obj(oh.cookie, HTYPE_KV))
}

/// `int daos_kv_destroy(oh, th, ev)`: punch every key.
#[no_mangle]
pub extern "C" fn daos_kv_destroy(oh: DaosHandle, th: DaosHandle, ev: *mut c_void) -> c_int {
    api("daos_kv_destroy", ev, |f| {
        no_tx(th)?;
        let (o, rw) = kv(oh)?;
        if !rw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        be().punch(&o)
    })
}

/// `int daos_kv_put(oh, th, uint64_t flags, const char *key, daos_size_t size, const void *buf, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_kv_put(
    oh: DaosHandle,
    th: DaosHandle,
    flags: u64,
    key: *const c_char,
    size: u64,
    buf: *const c_void,
    ev: *mut c_void,
) -> c_int {
    api("daos_kv_put", ev, |f| {
        no_tx(th)?;
        let (o, rw) = kv(oh)?;
        // SAFETY: the caller's key.
        let key = unsafe { kv_key(key) }?;
        let cond = match flags {
            0 => Cond::Any,
            DAOS_COND_KEY_INSERT => Cond::Insert,
            DAOS_COND_KEY_UPDATE => Cond::Update,
            _ => return Err(-der::INVAL),
        };
        if size > 0 && buf.is_null() {
            return Err(-der::INVAL);
        }
        if !rw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        if size == 0 {
            // A zero-sized update punches the value, as in DAOS.
            be().kv_remove(&o, key)?;
            return Ok(());
        }
        // SAFETY: `size` bytes at `buf` (checked non-null).
        let value = unsafe { std::slice::from_raw_parts(buf as *const u8, size as usize) };
        be().kv_put(&o, key, value, cond)
    })
}

/// `int daos_kv_get(oh, th, uint64_t flags, const char *key, daos_size_t *size, void *buf, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_kv_get(
    oh: DaosHandle,
    th: DaosHandle,
    flags: u64,
    key: *const c_char,
    size: *mut u64,
    buf: *mut c_void,
    ev: *mut c_void,
) -> c_int {
    api("daos_kv_get", ev, |f| {
        no_tx(th)?;
        let (o, _) = kv(oh)?;
        // SAFETY: the caller's key.
        let key = unsafe { kv_key(key) }?;
        if size.is_null() || (flags != 0 && flags != DAOS_COND_KEY_GET) {
            return Err(-der::INVAL);
        }
        rpc(f, 1);
        let value = be().kv_get(&o, key)?;
        // SAFETY: checked non-null; in/out size.
        let room = unsafe { *size };
        let Some(value) = value else {
            // SAFETY: as above.
            unsafe { out(size, 0) }?;
            return if flags == DAOS_COND_KEY_GET {
                Err(-der::NONEXIST)
            } else {
                Ok(())
            };
        };
        // SAFETY: as above.
        unsafe { out(size, value.len() as u64) }?;
        if buf.is_null() || room == 0 {
            return Ok(()); // a size query
        }
        if (value.len() as u64) > room {
            return Err(-der::REC2BIG);
        }
        // SAFETY: the caller's buffer holds `room` >= len bytes.
        unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), buf as *mut u8, value.len()) };
        Ok(())
    })
}

/// `int daos_kv_remove(oh, th, uint64_t flags, const char *key, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_kv_remove(
    oh: DaosHandle,
    th: DaosHandle,
    flags: u64,
    key: *const c_char,
    ev: *mut c_void,
) -> c_int {
    api("daos_kv_remove", ev, |f| {
        no_tx(th)?;
        let (o, rw) = kv(oh)?;
        // SAFETY: the caller's key.
        let key = unsafe { kv_key(key) }?;
        if flags != 0 && flags != DAOS_COND_KEY_REMOVE {
            return Err(-der::INVAL);
        }
        if !rw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        let existed = be().kv_remove(&o, key)?;
        if !existed && flags == DAOS_COND_KEY_REMOVE {
            return Err(-der::NONEXIST);
        }
        Ok(())
    })
}

/// Where a listing stands, kept in the anchor's buffer: the hash and (up to
/// 88 bytes of) the last key returned in the current shard.
const ANCHOR_KEY_MAX: usize = 88;

/// `int daos_kv_list(oh, th, uint32_t *nr, daos_key_desc_t *kds, d_sg_list_t *sgl, daos_anchor_t *anchor, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_kv_list(
    oh: DaosHandle,
    th: DaosHandle,
    nr: *mut u32,
    kds: *mut DaosKeyDesc,
    sgl: *mut DSgList,
    anchor: *mut DaosAnchor,
    ev: *mut c_void,
) -> c_int {
    api("daos_kv_list", ev, |f| {
        no_tx(th)?;
        let (o, _) = kv(oh)?;
        if nr.is_null() || kds.is_null() || sgl.is_null() || anchor.is_null() {
            return Err(-der::INVAL);
        }
        // SAFETY: checked non-null; the caller's in/out arguments.
        let (max, sgl, anchor) = unsafe { (*nr, &mut *sgl, &mut *anchor) };
        if max == 0 || sgl.sg_nr != 1 || sgl.sg_iovs.is_null() {
            return Err(-der::INVAL);
        }
        // SAFETY: one iov (checked above).
        let iov = unsafe { &mut *sgl.sg_iovs };
        if iov.iov_buf.is_null() && iov.iov_buf_len > 0 {
            return Err(-der::INVAL);
        }
        if anchor.da_type == DAOS_ANCHOR_TYPE_EOF {
            // SAFETY: checked non-null.
            unsafe { out(nr, 0) }?;
            return Ok(());
        }
        let shards = oclass::groups(o.oid.hi).max(1);
        let shard = u32::from(anchor.da_shard);
        if shard >= shards {
            return Err(-der::INVAL);
        }
        rpc(f, 1);
        let mut keys: Vec<(u64, Vec<u8>)> = be()
            .kv_keys(&o)?
            .into_iter()
            .map(|k| (backend::hash64(&k), k))
            .filter(|(h, _)| (*h % u64::from(shards)) as u32 == shard)
            .collect();
        keys.sort();
        let started = anchor.da_type == DAOS_ANCHOR_TYPE_HKEY && anchor.da_flags & 1 == 1;
        let last_hash = u64::from_le_bytes(anchor.da_buf[0..8].try_into().unwrap_or([0; 8]));
        let last_len = usize::from(u16::from_le_bytes([anchor.da_buf[8], anchor.da_buf[9]]));
        let last_key = &anchor.da_buf[16..16 + last_len.min(ANCHOR_KEY_MAX)];
        let pending: Vec<&(u64, Vec<u8>)> = keys
            .iter()
            .filter(|(h, k)| {
                !started
                    || *h > last_hash
                    || (*h == last_hash && last_len <= ANCHOR_KEY_MAX && k.as_slice() > last_key)
            })
            .collect();
        let mut used = 0usize;
        let mut n = 0usize;
        for (h, k) in &pending {
            if n == max as usize {
                break;
            }
            if used + k.len() > iov.iov_buf_len {
                if n == 0 {
                    // SAFETY: `kds` has at least one descriptor (max >= 1).
                    unsafe {
                        kds.write(DaosKeyDesc {
                            kd_key_len: k.len() as u64,
                            kd_val_type: 0,
                        })
                    };
                    // SAFETY: checked non-null.
                    unsafe { out(nr, 0) }?;
                    return Err(-der::KEY2BIG);
                }
                break;
            }
            // SAFETY: `used + len <= iov_buf_len` bytes of the caller's buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    k.as_ptr(),
                    (iov.iov_buf as *mut u8).add(used),
                    k.len(),
                )
            };
            // SAFETY: `kds` holds `max` > n descriptors.
            unsafe {
                kds.add(n).write(DaosKeyDesc {
                    kd_key_len: k.len() as u64,
                    kd_val_type: 0,
                })
            };
            used += k.len();
            n += 1;
            anchor.da_buf[0..8].copy_from_slice(&h.to_le_bytes());
            anchor.da_buf[8..10].copy_from_slice(&(k.len().min(0xffff) as u16).to_le_bytes());
            let keep = k.len().min(ANCHOR_KEY_MAX);
            anchor.da_buf[16..16 + keep].copy_from_slice(&k[..keep]);
        }
        iov.iov_len = used;
        sgl.sg_nr_out = 1;
        if n == pending.len() {
            // This shard is done: the next call lists the next one.
            anchor.da_buf = [0; DAOS_ANCHOR_BUF_MAX];
            anchor.da_flags = 0;
            if shard + 1 >= shards {
                anchor.da_type = DAOS_ANCHOR_TYPE_EOF;
            } else {
                anchor.da_type = DAOS_ANCHOR_TYPE_HKEY;
                anchor.da_shard = (shard + 1) as u16;
            }
        } else {
            anchor.da_type = DAOS_ANCHOR_TYPE_HKEY;
            anchor.da_flags = 1;
        }
        // SAFETY: checked non-null.
        unsafe { out(nr, n as u32) }
    })
}

// ---------------------------------------------------------------- arrays

const ARRAY_TYPES: &[u32] = &[DAOS_OT_ARRAY, DAOS_OT_ARRAY_ATTR, DAOS_OT_ARRAY_BYTE];

#[allow(clippy::too_many_arguments)]
fn open_array(
    coh: DaosHandle,
    oid: DaosObjId,
    mode: c_uint,
    types: &[u32],
    cell: u64,
    chunk: u64,
    oh: *mut DaosHandle,
    from_meta: bool,
) -> R<()> {
    if oh.is_null() || cell == 0 || chunk == 0 {
        return Err(-der::INVAL);
    }
    let (o, rw) = open_obj(coh, oid, mode, types)?;
    let cookie = add_obj(
        Handle::Array {
            coh: coh.cookie,
            o,
            rw,
            cell,
            chunk,
            from_meta,
        },
        coh.cookie,
    )?;
    // SAFETY: checked non-null by the callers' contract above.
    unsafe { out(oh, DaosHandle { cookie }) }
}

/// `int daos_array_create(coh, oid, th, cell_size, chunk_size, daos_handle_t *oh, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_array_create(
    coh: DaosHandle,
    oid: DaosObjId,
    th: DaosHandle,
    cell_size: u64,
    chunk_size: u64,
    oh: *mut DaosHandle,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_create", ev, |f| {
        no_tx(th)?;
        if cell_size == 0 || chunk_size == 0 || oh.is_null() {
            return Err(-der::INVAL);
        }
        let (o, rw) = open_obj(coh, oid, DAOS_OO_RW, ARRAY_TYPES)?;
        if !rw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        be().array_set_meta(&o, (cell_size, chunk_size), true)?;
        open_array(
            coh,
            oid,
            DAOS_OO_RW,
            ARRAY_TYPES,
            cell_size,
            chunk_size,
            oh,
            true,
        )
    })
}

/// `int daos_array_open(coh, oid, th, mode, daos_size_t *cell_size, daos_size_t *chunk_size, daos_handle_t *oh, ev)`:
/// `DAOS_OT_ARRAY` only; fetches the metadata.
#[no_mangle]
pub unsafe extern "C" fn daos_array_open(
    coh: DaosHandle,
    oid: DaosObjId,
    th: DaosHandle,
    mode: c_uint,
    cell_size: *mut u64,
    chunk_size: *mut u64,
    oh: *mut DaosHandle,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_open", ev, |f| {
        no_tx(th)?;
        if cell_size.is_null() || chunk_size.is_null() || oh.is_null() {
            return Err(-der::INVAL);
        }
        let (o, _) = open_obj(coh, oid, mode, &[DAOS_OT_ARRAY])?;
        rpc(f, 1);
        let (cell, chunk) = be().array_meta(&o)?.ok_or(-der::NONEXIST)?;
        open_array(coh, oid, mode, &[DAOS_OT_ARRAY], cell, chunk, oh, true)?;
        // SAFETY: checked non-null outputs.
        unsafe {
            out(cell_size, cell)?;
            out(chunk_size, chunk)
        }
    })
}

/// `int daos_array_open_with_attr(coh, oid, th, mode, cell_size, chunk_size, daos_handle_t *oh, ev)`:
/// local; `DAOS_OT_ARRAY_ATTR` and `DAOS_OT_ARRAY_BYTE` only.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn daos_array_open_with_attr(
    coh: DaosHandle,
    oid: DaosObjId,
    th: DaosHandle,
    mode: c_uint,
    cell_size: u64,
    chunk_size: u64,
    oh: *mut DaosHandle,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_open_with_attr", ev, |_| {
        no_tx(th)?;
        open_array(
            coh,
            oid,
            mode,
            &[DAOS_OT_ARRAY_ATTR, DAOS_OT_ARRAY_BYTE],
            cell_size,
            chunk_size,
            oh,
            false,
        )
    })
}

/// `int daos_array_close(daos_handle_t oh, daos_event_t *ev)`.
#[no_mangle]
pub extern "C" fn daos_array_close(oh: DaosHandle, ev: *mut c_void) -> c_int {
    api("daos_array_close", ev, |_| {
        close_obj(oh.cookie, HTYPE_ARRAY)
    })
}

struct ArrayH {
    o: ObjRef,
    cell: u64,
    chunk: u64,
    /// The attributes to check against the array's (opened with attributes).
    attr: Option<(u64, u64)>,
}

/// An array handle.
fn array(oh: DaosHandle, writing: bool) -> R<ArrayH> {
    let Handle::Array {
        o,
        rw,
        cell,
        chunk,
        from_meta,
        ..
    } = get_handle(oh.cookie, HTYPE_ARRAY)?
    else {
        return Err(-der::NO_HDL);
    };
    if writing && !rw {
        return Err(-der::NO_PERM);
    }
    Ok(ArrayH {
        o,
        cell,
        chunk,
        attr: (!from_meta).then_some((cell, chunk)),
    })
}

/// The ranges of an iod (records), the iovs of an sgl, and the number of
/// distinct chunks the ranges touch.
///
/// # Safety
/// `iod` and `sgl` are valid as libdaos documents them.
unsafe fn io_args(
    iod: *mut DaosArrayIod,
    sgl: *mut DSgList,
    a: &ArrayH,
    reading: bool,
) -> R<(Vec<DaosRange>, Vec<DIov>, u64)> {
    if iod.is_null() || sgl.is_null() {
        return Err(-der::INVAL);
    }
    // SAFETY: checked non-null.
    let (iod, sgl) = unsafe { (&*iod, &*sgl) };
    if (iod.arr_nr > 0 && iod.arr_rgs.is_null()) || (sgl.sg_nr > 0 && sgl.sg_iovs.is_null()) {
        return Err(-der::INVAL);
    }
    // SAFETY: `arr_nr` ranges and `sg_nr` iovs, as the caller promises.
    let ranges = unsafe { std::slice::from_raw_parts(iod.arr_rgs, iod.arr_nr as usize) }.to_vec();
    // SAFETY: as above.
    let iovs = unsafe { std::slice::from_raw_parts(sgl.sg_iovs, sgl.sg_nr as usize) }.to_vec();
    let records: u64 = ranges.iter().map(|r| r.rg_len).sum();
    let bytes: u64 = iovs
        .iter()
        .map(|v| {
            if reading {
                v.iov_buf_len as u64
            } else {
                v.iov_len as u64
            }
        })
        .sum();
    if records.checked_mul(a.cell) != Some(bytes) || iovs.iter().any(|v| v.iov_buf.is_null()) {
        return Err(-der::INVAL);
    }
    let mut chunks = std::collections::HashSet::new();
    for r in &ranges {
        if r.rg_len == 0 {
            continue;
        }
        let first = r.rg_idx / a.chunk;
        let last = (r.rg_idx + r.rg_len - 1) / a.chunk;
        for c in first..=last.min(first + 1_000_000) {
            chunks.insert(c);
        }
    }
    Ok((ranges, iovs, chunks.len().max(1) as u64))
}

/// `int daos_array_write(oh, th, daos_array_iod_t *iod, d_sg_list_t *sgl, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_array_write(
    oh: DaosHandle,
    th: DaosHandle,
    iod: *mut DaosArrayIod,
    sgl: *mut DSgList,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_write", ev, |f| {
        no_tx(th)?;
        let a = array(oh, true)?;
        // SAFETY: the caller's iod and sgl.
        let (ranges, iovs, chunks) = unsafe { io_args(iod, sgl, &a, false) }?;
        rpc(f, chunks);
        let mut data = Vec::new();
        for v in &iovs {
            // SAFETY: `iov_len` bytes at `iov_buf` (checked non-null).
            data.extend_from_slice(unsafe {
                std::slice::from_raw_parts(v.iov_buf as *const u8, v.iov_len)
            });
        }
        let mut pos = 0usize;
        for r in &ranges {
            let n = (r.rg_len * a.cell) as usize;
            be().array_write(&a.o, r.rg_idx * a.cell, &data[pos..pos + n], a.attr)?;
            pos += n;
        }
        Ok(())
    })
}

/// `int daos_array_read(oh, th, daos_array_iod_t *iod, d_sg_list_t *sgl, ev)`:
/// reading past the end is not an error; `arr_nr_short_read` and
/// `arr_nr_read` say what was there.
#[no_mangle]
pub unsafe extern "C" fn daos_array_read(
    oh: DaosHandle,
    th: DaosHandle,
    iod: *mut DaosArrayIod,
    sgl: *mut DSgList,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_read", ev, |f| {
        no_tx(th)?;
        let a = array(oh, false)?;
        // SAFETY: the caller's iod and sgl.
        let (ranges, iovs, chunks) = unsafe { io_args(iod, sgl, &a, true) }?;
        rpc(f, chunks);
        let mut data = Vec::new();
        let mut read = 0u64;
        let mut short = 0u64;
        for r in &ranges {
            let n = (r.rg_len * a.cell) as usize;
            let start = data.len();
            data.resize(start + n, 0xA5);
            let got = be().array_read(&a.o, r.rg_idx * a.cell, &mut data[start..], a.attr)?;
            read += got as u64 / a.cell;
            short += r.rg_len - got as u64 / a.cell;
        }
        let mut pos = 0;
        for v in &iovs {
            // SAFETY: `iov_buf_len` writable bytes at `iov_buf`.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data[pos..].as_ptr(),
                    v.iov_buf as *mut u8,
                    v.iov_buf_len,
                )
            };
            pos += v.iov_buf_len;
        }
        // SAFETY: the caller's iod (checked non-null in io_args).
        unsafe {
            (*iod).arr_nr_read = read;
            (*iod).arr_nr_short_read = short;
            (*sgl).sg_nr_out = (*sgl).sg_nr;
        }
        Ok(())
    })
}

/// `int daos_array_get_size(oh, th, daos_size_t *size, ev)`: in records.
#[no_mangle]
pub unsafe extern "C" fn daos_array_get_size(
    oh: DaosHandle,
    th: DaosHandle,
    size: *mut u64,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_get_size", ev, |f| {
        no_tx(th)?;
        let a = array(oh, false)?;
        if size.is_null() {
            return Err(-der::INVAL);
        }
        rpc(f, 1);
        let bytes = be().array_size(&a.o)?;
        // SAFETY: checked non-null.
        unsafe { out(size, bytes.div_ceil(a.cell)) }
    })
}

/// `int daos_array_set_size(oh, th, daos_size_t size, ev)`: in records.
#[no_mangle]
pub extern "C" fn daos_array_set_size(
    oh: DaosHandle,
    th: DaosHandle,
    size: u64,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_set_size", ev, |f| {
        no_tx(th)?;
        let a = array(oh, true)?;
        rpc(f, 1);
        be().array_truncate(&a.o, size * a.cell)
    })
}

/// `int daos_array_destroy(oh, th, ev)`: everything, metadata included.
#[no_mangle]
pub extern "C" fn daos_array_destroy(oh: DaosHandle, th: DaosHandle, ev: *mut c_void) -> c_int {
    api("daos_array_destroy", ev, |f| {
        no_tx(th)?;
        let Handle::Array { o, rw, .. } = get_handle(oh.cookie, HTYPE_ARRAY)? else {
            return Err(-der::NO_HDL);
        };
        if !rw {
            return Err(-der::NO_PERM);
        }
        rpc(f, 1);
        be().punch(&o)
    })
}

/// `int daos_array_punch(oh, th, daos_array_iod_t *iod, ev)`: the ranges
/// read back as zeros.
#[no_mangle]
pub unsafe extern "C" fn daos_array_punch(
    oh: DaosHandle,
    th: DaosHandle,
    iod: *mut DaosArrayIod,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_punch", ev, |f| {
        no_tx(th)?;
        let a = array(oh, true)?;
        if iod.is_null() {
            return Err(-der::INVAL);
        }
        // SAFETY: checked non-null.
        let iod = unsafe { &*iod };
        if iod.arr_nr > 0 && iod.arr_rgs.is_null() {
            return Err(-der::INVAL);
        }
        // SAFETY: `arr_nr` ranges.
        let ranges = unsafe { std::slice::from_raw_parts(iod.arr_rgs, iod.arr_nr as usize) };
        rpc(f, 1);
        let size = be().array_size(&a.o)?;
        for r in ranges {
            let start = r.rg_idx * a.cell;
            let end = ((r.rg_idx + r.rg_len) * a.cell).min(size);
            if start < end {
                be().array_write(&a.o, start, &vec![0; (end - start) as usize], a.attr)?;
            }
        }
        Ok(())
    })
}

/// `int daos_array_stat(oh, th, daos_array_stbuf_t *stbuf, ev)`.
#[no_mangle]
pub unsafe extern "C" fn daos_array_stat(
    oh: DaosHandle,
    th: DaosHandle,
    stbuf: *mut DaosArrayStbuf,
    ev: *mut c_void,
) -> c_int {
    api("daos_array_stat", ev, |f| {
        no_tx(th)?;
        let a = array(oh, false)?;
        rpc(f, 1);
        let bytes = be().array_size(&a.o)?;
        // SAFETY: the caller's output (null is refused by `out`).
        unsafe {
            out(
                stbuf,
                DaosArrayStbuf {
                    st_size: bytes.div_ceil(a.cell),
                    st_max_epoch: 0,
                },
            )
        }
    })
}

// ----------------------------------------------------------- properties

/// `daos_prop_t *daos_prop_alloc(uint32_t entries_nr)`: `calloc`'ed, so
/// that C callers may mix it with `daos_prop_free`.
#[no_mangle]
pub extern "C" fn daos_prop_alloc(entries_nr: u32) -> *mut DaosProp {
    if entries_nr > DAOS_PROP_ENTRIES_MAX_NR {
        return std::ptr::null_mut();
    }
    // SAFETY: calloc of one zeroed property list.
    let p = unsafe { libc::calloc(1, std::mem::size_of::<DaosProp>()) } as *mut DaosProp;
    if p.is_null() || entries_nr == 0 {
        return p;
    }
    // SAFETY: calloc of `entries_nr` zeroed entries.
    let e = unsafe { libc::calloc(entries_nr as usize, std::mem::size_of::<DaosPropEntry>()) }
        as *mut DaosPropEntry;
    if e.is_null() {
        // SAFETY: `p` came from calloc above.
        unsafe { libc::free(p as *mut c_void) };
        return std::ptr::null_mut();
    }
    // SAFETY: `p` is a valid, zeroed property list.
    unsafe {
        (*p).dpp_nr = entries_nr;
        (*p).dpp_entries = e;
    }
    p
}

/// `void daos_prop_free(daos_prop_t *prop)`: frees label strings too.
#[no_mangle]
pub unsafe extern "C" fn daos_prop_free(prop: *mut DaosProp) {
    if prop.is_null() {
        return;
    }
    // SAFETY: a list from daos_prop_alloc: entries and label strings were
    // malloc'ed.
    unsafe {
        let p = &*prop;
        for i in 0..p.dpp_nr as usize {
            let e = &*p.dpp_entries.add(i);
            if matches!(e.dpe_type, DAOS_PROP_PO_LABEL | DAOS_PROP_CO_LABEL) && e.dpe_val != 0 {
                libc::free(e.dpe_val as usize as *mut c_void);
            }
        }
        libc::free(p.dpp_entries as *mut c_void);
        libc::free(prop as *mut c_void);
    }
}

/// `const char *d_errstr(int rc)`: the code's name (`DER_NONEXIST`).
#[no_mangle]
pub extern "C" fn d_errstr(rc: c_int) -> *const c_char {
    der::name(rc).as_ptr() as *const c_char
}

// ------------------------------------------------------ stand-in extras

/// Use the directory `dir` (a NUL-terminated path) for pools, as
/// `DAOS_STANDIN_DIR` would; `sync` fdatasyncs every write. Call before
/// the first `daos_init`. `-DER_BUSY` if another backend is in use already.
#[no_mangle]
pub unsafe extern "C" fn daos_standin_configure(dir: *const c_char, sync: c_int) -> c_int {
    // SAFETY: the caller's path.
    let dir = match unsafe { cstr(dir) } {
        Ok(d) => PathBuf::from(d),
        Err(rc) => return rc,
    };
    let mut c = CONFIGURED.lock().unwrap_or_else(|p| p.into_inner());
    if BACKEND.get().is_some() {
        return if c.as_ref().is_some_and(|(d, _)| *d == dir) {
            0
        } else {
            -der::BUSY
        };
    }
    *c = Some((dir, sync != 0));
    0
}

/// Create a pool labelled `label` (what `dmg pool create` does).
/// `-DER_EXIST` if it exists, `-DER_INVAL` for a bad label.
#[no_mangle]
pub unsafe extern "C" fn daos_standin_pool_create(label: *const c_char) -> c_int {
    // SAFETY: the caller's label.
    let label = match unsafe { cstr(label) } {
        Ok(l) => l,
        Err(rc) => return rc,
    };
    if !label_is_valid(label) {
        return -der::INVAL;
    }
    match backend_init().and_then(|b| b.pool_create(label)) {
        Ok(()) => 0,
        Err(rc) => rc,
    }
}

/// Calls of function `name` (`daos_kv_put`, …), in this process
/// (`scope` 0) or on this thread (`scope` 1). A null `name`: every call.
#[no_mangle]
pub unsafe extern "C" fn daos_standin_count(name: *const c_char, scope: c_int) -> u64 {
    let thread = scope == 1;
    if name.is_null() {
        return (0..counters::NAMES.len())
            .map(|f| counters::calls(f, thread))
            .sum();
    }
    // SAFETY: the caller's name.
    match unsafe { cstr(name) }.ok().and_then(counters::index) {
        Some(f) => counters::calls(f, thread),
        None => u64::MAX,
    }
}

/// Would-be RPCs of function `name` (null: of all functions), in this
/// process (`scope` 0) or on this thread (`scope` 1).
#[no_mangle]
pub unsafe extern "C" fn daos_standin_rpc_count(name: *const c_char, scope: c_int) -> u64 {
    let thread = scope == 1;
    if name.is_null() {
        return counters::total_rpcs(thread);
    }
    // SAFETY: the caller's name.
    match unsafe { cstr(name) }.ok().and_then(counters::index) {
        Some(f) => counters::rpcs(f, thread),
        None => u64::MAX,
    }
}

/// Zero the counters of this process (`scope` 0) or this thread (1).
#[no_mangle]
pub extern "C" fn daos_standin_reset(scope: c_int) {
    counters::reset(scope == 1);
}

/// Make the `nth` next call (1 = the next one) of function `name` on the
/// calling thread return `rc` without doing anything. `-DER_INVAL` for an
/// unknown name.
#[no_mangle]
pub unsafe extern "C" fn daos_standin_inject(name: *const c_char, nth: u64, rc: c_int) -> c_int {
    // SAFETY: the caller's name.
    let Some(f) = (unsafe { cstr(name) }).ok().and_then(counters::index) else {
        return -der::INVAL;
    };
    INJECT.with(|v| v.borrow_mut().push((f, nth.max(1), rc)));
    0
}
