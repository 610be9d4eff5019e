//! Safe, blocking wrappers over the librados calls of `crate::ffi`: a
//! cluster connection, an I/O context (pool + namespace), compound write
//! and read operations, asynchronous writes.
//!
//! Every call returns the negative errno librados gives as an [`Errno`];
//! [`Errno::error`] maps it to a fieldstore [`Error`] naming what failed.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use fieldstore_core::{Error, ErrorKind, Result};

use crate::ffi::{self, Api};

/// omap key-value pairs.
pub(crate) type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A librados error: a positive errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Errno(pub(crate) i32);

pub(crate) const ENOENT: Errno = Errno(2);
pub(crate) const EEXIST: Errno = Errno(17);
pub(crate) const EFBIG: Errno = Errno(27);
pub(crate) const ECANCELED: Errno = Errno(125);
pub(crate) const ETIMEDOUT: Errno = Errno(110);
pub(crate) const EPERM: Errno = Errno(1);
pub(crate) const EOPNOTSUPP: Errno = Errno(95);

impl Errno {
    fn check(rc: c_int) -> std::result::Result<c_int, Errno> {
        if rc < 0 {
            Err(Errno(-rc))
        } else {
            Ok(rc)
        }
    }

    /// What the caller should do about this errno.
    pub(crate) fn kind(self) -> ErrorKind {
        match self.0 {
            2 => ErrorKind::NotFound,              // ENOENT
            1 | 13 => ErrorKind::PermissionDenied, // EPERM, EACCES
            28 | 122 => ErrorKind::StorageFull,    // ENOSPC, EDQUOT
            4 | 11 | 16 | 103 | 104 | 107 | 108 | 110 | 111 | 112 | 113 => ErrorKind::Unavailable, // EINTR EAGAIN EBUSY ECONNABORTED ECONNRESET ENOTCONN ESHUTDOWN ETIMEDOUT ECONNREFUSED EHOSTDOWN EHOSTUNREACH
            74 | 84 => ErrorKind::Corrupt, // EBADMSG, EILSEQ
            95 => ErrorKind::Unsupported,  // EOPNOTSUPP
            _ => ErrorKind::Io,
        }
    }

    /// An error naming `what` (an object, a pool, a cluster).
    pub(crate) fn error(self, what: impl fmt::Display) -> Error {
        let os = std::io::Error::from_raw_os_error(self.0);
        let hint = match self.kind() {
            ErrorKind::Unavailable => "; the cluster or an OSD is not reachable: retry later",
            ErrorKind::StorageFull => "; the pool or cluster is full",
            ErrorKind::Unsupported => {
                "; the pool does not support it (omap needs a replicated pool, not an \
                 erasure-coded one)"
            }
            _ => "",
        };
        Error::new(self.kind(), format!("{what}: {os}{hint}")).with_source(os)
    }
}

/// A librados result in which a missing object (`ENOENT`) is no error.
pub(crate) trait OrMissing<T> {
    /// The value, `None` if the object is missing, or the error naming
    /// `what()`.
    fn or_missing(self, what: impl FnOnce() -> String) -> Result<Option<T>>;
}

impl<T> OrMissing<T> for std::result::Result<T, Errno> {
    fn or_missing(self, what: impl FnOnce() -> String) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(ENOENT) => Ok(None),
            Err(e) => Err(e.error(what())),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        std::io::Error::from_raw_os_error(self.0).fmt(f)
    }
}

fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid_input(format!("{what} {s:?} contains a NUL byte")))
}

/// How to reach a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ClusterSpec {
    /// `ceph.conf`; `None` for librados's search (`$CEPH_CONF`,
    /// `/etc/ceph/ceph.conf`, …).
    pub(crate) conf: Option<String>,
    /// Cluster name (`ceph`).
    pub(crate) cluster: String,
    /// Entity name (`client.admin`).
    pub(crate) user: String,
    /// Seconds before a mount, monitor or OSD operation gives up.
    pub(crate) timeout_secs: u32,
}

impl fmt::Display for ClusterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.conf {
            Some(c) => write!(f, "Ceph cluster '{}' ({c})", self.cluster),
            None => write!(f, "Ceph cluster '{}' (default ceph.conf)", self.cluster),
        }
    }
}

/// A connected cluster handle. librados handles are thread-safe.
pub(crate) struct Cluster {
    api: &'static Api,
    handle: ffi::Cluster,
    pub(crate) spec: ClusterSpec,
}

// SAFETY: a connected `rados_t` may be used from any thread at once
// (librados's documented thread-safety for cluster handles).
unsafe impl Send for Cluster {}
// SAFETY: as above; `&Cluster` only calls thread-safe librados functions.
unsafe impl Sync for Cluster {}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cluster({})", self.spec)
    }
}

