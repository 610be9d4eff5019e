//! `fieldstore notify`: a long-running publisher that tells an Aviso
//! server of each flush that makes fields the request names visible (one
//! notification per identifier), keeping its position in a state file so
//! that nothing is missed across its own restart or the server's absence.
//! The work is `fieldstore_aviso::publish`'s; this checks the input before
//! anything runs and reports on standard error.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use fieldstore::{Request, Result, Schema};
use fieldstore_aviso::{publish, AvisoHttp, IdentifierMap, PublishOptions};

use crate::args::NotifyArgs;
use crate::cmd::retrieve::seconds;
use crate::context::{usage, Context, Ui};

/// How long one post may take before it counts as unanswered.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether some chain of the schema's rules has every keyword of
/// `request`: if none has, no field can match it.
fn names_something(schema: &Schema, request: &Request) -> bool {
    schema.chains().any(|id| {
        let rules = schema.chain(id);
        request
            .keywords()
            .all(|kw| rules.iter().any(|r| r.predicate(kw).is_some()))
    })
}

/// Run `fieldstore notify`.
///
/// # Errors
/// Bad input before anything runs (`InvalidInput`: a malformed request or
/// one naming nothing, a malformed URL or identifier spec;
/// `InvalidConfig`: identifier keys the store's schema cannot fill); then
/// as [`fieldstore_aviso::publish`].
pub(crate) fn run(args: &NotifyArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(args.request.as_deref())?;
    if !names_something(&ctx.config.schema, &request) {
        let kws: Vec<&str> = request.keywords().collect();
        return Err(usage(format!(
            "the request names nothing: no rule of the schema has all of its keywords ({})",
            kws.join(", ")
        )));
    }
    let map = IdentifierMap::parse(&args.event, args.identifier.as_deref())?;
    let mut sink = AvisoHttp::new(&args.aviso, POST_TIMEOUT)?;
    let options = PublishOptions {
        map,
        store: args
            .store_name
            .clone()
            .unwrap_or_else(|| ctx.config.source.clone()),
        state: args.state.clone(),
        since_now: args.since == "now",
        polling: args.poll,
        max_pending: args.max_pending,
        max_backoff: seconds(args.max_backoff)?.max(Duration::from_millis(50)),
        timeout: args.timeout.map(seconds).transpose()?,
        drain: seconds(args.max_backoff)?.max(Duration::from_secs(1)) * 2,
    };
    let fs = ctx.open()?;
    // The schema in force (a remote catalogue's is the server's).
    options.map.check(fs.schema())?;
    let mut log = |line: &str| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "fieldstore notify: {line}");
    };
    let stats = publish(Arc::new(fs), &request, &options, &mut sink, &mut log)?;
    ui.line(&format!(
        "posted {} notifications for {} fields from {} looks ({} possible duplicates after a \
         restart, {} fields already notified, {} failed attempts)",
        stats.posted,
        stats.fields,
        stats.looks,
        stats.possible_duplicates,
        stats.already_notified,
        stats.failed_attempts
    ))
}
