//! `fieldstore where`: where fields are stored, or where datasets live.
//!
//! A request that names complete keys (every keyword a rule requires, with
//! explicit values, as `retrieve` takes) is answered per field with its
//! location, in request order ([`FieldStore::locate`]: point lookups for a
//! small request, a walk of what is stored for a large one, so a huge range
//! costs what the store holds). Any other
//! request (partial, or with `all`), or `--datasets`, is answered per
//! matching dataset with its place ([`fieldstore::Catalogue::describe`]: a
//! directory, a container), as `fdb-where` does.

use std::collections::BTreeMap;

use fieldstore::{Error, ErrorKind, FieldStore, Level, ListOptions, Request, RequestError, Result};
use serde::Serialize;

use crate::args::WhereArgs;
use crate::cmd::list::{json_key, JsonLocation};
use crate::context::{Context, Ui};

/// Run `fieldstore where`.
///
/// # Errors
/// A malformed request (`InvalidInput`); `NotFound` if nothing matches;
/// storage errors.
pub(crate) fn run(args: &WhereArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(Some(&args.request))?;
    let fs = ctx.open()?;
    locate(&fs, &request, args, ui)
}

#[derive(Serialize)]
struct JsonField<'a> {
    key: BTreeMap<String, String>,
    location: JsonLocation<'a>,
}

#[derive(Serialize)]
struct JsonDataset<'a> {
    dataset: BTreeMap<&'a str, &'a str>,
    place: &'a str,
}

/// `where` with an open store.
pub(crate) fn locate(
    fs: &FieldStore,
    request: &Request,
    args: &WhereArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    if !args.datasets {
        let names_keys = match fs.schema().expand(request) {
            Ok(e) => e.names_keys(),
            Err(RequestError::NotEnumerable(_)) => false,
            Err(e) => return Err(e.into()),
        };
        if names_keys {
            let found = fs.locate(request)?;
            if found.is_empty() {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    "no stored field matches the request",
                ));
            }
            for e in found {
                let Some(location) = &e.location else {
                    continue;
                };
                if args.json {
                    ui.json(&JsonField {
                        key: e
                            .full_key()
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                        location: JsonLocation::new(location),
                    })?;
                } else if args.porcelain {
                    ui.line(&location.to_string())?;
                } else {
                    ui.line(&format!(
                        "{}{}{}, {location}",
                        e.dataset.braced(),
                        e.collocation.braced(),
                        e.element.braced()
                    ))?;
                }
            }
            return Ok(());
        }
    }
    let options = ListOptions {
        depth: Level::Dataset,
        duplicates: false,
    };
    let datasets = fs.list(request, options)?;
    if datasets.is_empty() {
        return Err(Error::new(
            ErrorKind::NotFound,
            "no dataset matches the request",
        ));
    }
    for e in datasets {
        let place = fs.catalogue().describe(&e.dataset);
        if args.json {
            ui.json(&JsonDataset {
                dataset: json_key(&e.dataset),
                place: &place,
            })?;
        } else if args.porcelain {
            ui.line(&place)?;
        } else {
            ui.line(&format!("{}, {place}", e.dataset.braced()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, Schema};

    fn store() -> FieldStore {
        let schema: Schema = "[ class, expver [ type [ step, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        for key in [
            "class=od,expver=1,type=fc,step=0,param=167",
            "class=od,expver=1,type=fc,step=6,param=167",
            "class=rd,expver=2,type=fc,step=6,param=167",
        ] {
            fs.archive(&key.parse().expect("key"), b"xyz")
                .expect("archive");
        }
        fs.flush().expect("flush");
        fs
    }

    fn run(
        fs: &FieldStore,
        request: &str,
        datasets: bool,
        porcelain: bool,
        json: bool,
    ) -> Result<String> {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        let args = WhereArgs {
            request: request.to_string(),
            datasets,
            porcelain,
            json,
        };
        locate(fs, &request.parse()?, &args, &mut ui)?;
        Ok(String::from_utf8(out).expect("utf-8"))
    }

    #[test]
    fn complete_keys_give_field_locations() {
        let fs = store();
        let out = run(
            &fs,
            "class=od,expver=1,type=fc,step=0/6/12,param=167",
            false,
            false,
            false,
        )
        .expect("where");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(
            lines[0].starts_with("{class=od,expver=1}{type=fc}{step=0,param=167}, memory://"),
            "{out}"
        );
        assert!(lines[0].ends_with(" length=3"), "{out}");
        let porcelain = run(
            &fs,
            "class=od,expver=1,type=fc,step=0,param=167",
            false,
            true,
            false,
        )
        .expect("where");
        assert!(
            porcelain.starts_with("memory://") && porcelain.ends_with(" length=3\n"),
            "{porcelain}"
        );
        let v: serde_json::Value = serde_json::from_str(
            &run(
                &fs,
                "class=od,expver=1,type=fc,step=0,param=167",
                false,
                false,
                true,
            )
            .expect("where"),
        )
        .expect("json");
        assert_eq!(v["key"]["step"], "0");
        assert_eq!(v["location"]["length"], 3);
    }

    #[test]
    fn huge_ranges_are_answered_from_what_is_stored_in_request_order() {
        let fs = store();
        // A hundred million steps: point lookups would never finish.
        let out = run(
            &fs,
            "class=od,expver=1,type=fc,step=100000000/to/0/by/1,param=167",
            false,
            false,
            false,
        )
        .expect("where");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].starts_with("{class=od,expver=1}{type=fc}{step=6,param=167}, "));
        assert!(lines[1].starts_with("{class=od,expver=1}{type=fc}{step=0,param=167}, "));
        let e = run(
            &fs,
            "class=od,expver=1,type=fc,step=7/to/100000000,param=167",
            false,
            false,
            false,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }

    #[test]
    fn partial_requests_give_dataset_places() {
        let fs = store();
        assert_eq!(
            run(&fs, "class=od", false, false, false).expect("where"),
            "{class=od,expver=1}, memory:{class=od,expver=1}\n"
        );
        assert_eq!(
            run(
                &fs,
                "class=od,expver=1,type=fc,step=0,param=167",
                true,
                true,
                false
            )
            .expect("where"),
            "memory:{class=od,expver=1}\n"
        );
        let v: serde_json::Value =
            serde_json::from_str(&run(&fs, "class=rd", false, false, true).expect("where"))
                .expect("json");
        assert_eq!(v["dataset"]["expver"], "2");
        assert_eq!(v["place"], "memory:{class=rd,expver=2}");
    }

    #[test]
    fn nothing_found_is_not_found() {
        let fs = store();
        let e = run(
            &fs,
            "class=od,expver=1,type=fc,step=24,param=167",
            false,
            false,
            false,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.to_string(), "no stored field matches the request");
        let e = run(&fs, "class=zz", false, false, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.to_string(), "no dataset matches the request");
    }
}