impl Cluster {
    /// Connect.
    ///
    /// # Errors
    /// `Unsupported` without librados; `Unavailable` if no monitor answers
    /// within the timeout; others as librados reports them.
    pub(crate) fn connect(spec: &ClusterSpec) -> Result<Cluster> {
        let api = ffi::api()?;
        let cluster = cstring(&spec.cluster, "cluster name")?;
        let user = cstring(&spec.user, "user")?;
        let mut handle: ffi::Cluster = std::ptr::null_mut();
        // SAFETY: the out-pointer is valid; the strings are NUL-terminated
        // and outlive the call (librados copies them).
        let rc = unsafe { (api.rados_create2)(&mut handle, cluster.as_ptr(), user.as_ptr(), 0) };
        Errno::check(rc).map_err(|e| e.error(format!("creating a handle for {spec}")))?;
        // From here on `c` owns the handle and shuts it down when dropped.
        let c = Cluster {
            api,
            handle,
            spec: spec.clone(),
        };
        let conf = spec
            .conf
            .as_deref()
            .map(|p| cstring(p, "ceph.conf path"))
            .transpose()?;
        // SAFETY: the handle is valid and not yet connected; a null path
        // asks librados to search its default locations.
        let rc = unsafe {
            (api.rados_conf_read_file)(
                c.handle,
                conf.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            )
        };
        Errno::check(rc).map_err(|e| {
            let mut err = e.error(format!("reading the configuration of {spec}"));
            if e == ENOENT || e.0 == 22 {
                err = Error::new(ErrorKind::InvalidConfig, err.message().to_string());
            }
            err
        })?;
        let t = spec.timeout_secs.to_string();
        for opt in [
            "client_mount_timeout",
            "rados_mon_op_timeout",
            "rados_osd_op_timeout",
        ] {
            c.set(opt, &t)?;
        }
        // SAFETY: the handle is valid, configured and not yet connected.
        let rc = unsafe { (api.rados_connect)(c.handle) };
        Errno::check(rc).map_err(|e| {
            let mut err = e.error(format!("connecting to {spec}"));
            if e.kind() == ErrorKind::Io {
                // Connection failures come back as assorted errnos; none
                // is worth more than "the cluster is not there".
                err = Error::new(ErrorKind::Unavailable, err.message().to_string());
            }
            err
        })?;
        Ok(c)
    }

    fn set(&self, option: &str, value: &str) -> Result<()> {
        let o = cstring(option, "option")?;
        let v = cstring(value, "option value")?;
        // SAFETY: valid handle, NUL-terminated strings that outlive the call.
        let rc = unsafe { (self.api.rados_conf_set)(self.handle, o.as_ptr(), v.as_ptr()) };
        Errno::check(rc)
            .map(|_| ())
            .map_err(|e| e.error(format!("setting {option}={value} for {}", self.spec)))
    }

    /// A configuration value as this client sees it, or `None`.
    pub(crate) fn conf_get(&self, option: &str) -> Option<String> {
        let o = CString::new(option).ok()?;
        let mut buf = vec![0u8; 256];
        // SAFETY: valid handle; `buf` is writable for its length, and
        // librados NUL-terminates what it writes into it.
        let rc = unsafe {
            (self.api.rados_conf_get)(self.handle, o.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        if rc < 0 {
            return None;
        }
        CStr::from_bytes_until_nul(&buf)
            .ok()
            .map(|s| s.to_string_lossy().into_owned())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SAFETY: the handle is valid and every I/O context made from it
        // holds an `Arc<Cluster>`, so none is left when this runs.
        unsafe { (self.api.rados_shutdown)(self.handle) }
    }
}

/// Notifies sent and not completed yet: the I/O context and the cluster
/// connection must outlive them (librados crashes when it is shut down
/// under a notify in flight), so dropping a [`Pool`] waits for them.
#[derive(Debug, Default)]
struct InFlight {
    count: Mutex<usize>,
    done: Condvar,
}

impl InFlight {
    fn count(&self) -> MutexGuard<'_, usize> {
        self.count.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finished(&self) {
        let mut n = self.count();
        *n = n.saturating_sub(1);
        self.done.notify_all();
    }

    /// Wait until none is in flight or `limit` passed; whether none is.
    fn wait_idle(&self, limit: Duration) -> bool {
        let waited = self
            .done
            .wait_timeout_while(self.count(), limit, |n| *n > 0);
        *waited.unwrap_or_else(|p| p.into_inner()).0 == 0
    }
}

/// An I/O context: one pool and one namespace of a cluster.
pub(crate) struct Pool {
    api: &'static Api,
    io: ffi::IoCtx,
    cluster: Arc<Cluster>,
    /// Notifies in flight (see [`Pool::notify_async`]).
    notifies: Arc<InFlight>,
    /// The longest timeout of a notify sent: how long dropping waits.
    notify_timeout_ms: AtomicU64,
    /// The pool's name.
    pub(crate) pool: String,
    /// The namespace ("" is the default one).
    pub(crate) namespace: String,
}

// SAFETY: an I/O context whose namespace is set once, before it is shared,
// may be used by many threads at once for I/O.
unsafe impl Send for Pool {}
// SAFETY: as above; `&Pool` only issues I/O.
unsafe impl Sync for Pool {}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pool({self})")
    }
}

impl fmt::Display for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pool '{}'", self.pool)?;
        if !self.namespace.is_empty() {
            write!(f, " namespace '{}'", self.namespace)?;
        }
        write!(f, " of {}", self.cluster.spec)
    }
}

