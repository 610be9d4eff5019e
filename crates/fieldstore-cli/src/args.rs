//! The command line, declared with clap's derive API.
//!
//! Every subcommand takes the global options (`--config`, `--quiet`); the
//! flags of each follow the FDB5 tool it replaces (`fdb-list`, `fdb-axes`,
//! `fdb-where`, `fdb-schema`, `fdb-info`, `fdb-write`, `fdb-read`,
//! `fdb-wipe`, `fdb-purge`, `fdb-stats`, `fdb-status`, `fdb-lock`,
//! `fdb-unlock`, `fdb-move`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// fieldstore: a metadata-indexed, transactional store for weather fields.
///
/// With no configuration, commands use an embedded POSIX store under
/// $FIELDSTORE_ROOT, or ./fieldstore-data, with ECMWF's schema.
/// $FIELDSTORE_CONFIG names a YAML config file (FDB5's shape) instead;
/// --config overrides both. Exit codes and output formats: docs/cli.md.
#[derive(Debug, Parser)]
#[command(name = "fieldstore", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Options every subcommand accepts.
#[derive(Debug, Args)]
pub(crate) struct GlobalArgs {
    /// Configuration file (YAML in FDB5's shape); overrides
    /// $FIELDSTORE_CONFIG and $FIELDSTORE_ROOT.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// No progress bars and no summaries on standard error (errors are
    /// still reported).
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Archive fields, then flush (make them durable and visible).
    Archive(ArchiveArgs),
    /// List the fields, collocations or datasets a (partial) request names.
    List(ListArgs),
    /// Write the fields a request names to a file or standard output.
    Retrieve(RetrieveArgs),
    /// The values present per keyword among what a (partial) request names.
    Axes(AxesArgs),
    /// Print each field a (partial) request names as soon as a flush makes
    /// it visible, one line each, as `list` prints it.
    Watch(WatchArgs),
    /// Serve the store to FDB5's remote clients (fdb-write, fdb-list,
    /// fdb-read, fdb-axes, fdb-wipe, pyfdb with a `type: remote` config); --config
    /// names a server config in FDB5's shape (docs/serve.md).
    Serve(ServeArgs),
    /// Tell an Aviso server of each flush that makes fields visible: one
    /// notification per identifier, none lost across restarts
    /// (docs/watch.md, "Notifications beyond the machine").
    Notify(NotifyArgs),
    /// Where fields are stored, or where the datasets a request names live.
    Where(WhereArgs),
    /// Values at points of the GRIB fields a request names, reading only
    /// the bytes that hold them (docs/extract.md).
    Extract(ExtractArgs),
    /// Print the schema in force, or check a schema file.
    Schema(SchemaArgs),
    /// Version, configuration, backend, roots and schema in force.
    Info(InfoArgs),
    /// Delete whole datasets or collocations (a dry run without --doit).
    Wipe(WipeArgs),
    /// Reclaim the space of replaced fields (a dry run without --doit).
    Purge(PurgeArgs),
    /// Fields, bytes, replaced fields and reclaimable bytes per dataset.
    Stats(StatsArgs),
    /// Where each dataset lives and what it is locked against.
    Status(StatusArgs),
    /// Lock datasets against operations, for every process.
    Lock(ControlArgs),
    /// Unlock operations locked with `lock`.
    Unlock(ControlArgs),
    /// Move datasets to another root (POSIX backend).
    Move(MoveArgs),
    /// fdb-hammer's benchmark: N processes released together write, read
    /// and list fields; global timing bandwidth and where the time went.
    Hammer(Box<fieldstore_hammer::HammerArgs>),
}

