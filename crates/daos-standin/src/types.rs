//! libdaos's public types, constants and error codes, as laid out on x86-64
//! by DAOS 2.2 to 2.8 (`shared/docs/reference/daos.md` §2). Every size and
//! offset is pinned by a compile-time assertion with the number of §2, so a
//! layout mistake cannot hide behind a matching mistake in the binding
//! (`fieldstore-daos` has its own definitions and its own assertions).

use std::ffi::c_void;
use std::mem::{align_of, offset_of, size_of};

/// `daos_handle_t`: an opaque cookie; 0 is the invalid handle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DaosHandle {
    /// The cookie.
    pub cookie: u64,
}

/// `daos_obj_id_t`: `lo` first, then `hi`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct DaosObjId {
    /// Low 64 bits (all user bits).
    pub lo: u64,
    /// High 64 bits: type, redundancy, group count in the top 32.
    pub hi: u64,
}

/// `d_iov_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DIov {
    /// The buffer.
    pub iov_buf: *mut c_void,
    /// Its capacity.
    pub iov_buf_len: usize,
    /// Bytes used.
    pub iov_len: usize,
}

/// `d_sg_list_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DSgList {
    /// Number of iovs.
    pub sg_nr: u32,
    /// Number of iovs used (output).
    pub sg_nr_out: u32,
    /// The iovs.
    pub sg_iovs: *mut DIov,
}

/// `daos_range_t`, in records.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosRange {
    /// First record.
    pub rg_idx: u64,
    /// Number of records.
    pub rg_len: u64,
}

/// `daos_array_iod_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosArrayIod {
    /// Number of ranges.
    pub arr_nr: u64,
    /// The ranges.
    pub arr_rgs: *mut DaosRange,
    /// Output: records at the end of the ranges beyond the array's size.
    pub arr_nr_short_read: u64,
    /// Output: records read.
    pub arr_nr_read: u64,
}

/// `daos_array_stbuf_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DaosArrayStbuf {
    /// Size in records.
    pub st_size: u64,
    /// Highest epoch of a modification.
    pub st_max_epoch: u64,
}

/// `DAOS_ANCHOR_BUF_MAX`.
pub const DAOS_ANCHOR_BUF_MAX: usize = 104;

/// `daos_anchor_t`: iteration state, kept entirely in the anchor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosAnchor {
    /// `DAOS_ANCHOR_TYPE_*`.
    pub da_type: u16,
    /// The shard being listed.
    pub da_shard: u16,
    /// Flags.
    pub da_flags: u32,
    /// Sub-anchors.
    pub da_sub_anchors: u64,
    /// Opaque position.
    pub da_buf: [u8; DAOS_ANCHOR_BUF_MAX],
}

/// `daos_key_desc_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DaosKeyDesc {
    /// Length of the key.
    pub kd_key_len: u64,
    /// Value type.
    pub kd_val_type: u32,
}

/// `struct daos_prop_entry`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosPropEntry {
    /// `DAOS_PROP_*`.
    pub dpe_type: u32,
    /// Flags.
    pub dpe_flags: u16,
    /// Reserved.
    pub dpe_reserv: u16,
    /// The union `dpe_val` / `dpe_str` / `dpe_val_ptr`.
    pub dpe_val: u64,
}

/// `daos_prop_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosProp {
    /// Number of entries.
    pub dpp_nr: u32,
    /// Reserved.
    pub dpp_reserv: u32,
    /// The entries.
    pub dpp_entries: *mut DaosPropEntry,
}

/// `DAOS_PROP_LABEL_MAX_LEN`.
pub const DAOS_PROP_LABEL_MAX_LEN: usize = 127;

/// `struct daos_pool_cont_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DaosPoolContInfo {
    /// The container's UUID.
    pub pci_uuid: [u8; 16],
    /// Its label, NUL-terminated.
    pub pci_label: [u8; DAOS_PROP_LABEL_MAX_LEN + 1],
}

