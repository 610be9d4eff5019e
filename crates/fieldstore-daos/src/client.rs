//! A small safe layer over the libdaos subset: load the library once,
//! `daos_init` once per process, and RAII handles for pools, containers,
//! KVs and byte arrays. Every call is blocking (`ev = NULL`) and without
//! transactions (`DAOS_TX_NONE`).

use std::ffi::{c_int, c_void, CStr, CString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use fieldstore_core::{Error, ErrorKind, Result};
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

use crate::ffi::{self, der, DaosHandle, DaosObjId, Functions, DAOS_TX_NONE};

/// The environment variable naming the library to load instead of
/// `libdaos.so.2` (e.g. the stand-in, or a DAOS install off the loader path).
pub const LIBRARY_ENV: &str = "FIELDSTORE_DAOS_LIBRARY";

/// A failed libdaos call.
#[derive(Debug, Clone)]
pub struct DaosError {
    /// The function.
    pub call: &'static str,
    /// Its return code (negative `-DER_*`).
    pub rc: i32,
    /// What it was called on.
    pub what: String,
    name: String,
}

impl fmt::Display for DaosError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {}: {} ({})",
            self.call, self.what, self.name, self.rc
        )
    }
}

impl std::error::Error for DaosError {}

impl DaosError {
    /// Whether this is `-DER_<code>`.
    pub fn is(&self, code: i32) -> bool {
        self.rc == -code
    }
}

impl From<DaosError> for Error {
    fn from(e: DaosError) -> Error {
        let kind = match -e.rc {
            der::NONEXIST => ErrorKind::NotFound,
            der::NO_PERM => ErrorKind::PermissionDenied,
            der::NOSPACE => ErrorKind::StorageFull,
            der::UNREACH
            | der::TIMEDOUT
            | der::AGAIN
            | der::EXCLUDED
            | der::NOREPLY
            | der::GRPVER
            | der::NOTLEADER
            | der::TX_RESTART
            | der::RF
            | der::NO_SERVICE
            | der::BUSY => ErrorKind::Unavailable,
            der::NO_HDL => ErrorKind::Internal,
            _ => ErrorKind::Io,
        };
        Error::new(kind, format!("DAOS: {e}")).with_source(e)
    }
}

/// The loaded library: its functions. Loaded once per process and never
/// unloaded (libdaos starts threads and registers exit handlers).
pub struct Daos {
    f: Functions,
    path: String,
    /// `daos_standin_rpc_count`, when the library is the stand-in: the
    /// would-be RPCs it counted (benchmarks report RPCs per field with it).
    rpc_count: Option<unsafe extern "C" fn(*const std::ffi::c_char, c_int) -> u64>,
}

impl fmt::Debug for Daos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Daos").field("path", &self.path).finish()
    }
}

fn unavailable(msg: impl fmt::Display) -> Error {
    Error::new(ErrorKind::Unavailable, format!("DAOS unavailable: {msg}"))
}

impl Daos {
    /// Load libdaos from `path` and resolve the subset, without calling
    /// `daos_init`. The library stays loaded for the life of the process.
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`] naming the library and the missing file or
    /// symbol.
    pub fn load(path: &Path) -> Result<Daos> {
        // SAFETY: loading libdaos runs its initialisers, which have no
        // preconditions. RTLD_NOW: a missing symbol fails here, not mid-run.
        let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map_err(|e| {
            unavailable(format!(
                "cannot load {} ({e}); install the DAOS client or set {LIBRARY_ENV}",
                path.display()
            ))
        })?;
        let shown = path.display().to_string();
        let f = Functions::resolve(&lib).map_err(|(name, e)| {
            unavailable(format!("{shown} has no {name} ({e}): not libdaos >= 2.2"))
        })?;
        // SAFETY: the stand-in's `uint64_t daos_standin_rpc_count(const
        // char *name, int scope)`; absent from a real libdaos.
        let rpc_count = unsafe { lib.get(b"daos_standin_rpc_count\0") }
            .ok()
            .map(|s| *s);
        // Never dlclose libdaos.
        std::mem::forget(lib);
        Ok(Daos {
            f,
            path: shown,
            rpc_count,
        })
    }