/// `fieldstore wipe`.
#[derive(Debug, Args)]
pub(crate) struct WipeArgs {
    /// A request naming whole datasets (dataset keywords) or whole
    /// collocations (with collocation keywords); keywords that name fields
    /// are refused.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: String,
    /// Delete. Without it, print what would be deleted and delete nothing.
    #[arg(long)]
    pub(crate) doit: bool,
    /// Also delete files or objects fieldstore did not create, which
    /// otherwise make the wipe of a whole dataset refuse to run.
    #[arg(long)]
    pub(crate) unsafe_wipe_all: bool,
    /// Print only the names of what is (or would be) deleted, one per line.
    #[arg(long, conflicts_with = "json")]
    pub(crate) porcelain: bool,
    /// One JSON object per dataset (JSON Lines).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore purge`.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// A request naming datasets (dataset keywords only); none: every
    /// dataset.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: Option<String>,
    /// Delete. Without it, print what would be deleted and delete nothing.
    #[arg(long)]
    pub(crate) doit: bool,
    /// Print only the names of what is (or would be) deleted, one per line.
    #[arg(long, conflicts_with = "json")]
    pub(crate) porcelain: bool,
    /// One JSON object per dataset (JSON Lines).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// A request naming datasets (dataset keywords only); none: every
    /// dataset.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: Option<String>,
    /// One JSON object per dataset (JSON Lines).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// A request naming datasets (dataset keywords only); none: every
    /// dataset.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: Option<String>,
    /// One JSON object per dataset (JSON Lines).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore lock` and `fieldstore unlock`.
#[derive(Debug, Args)]
pub(crate) struct ControlArgs {
    /// A request naming datasets (dataset keywords only).
    #[arg(value_name = "REQUEST")]
    pub(crate) request: String,
    /// Archiving (and flushing) into the datasets.
    #[arg(long)]
    pub(crate) archive: bool,
    /// Retrieving their fields.
    #[arg(long)]
    pub(crate) retrieve: bool,
    /// Listing them (list, axes): locked datasets are left out.
    #[arg(long)]
    pub(crate) list: bool,
    /// Wiping, purging or moving them.
    #[arg(long)]
    pub(crate) wipe: bool,
    /// Every operation.
    #[arg(long, conflicts_with_all = ["archive", "retrieve", "list", "wipe"])]
    pub(crate) all: bool,
    /// One JSON object per dataset (JSON Lines).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore move`.
#[derive(Debug, Args)]
pub(crate) struct MoveArgs {
    /// A request naming datasets (dataset keywords only).
    #[arg(value_name = "REQUEST")]
    pub(crate) request: String,
    /// The root to move them to: one of the configuration's roots.
    #[arg(long, value_name = "ROOT")]
    pub(crate) dest: PathBuf,
    /// One JSON object per dataset (JSON Lines).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore archive`.
#[derive(Debug, Args)]
pub(crate) struct ArchiveArgs {
    /// Archive FILE's bytes as one field under this key
    /// (`class=od,expver=0001,...`; every keyword the schema's rule needs).
    /// Without --key, files are read as GRIB and each message is archived,
    /// unchanged, under the MARS key ecCodes reads from it.
    #[arg(short, long, value_name = "KEY")]
    pub(crate) key: Option<String>,
    /// GRIB: skip bad messages (damaged, without MARS keys, fitting no
    /// rule of the schema), archive the others, and say what was skipped.
    /// Without it, a bad message fails the command and nothing is archived.
    /// (Bytes that are not GRIB around or between messages are always
    /// skipped, as ecCodes skips them, with a warning naming their ranges.)
    #[arg(long, conflicts_with = "key")]
    pub(crate) skip_bad: bool,
    /// GRIB: build each field's jump info at archive and keep it with its
    /// entry (docs/extract.md). Without it (the default) archive costs
    /// nothing more, and a field's first `extract` builds it and keeps it
    /// with the entry; with it, CCSDS-packed fields cost a walk of their
    /// blocks at archive and ~1 KiB of index each, extracted or not.
    #[arg(long, conflicts_with = "key")]
    pub(crate) jump_info: bool,
    /// GRIB: keywords and values a message's MARS key gets where ecCodes
    /// gives the keyword none (`class=od,expver=0001,stream=oper,type=fc`
    /// for GRIB from other centres, which has no MARS class); before the
    /// config's `archive-defaults:`. A keyword ecCodes gives keeps its value.
    #[arg(long, value_name = "KEY", conflicts_with = "key")]
    pub(crate) defaults: Option<String>,
    /// The largest field (with --key, FILE's size) or GRIB message
    /// accepted, in bytes; larger input is refused before it is read whole,
    /// so that no input (`/dev/zero`, a pipe) can exhaust memory.
    #[arg(long, value_name = "BYTES", default_value_t = fieldstore_grib::DEFAULT_MAX_MESSAGE_SIZE,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) max_field_size: usize,
    /// Files to archive (`-` reads standard input).
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
}

/// `fieldstore list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// A MARS request (`class=od,expver=0001,step=0/to/12/by/6`); keywords
    /// left out match anything; no request lists everything.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: Option<String>,
    /// Stop at level 1 (datasets), 2 (collocations) or 3 (fields).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub(crate) depth: u8,
    /// Include masked entries: fields archived again under the same key
    /// (newest first).
    #[arg(long)]
    pub(crate) full: bool,
    /// Append each field's location (`URI offset=N length=M`).
    #[arg(long)]
    pub(crate) location: bool,
    /// Append each field's length in bytes.
    #[arg(long)]
    pub(crate) length: bool,
    /// One JSON object per line (JSON Lines) instead of text.
    #[arg(long, conflicts_with = "porcelain")]
    pub(crate) json: bool,
    /// Stable text for scripts: exactly one line per entry, nothing else.
    /// The default output is the same today; --porcelain promises it
    /// stays so.
    #[arg(long)]
    pub(crate) porcelain: bool,
}

/// `fieldstore retrieve`.
#[derive(Debug, Args)]
pub(crate) struct RetrieveArgs {
    /// A MARS request naming fields with explicit values
    /// (`class=od,...,step=0/to/12/by/6,param=167/130`).
    #[arg(value_name = "REQUEST")]
    pub(crate) request: String,
    /// Write to FILE instead of standard output (`-`: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Wait up to S seconds for every field of the request to be flushed,
    /// then write them (exit 11 naming the missing ones if S passes).
    #[arg(long, value_name = "S")]
    pub(crate) wait: Option<f64>,
}

/// `fieldstore serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (loopback unless told otherwise).
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub(crate) listen: std::net::IpAddr,
    /// Control port, overriding the config's `serverPort` (0: any free
    /// port, printed on standard error).
    #[arg(long, value_name = "PORT")]
    pub(crate) port: Option<u16>,
}

/// `fieldstore notify`.
#[derive(Debug, Args)]
pub(crate) struct NotifyArgs {
    /// The Aviso server: `http://HOST:PORT`.
    #[arg(long, value_name = "URL")]
    pub(crate) aviso: String,
    /// The Aviso event type posted.
    #[arg(long, value_name = "TYPE", default_value = "mars")]
    pub(crate) event: String,
    /// The identifier keys, comma-separated, each `name` (from the keyword
    /// of that name) or `name=keyword`; default the `mars` schema's:
    /// class,expver,domain,date,time,stream,step.
    #[arg(long, value_name = "KEYS")]
    pub(crate) identifier: Option<String>,
    /// The state file that keeps the publisher's position (created if
    /// absent; one per publisher).
    #[arg(long, value_name = "FILE")]
    pub(crate) state: PathBuf,
    /// With no state file yet: `now` announces only what is flushed from
    /// now on; `start` (default) the fields already there too.
    #[arg(long, value_name = "WHEN", default_value = "start",
          value_parser = ["start", "now"])]
    pub(crate) since: String,
    /// Poll the store instead of using its notifications.
    #[arg(long)]
    pub(crate) poll: bool,
    /// Stop following the store after S seconds (then post what is pending).
    #[arg(long, value_name = "S")]
    pub(crate) timeout: Option<f64>,
    /// Stop reading the store while N notifications are pending.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) max_pending: usize,
    /// The longest wait between two attempts to post, in seconds.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub(crate) max_backoff: f64,
    /// What the payloads name as the store (default: the config in force).
    #[arg(long, value_name = "TEXT")]
    pub(crate) store_name: Option<String>,
    /// A MARS request; keywords left out match anything.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: Option<String>,
}