// Sizes, alignments and offsets of daos.md §2 (identical in DAOS 2.2 to HEAD).
const _: () = {
    assert!(size_of::<DaosHandle>() == 8 && align_of::<DaosHandle>() == 8);
    assert!(size_of::<DaosObjId>() == 16 && align_of::<DaosObjId>() == 8);
    assert!(offset_of!(DaosObjId, lo) == 0 && offset_of!(DaosObjId, hi) == 8);
    assert!(size_of::<DIov>() == 24 && align_of::<DIov>() == 8);
    assert!(offset_of!(DIov, iov_buf) == 0);
    assert!(offset_of!(DIov, iov_buf_len) == 8);
    assert!(offset_of!(DIov, iov_len) == 16);
    assert!(size_of::<DSgList>() == 16 && align_of::<DSgList>() == 8);
    assert!(offset_of!(DSgList, sg_nr) == 0);
    assert!(offset_of!(DSgList, sg_nr_out) == 4);
    assert!(offset_of!(DSgList, sg_iovs) == 8);
    assert!(size_of::<DaosRange>() == 16);
    assert!(offset_of!(DaosRange, rg_idx) == 0 && offset_of!(DaosRange, rg_len) == 8);
    assert!(size_of::<DaosArrayIod>() == 32 && align_of::<DaosArrayIod>() == 8);
    assert!(offset_of!(DaosArrayIod, arr_nr) == 0);
    assert!(offset_of!(DaosArrayIod, arr_rgs) == 8);
    assert!(offset_of!(DaosArrayIod, arr_nr_short_read) == 16);
    assert!(offset_of!(DaosArrayIod, arr_nr_read) == 24);
    assert!(size_of::<DaosArrayStbuf>() == 16);
    assert!(offset_of!(DaosArrayStbuf, st_max_epoch) == 8);
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
    assert!(offset_of!(DaosProp, dpp_entries) == 8);
    assert!(size_of::<DaosPoolContInfo>() == 144 && align_of::<DaosPoolContInfo>() == 1);
    assert!(offset_of!(DaosPoolContInfo, pci_label) == 16);
};

// Handle types (low 4 bits of a cookie in libdaos).
/// `DAOS_HTYPE_POOL`.
pub const HTYPE_POOL: u64 = 3;
/// `DAOS_HTYPE_CO`.
pub const HTYPE_CO: u64 = 5;
/// `DAOS_HTYPE_OBJ`.
pub const HTYPE_OBJ: u64 = 7;
/// `DAOS_HTYPE_ARRAY`.
pub const HTYPE_ARRAY: u64 = 9;
/// `DAOS_HTYPE_KV`.
pub const HTYPE_KV: u64 = 13;

// Open flags.
/// `DAOS_PC_RO`.
pub const DAOS_PC_RO: u32 = 1;
/// `DAOS_PC_RW`.
pub const DAOS_PC_RW: u32 = 2;
/// `DAOS_PC_EX`.
pub const DAOS_PC_EX: u32 = 4;
/// `DAOS_COO_RO`.
pub const DAOS_COO_RO: u32 = 1;
/// `DAOS_COO_RW`.
pub const DAOS_COO_RW: u32 = 2;
/// `DAOS_COO_EX`.
pub const DAOS_COO_EX: u32 = 4;
/// `DAOS_COO_FORCE`.
pub const DAOS_COO_FORCE: u32 = 8;
/// `DAOS_OO_RO`.
pub const DAOS_OO_RO: u32 = 2;
/// `DAOS_OO_RW`.
pub const DAOS_OO_RW: u32 = 4;
/// `DAOS_OO_EXCL`.
pub const DAOS_OO_EXCL: u32 = 8;

// KV conditionals.
/// `DAOS_COND_KEY_REMOVE`.
pub const DAOS_COND_KEY_REMOVE: u64 = 1;
/// `DAOS_COND_KEY_INSERT`.
pub const DAOS_COND_KEY_INSERT: u64 = 2;
/// `DAOS_COND_KEY_UPDATE`.
pub const DAOS_COND_KEY_UPDATE: u64 = 4;
/// `DAOS_COND_KEY_GET`.
pub const DAOS_COND_KEY_GET: u64 = 8;

