//! Counters of calls and of would-be RPCs, per process and per thread.
//!
//! A call "would be an RPC" when libdaos would send at least one request to
//! a DAOS engine for it (daos.md §1, column RPC): KV put/get/list/remove,
//! array read/write (one per chunk touched), container open/create,
//! OID allocation, …; opening a KV or an array with attributes, closing
//! objects and generating OIDs are local. Blocking calls run on the
//! caller's thread, so per-thread counts give a test the exact cost of the
//! operations it made, whatever other tests do meanwhile.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Every counted function, in a fixed order.
pub const NAMES: &[&str] = &[
    "daos_init",
    "daos_fini",
    "daos_pool_connect",
    "daos_pool_disconnect",
    "daos_pool_list_cont",
    "daos_cont_create",
    "daos_cont_create_with_label",
    "daos_cont_open",
    "daos_cont_close",
    "daos_cont_destroy",
    "daos_cont_alloc_oids",
    "daos_obj_generate_oid",
    "daos_obj_open",
    "daos_obj_close",
    "daos_obj_punch",
    "daos_kv_open",
    "daos_kv_close",
    "daos_kv_destroy",
    "daos_kv_put",
    "daos_kv_get",
    "daos_kv_remove",
    "daos_kv_list",
    "daos_array_create",
    "daos_array_open",
    "daos_array_open_with_attr",
    "daos_array_close",
    "daos_array_read",
    "daos_array_write",
    "daos_array_get_size",
    "daos_array_set_size",
    "daos_array_destroy",
    "daos_array_punch",
    "daos_array_stat",
];

const N: usize = NAMES.len();

/// Index of a function in [`NAMES`].
pub fn index(name: &str) -> Option<usize> {
    let name = name.strip_suffix('2').unwrap_or(name);
    NAMES.iter().position(|n| *n == name)
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
static CALLS: [AtomicU64; N] = [ZERO; N];
static RPCS: [AtomicU64; N] = [ZERO; N];

thread_local! {
    static LOCAL: RefCell<([u64; N], [u64; N])> = const { RefCell::new(([0; N], [0; N])) };
}

/// Count one call of `f` costing `rpcs` would-be RPCs.
pub fn count(f: usize, rpcs: u64) {
    CALLS[f].fetch_add(1, Ordering::Relaxed);
    RPCS[f].fetch_add(rpcs, Ordering::Relaxed);
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        l.0[f] += 1;
        l.1[f] += rpcs;
    });
}

/// Add RPCs to a call already counted (e.g. chunks touched).
pub fn add_rpcs(f: usize, rpcs: u64) {
    RPCS[f].fetch_add(rpcs, Ordering::Relaxed);
    LOCAL.with(|l| l.borrow_mut().1[f] += rpcs);
}

/// Calls of `f` (`thread`: this thread's only).
pub fn calls(f: usize, thread: bool) -> u64 {
    if thread {
        LOCAL.with(|l| l.borrow().0[f])
    } else {
        CALLS[f].load(Ordering::Relaxed)
    }
}

/// Would-be RPCs of `f`.
pub fn rpcs(f: usize, thread: bool) -> u64 {
    if thread {
        LOCAL.with(|l| l.borrow().1[f])
    } else {
        RPCS[f].load(Ordering::Relaxed)
    }
}

/// Would-be RPCs of every function.
pub fn total_rpcs(thread: bool) -> u64 {
    (0..N).map(|f| rpcs(f, thread)).sum()
}

/// Zero the counters.
pub fn reset(thread: bool) {
    if thread {
        LOCAL.with(|l| *l.borrow_mut() = ([0; N], [0; N]));
    } else {
        for f in 0..N {
            CALLS[f].store(0, Ordering::Relaxed);
            RPCS[f].store(0, Ordering::Relaxed);
        }
    }
}

/// One line: `pid=<pid> rpcs=<total> <function>=<calls>/<rpcs> …` for the
/// functions called at least once.
pub fn report_line() -> String {
    let mut s = format!("pid={} rpcs={}", std::process::id(), total_rpcs(false));
    for (f, name) in NAMES.iter().enumerate() {
        let c = calls(f, false);
        if c > 0 {
            s.push_str(&format!(" {name}={c}/{}", rpcs(f, false)));
        }
    }
    s
}
