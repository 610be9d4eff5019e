//! `fieldstore archive`: store files' bytes as fields, then flush.
//!
//! Two sources of fields:
//! - `--key KEY FILE`: the file's bytes are one field with an explicit key;
//! - `FILE...` without `--key`: GRIB files, one field per message, each
//!   under the MARS key ecCodes reads from it
//!   ([`fieldstore_grib::ArchiveGrib`]).
//!
//! Either way the run is all or nothing: after an error, nothing it archived
//! becomes visible ([`FieldStore::discard`]). With `--skip-bad`, bad GRIB
//! messages are skipped instead, reported one line each, and the others are
//! archived and flushed. Bytes of a GRIB file that are not GRIB (a record
//! header, padding after the last message, junk between messages) are
//! skipped as ecCodes skips them, with one warning per file naming their
//! byte ranges; they are not "bad messages".
//!
//! What any input can make the command hold in memory is bounded by
//! `--max-field-size` ([`fieldstore_grib::DEFAULT_MAX_MESSAGE_SIZE`] unless
//! given): GRIB files are read one message at a time
//! ([`ArchiveGrib::archive_grib_read`]), and a `--key` FILE is read up to
//! the limit and refused beyond it. Endless input (`/dev/zero`, a pipe)
//! ends with an error naming the limit or the byte offset.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use fieldstore::{Error, FieldStore, Key, Result, SplitKey};
use fieldstore_grib::{ArchiveGrib, GribOptions};

use crate::args::ArchiveArgs;
use crate::context::{display, file_error, usage, Context, Ui};
use crate::progress::{self, Unit};

/// Where the fields come from, checked before the store is opened.
enum Source {
    /// One file, one field, an explicit key (already split by the schema).
    Explicit {
        split: SplitKey,
        path: PathBuf,
        max: usize,
    },
    /// GRIB files.
    Grib {
        paths: Vec<PathBuf>,
        skip_bad: bool,
        jump_info: bool,
        max: usize,
        defaults: Key,
    },
}

impl Source {
    fn new(args: &ArchiveArgs, ctx: &Context) -> Result<Source> {
        match &args.key {
            Some(text) => {
                let [path] = args.files.as_slice() else {
                    return Err(usage(format!(
                        "--key names one field: give exactly one FILE (got {})",
                        args.files.len()
                    )));
                };
                let key: Key = text.parse().map_err(|e| Error::from(e).context("--key"))?;
                let split = ctx
                    .config
                    .schema
                    .split(&key)
                    .map_err(|e| Error::from(e).context(format!("--key {text}")))?;
                Ok(Source::Explicit {
                    split,
                    path: path.clone(),
                    max: args.max_field_size,
                })
            }
            None => Ok(Source::Grib {
                paths: args.files.clone(),
                skip_bad: args.skip_bad,
                jump_info: args.jump_info,
                max: args.max_field_size,
                defaults: match &args.defaults {
                    Some(text) => text
                        .parse()
                        .map_err(|e| Error::from(e).context(format!("--defaults {text}")))?,
                    None => Key::new(),
                },
            }),
        }
    }
}

/// `e`, with what to do about a message ecCodes gives no MARS `class`
/// (GRIB from another centre): name the keys it lacks.
fn hint(e: Error) -> Error {
    let text = hinted(e.to_string());
    Error::new(e.kind(), text)
}

/// An error's text, with [`hint`]'s advice where it applies.
fn hinted(text: String) -> String {
    if !text.contains("missing keyword 'class'") {
        return text;
    }
    format!(
        "{text}; ecCodes gives this message no MARS class (GRIB from another centre?): \
         give the keys it lacks with --defaults (class=od,expver=0001,stream=oper,type=fc) \
         or archive-defaults in the config"
    )
}