// Anchor types.
/// `DAOS_ANCHOR_TYPE_ZERO`.
pub const DAOS_ANCHOR_TYPE_ZERO: u16 = 0;
/// `DAOS_ANCHOR_TYPE_HKEY`.
pub const DAOS_ANCHOR_TYPE_HKEY: u16 = 1;
/// `DAOS_ANCHOR_TYPE_EOF`.
pub const DAOS_ANCHOR_TYPE_EOF: u16 = 3;

// Object types (`enum daos_otype_t`).
/// `DAOS_OT_KV_HASHED`.
pub const DAOS_OT_KV_HASHED: u32 = 8;
/// `DAOS_OT_KV_UINT64`.
pub const DAOS_OT_KV_UINT64: u32 = 9;
/// `DAOS_OT_KV_LEXICAL`.
pub const DAOS_OT_KV_LEXICAL: u32 = 10;
/// `DAOS_OT_ARRAY`.
pub const DAOS_OT_ARRAY: u32 = 11;
/// `DAOS_OT_ARRAY_ATTR`.
pub const DAOS_OT_ARRAY_ATTR: u32 = 12;
/// `DAOS_OT_ARRAY_BYTE`.
pub const DAOS_OT_ARRAY_BYTE: u32 = 13;
/// `DAOS_OT_MAX` (2.4 and later).
pub const DAOS_OT_MAX: u32 = 14;

// Container properties.
/// `DAOS_PROP_PO_LABEL`.
pub const DAOS_PROP_PO_LABEL: u32 = 1;
/// `DAOS_PROP_CO_LABEL`.
pub const DAOS_PROP_CO_LABEL: u32 = 0x1001;
/// `DAOS_PROP_CO_REDUN_FAC`.
pub const DAOS_PROP_CO_REDUN_FAC: u32 = 0x1007;
/// `DAOS_PROP_ENTRIES_MAX_NR`.
pub const DAOS_PROP_ENTRIES_MAX_NR: u32 = 128;

/// DAOS error numbers (functions return their negation).
#[allow(missing_docs)]
pub mod der {
    pub const NO_PERM: i32 = 1001;
    pub const NO_HDL: i32 = 1002;
    pub const INVAL: i32 = 1003;
    pub const EXIST: i32 = 1004;
    pub const NONEXIST: i32 = 1005;
    pub const UNREACH: i32 = 1006;
    pub const NOSPACE: i32 = 1007;
    pub const NOMEM: i32 = 1009;
    pub const NOSYS: i32 = 1010;
    pub const TIMEDOUT: i32 = 1011;
    pub const BUSY: i32 = 1012;
    pub const AGAIN: i32 = 1013;
    pub const UNINIT: i32 = 1015;
    pub const TRUNC: i32 = 1016;
    pub const MISC: i32 = 1025;
    pub const IO: i32 = 2001;
    pub const KEY2BIG: i32 = 2012;
    pub const REC2BIG: i32 = 2013;
    pub const RF: i32 = 2031;

    /// `d_errstr`: the code's name.
    pub fn name(rc: i32) -> &'static str {
        match rc.unsigned_abs() as i32 {
            0 => "DER_SUCCESS\0",
            NO_PERM => "DER_NO_PERM\0",
            NO_HDL => "DER_NO_HDL\0",
            INVAL => "DER_INVAL\0",
            EXIST => "DER_EXIST\0",
            NONEXIST => "DER_NONEXIST\0",
            UNREACH => "DER_UNREACH\0",
            NOSPACE => "DER_NOSPACE\0",
            NOMEM => "DER_NOMEM\0",
            NOSYS => "DER_NOSYS\0",
            TIMEDOUT => "DER_TIMEDOUT\0",
            BUSY => "DER_BUSY\0",
            AGAIN => "DER_AGAIN\0",
            UNINIT => "DER_UNINIT\0",
            TRUNC => "DER_TRUNC\0",
            MISC => "DER_MISC\0",
            IO => "DER_IO\0",
            KEY2BIG => "DER_KEY2BIG\0",
            REC2BIG => "DER_REC2BIG\0",
            RF => "DER_RF\0",
            _ => "DER_UNKNOWN\0",
        }
    }
}