    /// The library for this process: loaded from `$FIELDSTORE_DAOS_LIBRARY`,
    /// else `configured`, else `libdaos.so.2`, and initialised
    /// (`daos_init`) once. The first successful load wins for the life of
    /// the process.
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`] if the library cannot be loaded or
    /// `daos_init` fails (no `daos_agent`).
    pub fn get(configured: Option<&Path>) -> Result<&'static Daos> {
        static DAOS: OnceLock<Daos> = OnceLock::new();
        static LOADING: Mutex<()> = Mutex::new(());
        if let Some(d) = DAOS.get() {
            return Ok(d);
        }
        let _guard = LOADING.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = DAOS.get() {
            return Ok(d);
        }
        let path = std::env::var_os(LIBRARY_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| configured.map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("libdaos.so.2"));
        let d = Daos::load(&path)?;
        d.init()?;
        Ok(DAOS.get_or_init(|| d))
    }

    /// Would-be RPCs this process has made so far, all functions and
    /// threads, when the library is `daos-standin` (which counts them); a
    /// real libdaos counts nothing here (`None`).
    pub fn standin_rpcs(&self) -> Option<u64> {
        // SAFETY: a null name means every function; scope 0 is the process.
        self.rpc_count.map(|f| unsafe { f(std::ptr::null(), 0) })
    }

    /// `daos_init`.
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`]: libdaos could not reach its agent.
    pub fn init(&self) -> Result<()> {
        // SAFETY: no arguments; libdaos reference-counts initialisation.
        let rc = unsafe { (self.f.daos_init)() };
        if rc != 0 {
            return Err(unavailable(format!(
                "daos_init failed with {} ({rc}); is daos_agent running? (library {})",
                self.errstr(rc),
                self.path
            )));
        }
        Ok(())
    }

    /// The name of a DAOS error code.
    pub fn errstr(&self, rc: i32) -> String {
        if let Some(f) = self.f.d_errstr {
            // SAFETY: d_errstr returns a static NUL-terminated string.
            let p = unsafe { f(rc as c_int) };
            if !p.is_null() {
                // SAFETY: non-null static string from libgurt.
                return unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
            }
        }
        format!("DER {}", -rc)
    }

    /// The path the library was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn check(
        &self,
        rc: c_int,
        call: &'static str,
        what: impl FnOnce() -> String,
    ) -> Result<(), DaosError> {
        if rc == 0 {
            return Ok(());
        }
        Err(DaosError {
            call,
            rc,
            what: what(),
            name: self.errstr(rc),
        })
    }

    /// Connect to a pool by label or UUID, read-write.
    ///
    /// # Errors
    /// `-DER_NONEXIST` if there is no such pool; `-DER_NO_PERM`.
    pub fn connect(&'static self, pool: &str) -> Result<Pool, DaosError> {
        let name = c_string(pool, "pool")?;
        let mut h = DaosHandle::default();
        // SAFETY: valid C string and output handle for the call; blocking.
        let rc = unsafe {
            (self.f.daos_pool_connect2)(
                name.as_ptr(),
                std::ptr::null(),
                ffi::DAOS_PC_RW,
                &mut h,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        self.check(rc, "daos_pool_connect", || format!("pool {pool}"))?;
        Ok(Pool {
            daos: self,
            h,
            label: pool.to_string(),
        })
    }
}

fn c_string(s: &str, what: &str) -> Result<CString, DaosError> {
    CString::new(s).map_err(|_| DaosError {
        call: "argument",
        rc: -der::INVAL,
        what: format!("{what} {s:?} contains a NUL byte"),
        name: "DER_INVAL".into(),
    })
}

/// A pool connection; disconnected on drop.
#[derive(Debug)]
pub struct Pool {
    daos: &'static Daos,
    h: DaosHandle,
    label: String,
}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: our handle, closed once.
        let _ = unsafe { (self.daos.f.daos_pool_disconnect)(self.h, std::ptr::null_mut()) };
    }
}

