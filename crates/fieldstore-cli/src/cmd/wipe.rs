//! `fieldstore wipe`: delete whole datasets or collocations (FDB5's
//! `fdb-wipe`). A dry run unless `--doit`: the output is the same either
//! way, and says exactly what goes.
//!
//! ```text
//! wipe {class=od,…} (whole dataset: 3 fields, 4428 bytes) at /data/od:0001:…
//!   delete catalogue /data/od:0001:…/toc 412
//!   delete data /data/od:0001:…/host.1.2.0.data 4428
//!   unknown /data/od:0001:…/notes.txt 5 (not created by fieldstore: …)
//! ```

use fieldstore::maintenance::Item;
use fieldstore::{DatasetWipe, FieldStore, Kept, Request, Result, WipeOptions, WipeReport};
use serde::Serialize;

use crate::args::WipeArgs;
use crate::context::{Context, Ui};

/// Run `fieldstore wipe`.
///
/// # Errors
/// A malformed request, a request naming fields, or unknown files without
/// `--unsafe-wipe-all` (`InvalidInput`); `Locked`; storage errors.
pub(crate) fn run(args: &WipeArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(Some(&args.request))?;
    let fs = ctx.open()?;
    wipe(&fs, &request, args, ui)
}

/// An item's line: `kind name bytes`.
pub(crate) fn item_text(item: &Item) -> String {
    match item.bytes {
        Some(b) => format!("{} {} {b}", item.kind.name(), item.name),
        None => format!("{} {} -", item.kind.name(), item.name),
    }
}

/// A kept item's line.
pub(crate) fn kept_text(k: &Kept) -> String {
    format!("  keep {} ({})", item_text(&k.item), k.reason)
}

/// `N files or objects (B bytes)`.
fn amount(items: usize, bytes: u64) -> String {
    let what = if items == 1 {
        "file or object"
    } else {
        "files or objects"
    };
    format!("{items} {what} ({bytes} bytes)")
}

/// The last line of a wipe or purge: what was deleted (`past`: `wiped`,
/// `purged`), or in a dry run what would be.
pub(crate) fn deletion_note(
    ui: &mut Ui<'_>,
    past: &str,
    datasets: usize,
    items: usize,
    bytes: u64,
    done: bool,
) {
    let ds = if datasets == 1 { "dataset" } else { "datasets" };
    if done {
        ui.note(&format!(
            "{past} {datasets} {ds}: deleted {}",
            amount(items, bytes)
        ));
    } else {
        ui.note(&format!(
            "dry run: would delete {} of {datasets} {ds}; nothing deleted (add --doit to delete)",
            amount(items, bytes)
        ));
    }
}

#[derive(Serialize)]
struct JsonWipe<'a> {
    done: bool,
    #[serde(flatten)]
    dataset: &'a DatasetWipe,
}

/// Write a report.
pub(crate) fn print(report: &WipeReport, args: &WipeArgs, ui: &mut Ui<'_>) -> Result<()> {
    for d in &report.datasets {
        if args.json {
            ui.json(&JsonWipe {
                done: report.done,
                dataset: d,
            })?;
            continue;
        }
        if args.porcelain {
            for i in &d.items {
                ui.line(&i.name)?;
            }
            if args.unsafe_wipe_all {
                for i in &d.unknown {
                    ui.line(&i.name)?;
                }
            }
            continue;
        }
        ui.line(&d.summary())?;
        for i in &d.items {
            ui.line(&format!("  delete {}", item_text(i)))?;
        }
        for i in &d.unknown {
            let note = if args.unsafe_wipe_all {
                "not created by fieldstore: deleted too (--unsafe-wipe-all)"
            } else {
                "not created by fieldstore: the wipe refuses to run without --unsafe-wipe-all"
            };
            ui.line(&format!("  {} ({note})", item_text(i)))?;
        }
        for k in &d.kept {
            ui.line(&kept_text(k))?;
        }
    }
    let n: usize = report
        .datasets
        .iter()
        .map(|d| {
            d.items.len()
                + if args.unsafe_wipe_all {
                    d.unknown.len()
                } else {
                    0
                }
        })
        .sum();
    let bytes: u64 = report
        .datasets
        .iter()
        .flat_map(|d| {
            d.items
                .iter()
                .chain(d.unknown.iter().filter(|_| args.unsafe_wipe_all))
        })
        .filter_map(|i| i.bytes)
        .sum();
    let datasets = report.datasets.len();
    if datasets == 0 {
        ui.note("nothing to wipe: no dataset or collocation matches the request");
    } else {
        deletion_note(ui, "wiped", datasets, n, bytes, report.done);
    }
    Ok(())
}

/// Wipe with an open store.
pub(crate) fn wipe(
    fs: &FieldStore,
    request: &Request,
    args: &WipeArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let report = fs.wipe(
        request,
        WipeOptions {
            doit: args.doit,
            unsafe_wipe_all: args.unsafe_wipe_all,
        },
    )?;
    print(&report, args, ui)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, Schema};

    fn args(doit: bool) -> WipeArgs {
        WipeArgs {
            request: String::new(),
            doit,
            unsafe_wipe_all: false,
            porcelain: false,
            json: false,
        }
    }

    fn run(fs: &FieldStore, request: &str, args: &WipeArgs) -> (String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        wipe(fs, &request.parse().expect("request"), args, &mut ui).expect("wipe");
        (
            String::from_utf8(out).expect("utf-8"),
            String::from_utf8(err).expect("utf-8"),
        )
    }

    #[test]
    fn dry_run_then_doit_in_memory() {
        let schema: Schema = "[ class, expver [ type [ step, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        for key in [
            "class=od,expver=1,type=fc,step=0,param=167",
            "class=od,expver=1,type=an,step=0,param=167",
        ] {
            fs.archive(&key.parse().expect("key"), b"abc")
                .expect("archive");
        }
        fs.flush().expect("flush");
        let (out, err) = run(&fs, "class=od,expver=1,type=an", &args(false));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "wipe {class=od,expver=1} (collocations {type=an}: 1 fields, 3 bytes) at memory:{class=od,expver=1}"
        );
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[1].starts_with("  delete data memory://"), "{out}");
        assert!(lines[1].ends_with(" 3"), "{out}");
        assert_eq!(
            err,
            "fieldstore: dry run: would delete 1 file or object (3 bytes) of 1 dataset; nothing deleted (add --doit to delete)\n"
        );
        let (_, err) = run(&fs, "class=od,expver=1,type=an", &args(true));
        assert_eq!(
            err,
            "fieldstore: wiped 1 dataset: deleted 1 file or object (3 bytes)\n"
        );
        let (out, err) = run(&fs, "class=od,expver=1,type=an", &args(true));
        assert_eq!(out, "");
        assert_eq!(
            err,
            "fieldstore: nothing to wipe: no dataset or collocation matches the request\n"
        );
    }
}
