//! `fieldstore move`: move datasets to another root of the POSIX backend
//! (FDB5's `fdb-move`), atomically for readers. One line per dataset:
//!
//! ```text
//! {class=od,…}, /data/a/od:0001:… -> /data/b/od:0001:…
//! ```

use fieldstore::{Error, ErrorKind, FieldStore, Request, Result};
use serde::Serialize;

use crate::args::MoveArgs;
use crate::cmd::list::json_key;
use crate::context::{Context, Ui};

/// Run `fieldstore move`.
///
/// # Errors
/// A malformed request or a destination that is not a root
/// (`InvalidInput`); `NotFound` if no dataset matches; `Locked`;
/// `Unsupported` by other backends; storage errors.
pub(crate) fn run(args: &MoveArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(Some(&args.request))?;
    let fs = ctx.open()?;
    move_datasets(&fs, &request, args, ui)
}

#[derive(Serialize)]
struct JsonMoved<'a> {
    dataset: std::collections::BTreeMap<&'a str, &'a str>,
    from: &'a str,
    to: &'a str,
}

/// Move with an open store.
pub(crate) fn move_datasets(
    fs: &FieldStore,
    request: &Request,
    args: &MoveArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let moved = fs.move_datasets(request, &args.dest)?;
    if moved.is_empty() {
        return Err(Error::new(
            ErrorKind::NotFound,
            "no dataset matches the request",
        ));
    }
    for m in &moved {
        if args.json {
            ui.json(&JsonMoved {
                dataset: json_key(&m.dataset),
                from: &m.from,
                to: &m.to,
            })?;
        } else {
            ui.line(&format!("{}, {} -> {}", m.dataset.braced(), m.from, m.to))?;
        }
    }
    Ok(())
}