/// `fieldstore watch`.
#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// A MARS request; keywords left out match anything.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: Option<String>,
    /// Stop after N fields.
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<usize>,
    /// Stop after S seconds.
    #[arg(long, value_name = "S")]
    pub(crate) timeout: Option<f64>,
    /// `now`: only what is flushed from now on (default `start`: the fields
    /// already there first).
    #[arg(long, value_name = "WHEN", default_value = "start",
          value_parser = ["start", "now"])]
    pub(crate) since: String,
    /// Poll instead of using notifications (file systems where a writer on
    /// another node is not notified: NFS, Lustre).
    #[arg(long)]
    pub(crate) poll: bool,
    /// Append each field's location (`URI offset=N length=M`).
    #[arg(long)]
    pub(crate) location: bool,
    /// One JSON object per line (JSON Lines), with `replaced`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore axes`.
#[derive(Debug, Args)]
pub(crate) struct AxesArgs {
    /// A MARS request; keywords left out match anything.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: Option<String>,
    /// Collect values down to level 1, 2 or 3.
    #[arg(long, visible_alias = "level", default_value_t = 3,
          value_parser = clap::value_parser!(u8).range(1..=3))]
    pub(crate) depth: u8,
    /// One JSON object `{"keyword": [values...]}`, empty values kept.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore where`.
