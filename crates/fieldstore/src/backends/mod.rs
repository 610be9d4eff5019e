//! Backends built into this crate: POSIX files and memory.

pub mod memory;
pub mod posix;
