//! The libdaos subset fieldstore calls: types, constants and the table of
//! function pointers resolved from the library at run time.
//!
//! Hand-written from the DAOS public headers' x86-64 layouts (identical in
//! DAOS 2.2, 2.4, 2.6, 2.8 and HEAD; `shared/docs/reference/daos.md` §2).
//! Every size and offset is pinned below by a compile-time assertion. The
//! stand-in (`daos-standin`) has its own definitions with their own
//! assertions, so a layout mistake here cannot be mirrored there unnoticed.

#![allow(missing_docs)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::mem::{align_of, offset_of, size_of};

use libloading::os::unix::Library;

/// `daos_handle_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DaosHandle {
    pub cookie: u64,
}

/// `DAOS_TX_NONE`.
pub const DAOS_TX_NONE: DaosHandle = DaosHandle { cookie: 0 };

/// `daos_obj_id_t` (`lo` first).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DaosObjId {
    pub lo: u64,
    pub hi: u64,
}

/// `d_iov_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DIov {
    pub iov_buf: *mut c_void,
    pub iov_buf_len: usize,
    pub iov_len: usize,
}

/// `d_sg_list_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DSgList {
    pub sg_nr: u32,
    pub sg_nr_out: u32,
    pub sg_iovs: *mut DIov,
}

/// `daos_range_t` (records).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosRange {
    pub rg_idx: u64,
    pub rg_len: u64,
}

/// `daos_array_iod_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosArrayIod {
    pub arr_nr: u64,
    pub arr_rgs: *mut DaosRange,
    pub arr_nr_short_read: u64,
    pub arr_nr_read: u64,
}

/// `daos_anchor_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosAnchor {
    pub da_type: u16,
    pub da_shard: u16,
    pub da_flags: u32,
    pub da_sub_anchors: u64,
    pub da_buf: [u8; 104],
}

impl DaosAnchor {
    /// `DAOS_ANCHOR_INIT`: all zero.
    pub const INIT: DaosAnchor = DaosAnchor {
        da_type: 0,
        da_shard: 0,
        da_flags: 0,
        da_sub_anchors: 0,
        da_buf: [0; 104],
    };

    /// `daos_anchor_is_eof` (an inline function in `daos_api.h`).
    pub fn is_eof(&self) -> bool {
        self.da_type == DAOS_ANCHOR_TYPE_EOF
    }
}

/// `daos_key_desc_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DaosKeyDesc {
    pub kd_key_len: u64,
    pub kd_val_type: u32,
}

/// `struct daos_prop_entry` (the union as its `u64` member).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosPropEntry {
    pub dpe_type: u32,
    pub dpe_flags: u16,
    pub dpe_reserv: u16,
    pub dpe_val: u64,
}

/// `daos_prop_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosProp {
    pub dpp_nr: u32,
    pub dpp_reserv: u32,
    pub dpp_entries: *mut DaosPropEntry,
}

/// `DAOS_PROP_LABEL_MAX_LEN`: the longest label, without its NUL.
pub const LABEL_MAX_LEN: usize = 127;

/// `struct daos_pool_cont_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosPoolContInfo {
    pub pci_uuid: [u8; 16],
    pub pci_label: [c_char; LABEL_MAX_LEN + 1],
}

