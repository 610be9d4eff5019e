//! `fieldstore lock` and `fieldstore unlock` (FDB5's `fdb-lock` and
//! `fdb-unlock`): lock datasets against operations for every process, or
//! lift the locks. Prints each dataset's status afterwards (as `status`).

use fieldstore::{Control, Error, ErrorKind, FieldStore, Locks, Operation, Request, Result};

use crate::args::ControlArgs;
use crate::cmd::status::line;
use crate::context::{usage, Context, Ui};

/// The operations the flags name.
fn operations(args: &ControlArgs) -> Result<Locks> {
    if args.all {
        return Ok(Locks::ALL);
    }
    let locks: Locks = [
        (args.archive, Operation::Archive),
        (args.retrieve, Operation::Retrieve),
        (args.list, Operation::List),
        (args.wipe, Operation::Wipe),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, op)| op)
    .collect();
    if locks.is_empty() {
        return Err(usage(
            "name the operations: --archive, --retrieve, --list, --wipe, or --all",
        ));
    }
    Ok(locks)
}

/// Run `fieldstore lock` / `unlock`.
///
/// # Errors
/// No operation named, a malformed request (`InvalidInput`); `NotFound` if
/// no dataset matches; `Unsupported`; storage errors.
pub(crate) fn run(
    args: &ControlArgs,
    action: Control,
    ctx: &Context,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let ops = operations(args)?;
    let request = ctx.request(Some(&args.request))?;
    let fs = ctx.open()?;
    control(&fs, &request, action, ops, args.json, ui)
}

/// Lock or unlock with an open store.
pub(crate) fn control(
    fs: &FieldStore,
    request: &Request,
    action: Control,
    ops: Locks,
    json: bool,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let done = fs.control(request, action, ops)?;
    if done.is_empty() {
        return Err(Error::new(
            ErrorKind::NotFound,
            "no dataset matches the request",
        ));
    }
    for s in &done {
        if json {
            ui.json(s)?;
        } else {
            ui.line(&line(s))?;
        }
    }
    Ok(())
}
