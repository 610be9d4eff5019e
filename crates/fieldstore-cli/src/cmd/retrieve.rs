//! `fieldstore retrieve`: the fields a request names, concatenated in
//! request order, to a file or standard output.

use std::io::{BufWriter, Write};
use std::path::Path;

use fieldstore::{DataReader, Error, FieldStore, Request, Result, Shortfall};

use crate::args::RetrieveArgs;
use crate::context::{display, stdout_error, usage, Context, Ui};
use crate::output::{self, Output};
use crate::progress::{self, Unit};

/// Run `fieldstore retrieve`.
///
/// # Errors
/// A malformed request (`InvalidInput`); a request that cannot be
/// enumerated (`all`, a missing keyword); storage errors; `Corrupt` if a
/// field fails its checksum (no byte of it is written); `Io` when the
/// reader of a FIFO given as `-o FILE` goes away. With `-o FILE`, the file
/// is removed after an error only if this command created it (see
/// [`crate::output`]).
pub(crate) fn run(args: &RetrieveArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(Some(&args.request))?;
    let wait = args.wait.map(seconds).transpose()?;
    let fs = ctx.open()?;
    retrieve(&fs, &request, args.output.as_deref(), wait, ui)
}

/// A number of seconds from the command line.
pub(crate) fn seconds(s: f64) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(s)
        .map_err(|_| usage(format!("{s} is not a number of seconds (0 or more)")))
}

/// Retrieve with an open store.
pub(crate) fn retrieve(
    fs: &FieldStore,
    request: &Request,
    output: Option<&Path>,
    wait: Option<std::time::Duration>,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let to_stdout = output.is_none_or(|p| p == Path::new("-"));
    if to_stdout && ui.out_is_terminal {
        return Err(usage(
            "refusing to write fields (binary data) to a terminal: give -o FILE or redirect standard output",
        ));
    }
    let reader = match wait {
        Some(timeout) => fs.retrieve_wait(request, timeout)?,
        None => fs.retrieve(request)?,
    };
    let (fields, bytes) = (reader.len(), reader.size());
    let shortfall = shortfall(fs, request, &reader);
    match output.filter(|p| *p != Path::new("-")) {
        None => copy(reader, &mut *ui.out, ui.progress, &stdout_error)?,
        Some(path) => {
            let mut output = Output::create(path)?;
            let mut w = BufWriter::with_capacity(1 << 20, output.file());
            let io_error = |e| output::write_error(path, e);
            let r = copy(reader, &mut w, ui.progress, &io_error)
                .and_then(|()| w.flush().map_err(io_error));
            // Dropping the writer writes what it holds: whole, verified
            // fields, as standard output gets those written before an error.
            drop(w);
            if let Err(e) = r {
                output.abandon();
                return Err(e);
            }
        }
    }
    let to = output.map_or_else(|| "standard output".to_string(), display);
    let mut note = format!(
        "retrieved {fields} field{} ({bytes} byte{}) to {to}",
        if fields == 1 { "" } else { "s" },
        if bytes == 1 { "" } else { "s" },
    );
    if fields == 0 {
        note.push_str(": no stored field matches the request");
        if let Some(hint) = incomplete_hint(fs, request) {
            note.push_str(&hint);
        }
    }
    ui.note(&note);
    if fields == 0 {
        crate::context::note_empty_store(fs, ui);
    }
    if let Some(shortfall) = shortfall.filter(|_| fields > 0) {
        ui.note(&shortfall.summary());
    }
    Ok(())
}

/// What the store did not find of what `request` names, if that can be
/// told ([`FieldStore::shortfall`]); a failure to tell is no failure of the
/// retrieve, which has succeeded.
fn shortfall(fs: &FieldStore, request: &Request, reader: &DataReader) -> Option<Shortfall> {
    let found = reader.fields().iter().map(|(key, _)| key);
    fs.shortfall(request, found).ok().flatten()
}

/// " (it names no complete key: …)" for a request that names none, naming
/// the keywords the nearest rule requires when there is such a rule;
/// `None` for a request that names complete keys.
pub(crate) fn incomplete_hint(fs: &FieldStore, request: &Request) -> Option<String> {
    if !fs.names_no_key(request) {
        return None;
    }
    Some(match fs.schema().incomplete(request) {
        Some(incomplete) => format!(
            " (it names no complete key: {incomplete}; \
             or list partial requests with `fieldstore list`)"
        ),
        None => " (it names no complete key: give a value to every keyword of a rule, \
                 or list partial requests with `fieldstore list`)"
            .to_string(),
    })
}

