//! The librados C API subset fieldstore uses, loaded at run time.
//!
//! `librados.so.2` is opened with `dlopen` the first time a RADOS backend is
//! opened, so building fieldstore (and running every non-RADOS test) needs
//! no Ceph headers or libraries. The signatures are those of
//! `<rados/librados.h>` in Ceph 16.2 (API 3.0), all of which are part of the
//! stable C API of later releases too.
//!
//! Everything here is raw; `crate::rados` wraps it safely.

use std::ffi::{c_char, c_int, c_uchar, c_void};
use std::sync::OnceLock;

use fieldstore_core::{Error, ErrorKind, Result};

/// `rados_t`.
pub(crate) type Cluster = *mut c_void;
/// `rados_ioctx_t`.
pub(crate) type IoCtx = *mut c_void;
/// `rados_completion_t`.
pub(crate) type Completion = *mut c_void;
/// `rados_write_op_t`.
pub(crate) type WriteOp = *mut c_void;
/// `rados_read_op_t`.
pub(crate) type ReadOp = *mut c_void;
/// `rados_omap_iter_t`.
pub(crate) type OmapIter = *mut c_void;
/// `rados_list_ctx_t`.
pub(crate) type ListCtx = *mut c_void;

/// `rados_callback_t`: a completion's callback.
pub(crate) type CompletionCb = unsafe extern "C" fn(Completion, *mut c_void);
/// `rados_watchcb2_t`: a notify arrived for a watch (arg, notify id,
/// watch cookie, notifier id, payload, payload length).
pub(crate) type WatchCb = unsafe extern "C" fn(*mut c_void, u64, u64, u64, *mut c_void, usize);
/// `rados_watcherrcb_t`: a watch broke (arg, watch cookie, negative errno).
pub(crate) type WatchErrCb = unsafe extern "C" fn(*mut c_void, u64, c_int);

/// `LIBRADOS_CREATE_EXCLUSIVE`.
pub(crate) const CREATE_EXCLUSIVE: c_int = 1;
/// `LIBRADOS_CMPXATTR_OP_EQ`.
pub(crate) const CMP_EQ: u8 = 1;
/// `LIBRADOS_CMPXATTR_OP_GT` (OSDs compare omap values by EQ, LT and GT
/// only).
pub(crate) const CMP_GT: u8 = 3;

/// Declares the function-pointer table and its loader in one place, so a
/// symbol cannot be declared without being loaded.
macro_rules! api {
    ($( $name:ident : fn($($arg:ty),*) $(-> $ret:ty)? ;)*) => {
        /// Function pointers into librados.
        #[allow(non_snake_case)]
        pub(crate) struct Api {
            $( pub(crate) $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?, )*
            _lib: libloading::Library,
        }

        impl Api {
            fn load(path: &str) -> std::result::Result<Api, String> {
                // SAFETY: loading librados runs its initialisers, which only
                // set up its own state; nothing else is loaded under this name.
                let lib = unsafe { libloading::Library::new(path) }
                    .map_err(|e| format!("{e}"))?;
                $(
                    // SAFETY: the type matches the declaration of the symbol
                    // in <rados/librados.h> (Ceph 16.2); the pointer is only
                    // used while `_lib`, stored beside it, keeps the library
                    // loaded.
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                        .map_err(|e| format!("{path}: {e}"))?
                    };
                )*
                Ok(Api { $($name,)* _lib: lib })
            }
        }
    };
}

