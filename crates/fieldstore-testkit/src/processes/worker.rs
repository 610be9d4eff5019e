//! The worker side of the multi-process tests: one writer, reader, wipe,
//! purge or open in a process of its own, on the store a config file names.
//!
//! ```text
//! <worker> write --config F --expver E --writer I --writers W --fields N --flush-every K [--min-len A] [--max-len B]
//! <worker> write-each --config F --expver E --writer I --writers W --fields N --flush-every K
//! <worker> write-groups --config F --expver E --writer I --writers W --fields N --flush-every K [--handle-per-flush 1]
//! <worker> write-hold --config F --expver E --writer I --writers W --fields N --flush-every K [--min-len A] [--max-len B] [--stop-after-store-flush 1]
//! <worker> read  --config F --expver E --writers W --fields N --flush-every K --until-fields M [--timeout-secs T]
//! <worker> read-steady --config F --expver E --writers W --fields N --flush-every K --stop FILE
//! <worker> watch --config F --request Q [--timeout-secs T]
//! <worker> wipe  --config F --request Q [--unsafe 1]
//! <worker> purge --config F --request Q
//! <worker> move  --config F --request Q --to ROOT
//! <worker> lock  --config F --request Q
//! <worker> churn-write --config F --expver E --writer I --per-round K --stop FILE
//! <worker> churn-read  --config F --expver E --per-round K --stop FILE
//! <worker> open  --config F
//! ```
//!
//! `--config F` is an FDB5-YAML config ([`super::load_config`]: any backend,
//! always with the hammer schema); `--root R` may stand for it, meaning a
//! POSIX store on the root `R`.
//!
//! `write` archives the fields of writer `I` of a [`Streams`] workload and
//! prints `flushed <count>` after each flush returns, then `done`.
//!
//! `write-each` writes the same fields as `write`, but each flush through a
//! handle of its own that is dropped after it, as a loop of `fieldstore
//! archive` calls does (each one a writer that exits: its files are no
//! longer held). A flush that fails because the dataset was wiped or moved
//! away under it is tried again with a fresh handle; it prints `flushed
//! <count>` after each flush returns, `retried <count>` for each retry,
//! then `done`.
//!
//! `write-groups` writes the same fields, `K` per flush, through one handle
//! (or a handle per flush with `--handle-per-flush 1`), and goes on after
//! a failed flush with the next fields: it prints `flushed <first>
//! <end>` after a flush returns, `failed <first> <end> <kind>: <message>`
//! after one fails (the fields `first..end` are then not archived again),
//! then `done`.
//!
//! `write-hold` archives every field of writer `I` without flushing,
//! prints `archived <N>`, waits for a line on standard input (or its end),
//! then flushes and prints `flushed <N>` and `done`: a writer holding
//! archived, unflushed fields for as long as a test wants (to be killed,
//! or to flush after maintenance ran). With `--stop-after-store-flush 1`
//! the process stops itself (SIGSTOP) between the store's flush and the
//! catalogue's, until the test resumes it; a failed flush then prints
//! `failed <kind>: <message>` instead (and `done`, status 0).
//!
//! `read-steady` retrieves every field of the workload over and over with
//! one handle until the file `FILE` exists, checking that a field once
//! read is read again at every later retrieve, with its bytes (a field
//! seen is flushed, and nothing flushed may vanish); it prints `polls <n>
//! seen <m> gone <g>`, or the broken rule on stderr with status 1. A poll
//! whose read fails `NotFound` (the bytes moved away again at every look
//! the retrieve made: a storm of moves) is no answer, counted as `gone`;
//! more than half such polls fail it.
//!
//! `read` polls list and retrieve with one handle, checking every poll with
//! an [`Observer`], until `M` fields are visible; it prints
//! `polls <n> fields <m> in <time>` and exits 0. A broken rule is printed on
//! stderr with exit status 1; a timeout (`T` seconds, default 300) gives
//! status 2.
//!
//! `write` and `read` print `ready` once their store is open and then wait
//! for a line on standard input, or its end, before they start: that is how
//! [`super::release_together`] starts a group at one instant (with standard
//! input `/dev/null`, they start at once).
//!
//! `watch` says `ready`, waits for the go, then watches what `Q` names
//! ([`FieldStore::watch`]): one line per field as it is reported, `field
//! <key>` (or `replaced <key>`), flushed at once, until `T` seconds
//! (default 300) pass; then `done`. An error ends it with status 1.
//!
//! `wipe`, `purge` and `move` print `start` just before the operation
//! (which is real: `doit`), then `done`; the SIGKILL tests kill them in
//! between. A failed `move` says `<kind>: <message>` on stderr. `lock`
//! locks archiving into the datasets `Q` names, the same way.
//!
//! `churn-write` and `churn-read` run the [`churn`](crate::churn) workload
//! until the file `FILE` exists: the writer prints `flushed <round>` or
//! `wiped <round>` per round and `done <flushed> <wiped>`; the reader checks
//! every poll and prints `polls <n>`.
//!
//! `open` opens the store and prints `opened`, or `error <kind>: <message>`
//! (the error's [`ErrorKind`](fieldstore::ErrorKind) in `Debug` form); both
//! exit 0.
//!
//! Any other failure is printed on stderr with exit status 1; bad arguments
//! give status 3.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fieldstore::{FieldStore, Request, WipeOptions};