impl Pool {
    /// The label or UUID it was connected with.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Open a container by label or UUID; `rw` for writing.
    ///
    /// # Errors
    /// `-DER_NONEXIST` if it does not exist.
    pub fn open(
        self: &std::sync::Arc<Self>,
        label: &str,
        rw: bool,
    ) -> Result<Container, DaosError> {
        let name = c_string(label, "container")?;
        let mut h = DaosHandle::default();
        let flags = if rw {
            ffi::DAOS_COO_RW
        } else {
            ffi::DAOS_COO_RO
        };
        // SAFETY: valid pool handle, C string and output handle; blocking.
        let rc = unsafe {
            (self.daos.f.daos_cont_open2)(
                self.h,
                name.as_ptr(),
                flags,
                &mut h,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        self.daos.check(rc, "daos_cont_open", || {
            format!("container {}/{label}", self.label)
        })?;
        Ok(Container {
            pool: self.clone(),
            h,
            label: label.to_string(),
        })
    }

    /// Create a container with a label and, if given, a redundancy factor.
    ///
    /// # Errors
    /// `-DER_EXIST` if the label is taken.
    pub fn create(&self, label: &str, redundancy_factor: Option<u32>) -> Result<(), DaosError> {
        let name = c_string(label, "container")?;
        let mut entry = ffi::DaosPropEntry {
            dpe_type: ffi::DAOS_PROP_CO_REDUN_FAC,
            dpe_flags: 0,
            dpe_reserv: 0,
            dpe_val: u64::from(redundancy_factor.unwrap_or(0)),
        };
        let prop = ffi::DaosProp {
            dpp_nr: 1,
            dpp_reserv: 0,
            dpp_entries: &mut entry,
        };
        let prop_ptr: *const ffi::DaosProp = match redundancy_factor {
            Some(_) => &prop,
            None => std::ptr::null(),
        };
        // SAFETY: valid handle and C string; `prop` (read only by libdaos)
        // outlives the call; no UUID wanted.
        let rc = unsafe {
            (self.daos.f.daos_cont_create_with_label)(
                self.h,
                name.as_ptr(),
                prop_ptr,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        self.daos.check(rc, "daos_cont_create_with_label", || {
            format!("container {}/{label}", self.label)
        })
    }

    /// The labels of the pool's containers (a container without one is
    /// left out): one request for up to 256 containers, one more (of the
    /// size the first reported) for more.
    ///
    /// # Errors
    /// As any pool request.
    pub fn containers(&self) -> Result<Vec<String>, DaosError> {
        let mut room = 256u64;
        loop {
            let mut buf = vec![
                ffi::DaosPoolContInfo {
                    pci_uuid: [0; 16],
                    pci_label: [0; ffi::LABEL_MAX_LEN + 1],
                };
                usize::try_from(room).unwrap_or(usize::MAX)
            ];
            let mut n = room;
            // SAFETY: valid handle; the buffer holds `n` entries; blocking.
            let rc = unsafe {
                (self.daos.f.daos_pool_list_cont)(
                    self.h,
                    &mut n,
                    buf.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            if rc == -der::TRUNC || (rc == 0 && room < n) {
                room = n;
                continue;
            }
            self.daos
                .check(rc, "daos_pool_list_cont", || format!("pool {}", self.label))?;
            buf.truncate(usize::try_from(n).unwrap_or(usize::MAX));
            return Ok(buf
                .iter()
                .filter_map(|c| {
                    // Bytes up to the NUL (`c_char` is signed on x86).
                    let label: Vec<u8> = c
                        .pci_label
                        .iter()
                        .take_while(|&&b| b != 0)
                        .map(|&b| b as u8)
                        .collect();
                    (!label.is_empty()).then(|| String::from_utf8_lossy(&label).into_owned())
                })
                .collect());
        }
    }

    /// Destroy a container (forcibly: open handles are revoked).
    ///
    /// # Errors
    /// `-DER_NONEXIST`.
    pub fn destroy(&self, label: &str) -> Result<(), DaosError> {
        let name = c_string(label, "container")?;
        // SAFETY: valid handle and C string; blocking.
        let rc = unsafe {
            (self.daos.f.daos_cont_destroy2)(self.h, name.as_ptr(), 1, std::ptr::null_mut())
        };
        self.daos.check(rc, "daos_cont_destroy", || {
            format!("container {}/{label}", self.label)
        })
    }
}

/// An open container; closed on drop (after every object handle of it,
/// which borrow it).
#[derive(Debug)]
pub struct Container {
    pool: std::sync::Arc<Pool>,
    h: DaosHandle,
    label: String,
}

impl Drop for Container {
    fn drop(&mut self) {
        // SAFETY: our handle; object handles borrow the container, so all
        // are closed by now.
        let _ = unsafe { (self.pool.daos.f.daos_cont_close)(self.h, std::ptr::null_mut()) };
    }
}

impl Container {
    fn daos(&self) -> &'static Daos {
        self.pool.daos
    }

    /// `<pool>/<container>`, for messages.
    pub fn name(&self) -> String {
        format!("{}/{}", self.pool.label, self.label)
    }

    /// The container's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// `<pool>/<container>/<oid>`, for messages.
    fn object(&self, oid: DaosObjId) -> String {
        format!("{}/{}", self.name(), oid_hex(oid))
    }

    /// Reserve `n` object ids; returns the first of `[first, first + n)`.
    ///
    /// # Errors
    /// As libdaos.
    pub fn alloc_oids(&self, n: u64) -> Result<u64, DaosError> {
        let mut first = 0u64;
        // SAFETY: valid handle and output; blocking.
        let rc = unsafe {
            (self.daos().f.daos_cont_alloc_oids)(self.h, n, &mut first, std::ptr::null_mut())
        };
        self.daos().check(rc, "daos_cont_alloc_oids", || {
            format!("container {}", self.name())
        })?;
        Ok(first)
    }

    /// Stamp the type and class bits onto `(hi user bits, lo)` with
    /// `daos_obj_generate_oid2` (local: uses the cached pool map).
    ///
    /// # Errors
    /// `-DER_INVAL` if the class does not fit the pool or the container's
    /// redundancy factor.
    pub fn generate_oid(
        &self,
        hi: u32,
        lo: u64,
        otype: u32,
        class: u32,
    ) -> Result<DaosObjId, DaosError> {
        let mut oid = DaosObjId {
            lo,
            hi: u64::from(hi),
        };
        // SAFETY: valid handle and in/out OID.
        let rc =
            unsafe { (self.daos().f.daos_obj_generate_oid2)(self.h, &mut oid, otype, class, 0, 0) };
        self.daos().check(rc, "daos_obj_generate_oid2", || {
            format!(
                "container {} (type {otype}, class {})",
                self.name(),
                crate::config::class_name(class)
            )
        })?;
        Ok(oid)
    }

    /// Open a KV (local: no RPC; a KV exists implicitly).
    ///
    /// # Errors
    /// `-DER_INVAL` if `oid` is not a KV or its class is weaker than the
    /// container's redundancy factor.
    pub fn kv(&self, oid: DaosObjId, rw: bool) -> Result<Kv<'_>, DaosError> {
        let mut h = DaosHandle::default();
        let mode = if rw { ffi::DAOS_OO_RW } else { ffi::DAOS_OO_RO };
        // SAFETY: valid container handle and output handle.
        let rc = unsafe {
            (self.daos().f.daos_kv_open)(self.h, oid, mode, &mut h, std::ptr::null_mut())
        };
        self.daos().check(rc, "daos_kv_open", || self.object(oid))?;
        Ok(Kv { cont: self, h, oid })
    }

    /// Open a byte array with its cell and chunk sizes (local: no RPC).
    ///
    /// # Errors
    /// `-DER_INVAL` if `oid` is not an attribute/byte array.
    pub fn array(&self, oid: DaosObjId, chunk: u64, rw: bool) -> Result<Array<'_>, DaosError> {
        let mut h = DaosHandle::default();
        let mode = if rw { ffi::DAOS_OO_RW } else { ffi::DAOS_OO_RO };
        // SAFETY: valid container handle and output handle.
        let rc = unsafe {
            (self.daos().f.daos_array_open_with_attr)(
                self.h,
                oid,
                DAOS_TX_NONE,
                mode,
                1,
                chunk,
                &mut h,
                std::ptr::null_mut(),
            )
        };
        self.daos()
            .check(rc, "daos_array_open_with_attr", || self.object(oid))?;
        Ok(Array { cont: self, h, oid })
    }
}

/// `%016x(hi)%016x(lo)`: how FDB and fieldstore spell an OID.
pub fn oid_hex(oid: DaosObjId) -> String {
    format!("{:016x}{:016x}", oid.hi, oid.lo)
}

/// Parse [`oid_hex`].
pub fn parse_oid_hex(s: &str) -> Option<DaosObjId> {
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(DaosObjId {
        hi: u64::from_str_radix(&s[..16], 16).ok()?,
        lo: u64::from_str_radix(&s[16..], 16).ok()?,
    })
}

/// An open KV; closed with `daos_kv_close` on drop.
#[derive(Debug)]
pub struct Kv<'c> {
    cont: &'c Container,
    h: DaosHandle,
    oid: DaosObjId,
}

impl Drop for Kv<'_> {
    fn drop(&mut self) {
        // SAFETY: our KV handle, closed once with the KV close (not
        // daos_obj_close, which would leak libdaos's KV wrapper).
        let _ = unsafe { (self.cont.daos().f.daos_kv_close)(self.h, std::ptr::null_mut()) };
    }
}

/// Outcome of a conditional insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// The key was created.
    Yes,
    /// The key existed already; nothing was written.
    Exists,
}

