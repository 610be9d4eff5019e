//! `fieldstore stats`: counts per dataset (FDB5's `fdb-stats`), one line
//! each:
//!
//! ```text
//! {class=od,…} collocations=2 fields=4 bytes=5904 duplicates=1 duplicate_bytes=1476 reclaimable_bytes=1476 units=2
//! ```

use fieldstore::{FieldStore, Request, Result};

use crate::args::StatsArgs;
use crate::context::{Context, Ui};

/// Run `fieldstore stats`.
///
/// # Errors
/// A malformed request or one naming keywords below the dataset level
/// (`InvalidInput`); storage errors.
pub(crate) fn run(args: &StatsArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(args.request.as_deref())?;
    let fs = ctx.open()?;
    stats(&fs, &request, args, ui)
}

/// Stats with an open store.
pub(crate) fn stats(
    fs: &FieldStore,
    request: &Request,
    args: &StatsArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let all = fs.stats(request)?;
    for s in &all {
        if args.json {
            ui.json(s)?;
        } else {
            ui.line(&format!(
                "{} collocations={} fields={} bytes={} duplicates={} duplicate_bytes={} reclaimable_bytes={} units={}",
                s.dataset.braced(),
                s.collocations,
                s.fields,
                s.bytes,
                s.duplicates,
                s.duplicate_bytes,
                s.reclaimable_bytes,
                s.units
            ))?;
        }
        if let Some(first) = s.damage.first() {
            ui.note(&format!(
                "{}: damaged ({} place{}), purge keeps what the damage may point into{}: {first}",
                s.dataset.braced(),
                s.damage.len(),
                if s.damage.len() == 1 { "" } else { "s" },
                if s.reclaimable_bytes == 0 {
                    " (or all of it, where that is unknown)"
                } else {
                    ""
                }
            ));
        }
    }
    let sum = |f: fn(&fieldstore::DatasetStats) -> u64| all.iter().map(f).sum::<u64>();
    ui.note(&format!(
        "{} datasets: {} fields ({} bytes), {} replaced ({} bytes), {} bytes reclaimable by purge",
        all.len(),
        sum(|s| s.fields),
        sum(|s| s.bytes),
        sum(|s| s.duplicates),
        sum(|s| s.duplicate_bytes),
        sum(|s| s.reclaimable_bytes)
    ));
    Ok(())
}