// daos.md §2: identical in every DAOS version from 2.2 to HEAD.
const _: () = {
    assert!(size_of::<DaosHandle>() == 8 && align_of::<DaosHandle>() == 8);
    assert!(size_of::<DaosObjId>() == 16 && align_of::<DaosObjId>() == 8);
    assert!(offset_of!(DaosObjId, lo) == 0);
    assert!(offset_of!(DaosObjId, hi) == 8);
    assert!(size_of::<DIov>() == 24 && align_of::<DIov>() == 8);
    assert!(offset_of!(DIov, iov_buf) == 0);
    assert!(offset_of!(DIov, iov_buf_len) == 8);
    assert!(offset_of!(DIov, iov_len) == 16);
    assert!(size_of::<DSgList>() == 16 && align_of::<DSgList>() == 8);
    assert!(offset_of!(DSgList, sg_nr) == 0);
    assert!(offset_of!(DSgList, sg_nr_out) == 4);
    assert!(offset_of!(DSgList, sg_iovs) == 8);
    assert!(size_of::<DaosRange>() == 16);
    assert!(offset_of!(DaosRange, rg_idx) == 0);
    assert!(offset_of!(DaosRange, rg_len) == 8);
    assert!(size_of::<DaosArrayIod>() == 32 && align_of::<DaosArrayIod>() == 8);
    assert!(offset_of!(DaosArrayIod, arr_nr) == 0);
    assert!(offset_of!(DaosArrayIod, arr_rgs) == 8);
    assert!(offset_of!(DaosArrayIod, arr_nr_short_read) == 16);
    assert!(offset_of!(DaosArrayIod, arr_nr_read) == 24);
    assert!(size_of::<DaosAnchor>() == 120 && align_of::<DaosAnchor>() == 8);
    assert!(offset_of!(DaosAnchor, da_type) == 0);
    assert!(offset_of!(DaosAnchor, da_shard) == 2);
    assert!(offset_of!(DaosAnchor, da_flags) == 4);
    assert!(offset_of!(DaosAnchor, da_sub_anchors) == 8);
    assert!(offset_of!(DaosAnchor, da_buf) == 16);
    assert!(size_of::<DaosKeyDesc>() == 16 && align_of::<DaosKeyDesc>() == 8);
    assert!(offset_of!(DaosKeyDesc, kd_key_len) == 0);
    assert!(offset_of!(DaosKeyDesc, kd_val_type) == 8);
    assert!(size_of::<DaosPropEntry>() == 16 && align_of::<DaosPropEntry>() == 8);
    assert!(offset_of!(DaosPropEntry, dpe_type) == 0);
    assert!(offset_of!(DaosPropEntry, dpe_flags) == 4);
    assert!(offset_of!(DaosPropEntry, dpe_reserv) == 6);
    assert!(offset_of!(DaosPropEntry, dpe_val) == 8);
    assert!(size_of::<DaosProp>() == 16 && align_of::<DaosProp>() == 8);
    assert!(offset_of!(DaosProp, dpp_nr) == 0);
    assert!(offset_of!(DaosProp, dpp_reserv) == 4);
    assert!(offset_of!(DaosProp, dpp_entries) == 8);
    // Passed by value in registers: the C enums and class ids.
    assert!(size_of::<c_uint>() == 4 && size_of::<c_int>() == 4);
};

// Open flags.
pub const DAOS_PC_RW: c_uint = 2;
pub const DAOS_COO_RO: c_uint = 1;
pub const DAOS_COO_RW: c_uint = 2;
pub const DAOS_OO_RO: c_uint = 2;
pub const DAOS_OO_RW: c_uint = 4;

// KV conditionals.
pub const DAOS_COND_KEY_INSERT: u64 = 2;
/// `DAOS_COND_KEY_UPDATE`: put only if the key exists.
pub const DAOS_COND_KEY_UPDATE: u64 = 4;

/// `DAOS_ANCHOR_TYPE_EOF`.
pub const DAOS_ANCHOR_TYPE_EOF: u16 = 3;

// Object types.
pub const DAOS_OT_KV_HASHED: c_uint = 8;
pub const DAOS_OT_ARRAY_BYTE: c_uint = 13;

// Container properties.
pub const DAOS_PROP_CO_REDUN_FAC: u32 = 0x1007;

/// DAOS error numbers (calls return their negation).
pub mod der {
    pub const NO_PERM: i32 = 1001;
    pub const NO_HDL: i32 = 1002;
    pub const INVAL: i32 = 1003;
    pub const EXIST: i32 = 1004;
    pub const NONEXIST: i32 = 1005;
    pub const UNREACH: i32 = 1006;
    pub const NOSPACE: i32 = 1007;
    pub const TIMEDOUT: i32 = 1011;
    pub const BUSY: i32 = 1012;
    pub const AGAIN: i32 = 1013;
    pub const TRUNC: i32 = 1016;
    pub const EXCLUDED: i32 = 1032;
    pub const NOREPLY: i32 = 1033;
    pub const GRPVER: i32 = 1036;
    pub const NOTLEADER: i32 = 2008;
    pub const KEY2BIG: i32 = 2012;
    pub const REC2BIG: i32 = 2013;
    pub const TX_RESTART: i32 = 2025;
    pub const RF: i32 = 2031;
    pub const NO_SERVICE: i32 = 2039;
}

