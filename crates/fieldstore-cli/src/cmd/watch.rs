//! `fieldstore watch`: each field a (partial) request names, printed as
//! soon as a flush makes it visible — the fields already there first
//! (unless `--since now`) — one line each as `list` prints it, written out
//! at once so that it pipes into other tools. Ends after `--count` fields,
//! after `--timeout` seconds, when interrupted, or with an error when a
//! watched dataset is wiped.

use std::collections::BTreeMap;

use fieldstore::{FieldStore, Request, Result, Since, WatchEvent, WatchOptions};
use serde::Serialize;

use crate::args::WatchArgs;
use crate::cmd::list::{json_key, text_line, JsonLocation};
use crate::cmd::retrieve::seconds;
use crate::context::{stdout_error, Context, Ui};

/// One JSON line of `watch --json`: as `list --json`, and whether the key
/// was reported before (archived again).
#[derive(Debug, Serialize)]
struct JsonEvent<'a> {
    key: BTreeMap<String, String>,
    dataset: BTreeMap<&'a str, &'a str>,
    collocation: BTreeMap<&'a str, &'a str>,
    element: BTreeMap<&'a str, &'a str>,
    location: Option<JsonLocation<'a>>,
    replaced: bool,
}

fn json_event(e: &WatchEvent) -> JsonEvent<'_> {
    let el = &e.element;
    JsonEvent {
        key: el
            .full_key()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        dataset: json_key(&el.dataset),
        collocation: json_key(&el.collocation),
        element: json_key(&el.element),
        location: el.location.as_ref().map(JsonLocation::new),
        replaced: e.replaced,
    }
}

/// Run `fieldstore watch`.
///
/// # Errors
/// A malformed request (`InvalidInput`); storage errors; `NotFound` when a
/// watched dataset is wiped.
pub(crate) fn run(args: &WatchArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(args.request.as_deref())?;
    let options = WatchOptions {
        since: if args.since == "now" {
            Since::Now
        } else {
            Since::Start
        },
        count: args.count,
        timeout: args.timeout.map(seconds).transpose()?,
        until_complete: false,
        polling: args.poll,
    };
    let fs = ctx.open()?;
    watch(&fs, &request, options, args, ui)
}

/// Watch with an open store.
pub(crate) fn watch(
    fs: &FieldStore,
    request: &Request,
    options: WatchOptions,
    args: &WatchArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    for event in fs.watch(request, options)? {
        let event = event?;
        if args.json {
            ui.json(&json_event(&event))?;
        } else {
            let mut line = text_line(&event.element, args.location, false);
            if event.replaced {
                line.push_str(" (replaced)");
            }
            ui.line(&line)?;
        }
        ui.out.flush().map_err(stdout_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, Schema};

    #[test]
    fn prints_what_is_there_then_ends_at_the_count() {
        let schema: Schema = "[ class, expver [ type [ step, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        for step in [0, 6] {
            let key = format!("class=od,expver=1,type=fc,step={step},param=167");
            fs.archive(&key.parse().expect("key"), b"abc")
                .expect("archive");
        }
        fs.flush().expect("flush");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut ui = Ui::capture(&mut out, &mut err);
        let args = WatchArgs {
            request: None,
            count: Some(2),
            timeout: Some(5.0),
            since: "start".into(),
            poll: false,
            location: false,
            json: false,
        };
        let options = WatchOptions {
            count: Some(2),
            ..WatchOptions::default()
        };
        watch(&fs, &Request::default(), options, &args, &mut ui).expect("watch");
        let text = String::from_utf8(out).expect("utf-8");
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "{class=od,expver=1}{type=fc}{step=0,param=167}",
                "{class=od,expver=1}{type=fc}{step=6,param=167}"
            ]
        );
    }
}