/// Open a file for reading (`-`: standard input).
fn open(path: &Path) -> Result<Box<dyn Read>> {
    if path == Path::new("-") {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file = File::open(path).map_err(|e| file_error(path, e))?;
    Ok(Box::new(file))
}

/// Read a whole file (`-`: standard input) of at most `max` bytes: one
/// field. A regular file's size is checked before anything is read; other
/// input (a pipe, a device) is read up to `max` bytes and one more.
///
/// # Errors
/// `InvalidInput` naming the limit for a larger input; read errors.
fn read_field(path: &Path, max: usize) -> Result<Vec<u8>> {
    let too_large = || {
        usage(format!(
            "{}: more than {max} bytes, the largest field allowed (--max-field-size)",
            display(path)
        ))
    };
    let mut capacity = 0;
    if path != Path::new("-") {
        let meta = std::fs::metadata(path).map_err(|e| file_error(path, e))?;
        if meta.is_file() {
            if meta.len() > max as u64 {
                return Err(too_large());
            }
            capacity = meta.len() as usize;
        }
    }
    let mut data = Vec::with_capacity(capacity);
    open(path)?
        .take(max as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|e| file_error(path, e))?;
    if data.len() > max {
        return Err(too_large());
    }
    Ok(data)
}

/// What was archived.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    /// Fields archived.
    pub(crate) fields: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// Files read.
    pub(crate) files: u64,
    /// Bad GRIB messages skipped (`--skip-bad`), one line each:
    /// `FILE: GRIB message N at byte offset M: problem`.
    pub(crate) skipped: Vec<String>,
    /// GRIB messages archived under the key of an earlier message of the
    /// same file (the last wins), one line each: `FILE: GRIB message N at
    /// byte offset M has the key … of GRIB message …`.
    pub(crate) duplicates: Vec<String>,
    /// Bytes that are not GRIB skipped, one line per file that had any:
    /// `FILE: skipped N bytes that are not GRIB (as ecCodes does): bytes
    /// 0..12000, …` ([`fieldstore_grib::SkippedBytes`]).
    pub(crate) skipped_bytes: Vec<String>,
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Run `fieldstore archive`.
///
/// # Errors
/// A key that does not fit the schema (`InvalidInput`); a bad GRIB message
/// (`InvalidInput`, naming the file, the message index, its byte offset and
/// the problem) unless `--skip-bad`; files that cannot be read; storage
/// errors. After an error nothing this run archived becomes visible.
pub(crate) fn run(args: &ArchiveArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let source = Source::new(args, ctx)?;
    let fs = ctx.open()?;
    let totals = match archive(&fs, &source, ui.progress).and_then(|t| fs.flush().map(|()| t)) {
        Ok(totals) => totals,
        Err(e) => {
            // Dropping the handle would flush what it holds. (Discard
            // fails only in a forked child, which this is not.)
            let _ = fs.discard();
            return Err(e);
        }
    };
    drop(fs);
    // Skipped bytes and messages are warnings: printed even with --quiet.
    for line in &totals.skipped_bytes {
        let _ = writeln!(ui.err, "fieldstore: warning: {line}");
    }
    for line in &totals.skipped {
        let _ = writeln!(ui.err, "fieldstore: warning: skipped {line}");
    }
    for line in &totals.duplicates {
        let _ = writeln!(ui.err, "fieldstore: warning: {line}");
    }
    let mut note = format!(
        "archived {} ({}) from {}",
        plural(totals.fields, "field", "fields"),
        plural(totals.bytes, "byte", "bytes"),
        plural(totals.files, "file", "files"),
    );
    if !totals.skipped.is_empty() {
        let n = totals.skipped.len() as u64;
        note.push_str(&format!(
            "; skipped {}",
            plural(n, "bad message", "bad messages")
        ));
    }
    ui.note(&note);
    Ok(())
}

/// Archive every field of `source` (without flushing).
fn archive(fs: &FieldStore, source: &Source, progress: bool) -> Result<Totals> {
    let mut totals = Totals::default();
    match source {
        Source::Explicit { split, path, max } => {
            let data = read_field(path, *max)?;
            fs.archive_split(split, &data)
                .map_err(|e| e.context(format!("archiving {}", display(path))))?;
            totals.fields = 1;
            totals.bytes = data.len() as u64;
            totals.files = 1;
        }
        Source::Grib {
            paths,
            skip_bad,
            jump_info,
            max,
            defaults,
        } => {
            let bar = progress::bar(
                progress && paths.len() > 1,
                paths.len() as u64,
                Unit::Files,
                "archiving",
            );
            let options = GribOptions::default()
                .skip_bad(*skip_bad)
                .jump_info(*jump_info)
                .max_message_size(*max)
                .defaults(defaults.clone())
                .record_keys(paths.len() > 1);
            // Across files: each key's first file and place.
            let mut first: HashMap<String, (usize, (usize, usize))> = HashMap::new();
            for (file, path) in paths.iter().enumerate() {
                let mut input = open(path)?;
                let summary = fs
                    .archive_grib_read(&mut input, options.clone())
                    .map_err(|e| {
                        if e.to_string().contains("missing keyword 'class'") {
                            hint(e)
                        } else {
                            e
                        }
                        .context(format!("archiving {}", display(path)))
                    })?;
                totals.fields += summary.fields as u64;
                totals.bytes += summary.bytes;
                totals.files += 1;
                if !summary.skipped_bytes.is_empty() {
                    totals.skipped_bytes.push(format!(
                        "{}: {}",
                        display(path),
                        summary.skipped_bytes
                    ));
                }
                totals.skipped.extend(
                    summary
                        .skipped
                        .iter()
                        .map(|s| format!("{}: {}", display(path), hinted(s.error.to_string()))),
                );
                totals.duplicates.extend(
                    summary
                        .duplicates
                        .iter()
                        .map(|d| format!("{}: {d}", display(path))),
                );
                for (key, at) in summary.keys {
                    // The message it replaces: in an earlier file, said here
                    // (within one file, said by the summary above).
                    if let Some((before, was)) = first.insert(key.clone(), (file, at)) {
                        if before != file {
                            totals.duplicates.push(format!(
                                "{}: GRIB message {} at byte offset {} has the key {key} of {}: \
                                 GRIB message {} at byte offset {}: both are archived, the last \
                                 wins",
                                display(path),
                                at.0,
                                at.1,
                                display(&paths[before]),
                                was.0,
                                was.1
                            ));
                        }
                    }
                }
                bar.inc(1);
            }
            bar.finish_and_clear();
        }
    }
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, ErrorKind, ListOptions, Schema};

    fn schema() -> Schema {
        "[ class, expver [ type [ step, param ]]]"
            .parse()
            .expect("schema")
    }

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/grib"
        ))
        .join(name)
    }

    #[test]
    fn every_message_of_every_file_is_archived() {
        let fs = FieldStore::open(Config::memory(Schema::ecmwf())).expect("open");
        let source = Source::Grib {
            paths: vec![fixture("levtypes.grib"), fixture("timespan.grib")],
            skip_bad: false,
            jump_info: true,
            max: fieldstore_grib::DEFAULT_MAX_MESSAGE_SIZE,
            defaults: Key::new(),
        };
        let totals = archive(&fs, &source, false).expect("archive");
        assert_eq!((totals.fields, totals.files), (8, 2));
        assert!(totals.skipped.is_empty());
        fs.flush().expect("flush");
        let listed = fs
            .list(&fieldstore::Request::new(), ListOptions::default())
            .expect("list");
        assert_eq!(listed.len(), 8);
    }

    #[test]
    fn a_bad_message_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bad = dir.path().join("bad.grib");
        std::fs::write(&bad, b"GRIB").expect("write");
        let fs = FieldStore::open(Config::memory(Schema::ecmwf())).expect("open");
        let source = Source::Grib {
            paths: vec![fixture("rd-fc.grib"), bad.clone()],
            skip_bad: false,
            jump_info: true,
            max: fieldstore_grib::DEFAULT_MAX_MESSAGE_SIZE,
            defaults: Key::new(),
        };
        let e = archive(&fs, &source, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            format!(
                "archiving {}: GRIB message 0 at byte offset 0: truncated: the message is 8 bytes long \
                 but only 4 bytes are left",
                bad.display()
            )
        );
    }

    #[test]
    fn explicit_keys_are_checked_before_the_store_is_opened() {
        let ctx = Context::with_config(Config::memory(schema()));
        let args = |key: &str, files: &[&str]| ArchiveArgs {
            key: Some(key.to_string()),
            skip_bad: false,
            jump_info: false,
            defaults: None,
            max_field_size: fieldstore_grib::DEFAULT_MAX_MESSAGE_SIZE,
            files: files.iter().map(PathBuf::from).collect(),
        };
        let e = Source::new(&args("class=od,expver=1,type=fc", &["f"]), &ctx)
            .err()
            .expect("missing keyword");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(
            e.to_string()
                .starts_with("--key class=od,expver=1,type=fc: missing keyword 'step'"),
            "{e}"
        );
        let e = Source::new(&args("class=od,step", &["f"]), &ctx)
            .err()
            .expect("malformed");
        assert_eq!(
            e.to_string(),
            "--key: malformed key item 'step': expected keyword=value"
        );
        let e = Source::new(&args("class=od", &["f", "g"]), &ctx)
            .err()
            .expect("two files");
        assert_eq!(
            e.to_string(),
            "--key names one field: give exactly one FILE (got 2)"
        );
    }
}
