//! What every command needs: the configuration, requests checked against
//! its schema, the store, and where output goes.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use fieldstore::{fdb5_config, Config, Error, ErrorKind, FieldStore, Request, Result};

use crate::args::GlobalArgs;

/// How the configuration was chosen (for `info` and messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `--config FILE`.
    Flag(PathBuf),
    /// `$FIELDSTORE_CONFIG`.
    EnvConfig(PathBuf),
    /// The embedded store under `$FIELDSTORE_ROOT`.
    EnvRoot(PathBuf),
    /// The embedded store under `./fieldstore-data`.
    Default,
    /// FDB5's environment: the variable that chose it (`FDB5_CONFIG_FILE`,
    /// …), read as the C API reads it ([`fieldstore::fdb5_config`]).
    Fdb5(&'static str),
}

impl Origin {
    /// Short description: `--config`, `FIELDSTORE_CONFIG`, ….
    pub(crate) fn describe(&self) -> String {
        match self {
            Origin::Flag(_) => "--config".to_string(),
            Origin::EnvConfig(_) => "FIELDSTORE_CONFIG".to_string(),
            Origin::EnvRoot(_) => "FIELDSTORE_ROOT".to_string(),
            Origin::Default => "default".to_string(),
            Origin::Fdb5(var) => (*var).to_string(),
        }
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// `config` with its schema resolving parameter names (`param=2t`) in
/// requests and `--key`s through ecCodes' parameter database, as MARS does.
fn with_param_names(mut config: Config) -> Config {
    config.schema = config
        .schema
        .with_param_names(fieldstore_grib::param_names());
    config
}

/// The configuration of one invocation.
#[derive(Debug)]
pub(crate) struct Context {
    /// The configuration in force.
    pub(crate) config: Config,
    /// Where it came from.
    pub(crate) origin: Origin,
}

impl Context {
    /// `--config FILE`, else fieldstore's variables ([`Config::from_env`]),
    /// else FDB5's ([`fdb5_config::from_environment`]), else the embedded
    /// store under `./fieldstore-data`.
    ///
    /// # Errors
    /// The config file cannot be read (`NotFound`, `PermissionDenied`) or is
    /// invalid (`InvalidConfig`).
    pub(crate) fn load(global: &GlobalArgs) -> Result<Context> {
        if let Some(path) = &global.config {
            return Ok(Context {
                config: with_param_names(Config::from_file(path)?),
                origin: Origin::Flag(path.clone()),
            });
        }
        if let Some(var) = fdb5_config::fdb5_variable() {
            let config = fdb5_config::from_environment()?;
            // A root holding FDB5's own format is refused by name, never
            // listed as empty.
            fdb5_config::refuse_fdb5_roots(&config)?;
            return Ok(Context {
                config: with_param_names(config),
                origin: Origin::Fdb5(var),
            });
        }
        let origin = if let Some(p) = env_path("FIELDSTORE_CONFIG") {
            Origin::EnvConfig(p)
        } else if let Some(p) = env_path("FIELDSTORE_ROOT") {
            Origin::EnvRoot(p)
        } else {
            Origin::Default
        };
        Ok(Context {
            config: with_param_names(Config::from_env()?),
            origin,
        })
    }

    /// A context over a given configuration (tests).
    #[cfg(test)]
    pub(crate) fn with_config(config: Config) -> Context {
        Context {
            config,
            origin: Origin::Default,
        }
    }

    /// Open the store the configuration describes.
    ///
    /// # Errors
    /// As [`FieldStore::open`].
    pub(crate) fn open(&self) -> Result<FieldStore> {
        FieldStore::open(self.config.clone())
    }

    /// Parse a MARS request and check it against the schema in force, so
    /// that mistakes in it are reported before the store is opened.
    ///
    /// # Errors
    /// `InvalidInput`: a syntax error (with its position), an unknown
    /// keyword, or a value no type of its keyword accepts.
    pub(crate) fn request(&self, text: Option<&str>) -> Result<Request> {
        let Some(text) = text else {
            return Ok(Request::new());
        };
        let request: Request = text.parse()?;
        request.validate(&self.config.schema)?;
        Ok(request)
    }
}

/// After an answer that found nothing, say on standard error which store
/// was looked in if it holds no dataset at all
/// ([`FieldStore::empty_store_notice`]).
pub(crate) fn note_empty_store(fs: &FieldStore, ui: &mut Ui<'_>) {
    if let Some(notice) = fs.empty_store_notice() {
        ui.note(&notice);
    }
}

/// Where a command writes: standard output for results, standard error for
/// progress and summaries.
pub(crate) struct Ui<'a> {
    /// Results.
    pub(crate) out: &'a mut dyn Write,
    /// Summaries (`archived 3 fields …`).
    pub(crate) err: &'a mut dyn Write,
    /// Show progress bars (standard error is a terminal, not `--quiet`).
    pub(crate) progress: bool,
    /// No summaries.
    pub(crate) quiet: bool,
    /// Standard output is a terminal (binary output is refused there).
    pub(crate) out_is_terminal: bool,
}

#[cfg(test)]
impl<'a> Ui<'a> {
    /// A UI writing results to `out` and summaries to `err`, as the
    /// commands' tests read them: no progress bars, not quiet, not a
    /// terminal.
    pub(crate) fn capture(out: &'a mut Vec<u8>, err: &'a mut Vec<u8>) -> Ui<'a> {
        Ui {
            out,
            err,
            progress: false,
            quiet: false,
            out_is_terminal: false,
        }
    }
}