impl Pool {
    /// Open `pool`, namespace `namespace`.
    ///
    /// # Errors
    /// `NotFound` if the pool does not exist.
    pub(crate) fn open(cluster: Arc<Cluster>, pool: &str, namespace: &str) -> Result<Pool> {
        let api = cluster.api;
        let p = cstring(pool, "pool name")?;
        let ns = cstring(namespace, "namespace")?;
        let mut io: ffi::IoCtx = std::ptr::null_mut();
        // SAFETY: connected handle, valid out-pointer, NUL-terminated name.
        let rc = unsafe { (api.rados_ioctx_create)(cluster.handle, p.as_ptr(), &mut io) };
        Errno::check(rc)
            .map_err(|e| e.error(format!("opening pool '{pool}' of {}", cluster.spec)))?;
        // SAFETY: `io` was just created and is not shared yet; librados
        // copies the namespace.
        unsafe { (api.rados_ioctx_set_namespace)(io, ns.as_ptr()) };
        // Writes to a pool over its quota fail with EDQUOT (StorageFull,
        // like a full disk) instead of waiting in the client, paused, until
        // the op timeout (then ETIMEDOUT: Unavailable, the wrong answer).
        // SAFETY: `io` was just created and is not shared yet.
        unsafe { (api.rados_set_pool_full_try)(io) };
        Ok(Pool {
            api,
            io,
            cluster,
            notifies: Arc::default(),
            notify_timeout_ms: AtomicU64::new(0),
            pool: pool.to_string(),
            namespace: namespace.to_string(),
        })
    }

    /// The cluster this pool belongs to.
    pub(crate) fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// `object 'o' in pool 'p' …`, for messages.
    pub(crate) fn what(&self, oid: &str) -> String {
        format!("RADOS object '{oid}' in {self}")
    }

    /// Read up to `buf.len()` bytes at `offset`; returns how many were read
    /// (fewer at the end of the object).
    pub(crate) fn read(
        &self,
        oid: &str,
        offset: u64,
        buf: &mut [u8],
    ) -> std::result::Result<usize, Errno> {
        let o = CString::new(oid).map_err(|_| Errno(22))?;
        // SAFETY: valid I/O context; `buf` is writable for its length.
        let rc = unsafe {
            (self.api.rados_read)(
                self.io,
                o.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset,
            )
        };
        Errno::check(rc).map(|n| n as usize)
    }

    /// Size of an object.
    pub(crate) fn stat(&self, oid: &str) -> std::result::Result<u64, Errno> {
        let o = CString::new(oid).map_err(|_| Errno(22))?;
        let (mut size, mut mtime) = (0u64, 0i64);
        // SAFETY: valid I/O context and out-pointers.
        let rc = unsafe { (self.api.rados_stat)(self.io, o.as_ptr(), &mut size, &mut mtime) };
        Errno::check(rc).map(|_| size)
    }

    /// Remove an object.
    pub(crate) fn remove(&self, oid: &str) -> std::result::Result<(), Errno> {
        let o = CString::new(oid).map_err(|_| Errno(22))?;
        // SAFETY: valid I/O context and NUL-terminated name.
        let rc = unsafe { (self.api.rados_remove)(self.io, o.as_ptr()) };
        Errno::check(rc).map(|_| ())
    }

    /// Start writing `data` at `offset` of `oid` (`offset` `None`: replace
    /// the whole object). The returned [`Pending`] owns the buffer until
    /// the write completes.
    pub(crate) fn aio_write(
        &self,
        oid: &str,
        data: Vec<u8>,
        offset: Option<u64>,
    ) -> Result<Pending> {
        let o = cstring(oid, "object name")?;
        let mut c: ffi::Completion = std::ptr::null_mut();
        // SAFETY: valid out-pointer; no callback.
        let rc =
            unsafe { (self.api.rados_aio_create_completion2)(std::ptr::null_mut(), None, &mut c) };
        Errno::check(rc).map_err(|e| e.error("creating a RADOS completion"))?;
        let pending = Pending {
            api: self.api,
            c,
            data,
            what: Some(self.what(oid)),
        };
        let buf: *const c_char = pending.data.as_ptr().cast();
        let len = pending.data.len();
        // SAFETY: valid I/O context and completion; the buffer is owned by
        // `pending`, whose drop waits for the completion before freeing it.
        let rc = unsafe {
            match offset {
                Some(off) => (self.api.rados_aio_write)(self.io, o.as_ptr(), c, buf, len, off),
                None => (self.api.rados_aio_write_full)(self.io, o.as_ptr(), c, buf, len),
            }
        };
        if let Err(e) = Errno::check(rc) {
            // Never submitted: release it without waiting for it.
            let mut pending = pending;
            // SAFETY: the completion is valid, was not submitted, and is
            // released once (nulled so that drop does not touch it).
            unsafe { (self.api.rados_aio_release)(pending.c) };
            pending.c = std::ptr::null_mut();
            return Err(e.error(format!("writing {}", self.what(oid))));
        }
        Ok(pending)
    }

    /// Execute a compound write operation atomically on `oid`.
    pub(crate) fn operate(&self, oid: &str, op: &WriteOp) -> std::result::Result<(), Errno> {
        let o = CString::new(oid).map_err(|_| Errno(22))?;
        // SAFETY: valid op and I/O context; every buffer the op points at
        // (the comparison results) is owned by `op`, alive for the call.
        let rc = unsafe {
            (self.api.rados_write_op_operate)(op.op, self.io, o.as_ptr(), std::ptr::null_mut(), 0)
        };
        Errno::check(rc).map(|_| ())
    }

    /// Run one omap read on `oid`: `add` adds it to a read op, given where
    /// librados is to put its iterator and its result (both live until the
    /// op has run); the pairs it read.
    fn omap_read(
        &self,
        oid: &str,
        add: impl FnOnce(ffi::ReadOp, *mut ffi::OmapIter, *mut c_int),
    ) -> std::result::Result<Pairs, Errno> {
        let o = CString::new(oid).map_err(|_| Errno(22))?;
        let op = ReadOp::new(self.api);
        let mut iter: ffi::OmapIter = std::ptr::null_mut();
        let mut prval: c_int = 0;
        add(op.0 .1, &mut iter, &mut prval);
        // SAFETY: valid op and I/O context.
        let rc = unsafe { (self.api.rados_read_op_operate)(op.0 .1, self.io, o.as_ptr(), 0) };
        let pairs = self.drain(iter);
        Errno::check(rc)?;
        Errno::check(prval)?;
        Ok(pairs)
    }

