//! `fieldstore list`: what a partial request names, one line per entry in
//! `fdb-list`'s `{dataset}{collocation}{element}` form, or JSON Lines.

use std::collections::BTreeMap;

use fieldstore::{
    FieldLocation, FieldStore, Key, Level, ListElement, ListOptions, Request, Result,
};
use serde::Serialize;

use crate::args::ListArgs;
use crate::context::{Context, Ui};

/// A location in JSON output: `{"uri": …, "offset": …, "length": …}`.
#[derive(Debug, Serialize)]
pub(crate) struct JsonLocation<'a> {
    uri: &'a str,
    offset: u64,
    length: u64,
}

impl<'a> JsonLocation<'a> {
    pub(crate) fn new(l: &'a FieldLocation) -> Self {
        JsonLocation {
            uri: &l.uri,
            offset: l.offset,
            length: l.length,
        }
    }
}

/// A key as a JSON object, in key order, empty values kept.
pub(crate) fn json_key(key: &Key) -> BTreeMap<&str, &str> {
    key.iter().collect()
}

/// One JSON line of `list --json`.
#[derive(Debug, Serialize)]
struct JsonEntry<'a> {
    /// The levels listed joined, empty values left out: usable as a
    /// retrieve request.
    key: BTreeMap<String, String>,
    dataset: BTreeMap<&'a str, &'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    collocation: Option<BTreeMap<&'a str, &'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    element: Option<BTreeMap<&'a str, &'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<JsonLocation<'a>>,
}

/// The text line of one entry.
pub(crate) fn text_line(e: &ListElement, location: bool, length: bool) -> String {
    let mut line = e.braced();
    if let Some(l) = &e.location {
        if location {
            line.push_str(", ");
            line.push_str(&l.to_string());
        }
        if length {
            line.push_str(&format!(", length={}", l.length));
        }
    }
    line
}

fn json_entry(e: &ListElement, depth: Level) -> JsonEntry<'_> {
    JsonEntry {
        key: e
            .full_key()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        dataset: json_key(&e.dataset),
        collocation: (depth != Level::Dataset).then(|| json_key(&e.collocation)),
        element: (depth == Level::Element).then(|| json_key(&e.element)),
        location: e.location.as_ref().map(JsonLocation::new),
    }
}

/// Run `fieldstore list`.
///
/// # Errors
/// A malformed request or unknown keyword (`InvalidInput`); storage errors.
pub(crate) fn run(args: &ListArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(args.request.as_deref())?;
    let fs = ctx.open()?;
    list(&fs, &request, args, ui)
}

/// List with an open store (also used by the tests).
pub(crate) fn list(
    fs: &FieldStore,
    request: &Request,
    args: &ListArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let depth = Level::from_depth(args.depth).unwrap_or(Level::Element);
    let options = ListOptions {
        depth,
        duplicates: args.full,
    };
    // Entries are written as they are found (`list | head` stops early).
    let mut result = Ok(());
    let mut listed = 0usize;
    fs.visit(request, options, &mut |e| {
        listed += 1;
        result = if args.json {
            ui.json(&json_entry(&e, depth))
        } else {
            ui.line(&text_line(&e, args.location, args.length))
        };
        result.is_ok()
    })?;
    if listed == 0 {
        crate::context::note_empty_store(fs, ui);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, Schema};

    fn store() -> FieldStore {
        let schema: Schema = "expver: Expver; step: Step;
            [ class, expver [ type, levtype [ step, levelist?, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        for (key, data) in [
            (
                "class=od,expver=1,type=fc,levtype=sfc,step=0,param=167",
                "a",
            ),
            (
                "class=od,expver=1,type=fc,levtype=pl,step=0,levelist=500,param=130",
                "bb",
            ),
            (
                "class=rd,expver=xxxx,type=an,levtype=sfc,step=6,param=167",
                "ccc",
            ),
        ] {
            fs.archive(&key.parse().expect("key"), data.as_bytes())
                .expect("archive");
        }
        fs.flush().expect("flush");
        fs.archive(
            &"class=od,expver=1,type=fc,levtype=sfc,step=0,param=167"
                .parse()
                .expect("key"),
            b"AAAA",
        )
        .expect("archive");
        fs.flush().expect("flush");
        fs
    }

    fn args(depth: u8) -> ListArgs {
        ListArgs {
            request: None,
            depth,
            full: false,
            location: false,
            length: false,
            json: false,
            porcelain: false,
        }
    }

    fn run_list(fs: &FieldStore, request: &str, args: &ListArgs) -> String {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        list(fs, &request.parse().expect("request"), args, &mut ui).expect("list");
        assert!(err.is_empty());
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn lines_follow_fdb_list_at_every_depth() {
        let fs = store();
        let mut lines: Vec<String> = run_list(&fs, "", &args(3))
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "{class=od,expver=0001}{type=fc,levtype=pl}{step=0,levelist=500,param=130}",
                "{class=od,expver=0001}{type=fc,levtype=sfc}{step=0,param=167}",
                "{class=rd,expver=xxxx}{type=an,levtype=sfc}{step=6,param=167}",
            ]
        );
        assert_eq!(
            run_list(&fs, "", &args(1)),
            "{class=od,expver=0001}\n{class=rd,expver=xxxx}\n"
        );
        let two = run_list(&fs, "class=od", &args(2));
        assert_eq!(two.lines().count(), 2, "{two}");
        assert!(
            two.contains("{class=od,expver=0001}{type=fc,levtype=sfc}\n"),
            "{two}"
        );
    }

    #[test]
    fn full_shows_masked_entries_and_location_and_length_append() {
        let fs = store();
        let mut a = args(3);
        a.full = true;
        a.location = true;
        a.length = true;
        let out = run_list(&fs, "class=od,levtype=sfc", &a);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        // Newest first: the 4-byte field masks the 1-byte one.
        assert!(
            lines[0].starts_with(
                "{class=od,expver=0001}{type=fc,levtype=sfc}{step=0,param=167}, memory://"
            ),
            "{out}"
        );
        assert!(lines[0].ends_with(" length=4, length=4"), "{out}");
        assert!(lines[1].ends_with(" length=1, length=1"), "{out}");
        a.full = false;
        assert_eq!(run_list(&fs, "class=od,levtype=sfc", &a).lines().count(), 1);
    }

    #[test]
    fn json_lines_carry_levels_key_and_location() {
        let fs = store();
        let mut a = args(3);
        a.json = true;
        let out = run_list(&fs, "class=od,levtype=pl", &a);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
        assert_eq!(v["key"]["levelist"], "500");
        assert_eq!(
            v["dataset"],
            serde_json::json!({"class": "od", "expver": "0001"})
        );
        assert_eq!(v["collocation"]["levtype"], "pl");
        assert_eq!(v["element"]["param"], "130");
        assert_eq!(v["location"]["length"], 2);
        // Empty values are kept in the levels, left out of `key`.
        let out = run_list(&fs, "class=od,levtype=sfc", &a);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
        assert_eq!(v["element"]["levelist"], "");
        assert!(v["key"].get("levelist").is_none());
        let out = run_list(&fs, "class=rd", &{
            let mut a = args(1);
            a.json = true;
            a
        });
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
        assert!(
            v.get("collocation").is_none() && v.get("location").is_none(),
            "{v}"
        );
    }
}