impl Ui<'_> {
    /// Write a line of results.
    pub(crate) fn line(&mut self, line: &str) -> Result<()> {
        writeln!(self.out, "{line}").map_err(stdout_error)
    }

    /// Write one JSON value on its own line.
    pub(crate) fn json<T: serde::Serialize>(&mut self, value: &T) -> Result<()> {
        serde_json::to_writer(&mut *self.out, value).map_err(|e| match e.io_error_kind() {
            Some(kind) => stdout_error(io::Error::from(kind)),
            None => Error::internal(format!("JSON output: {e}")),
        })?;
        writeln!(self.out).map_err(stdout_error)
    }

    /// Report on standard error, unless quiet. Failures to report are
    /// ignored: the command's result does not depend on them.
    pub(crate) fn note(&mut self, message: &str) {
        if !self.quiet {
            let _ = writeln!(self.err, "fieldstore: {message}");
        }
    }
}

/// An error writing results to standard output.
pub(crate) fn stdout_error(e: io::Error) -> Error {
    Error::io("standard output", e)
}

/// Whether `e` is a write to a closed pipe (`fieldstore list | head`):
/// the reader has what it wanted, so this is not a failure.
pub(crate) fn is_broken_pipe(e: &Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        source = s.source();
    }
    false
}

/// A readable path for messages (`-` for standard streams).
pub(crate) fn display(path: &Path) -> String {
    path.display().to_string()
}

/// The error for an I/O failure on a user-named file.
pub(crate) fn file_error(path: &Path, e: io::Error) -> Error {
    Error::io(display(path), e)
}

/// An `InvalidInput` error (a usage mistake clap cannot see).
pub(crate) fn usage(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_recognised_through_sources() {
        let e = stdout_error(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&e));
        assert!(!is_broken_pipe(&stdout_error(io::Error::from(
            io::ErrorKind::StorageFull
        ))));
        assert!(!is_broken_pipe(&Error::internal("x")));
    }

    #[test]
    fn requests_are_checked_against_the_schema() {
        let schema = "[ class, expver [ type [ step, param ]]]"
            .parse()
            .expect("schema");
        let ctx = Context::with_config(Config::memory(schema));
        assert!(ctx.request(None).expect("empty").is_empty());
        let e = ctx.request(Some("class=od,foo=bar")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            "unknown keyword 'foo' in request: the schema has no rule using it"
        );
        let e = ctx.request(Some("class=od,,")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(
            e.to_string().starts_with("malformed request at character "),
            "{e}"
        );
    }
}