    /// One page of `oid`'s omap: at most `max` pairs after `start_after`
    /// whose keys begin with `prefix`, in key order, and whether more
    /// follow.
    pub(crate) fn omap_page(
        &self,
        oid: &str,
        start_after: &[u8],
        prefix: &str,
        max: u64,
    ) -> std::result::Result<(Pairs, bool), Errno> {
        let after = CString::new(start_after).map_err(|_| Errno(22))?;
        let pre = CString::new(prefix).map_err(|_| Errno(22))?;
        let mut more: u8 = 0;
        let pairs = self.omap_read(oid, |op, iter, prval| {
            // SAFETY: valid op; the strings are copied by librados; `more`
            // and the out pointers live until the op has run.
            unsafe {
                (self.api.rados_read_op_omap_get_vals2)(
                    op,
                    after.as_ptr(),
                    pre.as_ptr(),
                    max,
                    iter,
                    &mut more,
                    prval,
                )
            }
        })?;
        Ok((pairs, more != 0))
    }

    /// Visit `oid`'s omap pairs whose keys begin with `prefix`, in key
    /// order, reading `page` pairs at a time; `false` if `oid` does not
    /// exist.
    ///
    /// # Errors
    /// As librados (naming `what()`), or as `visit`.
    pub(crate) fn omap_each(
        &self,
        oid: &str,
        prefix: &str,
        page: u64,
        what: impl Fn() -> String,
        mut visit: impl FnMut(Vec<u8>, Vec<u8>) -> Result<()>,
    ) -> Result<bool> {
        let mut after = Vec::new();
        loop {
            let read = self.omap_page(oid, &after, prefix, page);
            let Some((pairs, more)) = read.or_missing(&what)? else {
                return Ok(false);
            };
            let last = pairs.last().map(|(k, _)| k.clone());
            for (k, v) in pairs {
                visit(k, v)?;
            }
            match last {
                Some(k) if more => after = k,
                _ => return Ok(true),
            }
        }
    }

    /// At most `max` omap keys of `oid` after `start_after`, in key order
    /// (no values read), and whether more follow.
    pub(crate) fn omap_keys(
        &self,
        oid: &str,
        start_after: &[u8],
        max: u64,
    ) -> std::result::Result<(Vec<Vec<u8>>, bool), Errno> {
        let after = CString::new(start_after).map_err(|_| Errno(22))?;
        let mut more: u8 = 0;
        let pairs = self.omap_read(oid, |op, iter, prval| {
            // SAFETY: valid op; the string is copied by librados; `more`
            // and the out pointers live until the op has run.
            unsafe {
                (self.api.rados_read_op_omap_get_keys2)(
                    op,
                    after.as_ptr(),
                    max,
                    iter,
                    &mut more,
                    prval,
                )
            }
        })?;
        Ok((pairs.into_iter().map(|(k, _)| k).collect(), more != 0))
    }

    /// The omap values of `keys` of `oid`; missing keys are left out.
    pub(crate) fn omap_get(&self, oid: &str, keys: &[&[u8]]) -> std::result::Result<Pairs, Errno> {
        let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        self.omap_read(oid, |op, iter, prval| {
            // SAFETY: valid op; `ptrs`/`lens` describe `keys.len()` live
            // buffers, copied by librados; the out pointers live until the
            // op has run.
            unsafe {
                (self.api.rados_read_op_omap_get_vals_by_keys2)(
                    op,
                    ptrs.as_ptr(),
                    keys.len(),
                    lens.as_ptr(),
                    iter,
                    prval,
                )
            }
        })
    }

    /// Register a watch on `oid`: librados acknowledges each notify sent
    /// to the object and calls `handler` from its own threads (see
    /// [`WatchHandler`]). The OSD drops the watch once it has heard
    /// nothing from this client for `timeout_secs` (0: the cluster's
    /// `osd_client_watch_timeout`, 30 s by default). Dropping the returned
    /// [`Watch`] unregisters it.
    pub(crate) fn watch<H: WatchHandler>(
        self: &Arc<Self>,
        oid: &str,
        timeout_secs: u32,
        handler: H,
    ) -> std::result::Result<Watch<H>, Errno> {
        let arg = Box::new(WatchArg {
            pool: self.clone(),
            oid: CString::new(oid).map_err(|_| Errno(22))?,
            broken: AtomicBool::new(false),
            handler,
        });
        let p: *const WatchArg<H> = &*arg;
        let mut cookie = 0u64;
        // SAFETY: valid I/O context, NUL-terminated name (copied), valid
        // out-pointer; `arg` is boxed (its address stays put) and freed only
        // after the watch is unregistered and the callbacks flushed
        // (`Watch::drop`, or the flush below); the callbacks catch unwinds.
        let rc = unsafe {
            (self.api.rados_watch3)(
                self.io,
                arg.oid.as_ptr(),
                &mut cookie,
                Some(on_notify::<H>),
                Some(on_error::<H>),
                timeout_secs,
                p as *mut c_void,
            )
        };
        if let Err(e) = Errno::check(rc) {
            // Not registered; flush in case librados queued a callback
            // before giving up, then `arg` may go.
            self.watch_flush();
            return Err(e);
        }
        Ok(Watch { cookie, arg })
    }

