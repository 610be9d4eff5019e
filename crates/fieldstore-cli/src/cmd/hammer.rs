//! `fieldstore hammer`: the benchmark lives in `fieldstore-hammer`; this
//! runs it with the global `--config`, and is also what worker processes
//! run: `--processes N` re-executes this binary with the same arguments and
//! a hidden `--worker-rank R` (the contract of `fieldstore_hammer::run`).

use std::process::ExitCode;

use fieldstore_hammer::HammerArgs;

use crate::args::GlobalArgs;
use crate::exit;

pub(crate) fn run(args: &HammerArgs, global: &GlobalArgs) -> ExitCode {
    let mut args = args.clone();
    args.config.clone_from(&global.config);
    match fieldstore_hammer::run(&args) {
        Ok(report) => {
            if let Err(e) = report.print() {
                eprintln!("fieldstore: error: writing the report: {e}");
                return ExitCode::from(exit::code(fieldstore::ErrorKind::Io));
            }
            // A check found fields missing or wrong: the store failed the
            // benchmark's own verification (docs/cli.md).
            if report.exit_code() == 0 {
                ExitCode::from(exit::OK)
            } else {
                ExitCode::from(exit::code(fieldstore::ErrorKind::Corrupt))
            }
        }
        Err(e) => {
            eprintln!("fieldstore: error: {e}");
            ExitCode::from(exit::code(e.kind()))
        }
    }
}