impl Kv<'_> {
    fn what(&self, key: &str) -> String {
        format!("{} key {key:?}", self.cont.object(self.oid))
    }

    /// Put a whole value (overwrites).
    ///
    /// # Errors
    /// As libdaos.
    pub fn put(&self, key: &str, value: &[u8]) -> Result<(), DaosError> {
        self.put_flags(key, value, 0).map(|_| ())
    }

    /// Put a value only if the key does not exist (`DAOS_COND_KEY_INSERT`).
    ///
    /// # Errors
    /// As libdaos, but not for an existing key.
    pub fn insert(&self, key: &str, value: &[u8]) -> Result<Inserted, DaosError> {
        self.put_flags(key, value, ffi::DAOS_COND_KEY_INSERT)
    }

    /// Put a value only if the key exists (`DAOS_COND_KEY_UPDATE`).
    ///
    /// # Errors
    /// `-DER_NONEXIST` for a missing key; as libdaos.
    pub fn update(&self, key: &str, value: &[u8]) -> Result<(), DaosError> {
        self.put_flags(key, value, ffi::DAOS_COND_KEY_UPDATE)
            .map(|_| ())
    }

    fn put_flags(&self, key: &str, value: &[u8], flags: u64) -> Result<Inserted, DaosError> {
        let k = c_string(key, "key")?;
        let daos = self.cont.daos();
        // SAFETY: valid handle, C string key and `value.len()` readable bytes.
        let rc = unsafe {
            (daos.f.daos_kv_put)(
                self.h,
                DAOS_TX_NONE,
                flags,
                k.as_ptr(),
                value.len() as u64,
                value.as_ptr() as *const c_void,
                std::ptr::null_mut(),
            )
        };
        if flags == ffi::DAOS_COND_KEY_INSERT && rc == -der::EXIST {
            return Ok(Inserted::Exists);
        }
        daos.check(rc, "daos_kv_put", || self.what(key))?;
        Ok(Inserted::Yes)
    }

    /// Get a value into `buf` (resized to the value), or `false` if the key
    /// is missing. One RPC when `buf`'s capacity is large enough, two
    /// otherwise (`-DER_REC2BIG` reports the size).
    ///
    /// # Errors
    /// As libdaos.
    pub fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool, DaosError> {
        let k = c_string(key, "key")?;
        let daos = self.cont.daos();
        if buf.capacity() == 0 {
            buf.reserve(512);
        }
        for _ in 0..3 {
            let cap = buf.capacity();
            let mut size = cap as u64;
            // SAFETY: valid handle and key; `buf` has `cap` writable bytes
            // and the call writes at most `size` = `cap` of them.
            let rc = unsafe {
                (daos.f.daos_kv_get)(
                    self.h,
                    DAOS_TX_NONE,
                    0,
                    k.as_ptr(),
                    &mut size,
                    buf.as_mut_ptr() as *mut c_void,
                    std::ptr::null_mut(),
                )
            };
            if rc == -der::REC2BIG {
                buf.clear();
                buf.reserve(size as usize);
                continue;
            }
            daos.check(rc, "daos_kv_get", || self.what(key))?;
            if size == 0 {
                buf.clear();
                return Ok(false);
            }
            // SAFETY: libdaos wrote `size` <= `cap` bytes into the buffer.
            unsafe { buf.set_len(size as usize) };
            return Ok(true);
        }
        Err(DaosError {
            call: "daos_kv_get",
            rc: -der::REC2BIG,
            what: self.what(key),
            name: "value keeps growing".into(),
        })
    }

    /// Get a value, or `None` if the key is missing.
    ///
    /// # Errors
    /// As libdaos.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DaosError> {
        let mut buf = Vec::new();
        Ok(self.get_into(key, &mut buf)?.then_some(buf))
    }

    /// Whether a key exists (a size query: one RPC, no data moved).
    ///
    /// # Errors
    /// As libdaos.
    pub fn exists(&self, key: &str) -> Result<bool, DaosError> {
        let k = c_string(key, "key")?;
        let daos = self.cont.daos();
        let mut size = 0u64;
        // SAFETY: valid handle and key; a NULL buffer asks for the size.
        let rc = unsafe {
            (daos.f.daos_kv_get)(
                self.h,
                DAOS_TX_NONE,
                0,
                k.as_ptr(),
                &mut size,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        daos.check(rc, "daos_kv_get", || self.what(key))?;
        Ok(size > 0)
    }

    /// Remove a key.
    ///
    /// # Errors
    /// As libdaos.
    pub fn remove(&self, key: &str) -> Result<(), DaosError> {
        let k = c_string(key, "key")?;
        let daos = self.cont.daos();
        // SAFETY: valid handle and key.
        let rc = unsafe {
            (daos.f.daos_kv_remove)(self.h, DAOS_TX_NONE, 0, k.as_ptr(), std::ptr::null_mut())
        };
        daos.check(rc, "daos_kv_remove", || self.what(key))
    }

    /// Every key, in the KV's order. Lists with a 64 KiB buffer and 1024
    /// descriptors per call; a key larger than the buffer grows it.
    ///
    /// # Errors
    /// As libdaos.
    pub fn keys(&self) -> Result<Vec<String>, DaosError> {
        const DESCS: usize = 1024;
        let daos = self.cont.daos();
        let mut anchor = ffi::DaosAnchor::INIT;
        let mut kds = vec![ffi::DaosKeyDesc::default(); DESCS];
        let mut buf = vec![0u8; 64 * 1024];
        let mut out = Vec::new();
        while !anchor.is_eof() {
            let mut nr = DESCS as u32;
            let mut iov = ffi::DIov {
                iov_buf: buf.as_mut_ptr() as *mut c_void,
                iov_buf_len: buf.len(),
                iov_len: 0,
            };
            let mut sgl = ffi::DSgList {
                sg_nr: 1,
                sg_nr_out: 0,
                sg_iovs: &mut iov,
            };
            // SAFETY: `kds` holds `nr` descriptors, `sgl` one iov over
            // `buf`, `anchor` is ours; all outlive the blocking call.
            let rc = unsafe {
                (daos.f.daos_kv_list)(
                    self.h,
                    DAOS_TX_NONE,
                    &mut nr,
                    kds.as_mut_ptr(),
                    &mut sgl,
                    &mut anchor,
                    std::ptr::null_mut(),
                )
            };
            if rc == -der::KEY2BIG {
                let need = kds[0].kd_key_len as usize;
                buf.resize(need.max(buf.len() * 2), 0);
                continue;
            }
            daos.check(rc, "daos_kv_list", || self.cont.object(self.oid))?;
            let mut pos = 0usize;
            for kd in &kds[..nr as usize] {
                let len = kd.kd_key_len as usize;
                let Some(bytes) = buf.get(pos..pos + len) else {
                    return Err(DaosError {
                        call: "daos_kv_list",
                        rc: -der::INVAL,
                        what: self.what("?"),
                        name: "key lengths overrun the buffer".into(),
                    });
                };
                out.push(String::from_utf8_lossy(bytes).into_owned());
                pos += len;
            }
        }
        Ok(out)
    }
}

/// An open byte array; closed on drop.
#[derive(Debug)]
pub struct Array<'c> {
    cont: &'c Container,
    h: DaosHandle,
    oid: DaosObjId,
}

