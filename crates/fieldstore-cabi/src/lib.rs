//! The C boundary of fieldstore's C libraries: what FDB5's C API
//! (`fieldstore-capi`, `libfdb5.so`) and GribJump's (`fieldstore-gribjump`,
//! `libgribjump.so`) share, so that both keep the same guarantees by the
//! same code.
//!
//! Each library links its own copy (a `cdylib` holds its dependencies), so
//! two loaded in one process keep separate tables, errors and fork locks;
//! within one library everything here is per process (the table, the fork
//! guard) or per thread (the last error).
//!
//! # Invariants it gives the libraries
//! - **Objects are tokens, not addresses** ([`table`], [`token`]): NULL, a
//!   token of another type, one never issued or one already deleted is an
//!   error naming the argument, never undefined behaviour; a token is never
//!   dereferenced; serials are never reused.
//! - **No panic crosses the boundary** ([`panic_guard`]): a panic in an
//!   entry point's body becomes a message, and the library returns its
//!   error code.
//! - **Errors are per thread** ([`last_error`]): a failing call records its
//!   message (and a kind) for the calling thread only.
//! - **Fork** ([`fork_guard`]): the locks a library registers are held
//!   around `fork()`, so a child never inherits one held by a thread that
//!   does not exist in it.
//!
//! # Layers
//! - `token`: the token format, its checks and their messages.
//! - `last_error`: the calling thread's last error.
//! - `panic_guard`: a body run so that a panic is a message.
//! - `fork_guard`: the locks held around `fork()`.
//! - `table`: the table of live objects behind the tokens.
#![deny(rustdoc::broken_intra_doc_links)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod fork_guard;
pub mod last_error;
pub mod panic_guard;
pub mod table;
pub mod token;