#[derive(Debug, Args)]
pub(crate) struct WhereArgs {
    /// A MARS request. If it names complete keys (as for retrieve), prints
    /// each field's location; otherwise where each matching dataset lives.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: String,
    /// Always print datasets' places, even for a request naming fields.
    #[arg(long)]
    pub(crate) datasets: bool,
    /// Print only the place or location, one per line.
    #[arg(long, conflicts_with = "json")]
    pub(crate) porcelain: bool,
    /// One JSON object per line (JSON Lines).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `fieldstore extract`.
#[derive(Debug, Args)]
pub(crate) struct ExtractArgs {
    /// A MARS request naming the fields.
    #[arg(value_name = "REQUEST")]
    pub(crate) request: String,
    /// A point LAT,LON in degrees: the value at the nearest grid point.
    /// Repeat for several.
    #[arg(long = "point", value_name = "LAT,LON", allow_hyphen_values = true)]
    pub(crate) points: Vec<String>,
    /// Grid indices: I, or START-END (END excluded), comma-separated.
    #[arg(long = "index", value_name = "INDICES", conflicts_with = "points")]
    pub(crate) indices: Vec<String>,
    /// Fields read at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub(crate) parallelism: usize,
    /// One JSON object per field (JSON Lines).
    #[arg(long, conflicts_with = "csv")]
    pub(crate) json: bool,
    /// CSV: one row per field and point, with a header.
    #[arg(long)]
    pub(crate) csv: bool,
}

/// `fieldstore schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// Check a schema file instead: report its first error as
    /// FILE:LINE:COLUMN: message, or a summary if it is valid.
    #[arg(long, value_name = "FILE")]
    pub(crate) check: Option<PathBuf>,
    /// Print the rules as parsed (one dataset rule per line, types
    /// resolved) instead of the text as written.
    #[arg(long)]
    pub(crate) parsed: bool,
}

/// `fieldstore info`.
#[derive(Debug, Args)]
pub(crate) struct InfoArgs {
    /// One JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_go_anywhere() {
        let cli = Cli::try_parse_from(["fieldstore", "list", "--config", "c.yaml", "-q"])
            .expect("parses");
        assert_eq!(cli.global.config, Some(PathBuf::from("c.yaml")));
        assert!(cli.global.quiet);
        assert!(matches!(
            cli.command,
            Command::List(ListArgs { depth: 3, .. })
        ));
    }

    #[test]
    fn depth_is_bounded() {
        let e = Cli::try_parse_from(["fieldstore", "list", "--depth", "4"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        let cli = Cli::try_parse_from(["fieldstore", "axes", "--level", "1"]).expect("parses");
        assert!(matches!(
            cli.command,
            Command::Axes(AxesArgs { depth: 1, .. })
        ));
    }

    #[test]
    fn wipe_needs_a_request_and_lock_an_operation_or_all() {
        let e = Cli::try_parse_from(["fieldstore", "wipe"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        let e =
            Cli::try_parse_from(["fieldstore", "lock", "class=od", "--all", "--wipe"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
        let cli =
            Cli::try_parse_from(["fieldstore", "wipe", "class=od", "--doit"]).expect("parses");
        assert!(matches!(
            cli.command,
            Command::Wipe(WipeArgs {
                doit: true,
                unsafe_wipe_all: false,
                ..
            })
        ));
    }

    #[test]
    fn archive_needs_a_file() {
        let e = Cli::try_parse_from(["fieldstore", "archive", "--key", "class=od"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }
}
