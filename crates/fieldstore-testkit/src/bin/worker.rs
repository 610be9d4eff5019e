//! `fieldstore-testkit-worker`: a writer or reader process for the
//! multi-process and SIGKILL tests, on a POSIX store with the hammer schema.
//!
//! ```text
//! fieldstore-testkit-worker write --root R --expver E --writer I --writers W --fields N --flush-every K [--min-len A] [--max-len B]
//! fieldstore-testkit-worker read  --root R --expver E --writers W --fields N --flush-every K --until-fields M [--timeout-secs T]
//! fieldstore-testkit-worker wipe  --root R --request Q [--unsafe 1]
//! fieldstore-testkit-worker purge --root R --request Q
//! fieldstore-testkit-worker churn-write --root R --expver E --writer I --per-round K --stop FILE
//! fieldstore-testkit-worker churn-read  --root R --expver E --per-round K --stop FILE
//! ```
//!
//! `write` archives the fields of writer `I` of a
//! [`Streams`](fieldstore_testkit::streams::Streams) workload and prints
//! `flushed <count>` after each flush returns, then `done`.
//!
//! `read` polls list and retrieve with one handle, checking every poll with
//! an [`Observer`](fieldstore_testkit::streams::Observer), until `M` fields
//! are visible; it prints `polls <n>` and exits 0. A broken rule is printed
//! on stderr with exit status 1; a timeout gives status 2; bad arguments 3.
//!
//! `wipe` and `purge` print `start` just before the operation (which is
//! real: `doit`), then `done`; the SIGKILL tests kill them in between.
//!
//! `churn-write` and `churn-read` run the [`churn`](fieldstore_testkit::churn)
//! workload until the file `FILE` exists: the writer prints `flushed <round>`
//! or `wiped <round>` per round and `done <flushed> <wiped>`; the reader
//! checks every poll and prints `polls <n>`.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fieldstore::{FieldStore, Request, WipeOptions};
use fieldstore_testkit::churn::Churn;
use fieldstore_testkit::streams::{Observer, Streams};
use fieldstore_testkit::support::{posix_config, schema};

fn usage(msg: &str) -> ExitCode {
    eprintln!("fieldstore-testkit-worker: {msg}");
    eprintln!("usage: fieldstore-testkit-worker write|read --root R --expver E [--writer I] --writers W --fields N --flush-every K [--until-fields M] [--min-len A] [--max-len B] [--timeout-secs T]");
    eprintln!("       fieldstore-testkit-worker wipe|purge --root R --request Q [--unsafe 1]");
    eprintln!("       fieldstore-testkit-worker churn-write|churn-read --root R --expver E [--writer I] --per-round K --stop FILE");
    ExitCode::from(3)
}

struct Args(HashMap<String, String>);

impl Args {
    fn parse(args: &[String]) -> Result<Args, String> {
        let mut map = HashMap::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {flag:?}"))?;
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            map.insert(name.to_string(), value.clone());
        }
        Ok(Args(map))
    }

    fn text(&self, name: &str) -> Result<String, String> {
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| format!("--{name} is required"))
    }

    fn number(&self, name: &str, default: Option<usize>) -> Result<usize, String> {
        match self.0.get(name) {
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name} {v:?} is not a number")),
            None => default.ok_or_else(|| format!("--{name} is required")),
        }
    }
}

fn streams(args: &Args) -> Result<Streams, String> {
    Ok(Streams {
        expver: args.text("expver")?,
        writers: args.number("writers", None)?,
        fields: args.number("fields", None)?,
        flush_every: args.number("flush-every", None)?.max(1),
        min_len: args.number("min-len", Some(28))?,
        max_len: args.number("max-len", Some(4096))?,
    })
}

fn open(args: &Args) -> Result<FieldStore, String> {
    let root = PathBuf::from(args.text("root")?);
    FieldStore::open(posix_config(&root, schema()))
        .map_err(|e| format!("opening the store at {}: {e}", root.display()))
}

