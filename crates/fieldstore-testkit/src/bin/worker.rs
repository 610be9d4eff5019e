//! `fieldstore-testkit-worker`: a writer, reader, wipe, purge or open in a
//! process of its own, for the multi-process and SIGKILL tests, on the store
//! a config file names (`--config F`; `--root R` for a POSIX root).
//!
//! The commands, their output and exit statuses are
//! [`fieldstore_testkit::processes::worker_main`]'s (the module
//! `fieldstore_testkit::processes` documents them): test binaries of other
//! crates, which cannot run this binary, run the same code as their own
//! workers.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    fieldstore_testkit::processes::worker_main("fieldstore-testkit-worker", &args)
}