type Ev = *mut c_void;

/// Declares [`Functions`], [`SYMBOLS`] and the resolver in one place, so a
/// symbol cannot be declared without being resolved (or listed).
macro_rules! functions {
    ($( $name:ident : fn($($arg:ty),*) ;)*) => {
        /// The resolved functions. Field names are the C names; the renamed
        /// ones are resolved under their real symbol (`daos_pool_connect2`,
        /// …), never the plain `daos_obj_generate_oid` (legacy feature bits
        /// in DAOS 2.2).
        #[derive(Clone, Copy)]
        pub struct Functions {
            $( pub $name: unsafe extern "C" fn($($arg),*) -> c_int, )*
            /// In libgurt, a dependency of libdaos; optional.
            pub d_errstr: Option<unsafe extern "C" fn(c_int) -> *const c_char>,
        }

        /// The symbol names resolved, in [`Functions`] order (for messages
        /// and tests).
        pub const SYMBOLS: &[&str] = &[$(stringify!($name)),*];

        impl Functions {
            /// Resolve every function from `lib`.
            ///
            /// # Errors
            /// The first required symbol missing, and the loader's error.
            pub fn resolve(lib: &Library) -> Result<Functions, (&'static str, libloading::Error)> {
                Ok(Functions {
                    $(
                        // SAFETY: the symbol is a libdaos function whose C
                        // prototype (daos.md §1) is the field's type.
                        $name: *unsafe { lib.get(concat!(stringify!($name), "\0").as_bytes()) }
                            .map_err(|e| (stringify!($name), e))?,
                    )*
                    // SAFETY: `const char *d_errstr(int)`.
                    d_errstr: unsafe { lib.get(b"d_errstr\0") }.ok().map(|s| *s),
                })
            }
        }
    };
}

functions! {
    daos_init: fn();
    daos_pool_connect2: fn(*const c_char, *const c_char, c_uint, *mut DaosHandle, *mut c_void, Ev);
    daos_pool_disconnect: fn(DaosHandle, Ev);
    daos_pool_list_cont: fn(DaosHandle, *mut u64, *mut DaosPoolContInfo, Ev);
    daos_cont_create_with_label: fn(DaosHandle, *const c_char, *const DaosProp, *mut [u8; 16], Ev);
    daos_cont_open2: fn(DaosHandle, *const c_char, c_uint, *mut DaosHandle, *mut c_void, Ev);
    daos_cont_close: fn(DaosHandle, Ev);
    daos_cont_destroy2: fn(DaosHandle, *const c_char, c_int, Ev);
    daos_cont_alloc_oids: fn(DaosHandle, u64, *mut u64, Ev);
    daos_obj_generate_oid2: fn(DaosHandle, *mut DaosObjId, c_uint, u32, u16, u32);
    daos_kv_open: fn(DaosHandle, DaosObjId, c_uint, *mut DaosHandle, Ev);
    daos_kv_close: fn(DaosHandle, Ev);
    daos_kv_put: fn(DaosHandle, DaosHandle, u64, *const c_char, u64, *const c_void, Ev);
    daos_kv_get: fn(DaosHandle, DaosHandle, u64, *const c_char, *mut u64, *mut c_void, Ev);
    daos_kv_remove: fn(DaosHandle, DaosHandle, u64, *const c_char, Ev);
    daos_kv_list: fn(DaosHandle, DaosHandle, *mut u32, *mut DaosKeyDesc, *mut DSgList, *mut DaosAnchor, Ev);
    daos_array_open_with_attr: fn(DaosHandle, DaosObjId, DaosHandle, c_uint, u64, u64, *mut DaosHandle, Ev);
    daos_array_close: fn(DaosHandle, Ev);
    daos_array_read: fn(DaosHandle, DaosHandle, *mut DaosArrayIod, *mut DSgList, Ev);
    daos_array_write: fn(DaosHandle, DaosHandle, *mut DaosArrayIod, *mut DSgList, Ev);
    daos_array_get_size: fn(DaosHandle, DaosHandle, *mut u64, Ev);
    daos_array_destroy: fn(DaosHandle, DaosHandle, Ev);
}
