//! `fieldstore`: the command-line tool of fieldstore (FDB5's `fdb-*` tools
//! in one binary). See `docs/cli.md` for every command, its output formats
//! and the exit codes.

mod args;
mod cmd;
mod context;
mod exit;
mod output;
mod progress;

use std::io::{self, BufWriter, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use fieldstore::Result;

use crate::args::{Cli, Command};
use crate::context::{is_broken_pipe, stdout_error, Context, Ui};

fn run(cli: &Cli, ui: &mut Ui<'_>) -> Result<()> {
    // Checking a schema file needs no configuration (a broken one included).
    if let Command::Schema(a) = &cli.command {
        if let Some(path) = &a.check {
            return cmd::schema::check_file(path, a.parsed, ui);
        }
    }
    if let Command::Hammer(_) = &cli.command {
        return Err(fieldstore::Error::internal("hammer is run by main"));
    }
    // A server config is not a store config: serve reads its own.
    if let Command::Serve(a) = &cli.command {
        return cmd::serve::run(a, &cli.global);
    }
    let ctx = Context::load(&cli.global)?;
    match &cli.command {
        Command::Archive(a) => cmd::archive::run(a, &ctx, ui),
        Command::List(a) => cmd::list::run(a, &ctx, ui),
        Command::Retrieve(a) => cmd::retrieve::run(a, &ctx, ui),
        Command::Watch(a) => cmd::watch::run(a, &ctx, ui),
        Command::Notify(a) => cmd::notify::run(a, &ctx, ui),
        Command::Axes(a) => cmd::axes::run(a, &ctx, ui),
        Command::Where(a) => cmd::r#where::run(a, &ctx, ui),
        Command::Extract(a) => cmd::extract::run(a, &ctx, ui),
        Command::Schema(a) => cmd::schema::run(a, &ctx, ui),
        Command::Info(a) => cmd::info::run(a, &ctx, ui),
        Command::Wipe(a) => cmd::wipe::run(a, &ctx, ui),
        Command::Purge(a) => cmd::purge::run(a, &ctx, ui),
        Command::Stats(a) => cmd::stats::run(a, &ctx, ui),
        Command::Status(a) => cmd::status::run(a, &ctx, ui),
        Command::Lock(a) => cmd::control::run(a, fieldstore::Control::Lock, &ctx, ui),
        Command::Unlock(a) => cmd::control::run(a, fieldstore::Control::Unlock, &ctx, ui),
        Command::Move(a) => cmd::r#move::run(a, &ctx, ui),
        Command::Hammer(_) | Command::Serve(_) => Ok(()),
    }
}

fn main() -> ExitCode {
    // Usage errors: clap prints them with the usage and exits with 2.
    let cli = Cli::parse();
    if let Command::Hammer(args) = &cli.command {
        return cmd::hammer::run(args, &cli.global);
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut err = io::stderr();
    let progress = !cli.global.quiet && io::stderr().is_terminal();
    let mut ui = Ui {
        out: &mut out,
        err: &mut err,
        progress,
        quiet: cli.global.quiet,
        out_is_terminal: io::stdout().is_terminal(),
    };
    let result = run(&cli, &mut ui).and_then(|()| out.flush().map_err(stdout_error));
    match result {
        Ok(()) => ExitCode::from(exit::OK),
        // The reader of a pipe stopped early (`fieldstore list | head`).
        Err(e) if is_broken_pipe(&e) => ExitCode::from(exit::OK),
        Err(e) => {
            // Results written before the error still go out.
            let _ = out.flush();
            let _ = writeln!(io::stderr(), "fieldstore: error: {e}");
            ExitCode::from(exit::code(e.kind()))
        }
    }
}