/// Copy every field to `out`, one whole (verified) field at a time.
fn copy(
    mut reader: DataReader,
    out: &mut dyn Write,
    progress: bool,
    io_error: &dyn Fn(std::io::Error) -> Error,
) -> Result<()> {
    let bar = progress::bar(
        progress && reader.len() > 1,
        reader.size(),
        Unit::Bytes,
        "retrieving",
    );
    let mut buf = Vec::new();
    while reader.next_field(&mut buf)?.is_some() {
        out.write_all(&buf).map_err(io_error)?;
        bar.inc(buf.len() as u64);
    }
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, ErrorKind, Schema};

    fn store() -> FieldStore {
        let schema: Schema = "step: Step; [ class [ type [ step, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        for (key, data) in [
            ("class=od,type=fc,step=0,param=167", "s0"),
            ("class=od,type=fc,step=6,param=167", "s6"),
            ("class=od,type=fc,step=12,param=167", "s12"),
        ] {
            fs.archive(&key.parse().expect("key"), data.as_bytes())
                .expect("archive");
        }
        fs.flush().expect("flush");
        fs
    }

    #[test]
    fn binary_output_to_a_terminal_is_refused() {
        let fs = store();
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        ui.out_is_terminal = true;
        let request = "class=od,type=fc,step=0,param=167"
            .parse()
            .expect("request");
        let e = retrieve(&fs, &request, None, None, &mut ui).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            "refusing to write fields (binary data) to a terminal: give -o FILE or redirect standard output"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        retrieve(&fs, &request, Some(&path), None, &mut ui).expect("to a file is fine");
        assert_eq!(std::fs::read(&path).expect("read"), b"s0");
        assert!(out.is_empty());
    }

    fn run(fs: &FieldStore, request: &str, output: Option<&Path>) -> Result<(Vec<u8>, String)> {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        retrieve(fs, &request.parse()?, output, None, &mut ui)?;
        Ok((out, String::from_utf8(err).expect("utf-8")))
    }

    #[test]
    fn fields_come_in_request_order_with_a_summary() {
        let fs = store();
        let (out, err) =
            run(&fs, "class=od,type=fc,step=12/0/6/18,param=167", None).expect("retrieve");
        assert_eq!(out, b"s12s0s6");
        assert_eq!(
            err,
            "fieldstore: retrieved 3 fields (7 bytes) to standard output\n\
             fieldstore: 1 of the 4 fields the request names is missing, \
             the first: class=od,type=fc,step=18,param=167\n"
        );
        let (out, err) =
            run(&fs, "class=od,type=fc,step=0/to/12/by/6,param=167", None).expect("retrieve");
        assert_eq!(out, b"s0s6s12");
        assert_eq!(
            err, "fieldstore: retrieved 3 fields (7 bytes) to standard output\n",
            "nothing missing, nothing more said"
        );
    }

    #[test]
    fn nothing_found_is_not_an_error() {
        let fs = store();
        let (out, err) = run(&fs, "class=od,type=fc,step=24,param=167", None).expect("retrieve");
        assert!(out.is_empty());
        assert_eq!(
            err,
            "fieldstore: retrieved 0 fields (0 bytes) to standard output: no stored field matches the request\n"
        );
    }

    #[test]
    fn partial_requests_get_a_hint() {
        let fs = store();
        let (out, err) = run(&fs, "class=od,type=fc", None).expect("retrieve");
        assert!(out.is_empty());
        assert_eq!(
            err,
            "fieldstore: retrieved 0 fields (0 bytes) to standard output: no stored field matches the request \
             (it names no complete key: it leaves out the keywords step, param, which the nearest rule requires: \
             [ class [ type [ step, param ]]] (line 1); or list partial requests with `fieldstore list`)\n"
        );
    }

    #[test]
    fn fields_missing_from_a_complete_request_are_counted_and_the_first_named() {
        let fs = store();
        let (out, err) =
            run(&fs, "class=od,type=fc,step=0/to/24/by/6,param=167", None).expect("retrieve");
        assert_eq!(out, b"s0s6s12");
        assert_eq!(
            err,
            "fieldstore: retrieved 3 fields (7 bytes) to standard output\n\
             fieldstore: 2 of the 5 fields the request names are missing, \
             the first: class=od,type=fc,step=18,param=167\n"
        );
    }

    #[test]
    fn output_file_gets_the_bytes_and_is_removed_on_error() {
        let fs = store();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.bin");
        let (out, err) =
            run(&fs, "class=od,type=fc,step=6,param=167", Some(&path)).expect("retrieve");
        assert!(out.is_empty());
        assert_eq!(std::fs::read(&path).expect("read"), b"s6");
        assert_eq!(
            err,
            format!(
                "fieldstore: retrieved 1 field (2 bytes) to {}\n",
                path.display()
            )
        );
        let missing = dir.path().join("no/such/dir/out.bin");
        let e = run(&fs, "class=od,type=fc,step=6,param=167", Some(&missing)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(
            e.to_string().starts_with(&missing.display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn all_retrieves_what_is_listed() {
        let fs = store();
        let (out, err) = run(&fs, "class=od,type=fc,step=all,param=167", None).expect("retrieve");
        assert_eq!(out.len(), 7, "{out:?}");
        assert!(
            err.starts_with("fieldstore: retrieved 3 fields (7 bytes)"),
            "{err}"
        );
    }
}
