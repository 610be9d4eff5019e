//! FDB5's C API (`fdb_c.h`, FDB5 5.25) over fieldstore.
//!
//! The shared library (`libfieldstore.so`, also installed as `libfdb5.so`
//! by `scripts/install-capi.sh`) exports the 47 functions of FDB5's
//! `fdb_c.h` with the same names, signatures, opaque types and return
//! codes, so that FDB5's C, Fortran and Python (legacy `pyfdb` 0.1.x)
//! clients run on fieldstore unchanged. The header is
//! `include/fdb5/api/fdb_c.h`; `docs/capi.md` says how to install it and
//! where fieldstore's semantics differ from FDB5's, and why.
//!
//! # Invariants of every entry point
//! The C boundary's machinery (tokens and their table, the per-thread last
//! error, the panic guard, the fork guard) is `fieldstore_cabi`'s, shared
//! with `fieldstore-gribjump`'s `libgribjump.so`.
//! - **No panic crosses the boundary**: each function runs its body under
//!   [`std::panic::catch_unwind`] ([`error::entry`]); a panic becomes
//!   `FDB_ERROR_UNKNOWN_EXCEPTION` with a message.
//! - **Objects are tokens, not addresses** ([`registry`]): a pointer handed
//!   to C encodes a serial number and the object's type, and is looked up
//!   in a table before use. NULL, a pointer of another type, a pointer
//!   never issued or one already deleted is an error
//!   (`FDB_ERROR_GENERAL_EXCEPTION`), never undefined behaviour. Serial
//!   numbers are never reused, so a deleted object stays deleted.
//! - **Objects are shared, calls on one object serialised**: the table
//!   holds `Arc`s; a call clones the `Arc`, so an object deleted by one
//!   thread while another uses it lives until that call returns. Mutable
//!   state sits behind a mutex per object. A per-thread cache of recent
//!   lookups holds only weak references, made stale by any removal: it
//!   never finds a deleted object, nor keeps one alive. List iterators and
//!   split keys, called many times per listed field, live in slabs of
//!   never-freed slots instead ([`hot`]), with the same guarantees at a
//!   sixth of the cost.
//! - **Errors are per thread** ([`error`]): the message of the last failure
//!   on the calling thread, and its kind
//!   ([`fieldstore_last_error_kind`](error::fieldstore_last_error_kind)).
//! - **Pointers the caller gives** are read only for the duration of the
//!   call, and only after the NULL checks; pointers returned (strings) point
//!   into the object they came from and stay valid until it changes or is
//!   deleted.
//! - **Fork**: the library's own locks are taken around `fork()`
//!   ([`registry::install_fork_handlers`]), so a child never inherits one
//!   held by another thread. A handle is its creator process's: every call
//!   through one inherited by a forked child fails there
//!   ([`FieldStore::check_process`](fieldstore::FieldStore::check_process)).
//!
//! # Layers
//! Each module names only modules listed before it: the states and the
//! slab at the bottom, the tables that hold the objects above them, the
//! calls on the objects at the top (the `layers` test checks the code
//! against this list).
//! - `error`: return codes, the error type, the per-thread last error and
//!   the failure handler (with the C functions that read and set them).
//! - `util`: reading the caller's arguments (C strings, out-pointers).
//! - `config`: which store a handle opens (fieldstore's config or FDB5's).
//! - `kind`: the object types, the tag every token carries.
//! - `hot`: the slab of never-freed slots that hot objects live in.
//! - `listing`: the state of a list iterator.
//! - `split_key`: the state of a split key.
//! - `registry`: the tables of live objects (the sharded table, the slabs
//!   of list iterators and split keys), the fork handlers that hold their
//!   locks around `fork()`, and the count of live objects.
//! - `key`: `fdb_key_t` and its calls.
//! - `request`: `fdb_request_t` and its calls.
//! - `reader`: `fdb_datareader_t` and its calls.
//! - `list`: `fdb_listiterator_t`, `fdb_split_key_t` and their calls.
//! - `handle`: `fdb_handle_t` and its calls; the library-level calls.
//! - `manage`: `fdb_wipe`, `fdb_purge` and their iterators.
#![deny(rustdoc::broken_intra_doc_links)]
// Library code reports errors; it does not panic on them. Tests may unwrap.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod config;
pub mod error;
pub mod handle;
pub mod hot;
pub mod key;
pub mod kind;
pub mod list;
pub mod listing;
pub mod manage;
pub mod reader;
pub mod registry;
pub mod request;
pub mod split_key;
mod util;

/// The FDB5 version whose C interface this library implements.
pub const FDB5_VERSION: &str = "5.25.0";
