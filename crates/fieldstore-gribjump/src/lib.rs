//! GribJump's C API (`gribjump_c.h`, GribJump 0.13) over fieldstore's
//! extraction: `libgribjump.so`, so that pygribjump — and Polytope through
//! it — run on fieldstore unchanged (`docs/extract.md`, "Polytope and
//! pygribjump").
//!
//! The library exports the functions of GribJump 0.13's `gribjump_c.h`
//! (and `gribjump_version_str`/`_int`, which GribJump's library also
//! exports) with the same names, signatures, return codes and ownership:
//! results returned by the iterator belong to the caller, strings handed
//! out by axes live as long as the axes. The header is
//! `include/gribjump/gribjump_c.h`; `scripts/install-gribjump.sh`
//! installs both with a pkg-config file.
//!
//! # Invariants of every entry point
//! The C boundary's machinery (tokens and their table, the per-thread last
//! error, the panic guard, the fork guard) is `fieldstore_cabi`'s, shared
//! with `fieldstore-capi`'s `libfdb5.so`.
//! - **No panic crosses the boundary**: each body runs under
//!   [`std::panic::catch_unwind`] ([`error::guarded`]); a panic is an error
//!   code with a message.
//! - **Objects are tokens, not addresses** ([`registry`]): NULL, a pointer
//!   of another type, one never issued or one already deleted is an error
//!   with a message naming the argument, never undefined behaviour.
//! - **Errors are per thread**: `gribjump_error_string()` is the calling
//!   thread's last message.
//! - **Fork**: the library's locks and ecCodes' are held around `fork()`;
//!   a handle is its creator process's: every call through one inherited
//!   by a forked child fails there
//!   ([`FieldStore::check_process`](fieldstore::FieldStore::check_process)).
//!
//! # Layers
//! - `error`: return codes, the per-thread last error, the entry wrapper.
//! - `util`: reading the caller's arguments.
//! - `config`: GribJump's settings that apply here.
//! - `grid_hash`: the grid hash (`md5GridSection`) of a field.
//! - `registry`: the table of live objects, the fork handlers (which hold
//!   the grid hashes' and the shared stores' locks too).
//! - `handle`: `gribjump_handle_t` (handles on one configuration share one
//!   open store per process), the library-level calls.
//! - `axes`: `gribjump_axes_t`.
//! - `request_text`: a request's text, read in place when plain.
//! - `finding`: the fields of many one-field requests, from one listing.
//! - `extraction`: requests, results, the iterator, the extraction.
#![deny(rustdoc::broken_intra_doc_links)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod axes;
pub mod config;
pub mod error;
pub mod extraction;
pub mod finding;
pub mod grid_hash;
pub mod handle;
pub mod registry;
pub mod request_text;
mod util;
