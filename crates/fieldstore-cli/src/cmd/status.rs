//! `fieldstore status`: where each dataset lives and what it is locked
//! against (FDB5's `fdb-status`), one line each:
//!
//! ```text
//! {class=od,…}, /data/od:0001:…, locked: archive,wipe
//! ```

use fieldstore::{DatasetStatus, FieldStore, Request, Result};

use crate::args::StatusArgs;
use crate::context::{Context, Ui};

/// Run `fieldstore status`.
///
/// # Errors
/// A malformed request or one naming keywords below the dataset level
/// (`InvalidInput`); storage errors.
pub(crate) fn run(args: &StatusArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(args.request.as_deref())?;
    let fs = ctx.open()?;
    status(&fs, &request, args.json, ui)
}

/// A status line.
pub(crate) fn line(s: &DatasetStatus) -> String {
    let mut l = format!("{}, {}, locked: {}", s.dataset.braced(), s.place, s.locks);
    if s.interrupted {
        l.push_str(", interrupted wipe (wipe --doit finishes it)");
    }
    for d in &s.damage {
        l.push_str(", DAMAGED: ");
        l.push_str(d);
    }
    l
}

/// Status with an open store.
pub(crate) fn status(
    fs: &FieldStore,
    request: &Request,
    json: bool,
    ui: &mut Ui<'_>,
) -> Result<()> {
    for s in fs.status(request)? {
        if json {
            ui.json(&s)?;
        } else {
            ui.line(&line(&s))?;
        }
    }
    Ok(())
}