use super::load_config;
use crate::churn::Churn;
use crate::streams::{Observer, Streams};
use crate::support::{posix_config, schema};

/// The usage text, printed with a bad command line.
pub const USAGE: &str = "\
usage: <worker> write|write-each|write-groups|write-hold|read|read-steady --config F --expver E [--writer I] --writers W --fields N --flush-every K [--until-fields M] [--min-len A] [--max-len B] [--timeout-secs T] [--handle-per-flush 1] [--stop-after-store-flush 1] [--stop FILE]
       <worker> watch --config F --request Q [--timeout-secs T]
       <worker> wipe|purge|move|lock --config F --request Q [--unsafe 1] [--to ROOT]
       <worker> churn-write|churn-read --config F --expver E [--writer I] --per-round K --stop FILE
       <worker> open --config F
       (--root R instead of --config F: a POSIX store on the root R)";

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

/// The store of `--config` or `--root`.
fn open(args: &Args) -> fieldstore::Result<FieldStore> {
    match (args.0.get("config"), args.0.get("root")) {
        (Some(config), None) => FieldStore::open(load_config(Path::new(config))?),
        (None, Some(root)) => FieldStore::open(posix_config(Path::new(root), schema())),
        _ => Err(fieldstore::Error::new(
            fieldstore::ErrorKind::InvalidInput,
            "give one of --config and --root",
        )),
    }
}

fn open_or_say(args: &Args) -> Result<FieldStore, String> {
    let what = args
        .0
        .get("config")
        .map(|c| format!("the store of {c}"))
        .or_else(|| args.0.get("root").map(|r| format!("the store at {r}")))
        .unwrap_or_else(|| "the store".into());
    open(args).map_err(|e| format!("opening {what}: {e}"))
}

