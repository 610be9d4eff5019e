//! `fieldstore purge`: reclaim the space of replaced fields (FDB5's
//! `fdb-purge`). A dry run unless `--doit`.
//!
//! ```text
//! purge {class=od,…} (2 replaced fields, 2952 bytes) at /data/od:0001:…
//!   delete data /data/od:0001:…/host.1.2.0.data 2952
//!   delete index /data/od:0001:…/host.1.2.0.index 310
//!   keep data /data/od:0001:…/host.1.3.0.data 1476 (1 replaced fields share it with 2 newest ones)
//! ```

use fieldstore::{DatasetPurge, FieldStore, PurgeReport, Request, Result};
use serde::Serialize;

use crate::args::PurgeArgs;
use crate::cmd::wipe::{deletion_note, item_text, kept_text};
use crate::context::{Context, Ui};

/// Run `fieldstore purge`.
///
/// # Errors
/// A malformed request or one naming keywords below the dataset level
/// (`InvalidInput`); `Locked`; storage errors.
pub(crate) fn run(args: &PurgeArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(args.request.as_deref())?;
    let fs = ctx.open()?;
    purge(&fs, &request, args, ui)
}

#[derive(Serialize)]
struct JsonPurge<'a> {
    done: bool,
    #[serde(flatten)]
    dataset: &'a DatasetPurge,
}

fn print(report: &PurgeReport, args: &PurgeArgs, ui: &mut Ui<'_>) -> Result<()> {
    for d in &report.datasets {
        if args.json {
            ui.json(&JsonPurge {
                done: report.done,
                dataset: d,
            })?;
            continue;
        }
        if args.porcelain {
            for i in &d.items {
                ui.line(&i.name)?;
            }
            continue;
        }
        ui.line(&format!(
            "purge {} ({} replaced fields, {} bytes) at {}",
            d.dataset.braced(),
            d.duplicates,
            d.duplicate_bytes,
            d.place
        ))?;
        for i in &d.items {
            ui.line(&format!("  delete {}", item_text(i)))?;
        }
        for k in &d.kept {
            ui.line(&kept_text(k))?;
        }
    }
    let n: usize = report.datasets.iter().map(|d| d.items.len()).sum();
    let bytes: u64 = report
        .datasets
        .iter()
        .flat_map(|d| &d.items)
        .filter_map(|i| i.bytes)
        .sum();
    deletion_note(ui, "purged", report.datasets.len(), n, bytes, report.done);
    Ok(())
}

/// Purge with an open store.
pub(crate) fn purge(
    fs: &FieldStore,
    request: &Request,
    args: &PurgeArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let report = fs.purge(request, args.doit)?;
    print(&report, args, ui)
}