    /// The names of the objects in this pool's namespace that `keep`
    /// accepts, by one listing of the pool (which visits every placement
    /// group: its time grows with the namespace, not with what the caller
    /// wants; its memory only with what it keeps). Errors name the pool.
    pub(crate) fn list_objects(&self, keep: impl Fn(&str) -> bool) -> Result<Vec<String>> {
        let listing = |e: Errno| e.error(format!("listing the objects of {self}"));
        let mut ctx: ffi::ListCtx = std::ptr::null_mut();
        // SAFETY: valid I/O context and out-pointer.
        Errno::check(unsafe { (self.api.rados_nobjects_list_open)(self.io, &mut ctx) })
            .map_err(listing)?;
        let mut out = Vec::new();
        let end = loop {
            let mut entry: *const c_char = std::ptr::null();
            // SAFETY: `ctx` is open; null key and namespace pointers are
            // allowed (librados checks them); `entry` is valid until the
            // next call on `ctx`, and copied before it.
            let rc = unsafe {
                (self.api.rados_nobjects_list_next)(
                    ctx,
                    &mut entry,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            match Errno::check(rc) {
                Err(ENOENT) => break Ok(()),
                Err(e) => break Err(e),
                Ok(_) => {}
            }
            if !entry.is_null() {
                // SAFETY: a NUL-terminated name librados owns until the next
                // call.
                let name = unsafe { CStr::from_ptr(entry) }.to_string_lossy();
                if keep(&name) {
                    out.push(name.into_owned());
                }
            }
        };
        // SAFETY: closes the context opened above, once.
        unsafe { (self.api.rados_nobjects_list_close)(ctx) };
        end.map(|()| out).map_err(listing)
    }

    /// Notify each of `oids` (no payload) and wait until its watchers
    /// acknowledged or `timeout` passed, all at once: for each, the number
    /// of watchers that acknowledged (0 for an object nobody watches, or
    /// whose watchers did not answer in time), or the error (`ENOENT`: no
    /// such object).
    pub(crate) fn acks(
        &self,
        oids: &[String],
        timeout: Duration,
    ) -> Vec<std::result::Result<u32, Errno>> {
        struct Sent {
            c: ffi::Completion,
            reply: Box<(*mut c_char, usize)>,
        }
        let timeout_ms = timeout.as_millis() as u64;
        let sent: Vec<std::result::Result<Sent, Errno>> = oids
            .iter()
            .map(|oid| {
                let o = CString::new(oid.as_str()).map_err(|_| Errno(22))?;
                let mut c: ffi::Completion = std::ptr::null_mut();
                // SAFETY: valid out-pointer; no callback.
                Errno::check(unsafe {
                    (self.api.rados_aio_create_completion2)(std::ptr::null_mut(), None, &mut c)
                })?;
                let mut reply = Box::new((std::ptr::null_mut::<c_char>(), 0usize));
                // SAFETY: a fresh completion; the reply slots are boxed, so
                // they stay put until the completion is waited for below.
                let sent = unsafe { self.submit_notify(&o, c, timeout_ms, Some(&mut reply)) };
                if let Err(e) = sent {
                    // SAFETY: never submitted: released here, once.
                    unsafe { (self.api.rados_aio_release)(c) };
                    return Err(e);
                }
                Ok(Sent { c, reply })
            })
            .collect();
        sent.into_iter()
            .map(|s| {
                let s = s?;
                // SAFETY: a submitted completion, waited for, read and
                // released once; then the reply buffer librados allocated
                // (if any) is read within its length and freed once.
                unsafe {
                    (self.api.rados_aio_wait_for_complete)(s.c);
                    let rc = (self.api.rados_aio_get_return_value)(s.c);
                    (self.api.rados_aio_release)(s.c);
                    let (buf, len) = *s.reply;
                    // The reply starts with the number of acknowledgements
                    // (le32), whether every watcher answered or not.
                    let acks = if buf.is_null() || len < 4 {
                        0
                    } else {
                        let b = std::slice::from_raw_parts(buf.cast::<u8>(), 4);
                        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
                    };
                    if !buf.is_null() {
                        (self.api.rados_buffer_free)(buf);
                    }
                    match Errno::check(rc) {
                        Ok(_) => Ok(acks),
                        Err(e) if e == ETIMEDOUT => Ok(acks),
                        Err(e) => Err(e),
                    }
                }
            })
            .collect()
    }

    /// Wait until every watch callback librados has queued (for any watch
    /// of this cluster connection) has run.
    fn watch_flush(&self) {
        // SAFETY: a connected cluster handle, kept alive by `self.cluster`.
        unsafe { (self.api.rados_watch_flush)(self.cluster.handle) };
    }

    /// Send a notify (no payload) to the watchers of `oid`, without waiting
    /// for it: the completion is released by its own callback when the
    /// watchers acknowledged it or `timeout_ms` passed, and its result
    /// (which watchers answered) is not asked for. An error is returned
    /// only if it could not be sent at all. Dropping the pool waits for
    /// the notifies still in flight (at most `timeout_ms` and a second).
    pub(crate) fn notify_async(
        &self,
        oid: &str,
        timeout_ms: u64,
    ) -> std::result::Result<(), Errno> {
        let o = CString::new(oid).map_err(|_| Errno(22))?;
        let mut c: ffi::Completion = std::ptr::null_mut();
        // The callback's argument: one reference to the in-flight count,
        // given back by the callback (or below if never submitted).
        let arg = Arc::into_raw(self.notifies.clone()) as *mut c_void;
        // SAFETY: valid out-pointer; the callback takes back the reference
        // `arg` is and releases the completion it is given.
        let rc =
            unsafe { (self.api.rados_aio_create_completion2)(arg, Some(notify_completed), &mut c) };
        if let Err(e) = Errno::check(rc) {
            // SAFETY: `arg` came from `Arc::into_raw` above and was given
            // to nobody.
            drop(unsafe { Arc::from_raw(arg as *const InFlight) });
            return Err(e);
        }
        self.notify_timeout_ms
            .fetch_max(timeout_ms, Ordering::Relaxed);
        *self.notifies.count() += 1;
        // SAFETY: a fresh completion; no reply asked for, so nothing of
        // ours is written when the notify completes.
        if let Err(e) = unsafe { self.submit_notify(&o, c, timeout_ms, None) } {
            // Never submitted, so its callback never runs: release it and
            // its argument here.
            // SAFETY: a valid completion, released once; `arg` came from
            // `Arc::into_raw` and its callback will not run.
            unsafe {
                (self.api.rados_aio_release)(c);
                Arc::from_raw(arg as *const InFlight).finished();
            }
            return Err(e);
        }
        // Submitted: `notify_completed` owns it and `arg` from here on.
        Ok(())
    }

    /// Submit a notify (no payload) of `oid` on completion `c`, with the
    /// watchers' answers written to `reply` (buffer and length) when it
    /// completes, if asked for.
    ///
    /// # Safety
    /// `c` is a completion not submitted before; `reply`, if given, stays
    /// valid and in place until `c` has completed.
    unsafe fn submit_notify(
        &self,
        oid: &CStr,
        c: ffi::Completion,
        timeout_ms: u64,
        reply: Option<&mut (*mut c_char, usize)>,
    ) -> std::result::Result<(), Errno> {
        let (buf, len) = match reply {
            Some(r) => (&mut r.0 as *mut *mut c_char, &mut r.1 as *mut usize),
            None => (std::ptr::null_mut(), std::ptr::null_mut()),
        };
        // SAFETY: valid I/O context; the name and the (empty) payload are
        // copied by librados before it returns; null reply pointers ask for
        // no reply buffer (librados checks them for null); the caller keeps
        // non-null ones valid until the completion.
        let rc = unsafe {
            (self.api.rados_aio_notify)(
                self.io,
                oid.as_ptr(),
                c,
                std::ptr::null(),
                0,
                timeout_ms,
                buf,
                len,
            )
        };
        Errno::check(rc).map(|_| ())
    }

    /// Collect and free an omap iterator.
    fn drain(&self, iter: ffi::OmapIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        if iter.is_null() {
            return out;
        }
        loop {
            let mut k: *mut c_char = std::ptr::null_mut();
            let mut v: *mut c_char = std::ptr::null_mut();
            let (mut kl, mut vl) = (0usize, 0usize);
            // SAFETY: `iter` came from an executed read op and is not yet
            // ended; the out-pointers are valid.
            let rc =
                unsafe { (self.api.rados_omap_get_next2)(iter, &mut k, &mut v, &mut kl, &mut vl) };
            if rc < 0 || k.is_null() {
                break;
            }
            // SAFETY: librados returns `kl`/`vl` readable bytes at `k`/`v`,
            // valid until the next call on the iterator.
            let (key, val) = unsafe {
                (
                    std::slice::from_raw_parts(k.cast::<u8>(), kl).to_vec(),
                    if v.is_null() {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(v.cast::<u8>(), vl).to_vec()
                    },
                )
            };
            out.push((key, val));
        }
        // SAFETY: ends (frees) the iterator exactly once.
        unsafe { (self.api.rados_omap_get_end)(iter) };
        out
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Notifies in flight complete within their timeout, acknowledged or
        // not. One that does not (the cluster is unreachable) keeps the
        // context and the connection alive for good: a leak, where
        // destroying them under it would crash.
        let limit = Duration::from_millis(
            self.notify_timeout_ms
                .load(Ordering::Relaxed)
                .saturating_add(1000),
        );
        if !self.notifies.wait_idle(limit) {
            std::mem::forget(self.cluster.clone());
            return;
        }
        // SAFETY: the context is valid and nothing is in flight on it; its
        // cluster is kept alive by `self.cluster` until after this.
        unsafe { (self.api.rados_ioctx_destroy)(self.io) }
    }
}

/// The callback of a notify's completion: count it done and release it
/// (nobody waits for it). librados holds its own reference while it runs
/// callbacks, so releasing the completion inside its callback is allowed.
unsafe extern "C" fn notify_completed(c: ffi::Completion, arg: *mut c_void) {
    // Never unwind into librados.
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `arg` is the reference `Pool::notify_async` leaked with
        // `Arc::into_raw` for this completion; this callback runs once.
        let in_flight = unsafe { Arc::from_raw(arg as *const InFlight) };
        if let Ok(api) = ffi::api() {
            // SAFETY: `c` is the completion this callback was created for,
            // submitted once; nothing else releases it.
            unsafe { (api.rados_aio_release)(c) };
        }
        in_flight.finished();
    });
}

