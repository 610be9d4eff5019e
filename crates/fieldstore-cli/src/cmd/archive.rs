//! `fieldstore archive`: store files' bytes as fields, then flush.
//!
//! Two sources of fields:
//! - `--key KEY FILE`: the file's bytes are one field with an explicit key;
//! - `FILE...` without `--key`: each file is decoded by a [`Decoder`] (GRIB:
//!   one field per message, the key read from its header). No decoder is
//!   built in yet: [`decoder`] says so. A GRIB crate plugs in by returning
//!   its decoder there; nothing else in this module changes.

use std::io::Read;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};

use fieldstore::{Error, ErrorKind, FieldStore, Key, Result, SplitKey};

use crate::args::ArchiveArgs;
use crate::context::{display, file_error, usage, Context, Ui};
use crate::progress::{self, Unit};

/// Turns the bytes of a self-describing file into keyed fields.
pub(crate) trait Decoder {
    /// Call `each` with the key and bytes of every field of `data` (the
    /// contents of `path`), in file order.
    ///
    /// # Errors
    /// `InvalidInput` for a malformed message (naming `path` and where in
    /// it); whatever `each` returns.
    fn fields(
        &self,
        path: &Path,
        data: &[u8],
        each: &mut dyn FnMut(&Key, &[u8]) -> Result<()>,
    ) -> Result<()>;
}

/// The decoder for files archived without `--key`.
///
/// # Errors
/// `Unsupported`: GRIB support is not built in yet.
pub(crate) fn decoder() -> Result<Box<dyn Decoder>> {
    Err(Error::new(
        ErrorKind::Unsupported,
        "GRIB support is not available yet: archiving without --key needs it; \
         give the field's key with --key 'class=...,expver=...,...' to archive a file's bytes as one field",
    ))
}

/// Where the fields come from, checked before the store is opened.
enum Source {
    /// One file, one field, an explicit key (already split by the schema).
    Explicit { split: SplitKey, path: PathBuf },
    /// Files decoded into fields.
    Decoded {
        decoder: Box<dyn Decoder>,
        paths: Vec<PathBuf>,
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
                })
            }
            None => Ok(Source::Decoded {
                decoder: decoder()?,
                paths: args.files.clone(),
            }),
        }
    }
}

/// Read a whole file (`-`: standard input).
fn read_file(path: &Path) -> Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut data = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut data)
            .map_err(|e| Error::io("standard input", e))?;
        return Ok(data);
    }
    std::fs::read(path).map_err(|e| file_error(path, e))
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
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Run `fieldstore archive`.
///
/// # Errors
/// A key that does not fit the schema (`InvalidInput`); files that cannot
/// be read; storage errors. Nothing is flushed after an error, so a failed
/// run makes none of its fields visible (all or nothing per dataset).
pub(crate) fn run(args: &ArchiveArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let source = Source::new(args, ctx)?;
    // The handle flushes what is pending when dropped; after an error the
    // run must make nothing visible, so it is only dropped on success.
    let fs = ManuallyDrop::new(ctx.open()?);
    let totals = archive(&fs, &source, ui.progress)?;
    fs.flush()?;
    drop(ManuallyDrop::into_inner(fs));
    ui.note(&format!(
        "archived {} ({}) from {}",
        plural(totals.fields, "field", "fields"),
        plural(totals.bytes, "byte", "bytes"),
        plural(totals.files, "file", "files"),
    ));
    Ok(())
}

/// Archive every field of `source` (without flushing).
fn archive(fs: &FieldStore, source: &Source, progress: bool) -> Result<Totals> {
    let mut totals = Totals::default();
    match source {
        Source::Explicit { split, path } => {
            let data = read_file(path)?;
            fs.archive_split(split, &data)
                .map_err(|e| e.context(format!("archiving {}", display(path))))?;
            totals.fields = 1;
            totals.bytes = data.len() as u64;
            totals.files = 1;
        }
        Source::Decoded { decoder, paths } => {
            let bar = progress::bar(
                progress && paths.len() > 1,
                paths.len() as u64,
                Unit::Files,
                "archiving",
            );
            for path in paths {
                let data = read_file(path)?;
                decoder
                    .fields(path, &data, &mut |key, field| {
                        fs.archive(key, field)?;
                        totals.fields += 1;
                        totals.bytes += field.len() as u64;
                        Ok(())
                    })
                    .map_err(|e| e.context(format!("archiving {}", display(path))))?;
                totals.files += 1;
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
    use fieldstore::{Config, ListOptions, Schema};

    /// A stand-in for the GRIB decoder: one field per line, `key bytes`.
    struct Lines;

    impl Decoder for Lines {
        fn fields(
            &self,
            _path: &Path,
            data: &[u8],
            each: &mut dyn FnMut(&Key, &[u8]) -> Result<()>,
        ) -> Result<()> {
            for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let text =
                    std::str::from_utf8(line).map_err(|e| Error::invalid_input(e.to_string()))?;
                let (key, bytes) = text
                    .split_once(' ')
                    .ok_or_else(|| Error::invalid_input("no space"))?;
                let key: Key = key.parse()?;
                each(&key, bytes.as_bytes())?;
            }
            Ok(())
        }
    }

    fn schema() -> Schema {
        "[ class, expver [ type [ step, param ]]]"
            .parse()
            .expect("schema")
    }

    #[test]
    fn a_decoder_plugs_in_and_archives_every_field_of_every_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, "class=od,expver=1,type=fc,step=0,param=167 AAA\n").expect("write");
        std::fs::write(
            &b,
            "class=od,expver=1,type=fc,step=6,param=167 BBBB\nclass=od,expver=1,type=fc,step=6,param=130 CC\n",
        )
        .expect("write");
        let fs = FieldStore::open(Config::memory(schema())).expect("open");
        let source = Source::Decoded {
            decoder: Box::new(Lines),
            paths: vec![a, b.clone()],
        };
        let totals = archive(&fs, &source, false).expect("archive");
        assert_eq!(
            totals,
            Totals {
                fields: 3,
                bytes: 9,
                files: 2
            }
        );
        fs.flush().expect("flush");
        let listed = fs
            .list(
                &"class=od".parse().expect("request"),
                ListOptions::default(),
            )
            .expect("list");
        assert_eq!(listed.len(), 3);

        // A bad field names the file.
        std::fs::write(&b, "class=od,expver=1,type=fc,foo=1 X\n").expect("write");
        let source = Source::Decoded {
            decoder: Box::new(Lines),
            paths: vec![b.clone()],
        };
        let e = archive(&fs, &source, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(
            e.to_string()
                .starts_with(&format!("archiving {}: ", b.display())),
            "{e}"
        );
    }

    #[test]
    fn without_a_decoder_the_error_says_what_to_do() {
        let e = decoder().err().expect("no decoder yet");
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(
            e.to_string()
                .starts_with("GRIB support is not available yet"),
            "{e}"
        );
        assert!(e.to_string().contains("--key"), "{e}");
    }

    #[test]
    fn explicit_keys_are_checked_before_the_store_is_opened() {
        let ctx = Context::with_config(Config::memory(schema()));
        let args = |key: &str, files: &[&str]| ArchiveArgs {
            key: Some(key.to_string()),
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