fn write(args: &Args) -> Result<(), String> {
    let s = streams(args)?;
    let writer = args.number("writer", None)?;
    let fs = open(args)?;
    let mut out = std::io::stdout().lock();
    s.write(&fs, writer, &mut |n| {
        // The test trusts this line only once flush has returned.
        let _ = writeln!(out, "flushed {n}");
        let _ = out.flush();
    })
    .map_err(|e| format!("writer {writer}: {e}"))?;
    let _ = writeln!(out, "done");
    Ok(())
}

fn read(args: &Args) -> Result<ExitCode, String> {
    let s = streams(args)?;
    let until = args.number("until-fields", None)?;
    let timeout = Duration::from_secs(args.number("timeout-secs", Some(300))? as u64);
    let fs = open(args)?;
    let floor = vec![0; s.writers];
    let mut observer = Observer::new(s);
    let start = Instant::now();
    loop {
        let seen = observer.poll(&fs, &floor)?;
        let total: usize = seen.iter().sum();
        if total >= until {
            println!(
                "polls {} fields {total} in {:.2?}",
                observer.polls,
                start.elapsed()
            );
            return Ok(ExitCode::SUCCESS);
        }
        if start.elapsed() > timeout {
            eprintln!(
                "reader: timed out after {timeout:?} with {total} of {until} fields visible ({seen:?})"
            );
            return Ok(ExitCode::from(2));
        }
        // Leave the CPU to the writers between polls.
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn maintenance(command: &str, args: &Args) -> Result<(), String> {
    let fs = open(args)?;
    let request: Request = args
        .text("request")?
        .parse()
        .map_err(|e| format!("--request: {e}"))?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "start");
    let _ = out.flush();
    match command {
        "wipe" => {
            let options = WipeOptions {
                doit: true,
                unsafe_wipe_all: args.number("unsafe", Some(0))? == 1,
            };
            fs.wipe(&request, options).map_err(|e| e.to_string())?;
        }
        _ => {
            fs.purge(&request, true).map_err(|e| e.to_string())?;
        }
    }
    let _ = writeln!(out, "done");
    Ok(())
}

fn churn(args: &Args) -> Result<Churn, String> {
    Ok(Churn {
        expver: args.text("expver")?,
        per_round: args.number("per-round", None)?.max(1),
    })
}

fn churn_write(args: &Args) -> Result<(), String> {
    let c = churn(args)?;
    let writer = args.number("writer", None)?;
    let stop = PathBuf::from(args.text("stop")?);
    let fs = open(args)?;
    let mut out = std::io::stdout().lock();
    let log = c
        .write(&fs, writer, &|| stop.exists(), &mut |line| {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        })
        .map_err(|e| format!("writer {writer}: {e}"))?;
    let _ = writeln!(out, "done {} {}", log.flushed, log.wiped);
    Ok(())
}

fn churn_read(args: &Args) -> Result<(), String> {
    let c = churn(args)?;
    let stop = PathBuf::from(args.text("stop")?);
    let fs = open(args)?;
    let mut polls = 0usize;
    loop {
        // Seen before the poll: the last poll happens after the stop.
        let last = stop.exists();
        c.poll(&fs).map_err(|e| format!("poll {polls}: {e}"))?;
        polls += 1;
        if last {
            println!("polls {polls}");
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = argv.split_first() else {
        return usage("missing command");
    };
    let args = match Args::parse(rest) {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    let result = match command.as_str() {
        "write" => write(&args).map(|()| ExitCode::SUCCESS),
        "read" => read(&args),
        "wipe" | "purge" => maintenance(command, &args).map(|()| ExitCode::SUCCESS),
        "churn-write" => churn_write(&args).map(|()| ExitCode::SUCCESS),
        "churn-read" => churn_read(&args).map(|()| ExitCode::SUCCESS),
        other => return usage(&format!("unknown command {other:?}")),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fieldstore-testkit-worker {command}: {e}");
            ExitCode::FAILURE
        }
    }
}