impl Drop for Array<'_> {
    fn drop(&mut self) {
        // SAFETY: our array handle, closed once.
        let _ = unsafe { (self.cont.daos().f.daos_array_close)(self.h, std::ptr::null_mut()) };
    }
}

impl Array<'_> {
    /// Write `data` at byte `offset`.
    ///
    /// # Errors
    /// As libdaos.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), DaosError> {
        // SAFETY: libdaos only reads `data` through the iov.
        unsafe { self.io(true, offset, data.as_ptr() as *mut c_void, data.len()) }.map(|_| ())
    }

    /// Read `buf.len()` bytes at byte `offset`; returns how many exist
    /// there (reading past the end is not an error in DAOS).
    ///
    /// # Errors
    /// As libdaos.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<u64, DaosError> {
        // SAFETY: libdaos writes at most `buf.len()` bytes.
        let short = unsafe { self.io(false, offset, buf.as_mut_ptr() as *mut c_void, buf.len()) }?;
        Ok((buf.len() as u64).saturating_sub(short))
    }

    /// `daos_array_write` (or `_read`) of the `len` bytes at `data` at byte
    /// `offset`; returns the read's `arr_nr_short_read`.
    ///
    /// # Safety
    /// `data` is valid for `len` bytes: readable for a write, writable for
    /// a read.
    unsafe fn io(
        &self,
        write: bool,
        offset: u64,
        data: *mut c_void,
        len: usize,
    ) -> Result<u64, DaosError> {
        let mut range = ffi::DaosRange {
            rg_idx: offset,
            rg_len: len as u64,
        };
        let mut iod = ffi::DaosArrayIod {
            arr_nr: 1,
            arr_rgs: &mut range,
            arr_nr_short_read: 0,
            arr_nr_read: 0,
        };
        let mut iov = ffi::DIov {
            iov_buf: data,
            iov_buf_len: len,
            iov_len: len,
        };
        let mut sgl = ffi::DSgList {
            sg_nr: 1,
            sg_nr_out: 0,
            sg_iovs: &mut iov,
        };
        let daos = self.cont.daos();
        let (call, f) = if write {
            ("daos_array_write", daos.f.daos_array_write)
        } else {
            ("daos_array_read", daos.f.daos_array_read)
        };
        // SAFETY: iod, range, sgl and iov live across the blocking call; the
        // caller vouches for `data`.
        let rc = unsafe {
            f(
                self.h,
                DAOS_TX_NONE,
                &mut iod,
                &mut sgl,
                std::ptr::null_mut(),
            )
        };
        daos.check(rc, call, || self.cont.object(self.oid))?;
        Ok(iod.arr_nr_short_read)
    }

    /// Size in bytes (one RPC).
    ///
    /// # Errors
    /// As libdaos.
    pub fn size(&self) -> Result<u64, DaosError> {
        let mut size = 0u64;
        let daos = self.cont.daos();
        // SAFETY: valid handle and output.
        let rc = unsafe {
            (daos.f.daos_array_get_size)(self.h, DAOS_TX_NONE, &mut size, std::ptr::null_mut())
        };
        daos.check(rc, "daos_array_get_size", || self.cont.object(self.oid))?;
        Ok(size)
    }

    /// Destroy the array's contents (the handle still closes on drop).
    ///
    /// # Errors
    /// As libdaos.
    pub fn destroy(&self) -> Result<(), DaosError> {
        let daos = self.cont.daos();
        // SAFETY: valid handle.
        let rc = unsafe { (daos.f.daos_array_destroy)(self.h, DAOS_TX_NONE, std::ptr::null_mut()) };
        daos.check(rc, "daos_array_destroy", || self.cont.object(self.oid))
    }
}

/// `-DER_INVAL` from OID generation or object open means the configured
/// class does not fit the pool or the container's redundancy factor.
pub(crate) fn class_error(e: DaosError) -> Error {
    if e.is(der::INVAL) {
        return Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "DAOS: {e}: the object class does not fit the pool or the container's \
                 redundancy factor (set daos.kv_class / daos.array_class)"
            ),
        )
        .with_source(e);
    }
    e.into()
}