/// What a [`Watch`]'s callbacks do besides acknowledging notifies and
/// noting that the watch broke. Called from librados's threads: it must
/// not wait for anything held while a [`Watch`] is dropped (dropping waits
/// for the callbacks).
pub(crate) trait WatchHandler: Send + Sync + 'static {
    /// A notify arrived (acknowledged already).
    fn notified(&self) {}
    /// The watch broke: the connection to the OSD was lost or the object
    /// was removed ([`Watch::broken`] says so already).
    fn broke(&self) {}
}

impl WatchHandler for () {}

/// What a watch's callbacks share with its [`Watch`]. Boxed, so its
/// address stays put; freed only after the watch is unregistered and
/// librados's queue of callbacks flushed.
struct WatchArg<H> {
    pool: Arc<Pool>,
    oid: CString,
    broken: AtomicBool,
    handler: H,
}

/// A watch registered by [`Pool::watch`]. Dropping it unregisters it, then
/// waits until the callbacks librados queued already have run, then frees
/// what they use. That wait covers every watch of the connection: one
/// `rados_watch_flush` per watch dropped.
pub(crate) struct Watch<H: WatchHandler> {
    cookie: u64,
    arg: Box<WatchArg<H>>,
}

/// A notify arrived: acknowledge it (a notifier that waits for acks stops
/// waiting for us; sent, not waited for), then tell the handler.
unsafe extern "C" fn on_notify<H: WatchHandler>(
    arg: *mut c_void,
    notify_id: u64,
    cookie: u64,
    _notifier: u64,
    _data: *mut c_void,
    _len: usize,
) {
    // Never unwind into librados.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `arg` is the `WatchArg` this watch was registered with,
        // kept alive until after the watch is unregistered and the
        // callbacks flushed (`Watch::drop`); only shared references are
        // made to it.
        let a = unsafe { &*(arg as *const WatchArg<H>) };
        let (api, io) = (a.pool.api, a.pool.io);
        // SAFETY: valid I/O context and NUL-terminated name; no payload.
        unsafe {
            (api.rados_notify_ack)(io, a.oid.as_ptr(), notify_id, cookie, std::ptr::null(), 0)
        };
        a.handler.notified();
    }));
}

