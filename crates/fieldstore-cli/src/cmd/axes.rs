//! `fieldstore axes`: the values present per keyword.
//!
//! Text: one line per keyword, sorted, in request syntax
//! (`levelist=1000/500`), so a line can be pasted into a request; an empty
//! value (an optional keyword some field lacks) is left out of the text,
//! and so is a keyword that only has empty values, as `fdb-axes` prints
//! them. `--json`: one object
//! `{"keyword": ["value", …]}` with empty values kept, as `fdb-axes --json`.

use fieldstore::{Axes, FieldStore, Level, Request, Result};

use crate::args::AxesArgs;
use crate::context::{Context, Ui};

/// Run `fieldstore axes`.
///
/// # Errors
/// A malformed request or unknown keyword (`InvalidInput`); storage errors.
pub(crate) fn run(args: &AxesArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(args.request.as_deref())?;
    let fs = ctx.open()?;
    axes(&fs, &request, args, ui)
}

/// The text form of `axes`.
pub(crate) fn text_lines(axes: &Axes) -> Vec<String> {
    axes.iter()
        .filter_map(|(kw, values)| {
            let values: Vec<&str> = values
                .iter()
                .map(String::as_str)
                .filter(|v| !v.is_empty())
                .collect();
            (!values.is_empty()).then(|| format!("{kw}={}", values.join("/")))
        })
        .collect()
}

/// Axes with an open store.
pub(crate) fn axes(
    fs: &FieldStore,
    request: &Request,
    args: &AxesArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let depth = Level::from_depth(args.depth).unwrap_or(Level::Element);
    let axes = fs.axes(request, depth)?;
    if axes
        .values()
        .all(|values| values.iter().all(String::is_empty))
    {
        crate::context::note_empty_store(fs, ui);
    }
    if args.json {
        return ui.json(&axes);
    }
    for line in text_lines(&axes) {
        ui.line(&line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, Schema};

    fn run(fs: &FieldStore, request: &str, depth: u8, json: bool) -> String {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        let args = AxesArgs {
            request: None,
            depth,
            json,
        };
        axes(fs, &request.parse().expect("request"), &args, &mut ui).expect("axes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn text_and_json() {
        let schema: Schema = "[ class [ type [ step, levelist?, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        for key in [
            "class=od,type=fc,step=0,param=167",
            "class=od,type=fc,step=6,levelist=500,param=130",
            "class=od,type=fc,step=6,levelist=1000,param=130",
            "class=rd,type=an,step=0,param=167",
        ] {
            fs.archive(&key.parse().expect("key"), b"x")
                .expect("archive");
        }
        fs.flush().expect("flush");
        assert_eq!(
            run(&fs, "class=od", 3, false),
            "class=od\nlevelist=1000/500\nparam=130/167\nstep=0/6\ntype=fc\n"
        );
        assert_eq!(run(&fs, "", 1, false), "class=od/rd\n");
        assert_eq!(run(&fs, "", 2, false), "class=od/rd\ntype=an/fc\n");
        let v: serde_json::Value =
            serde_json::from_str(&run(&fs, "class=od,step=6", 3, true)).expect("json");
        // Values of request keywords are filtered; the others are the
        // collocation's (axes never open an index).
        assert_eq!(v["step"], serde_json::json!(["6"]));
        assert_eq!(v["levelist"], serde_json::json!(["", "1000", "500"]));
        let v: serde_json::Value =
            serde_json::from_str(&run(&fs, "class=rd", 3, true)).expect("json");
        assert_eq!(v["levelist"], serde_json::json!([""]));
        assert_eq!(
            run(&fs, "class=rd", 3, false),
            "class=rd\nparam=167\nstep=0\ntype=an\n"
        );
    }
}