api! {
    rados_create2: fn(*mut Cluster, *const c_char, *const c_char, u64) -> c_int;
    rados_conf_read_file: fn(Cluster, *const c_char) -> c_int;
    rados_conf_set: fn(Cluster, *const c_char, *const c_char) -> c_int;
    rados_conf_get: fn(Cluster, *const c_char, *mut c_char, usize) -> c_int;
    rados_connect: fn(Cluster) -> c_int;
    rados_shutdown: fn(Cluster);
    rados_ioctx_create: fn(Cluster, *const c_char, *mut IoCtx) -> c_int;
    rados_ioctx_destroy: fn(IoCtx);
    rados_ioctx_set_namespace: fn(IoCtx, *const c_char);
    rados_set_pool_full_try: fn(IoCtx);
    rados_read: fn(IoCtx, *const c_char, *mut c_char, usize, u64) -> c_int;
    rados_stat: fn(IoCtx, *const c_char, *mut u64, *mut i64) -> c_int;
    rados_remove: fn(IoCtx, *const c_char) -> c_int;
    rados_aio_create_completion2: fn(*mut c_void, Option<CompletionCb>, *mut Completion) -> c_int;
    rados_aio_wait_for_complete: fn(Completion) -> c_int;
    rados_aio_get_return_value: fn(Completion) -> c_int;
    rados_aio_release: fn(Completion);
    rados_aio_write: fn(IoCtx, *const c_char, Completion, *const c_char, usize, u64) -> c_int;
    rados_aio_write_full: fn(IoCtx, *const c_char, Completion, *const c_char, usize) -> c_int;
    rados_create_write_op: fn() -> WriteOp;
    rados_release_write_op: fn(WriteOp);
    rados_write_op_create: fn(WriteOp, c_int, *const c_char);
    rados_write_op_assert_exists: fn(WriteOp);
    rados_write_op_append: fn(WriteOp, *const c_char, usize);
    rados_write_op_omap_set2: fn(WriteOp, *const *const c_char, *const *const c_char, *const usize, *const usize, usize);
    rados_write_op_omap_cmp2: fn(WriteOp, *const c_char, u8, *const c_char, usize, usize, *mut c_int);
    rados_write_op_omap_rm_keys2: fn(WriteOp, *const *const c_char, *const usize, usize);
    rados_write_op_exec: fn(WriteOp, *const c_char, *const c_char, *const c_char, usize, *mut c_int);
    rados_write_op_operate: fn(WriteOp, IoCtx, *const c_char, *mut i64, c_int) -> c_int;
    rados_create_read_op: fn() -> ReadOp;
    rados_release_read_op: fn(ReadOp);
    rados_read_op_omap_get_vals2: fn(ReadOp, *const c_char, *const c_char, u64, *mut OmapIter, *mut c_uchar, *mut c_int);
    rados_read_op_omap_get_keys2: fn(ReadOp, *const c_char, u64, *mut OmapIter, *mut c_uchar, *mut c_int);
    rados_read_op_omap_get_vals_by_keys2: fn(ReadOp, *const *const c_char, usize, *const usize, *mut OmapIter, *mut c_int);
    rados_read_op_operate: fn(ReadOp, IoCtx, *const c_char, c_int) -> c_int;
    rados_omap_get_next2: fn(OmapIter, *mut *mut c_char, *mut *mut c_char, *mut usize, *mut usize) -> c_int;
    rados_omap_get_end: fn(OmapIter);
    rados_watch3: fn(IoCtx, *const c_char, *mut u64, Option<WatchCb>, Option<WatchErrCb>, u32, *mut c_void) -> c_int;
    rados_watch_check: fn(IoCtx, u64) -> c_int;
    rados_buffer_free: fn(*mut c_char);
    rados_nobjects_list_open: fn(IoCtx, *mut ListCtx) -> c_int;
    rados_nobjects_list_next: fn(ListCtx, *mut *const c_char, *mut *const c_char, *mut *const c_char) -> c_int;
    rados_nobjects_list_close: fn(ListCtx);
    rados_unwatch2: fn(IoCtx, u64) -> c_int;
    rados_watch_flush: fn(Cluster) -> c_int;
    rados_notify_ack: fn(IoCtx, *const c_char, u64, u64, *const c_char, c_int) -> c_int;
    rados_aio_notify: fn(IoCtx, *const c_char, Completion, *const c_char, c_int, u64, *mut *mut c_char, *mut usize) -> c_int;
}

/// The library's file name; `FIELDSTORE_LIBRADOS` overrides it (a path).
fn library_name() -> String {
    std::env::var("FIELDSTORE_LIBRADOS")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "librados.so.2".to_string())
}

/// librados, loaded on first use.
///
/// # Errors
/// `Unsupported` naming the library and the package that provides it.
pub(crate) fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| Api::load(&library_name()))
        .as_ref()
        .map_err(|e| {
            Error::new(
                ErrorKind::Unsupported,
                format!(
                    "the RADOS backend needs librados, which could not be loaded ({e}); \
                     install it (Debian: apt-get install librados2) or set FIELDSTORE_LIBRADOS to its path"
                ),
            )
        })
}