/// The watch broke: mark it, then tell the handler.
unsafe extern "C" fn on_error<H: WatchHandler>(arg: *mut c_void, _cookie: u64, _err: c_int) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: as in `on_notify`.
        let a = unsafe { &*(arg as *const WatchArg<H>) };
        a.broken.store(true, Ordering::Relaxed);
        a.handler.broke();
    }));
}

impl<H: WatchHandler> Watch<H> {
    /// What the callbacks tell.
    pub(crate) fn handler(&self) -> &H {
        &self.arg.handler
    }

    /// Whether librados reported the watch broken.
    pub(crate) fn broken(&self) -> bool {
        self.arg.broken.load(Ordering::Relaxed)
    }

    /// How long ago the OSD last confirmed the watch (a ping or a
    /// reconnection answered), or the error that broke it.
    pub(crate) fn check(&self) -> std::result::Result<Duration, Errno> {
        // SAFETY: valid I/O context; an unknown cookie is an error librados
        // reports, not undefined behaviour.
        let rc = unsafe { (self.arg.pool.api.rados_watch_check)(self.arg.pool.io, self.cookie) };
        Errno::check(rc).map(|ms| Duration::from_millis(ms as u64))
    }
}

impl<H: WatchHandler> Drop for Watch<H> {
    fn drop(&mut self) {
        let pool = &self.arg.pool;
        // No notify is delivered once this returns, except callbacks already
        // queued. A broken watch may be gone on the OSD already: its error
        // is of no interest.
        // SAFETY: valid I/O context; an unknown cookie is an error librados
        // reports (`ENOTCONN`/`ENOENT`), not undefined behaviour.
        unsafe { (pool.api.rados_unwatch2)(pool.io, self.cookie) };
        // Callbacks already queued may still use `arg`: wait for them
        // before it is freed with `self`.
        pool.watch_flush();
    }
}

/// An asynchronous write in flight, and the buffer it writes.
pub(crate) struct Pending {
    api: &'static Api,
    c: ffi::Completion,
    data: Vec<u8>,
    /// The object, for messages; `None` once waited for.
    what: Option<String>,
}

// SAFETY: a completion may be waited on from any thread; the buffer is
// owned plain memory.
unsafe impl Send for Pending {}

impl Pending {
    /// Wait until the write is committed.
    pub(crate) fn wait(mut self) -> std::result::Result<(), (Errno, String)> {
        let rc = self.finish();
        let what = self.what.take().unwrap_or_default();
        Errno::check(rc).map(|_| ()).map_err(|e| (e, what))
    }

    fn finish(&mut self) -> c_int {
        if self.c.is_null() {
            return 0;
        }
        // SAFETY: valid completion, waited for, read, then released once.
        let rc = unsafe {
            (self.api.rados_aio_wait_for_complete)(self.c);
            let rc = (self.api.rados_aio_get_return_value)(self.c);
            (self.api.rados_aio_release)(self.c);
            rc
        };
        self.c = std::ptr::null_mut();
        rc
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // The buffer may only be freed once librados is done with it.
        self.finish();
    }
}

/// A compound write operation, applied atomically by [`Pool::operate`].
pub(crate) struct WriteOp {
    api: &'static Api,
    op: ffi::WriteOp,
    /// Result slots of comparisons, written when the op runs. Boxed: their
    /// addresses are handed to librados and must not move when the vector
    /// grows.
    #[allow(clippy::vec_box)]
    prvals: Vec<Box<c_int>>,
}