/// Say `ready` and wait for the go: a line on stdin, or its end.
fn ready_then_wait(out: &mut impl Write) {
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

fn write(args: &Args) -> Result<(), String> {
    let s = streams(args)?;
    let writer = args.number("writer", None)?;
    let fs = open_or_say(args)?;
    let mut out = std::io::stdout().lock();
    ready_then_wait(&mut out);
    s.write(&fs, writer, &mut |n| {
        // The test trusts this line only once flush has returned.
        let _ = writeln!(out, "flushed {n}");
        let _ = out.flush();
    })
    .map_err(|e| format!("writer {writer}: {e}"))?;
    let _ = writeln!(out, "done");
    Ok(())
}

fn write_hold(args: &Args) -> Result<(), String> {
    let s = streams(args)?;
    let writer = args.number("writer", None)?;
    let stop = args.number("stop-after-store-flush", Some(0))? == 1;
    let mut fs = open_or_say(args)?;
    if stop {
        fs = FieldStore::with_backends(
            fs.config().clone(),
            fs.catalogue().clone(),
            std::sync::Arc::new(super::stop::StopAfterStoreFlush(fs.store().clone())),
        );
    }
    let mut out = std::io::stdout().lock();
    for i in 0..s.fields {
        fs.archive(&s.key(writer, i), &s.payload(&fs, writer, i))
            .map_err(|e| format!("writer {writer}, field {i}: {e}"))?;
    }
    let _ = writeln!(out, "archived {}", s.fields);
    let _ = out.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    if let Err(e) = fs.flush() {
        if !stop {
            return Err(format!("writer {writer}, flush: {e}"));
        }
        let _ = writeln!(out, "failed {:?}: {e}", e.kind());
        let _ = writeln!(out, "done");
        return Ok(());
    }
    let _ = writeln!(out, "flushed {}", s.fields);
    let _ = writeln!(out, "done");
    Ok(())
}

fn write_each(args: &Args) -> Result<(), String> {
    let s = streams(args)?;
    let writer = args.number("writer", None)?;
    drop(open_or_say(args)?);
    let mut out = std::io::stdout().lock();
    ready_then_wait(&mut out);
    let mut start = 0;
    while start < s.fields {
        let end = (start + s.flush_every).min(s.fields);
        let mut tries = 0;
        loop {
            let fs = open_or_say(args)?;
            let result = (start..end)
                .try_for_each(|i| fs.archive(&s.key(writer, i), &s.payload(&fs, writer, i)))
                .and_then(|()| fs.flush());
            match result {
                Ok(()) => break,
                // Wiped or moved away under the writer: nothing of this
                // flush is visible; a new handle finds the dataset again.
                Err(e) if e.kind() == fieldstore::ErrorKind::NotFound && tries < 50 => {
                    tries += 1;
                    let _ = writeln!(out, "retried {end}");
                }
                Err(e) => return Err(format!("writer {writer}, fields {start}..{end}: {e}")),
            }
        }
        let _ = writeln!(out, "flushed {end}");
        let _ = out.flush();
        start = end;
    }
    let _ = writeln!(out, "done");
    Ok(())
}

fn write_groups(args: &Args) -> Result<(), String> {
    let s = streams(args)?;
    let writer = args.number("writer", None)?;
    let per_flush = args.number("handle-per-flush", Some(0))? == 1;
    let mut fs = open_or_say(args)?;
    let mut out = std::io::stdout().lock();
    ready_then_wait(&mut out);
    let mut start = 0;
    while start < s.fields {
        let end = (start + s.flush_every).min(s.fields);
        if per_flush {
            fs = open_or_say(args)?;
        }
        let result = (start..end)
            .try_for_each(|i| fs.archive(&s.key(writer, i), &s.payload(&fs, writer, i)))
            .and_then(|()| fs.flush());
        let line = match result {
            Ok(()) => format!("flushed {start} {end}"),
            Err(e) => format!("failed {start} {end} {:?}: {e}", e.kind()),
        };
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        start = end;
    }
    let _ = writeln!(out, "done");
    Ok(())
}

fn read_steady(args: &Args) -> Result<ExitCode, String> {
    let s = streams(args)?;
    let stop = PathBuf::from(args.text("stop")?);
    let fs = open_or_say(args)?;
    ready_then_wait(&mut std::io::stdout().lock());
    let request = s.full_request();
    let mut seen: HashMap<String, Vec<u8>> = HashMap::new();
    let (mut polls, mut gone) = (0usize, 0usize);
    while !stop.exists() {
        polls += 1;
        let mut reader = fs
            .retrieve(&request)
            .map_err(|e| format!("poll {polls}: retrieve: {e}"))?;
        let mut now = HashMap::new();
        let mut answered = true;
        loop {
            let mut buf = Vec::new();
            match reader.next_field(&mut buf) {
                Ok(Some(k)) => {
                    let canonical = k.to_string();
                    crate::payload::verify(&buf, &canonical)
                        .map_err(|e| format!("poll {polls}: {e}"))?;
                    now.insert(canonical, buf);
                }
                Ok(None) => break,
                // The bytes moved away again each time the field was looked
                // up again (a storm of moves): an error, not an answer.
                Err(e) if e.kind() == fieldstore::ErrorKind::NotFound => {
                    gone += 1;
                    answered = false;
                    break;
                }
                Err(e) => return Err(format!("poll {polls}: reading: {e}")),
            }
        }
        if !answered {
            continue;
        }
        for (k, bytes) in &seen {
            match now.get(k) {
                None => {
                    eprintln!("poll {polls}: {k} was read before and is missing now");
                    return Ok(ExitCode::FAILURE);
                }
                Some(b) if b != bytes => {
                    eprintln!("poll {polls}: {k} changed, but it was never archived again");
                    return Ok(ExitCode::FAILURE);
                }
                Some(_) => {}
            }
        }
        seen = now;
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("polls {polls} seen {} gone {gone}", seen.len());
    if gone * 2 > polls {
        eprintln!("{gone} of {polls} polls failed: a field's bytes were gone at every look");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn read(args: &Args) -> Result<ExitCode, String> {
    let s = streams(args)?;
    let until = args.number("until-fields", None)?;
    let timeout = Duration::from_secs(args.number("timeout-secs", Some(300))? as u64);
    let fs = open_or_say(args)?;
    ready_then_wait(&mut std::io::stdout().lock());
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

fn watch(args: &Args) -> Result<(), String> {
    let fs = open_or_say(args)?;
    let request: Request = args
        .text("request")?
        .parse()
        .map_err(|e| format!("--request: {e}"))?;
    let timeout = Duration::from_secs(args.number("timeout-secs", Some(300))? as u64);
    let mut out = std::io::stdout().lock();
    ready_then_wait(&mut out);
    let options = fieldstore::WatchOptions {
        timeout: Some(timeout),
        ..fieldstore::WatchOptions::default()
    };
    let watch = fs.watch(&request, options).map_err(|e| e.to_string())?;
    for event in watch {
        let event = event.map_err(|e| e.to_string())?;
        let what = if event.replaced { "replaced" } else { "field" };
        let _ = writeln!(out, "{what} {}", event.element.full_key());
        let _ = out.flush();
    }
    let _ = writeln!(out, "done");
    Ok(())
}

fn maintenance(command: &str, args: &Args) -> Result<(), String> {
    let fs = open_or_say(args)?;
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
        "lock" => {
            let archive = fieldstore::Locks::NONE.with(fieldstore::Operation::Archive);
            fs.control(&request, fieldstore::Control::Lock, archive)
                .map_err(|e| e.to_string())?;
        }
        "move" => {
            let to = args.text("to")?;
            fs.move_datasets(&request, Path::new(&to))
                .map_err(|e| format!("{:?}: {e}", e.kind()))?;
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
    let fs = open_or_say(args)?;
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
    let fs = open_or_say(args)?;
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

fn open_only(args: &Args) {
    match open(args) {
        Ok(_) => println!("opened"),
        Err(e) => println!("error {:?}: {e}", e.kind()),
    }
}

/// Run one worker: `args` is the command and its flags, without the
/// program's name (`["write", "--config", "f.yaml", …]`). Returns the exit
/// status the module documentation gives; failures are described on
/// stderr, prefixed with `name`.
pub fn worker_main(name: &str, args: &[String]) -> ExitCode {
    let usage = |msg: &str| {
        eprintln!("{name}: {msg}");
        eprintln!("{}", USAGE.replace("<worker>", name));
        ExitCode::from(3)
    };
    let Some((command, rest)) = args.split_first() else {
        return usage("missing command");
    };
    let args = match Args::parse(rest) {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    let result = match command.as_str() {
        "write" => write(&args).map(|()| ExitCode::SUCCESS),
        "write-each" => write_each(&args).map(|()| ExitCode::SUCCESS),
        "write-hold" => write_hold(&args).map(|()| ExitCode::SUCCESS),
        "write-groups" => write_groups(&args).map(|()| ExitCode::SUCCESS),
        "read" => read(&args),
        "read-steady" => read_steady(&args),
        "watch" => watch(&args).map(|()| ExitCode::SUCCESS),
        "wipe" | "purge" | "move" | "lock" => {
            maintenance(command, &args).map(|()| ExitCode::SUCCESS)
        }
        "churn-write" => churn_write(&args).map(|()| ExitCode::SUCCESS),
        "churn-read" => churn_read(&args).map(|()| ExitCode::SUCCESS),
        "open" => {
            open_only(&args);
            Ok(ExitCode::SUCCESS)
        }
        other => return usage(&format!("unknown command {other:?}")),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{name} {command}: {e}");
            ExitCode::FAILURE
        }
    }
}
