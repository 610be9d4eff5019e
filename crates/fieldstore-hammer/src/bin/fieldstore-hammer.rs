//! `fieldstore-hammer`: the hammer on its own, for runs before the
//! `fieldstore hammer` subcommand exists and as the worker executable of
//! the crate's tests. Same arguments as `fieldstore hammer`.

use clap::Parser;

/// fdb-hammer's workload against fieldstore (see `fieldstore hammer --help`).
#[derive(Parser)]
#[command(name = "fieldstore-hammer", version)]
struct Cli {
    /// Store configuration (YAML, FDB5's shape): any backend.
    #[arg(long, global = true, conflicts_with = "root")]
    config: Option<std::path::PathBuf>,
    #[command(flatten)]
    hammer: fieldstore_hammer::HammerArgs,
}

fn main() {
    let mut cli = Cli::parse();
    cli.hammer.config = cli.config.take();
    match fieldstore_hammer::run(&cli.hammer) {
        Ok(report) => {
            if let Err(e) = report.print() {
                eprintln!("fieldstore-hammer: {e}");
                std::process::exit(1);
            }
            std::process::exit(report.exit_code());
        }
        Err(e) => {
            eprintln!("fieldstore-hammer: {e}");
            std::process::exit(1);
        }
    }
}