impl WriteOp {
    pub(crate) fn new() -> Result<WriteOp> {
        let api = ffi::api()?;
        // SAFETY: no preconditions.
        let op = unsafe { (api.rados_create_write_op)() };
        if op.is_null() {
            return Err(Error::internal("rados_create_write_op returned null"));
        }
        Ok(WriteOp {
            api,
            op,
            prvals: Vec::new(),
        })
    }

    /// Fail with `EEXIST` if the object exists.
    pub(crate) fn create_exclusive(&mut self) {
        // SAFETY: valid op; a null category is allowed.
        unsafe {
            (self.api.rados_write_op_create)(self.op, ffi::CREATE_EXCLUSIVE, std::ptr::null())
        }
    }

    /// Create the object if it does not exist.
    pub(crate) fn create(&mut self) {
        // SAFETY: valid op; a null category is allowed.
        unsafe { (self.api.rados_write_op_create)(self.op, 0, std::ptr::null()) }
    }

    /// Fail with `ENOENT` unless the object exists.
    pub(crate) fn assert_exists(&mut self) {
        // SAFETY: valid op.
        unsafe { (self.api.rados_write_op_assert_exists)(self.op) }
    }

    /// Append `data` to the object.
    pub(crate) fn append(&mut self, data: &[u8]) {
        // SAFETY: valid op; librados copies the buffer.
        unsafe { (self.api.rados_write_op_append)(self.op, data.as_ptr().cast(), data.len()) }
    }

    /// Set omap pairs.
    pub(crate) fn omap_set(&mut self, pairs: &[(&[u8], &[u8])]) {
        let keys: Vec<*const c_char> = pairs.iter().map(|(k, _)| k.as_ptr().cast()).collect();
        let vals: Vec<*const c_char> = pairs.iter().map(|(_, v)| v.as_ptr().cast()).collect();
        let klens: Vec<usize> = pairs.iter().map(|(k, _)| k.len()).collect();
        let vlens: Vec<usize> = pairs.iter().map(|(_, v)| v.len()).collect();
        // SAFETY: valid op; four arrays of `pairs.len()` entries describing
        // live buffers, all copied by librados before it returns.
        unsafe {
            (self.api.rados_write_op_omap_set2)(
                self.op,
                keys.as_ptr(),
                vals.as_ptr(),
                klens.as_ptr(),
                vlens.as_ptr(),
                pairs.len(),
            )
        }
    }

    /// Remove omap keys (missing ones are fine).
    pub(crate) fn omap_rm_keys(&mut self, keys: &[&[u8]]) {
        let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        // SAFETY: valid op; two arrays of `keys.len()` entries describing
        // live buffers, copied by librados before it returns.
        unsafe {
            (self.api.rados_write_op_omap_rm_keys2)(
                self.op,
                ptrs.as_ptr(),
                lens.as_ptr(),
                keys.len(),
            )
        }
    }

    /// Call method `method` of object class `class` on the object, with
    /// `input`, as part of the op (its failure fails the whole op).
    pub(crate) fn exec(&mut self, class: &CStr, method: &CStr, input: &[u8]) {
        let mut slot = Box::new(0);
        let p: *mut c_int = &mut *slot;
        self.prvals.push(slot);
        // SAFETY: valid op; the names and the input are copied by librados;
        // `p` points into a box owned by `self`, alive until the op is
        // released.
        unsafe {
            (self.api.rados_write_op_exec)(
                self.op,
                class.as_ptr(),
                method.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                p,
            )
        }
    }

    /// Apply the op only if omap `key` equals `value` (a missing key
    /// compares as empty); otherwise the whole op fails with `ECANCELED`.
    pub(crate) fn omap_cmp_eq(&mut self, key: &[u8], value: &[u8]) {
        self.omap_cmp(key, ffi::CMP_EQ, value);
    }

    /// Apply the op only if omap `key` sorts after `value` (a missing key
    /// compares as empty); otherwise the whole op fails with `ECANCELED`.
    pub(crate) fn omap_cmp_gt(&mut self, key: &[u8], value: &[u8]) {
        self.omap_cmp(key, ffi::CMP_GT, value);
    }

    fn omap_cmp(&mut self, key: &[u8], comparison: u8, value: &[u8]) {
        let mut slot = Box::new(0);
        let p: *mut c_int = &mut *slot;
        self.prvals.push(slot);
        // SAFETY: valid op; key and value are copied; `p` points into a box
        // owned by `self`, alive until the op is released.
        unsafe {
            (self.api.rados_write_op_omap_cmp2)(
                self.op,
                key.as_ptr().cast(),
                comparison,
                value.as_ptr().cast(),
                key.len(),
                value.len(),
                p,
            )
        }
    }
}

impl Drop for WriteOp {
    fn drop(&mut self) {
        // SAFETY: the op is valid and released once.
        unsafe { (self.api.rados_release_write_op)(self.op) }
    }
}

/// A read operation, released when dropped.
struct ReadOp((&'static Api, ffi::ReadOp));

impl ReadOp {
    fn new(api: &'static Api) -> ReadOp {
        // SAFETY: no preconditions.
        ReadOp((api, unsafe { (api.rados_create_read_op)() }))
    }
}

impl Drop for ReadOp {
    fn drop(&mut self) {
        // SAFETY: the op is valid and released once.
        unsafe { (self.0 .0.rados_release_read_op)(self.0 .1) }
    }
}
