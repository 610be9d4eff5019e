//! Agreement with the real FDB5: every GRIB fixture is archived into FDB5
//! (ECMWF's PyPI wheels, installed by `scripts/setup-fdb5.sh` into
//! `target/fdb5/venv` on first use) and into fieldstore (this binary) with
//! the same schema, `tests/fixtures/schema/ecmwf.schema`; then, for a set
//! of requests, `list` at depths 1, 2 and 3 and `axes` at levels 1, 2 and 3
//! are compared (as sets: FDB5 lists in an order of its own), and every
//! field is retrieved from both and compared by md5, with each other and
//! with the message archived.
//!
//! Every difference is either a fieldstore bug (the test fails) or one of the
//! entries of [`DIVERGENCES`], each a row of the table in `docs/compatibility.md`
//! ("Where fieldstore answers differently from FDB5"): deliberate
//! divergences, FDB5's own failures (fieldstore's answer is then checked
//! against the one derived from FDB5's complete listing).
//!
//! Needs Python 3.11-3.13 and PyPI on the first run (~15 s to install the
//! wheels); then 10-30 s (FDB5's tools start ~80 times). `FIELDSTORE_SKIP_FDB5=1` skips it explicitly
//! (it never skips by itself: CI runs it).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::fdb5::{self, path};
use common::fixtures;
use common::{repo, Env};
use serde_json::Value;

/// Requests compared, besides everything (`""`). Values are in canonical
/// form (the failure derivations below compare them as strings).
const REQUESTS: &[&str] = &[
    "class=od",
    "class=od,levtype=pl",
    "class=od,step=1",
    "class=od,param=167/130",
    "class=od,date=20230508/20251125,time=0000",
    "class=od,levelist=1000",
    "class=e6,timespan=1h",
    "class=e6,step=6/to/12",
    "class=e6,step=0/to/12",
    "param=167",
    "stream=oper,levtype=sfc",
    "class=rd/ea",
    "class=ei,date=0101",
    // Every dataset keyword given (datasets opened, not listed: walk.rs),
    // two of its four keys naming no dataset, values spelled short. (FDB5
    // 5.25 fails such requests on the e6 and ei fixtures' rules, `Assertion
    // failed: values.size() >= requiredPredicateCount` in findMatchingKey.)
    "class=od,expver=1,stream=oper,date=20230508/20251125,time=12/0,domain=g",
];

/// What FDB5 does differently on purpose (or by a bug of its own), per
/// request and depth; `"*"` is every request.
struct Divergence {
    request: &'static str,
    depth: u8,
    what: What,
}

enum What {
    /// `fdb-list` and `fdb-axes` fail with an error containing this text
    /// (fieldstore's answer is checked against the derived one instead).
    Fails(&'static str),
    /// FDB5 keeps these collocations although none of their fields match:
    /// `fdb-list` prints them at depth 2 (and `fdb-axes` counts their
    /// values).
    KeepsCollocations(&'static [&'static str]),
}

const FIND_MATCHING_KEY: &str = "values.size() >= requiredPredicateCount(predicates_)";

/// The deliberate divergences (docs/compatibility.md has the same table).
const DIVERGENCES: &[Divergence] = &[
    // FDB5 5.25 asserts when a level-1 listing meets a dataset whose key has
    // fewer values than some rule requires (here e6 and ei, whose time or
    // date is at level 3).
    Divergence {
        request: "",
        depth: 1,
        what: What::Fails(FIND_MATCHING_KEY),
    },
    Divergence {
        request: "class=e6,timespan=1h",
        depth: 1,
        what: What::Fails(FIND_MATCHING_KEY),
    },
    Divergence {
        request: "class=e6,step=6/to/12",
        depth: 1,
        what: What::Fails(FIND_MATCHING_KEY),
    },
    Divergence {
        request: "class=e6,step=0/to/12",
        depth: 1,
        what: What::Fails(FIND_MATCHING_KEY),
    },
    Divergence {
        request: "param=167",
        depth: 1,
        what: What::Fails(FIND_MATCHING_KEY),
    },
    Divergence {
        request: "stream=oper,levtype=sfc",
        depth: 1,
        what: What::Fails(FIND_MATCHING_KEY),
    },
    Divergence {
        request: "class=ei,date=0101",
        depth: 1,
        what: What::Fails(FIND_MATCHING_KEY),
    },
    // FDB5's tools take one class per request.
    Divergence {
        request: "class=rd/ea",
        depth: 0,
        what: What::Fails("Only one value possible for 'class'"),
    },
    // FDB5 cannot parse the ClimateDaily value it stores itself.
    Divergence {
        request: "class=ei,date=0101",
        depth: 2,
        what: What::Fails("Invalid date 0101"),
    },
    Divergence {
        request: "class=ei,date=0101",
        depth: 3,
        what: What::Fails("Invalid date 0101"),
    },
    // A collocation whose fields all lack an optional keyword the request
    // gives a value (levelist on levtype=sfc): FDB5 keeps it at depths 2
    // (list, axes) and 3 (axes), fieldstore prunes it (as both do when
    // listing fields).
    Divergence {
        request: "class=od,levelist=1000",
        depth: 0,
        what: What::KeepsCollocations(&[
            "{class=od,expver=0001,stream=oper,date=20230508,time=1200,domain=g}{type=fc,levtype=sfc}",
            "{class=od,expver=0001,stream=oper,date=20251125,time=0000,domain=g}{type=fc,levtype=sfc}",
        ]),
    },
];

fn divergence(request: &str, depth: u8) -> Option<&'static What> {
    DIVERGENCES
        .iter()
        .find(|d| d.request == request && (d.depth == depth || d.depth == 0))
        .map(|d| &d.what)
}

/// `{a=1,b=}{c=2}` → the set of its non-empty `k=v` items, for comparing
/// keys whatever their keyword order.
fn items(braced: &str) -> BTreeSet<String> {
    braced
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split("}{")
        .flat_map(|level| level.split(','))
        .filter(|kv| !kv.is_empty() && !kv.ends_with('='))
        .map(String::from)
        .collect()
}

/// `{a=1}{b=2}` → `a=1,b=2` (a request naming that key).
fn request_of(braced: &str) -> String {
    braced
        .trim_start_matches('{')
        .trim_end_matches('}')
        .replace("}{", ",")
}

/// The first `depth` levels of a `{…}{…}{…}` line.
fn levels(line: &str, depth: usize) -> String {
    line.split_inclusive('}').take(depth).collect()
}

/// Whether a listed line matches `request` as fieldstore and FDB5 both
/// read it: every keyword of the request that the line's key has must have
/// one of the request's (plain, canonical) values; at depth 3 a keyword the
/// key lacks does not match.
fn matches(request: &str, line: &str, depth: u8) -> bool {
    let key: HashMap<String, String> = items(line)
        .into_iter()
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.into(), v.into())))
        .collect();
    request.split(',').filter(|i| !i.is_empty()).all(|item| {
        let (kw, values) = item.split_once('=').expect("k=v");
        match key.get(kw) {
            Some(v) => values.split('/').any(|want| want == v),
            None => depth < 3,
        }
    })
}

/// md5 of each blob, with coreutils' md5sum.
fn md5s(dir: &Path, blobs: &[Vec<u8>]) -> Vec<String> {
    let files: Vec<PathBuf> = blobs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let p = dir.join(format!("blob-{i}"));
            std::fs::write(&p, b).expect("write blob");
            p
        })
        .collect();
    let out = Command::new("md5sum")
        .args(&files)
        .output()
        .expect("md5sum");
    assert!(out.status.success(), "md5sum: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| l.split_whitespace().next().expect("md5").to_string())
        .collect()
}

/// Axes as keyword → set of values, without keywords whose only value is
/// empty (`fdb-axes --json` leaves those out; fieldstore's JSON keeps them,
/// as pyfdb does) and, with `drop_empty`, without empty values at all.
fn normalise_axes(v: &Value, drop_empty: bool) -> BTreeMap<String, BTreeSet<String>> {
    v.as_object()
        .expect("axes object")
        .iter()
        .map(|(k, vals)| {
            let set: BTreeSet<String> = vals
                .as_array()
                .expect("values")
                .iter()
                .map(|x| x.as_str().expect("string").to_string())
                .filter(|x| !(drop_empty && x.is_empty()))
                .collect();
            (k.clone(), set)
        })
        .filter(|(_, set)| set.iter().any(|x| !x.is_empty()))
        .collect()
}

/// Axes derived from listed lines (empty values are not in the lines).
fn axes_of(lines: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut axes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in lines {
        for kv in items(line) {
            let (k, v) = kv.split_once('=').expect("k=v");
            axes.entry(k.to_string()).or_default().insert(v.to_string());
        }
    }
    axes
}

#[test]
fn fieldstore_agrees_with_fdb5_on_every_grib_fixture() {
    if fdb5::skipped() {
        return;
    }
    let schema = repo().join("tests/fixtures/schema/ecmwf.schema");
    let files = fixtures();
    assert_eq!(files.len(), 7);

    // FDB5.
    let work = tempfile::tempdir().expect("tempdir");
    let json = work.path().join("fdb5.json");
    let mut c = fdb5::side("fdb5_side.py");
    c.args(["--schema", path(&schema)])
        .args(["--workdir", path(&work.path().join("fdb5"))])
        .args(["--out", path(&json)]);
    for r in REQUESTS {
        c.args(["--request", r]);
    }
    c.args(files.iter().map(|f| path(f)));
    let fdb5 = fdb5::report(c, &json);

    // fieldstore, with the same schema file.
    let env = Env::new();
    env.config_with_schema(&schema);
    let run = |args: &[&str]| {
        let mut all = vec!["--config", "config.yaml"];
        all.extend_from_slice(args);
        env.run(&all)
    };

    // The same ecCodes reads the keys on both sides (it decides `timespan`).
    fdb5::assert_same_eccodes(&fdb5);

    let mut archive = vec!["archive", "--quiet"];
    archive.extend(files.iter().map(|f| path(f)));
    run(&archive).ok();

    let everything: BTreeSet<String> = fdb5["list"][""]["3"]["lines"]
        .as_array()
        .expect("FDB5 lists everything")
        .iter()
        .map(|l| l.as_str().expect("line").to_string())
        .collect();
    assert_eq!(everything.len(), 14);

    let mut compared = 0;
    for request in std::iter::once("").chain(REQUESTS.iter().copied()) {
        for depth in 1..=3u8 {
            let d = depth.to_string();
            let mut args = vec!["list", "--depth", &d];
            if !request.is_empty() {
                args.push(request);
            }
            let ours: BTreeSet<String> = run(&args).ok().lines().into_iter().collect();
            let mut args = vec!["axes", "--json", "--depth", &d];
            if !request.is_empty() {
                args.push(request);
            }
            let our_axes: Value = serde_json::from_str(&run(&args).ok().out()).expect("JSON");
            let what = format!("request '{request}' depth {depth}");
            let listed = &fdb5["list"][request][&d];
            let axes = &fdb5["axes"][request][&d];
            match divergence(request, depth) {
                Some(What::Fails(error)) => {
                    for (tool, answer) in [("fdb-list", listed), ("fdb-axes", axes)] {
                        assert_eq!(answer["ok"], false, "{what}: {tool} no longer fails");
                        let said = answer["error"].as_str().expect("error");
                        assert!(said.contains(error), "{what}: {tool}: {said}");
                    }
                    // What FDB5 would answer, from its complete listing.
                    let want: BTreeSet<String> = everything
                        .iter()
                        .filter(|l| matches(request, &levels(l, depth as usize), depth))
                        .filter(|l| depth == 1 || matches(request, l, 3))
                        .map(|l| levels(l, depth as usize))
                        .collect();
                    assert_eq!(ours, want, "{what}: list (derived)");
                    assert_eq!(
                        normalise_axes(&our_axes, true),
                        axes_of(&want),
                        "{what}: axes (derived)"
                    );
                }
                other => {
                    let theirs: BTreeSet<String> = listed["lines"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{what}: FDB5 failed: {listed}"))
                        .iter()
                        .map(|l| l.as_str().expect("line").to_string())
                        .collect();
                    let mut want = theirs.clone();
                    if let (Some(What::KeepsCollocations(extra)), 2) = (other, depth) {
                        for line in *extra {
                            assert!(want.remove(*line), "{what}: FDB5 no longer lists {line}");
                        }
                    }
                    assert_eq!(ours, want, "{what}: list");
                    // FDB5's axes are the keys of every dataset matching
                    // the request's level-1 keywords and the whole axes of
                    // every collocation it lists at depth 2, whether or not
                    // anything in them matches the rest of the request.
                    // fieldstore's come only from datasets and collocations
                    // holding matching fields, with the request's keywords
                    // restricted to its values (docs/compatibility.md). So
                    // fieldstore's, widened by those, must be FDB5's.
                    let ours = normalise_axes(&our_axes, false);
                    let datasets: BTreeSet<String> = everything
                        .iter()
                        .map(|l| levels(l, 1))
                        .filter(|ds| matches(request, ds, 1))
                        .collect();
                    let collocations: BTreeSet<String> = fdb5["list"][request]["2"]["lines"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|l| l.as_str().map(String::from))
                        .collect();
                    let contents: BTreeSet<String> = everything
                        .iter()
                        .filter(|l| depth >= 2 && collocations.contains(&levels(l, 2)))
                        .map(|l| levels(l, depth as usize))
                        .collect();
                    let mut widened = ours.clone();
                    for (kw, values) in axes_of(&datasets).into_iter().chain(axes_of(&contents)) {
                        widened.entry(kw).or_default().extend(values);
                    }
                    assert_eq!(
                        widened,
                        normalise_axes(&axes["axes"], false),
                        "{what}: axes (fieldstore's, widened as FDB5's)"
                    );
                    // And fieldstore's hold at least the values of the
                    // fields the request names.
                    let named: BTreeSet<String> = everything
                        .iter()
                        .filter(|l| matches(request, l, 3))
                        .map(|l| levels(l, depth as usize))
                        .collect();
                    for (kw, values) in axes_of(&named) {
                        if request.split(',').any(|i| i.starts_with(&format!("{kw}="))) {
                            continue; // restricted to the request's values
                        }
                        let have = ours.get(&kw).cloned().unwrap_or_default();
                        assert!(have.is_superset(&values), "{what}: axis {kw}: {have:?}");
                    }
                }
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 3 * (REQUESTS.len() + 1));

    // Every field: fieldstore's bytes, FDB5's bytes (through its list
    // element and through retrieve()) and the archived message have the
    // same md5.
    let fields = fdb5["fields"].as_array().expect("fields");
    assert_eq!(fields.len(), 14);
    let mut originals = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).expect("read");
        for m in fieldstore_grib::split_messages(&bytes) {
            originals.push(m.expect("message").bytes().to_vec());
        }
    }
    let mut ours = Vec::new();
    for field in fields {
        let key = field["key"].as_str().expect("key");
        let line = everything
            .iter()
            .find(|l| items(l) == items(key))
            .unwrap_or_else(|| panic!("{key} is not in fdb-list's output"));
        let r = run(&["retrieve", &request_of(line)]).ok();
        assert!(!r.stdout.is_empty(), "fieldstore has no field {line}");
        ours.push(r.stdout);
    }
    let scratch = tempfile::tempdir().expect("tempdir");
    let our_md5 = md5s(scratch.path(), &ours);
    let original_md5: BTreeSet<String> = md5s(scratch.path(), &originals).into_iter().collect();
    for (field, md5) in fields.iter().zip(&our_md5) {
        let key = field["key"].as_str().expect("key");
        assert_eq!(
            field["md5_list"],
            md5.as_str(),
            "{key}: FDB5's stored bytes"
        );
        match field.get("md5") {
            Some(theirs) => assert_eq!(theirs, md5.as_str(), "{key}: FDB5's retrieve()"),
            // The climatology fields: FDB5 cannot parse its own date=0101.
            None => assert!(
                field["retrieve_error"]
                    .as_str()
                    .is_some_and(|e| e.contains("Invalid date 0101")),
                "{key}: {field}"
            ),
        }
        assert!(original_md5.contains(md5), "{key}: not an archived message");
    }
    let ours: BTreeSet<&String> = our_md5.iter().collect();
    assert_eq!(ours.len(), original_md5.len(), "every message, once");
}

/// A store history for [`list_order_agrees_with_fdb5`]: keys archived
/// (`Some`) and flushes (`None`); the handle flushes once more at the end.
type History = Vec<Option<String>>;

/// The histories whose listing order is compared with FDB5's, by name, and
/// whether `--full` is compared too: FDB5 keeps one entry per key and
/// flush (its B-tree replaces), fieldstore every archive of the flush.
fn order_histories() -> Vec<(&'static str, History, bool)> {
    let ds = |date: &str, time: &str, expver: &str| {
        format!("class=od,expver={expver},stream=oper,date={date},time={time},domain=g,type=fc")
    };
    let a = ds("20231201", "1200", "0001");
    let sfc = |step: u32, param: u32| Some(format!("{a},levtype=sfc,step={step},param={param}"));
    let pl = |level: u32| Some(format!("{a},levtype=pl,step=0,levelist={level},param=130"));
    vec![
        (
            "one flush",
            vec![
                sfc(12, 167),
                sfc(0, 165),
                sfc(6, 167),
                sfc(0, 167),
                sfc(24, 228),
                sfc(24, 31),
            ],
            true,
        ),
        (
            "several flushes",
            vec![
                sfc(6, 167),
                None,
                sfc(0, 167),
                None,
                sfc(12, 167),
                sfc(3, 167),
                None,
                sfc(1, 167),
            ],
            true,
        ),
        (
            "a replaced field",
            vec![
                sfc(6, 167),
                sfc(0, 167),
                None,
                sfc(12, 167),
                sfc(6, 167),
                None,
                sfc(3, 167),
            ],
            true,
        ),
        (
            "a field replaced within a flush",
            vec![sfc(6, 167), sfc(3, 167), sfc(6, 167), sfc(0, 167)],
            false,
        ),
        (
            "several collocations",
            vec![
                sfc(6, 167),
                pl(500),
                sfc(0, 167),
                pl(1000),
                Some(format!("{a},levtype=ml,step=0,levelist=1,param=130")),
                None,
                sfc(3, 167),
            ],
            true,
        ),
        (
            "several datasets",
            vec![
                sfc(6, 167),
                Some(format!(
                    "{},levtype=sfc,step=6,param=167",
                    ds("20231130", "1200", "0001")
                )),
                Some(format!(
                    "{},levtype=sfc,step=0,param=167",
                    ds("20231201", "1200", "0002")
                )),
                sfc(0, 167),
                None,
                Some(format!(
                    "{},levtype=sfc,step=0,param=167",
                    ds("20231201", "0000", "0001")
                )),
            ],
            true,
        ),
    ]
}

/// The lines of FDB5's listing `what` (`list` or `full`) in `report`.
fn fdb5_lines(report: &Value, what: &str) -> Vec<String> {
    report[what]
        .as_array()
        .expect("FDB5's listing")
        .iter()
        .map(|l| l.as_str().expect("line").to_string())
        .collect()
}

/// `list` (and `list --full`) give FDB5's order for the same history
/// (issue 28): FDB5 lists index by index, newest first, each in B-tree
/// order (the values joined by `:`, as text), and databases by name.
#[test]
fn list_order_agrees_with_fdb5() {
    if fdb5::skipped() {
        return;
    }
    let schema = repo().join("tests/fixtures/schema/ecmwf.schema");
    for (name, history, full) in order_histories() {
        // FDB5.
        let work = tempfile::tempdir().expect("tempdir");
        let steps: Vec<Value> = history
            .iter()
            .map(|step| match step {
                Some(key) => serde_json::json!({ "archive": key }),
                None => serde_json::json!({ "flush": true }),
            })
            .collect();
        let file = work.path().join("history.json");
        std::fs::write(&file, serde_json::to_string(&steps).expect("JSON")).expect("write");
        let json = work.path().join("fdb5.json");
        let mut c = fdb5::side("list_order.py");
        c.args(["--schema", path(&schema)])
            .args(["--workdir", path(&work.path().join("fdb5"))])
            .args(["--history", path(&file)])
            .args(["--out", path(&json)]);
        let report = fdb5::report(c, &json);

        // fieldstore: the same history through one handle, listed by the CLI.
        let env = Env::new();
        let config = env.config_with_schema(&schema);
        {
            let config = fieldstore::Config::from_file(&config).expect("config");
            let store = fieldstore::FieldStore::open(config).expect("open");
            for step in &history {
                match step {
                    Some(key) => store
                        .archive(&key.parse().expect("key"), key.as_bytes())
                        .expect("archive"),
                    None => store.flush().expect("flush"),
                }
            }
            store.flush().expect("flush");
        }
        let list = |extra: &[&str]| {
            let mut args = vec!["list", "--config", "config.yaml"];
            args.extend_from_slice(extra);
            env.run(&args).ok().lines()
        };
        assert_eq!(list(&[]), fdb5_lines(&report, "list"), "{name}: list");
        if full {
            assert_eq!(
                list(&["--full"]),
                fdb5_lines(&report, "full"),
                "{name}: list --full"
            );
        }
    }
}

/// A schema in MeteoSwiss fdb-fortran's style, with a camelCase keyword.
const CAMEL_SCHEMA: &str = "param: Param;\nstep: Step;\ndate: Date;\ntime: Time;\n\
    generatingProcessIdentifier: Integer;\n\
    [ class, expver, stream, date, time, domain?\n\
      [ type, levtype, generatingProcessIdentifier\n\
        [ step, levelist?, param ]]]\n";

/// A camelCase schema keyword (issue 28): FDB5 takes the schema, keeps the
/// spelling in what it lists; so does fieldstore, which also takes the
/// keyword in another case (FDB5 refuses `generatingprocessidentifier`
/// when archiving, and its tools lower-case only MARS keywords). Keys are
/// given explicitly, as fdb-fortran does: neither reads the keyword from
/// GRIB (not a MARS key; both refuse the fixtures with this schema).
#[test]
fn camel_case_schema_agrees_with_fdb5() {
    if fdb5::skipped() {
        return;
    }
    let env = Env::new();
    let schema = env.write("camel.schema", CAMEL_SCHEMA);
    let base =
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc";
    let camel = format!("{base},generatingProcessIdentifier=1,step=0,param=167");
    let lower = format!("{base},generatingprocessidentifier=2,step=0,param=167");

    // FDB5: the camelCase key (it refuses the lower-case one).
    let work = tempfile::tempdir().expect("tempdir");
    let history = work.path().join("history.json");
    let steps = serde_json::json!([{ "archive": camel }]);
    std::fs::write(&history, steps.to_string()).expect("write");
    let json = work.path().join("fdb5.json");
    let mut c = fdb5::side("list_order.py");
    c.args(["--schema", path(&schema)])
        .args(["--workdir", path(&work.path().join("fdb5"))])
        .args(["--history", path(&history)])
        .args(["--out", path(&json)]);
    let report = fdb5::report(c, &json);
    let fdb5_lines = fdb5_lines(&report, "list");
    assert_eq!(fdb5_lines.len(), 1);

    // fieldstore, through the CLI.
    env.config_with_schema(&schema);
    let run = |args: &[&str]| {
        let mut all = vec!["--config", "config.yaml"];
        all.extend_from_slice(args);
        env.run(&all)
    };
    let field = env.write("field.bin", "camel");
    run(&["archive", "--quiet", "--key", &camel, path(&field)]).ok();
    assert_eq!(run(&["list"]).ok().lines(), fdb5_lines);
    // Another spelling of the keyword is the schema's, in keys and requests.
    run(&["archive", "--quiet", "--key", &lower, path(&field)]).ok();
    let two = run(&["list"]).ok().lines();
    assert_eq!(two.len(), 2);
    assert!(
        two.iter()
            .any(|l| l.contains("generatingProcessIdentifier=2")),
        "{two:?}"
    );
    for spelled in ["generatingProcessIdentifier", "GeneratingProcessIdentifier"] {
        let request = format!("class=od,{spelled}=1");
        assert_eq!(
            run(&["list", &request]).ok().lines(),
            fdb5_lines,
            "{request}"
        );
    }
}

/// `type: select` with a schema per sub-store (issue 28), two schemas that
/// name datasets alike and split them differently below: FDB5 5.25 and
/// fieldstore archive and list the same keys the same way, each sub-store
/// splitting with its own schema.
#[test]
fn select_with_a_schema_per_sub_store_agrees_with_fdb5() {
    if fdb5::skipped() {
        return;
    }
    let env = Env::new();
    let od = env.write(
        "od.schema",
        "[ class, expver, stream, date, time, domain [ type, levtype [ step, param ]]]\n",
    );
    let rd = env.write(
        "rd.schema",
        "[ class, expver, stream, date, time, domain [ type [ levtype, step, param ]]]\n",
    );
    let config = format!(
        "type: select\nfdbs:\n\
         - select: class=od\n  type: local\n  engine: toc\n  schema: {}\n  spaces: [{{roots: [{{path: '@ROOTS@/od'}}]}}]\n\
         - select: class=rd\n  type: local\n  engine: toc\n  schema: {}\n  spaces: [{{roots: [{{path: '@ROOTS@/rd'}}]}}]\n",
        path(&od),
        path(&rd)
    );
    let base = "expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step=6,param=167";
    let keys = [format!("class=rd,{base}"), format!("class=od,{base}")];

    // FDB5.
    let work = tempfile::tempdir().expect("tempdir");
    let template = work.path().join("select.yaml");
    std::fs::write(&template, &config).expect("write");
    let history = work.path().join("history.json");
    let steps: Vec<Value> = keys
        .iter()
        .map(|k| serde_json::json!({ "archive": k }))
        .collect();
    std::fs::write(&history, serde_json::to_string(&steps).expect("JSON")).expect("write");
    let json = work.path().join("fdb5.json");
    let mut c = fdb5::side("list_order.py");
    c.args(["--config", path(&template)])
        .args(["--workdir", path(&work.path().join("fdb5"))])
        .args(["--history", path(&history)])
        .args(["--out", path(&json)]);
    let report = fdb5::report(c, &json);
    let want = fdb5_lines(&report, "list");
    assert_eq!(want.len(), 2, "{want:?}");

    // fieldstore, through the CLI.
    for lane in ["od", "rd"] {
        std::fs::create_dir_all(env.path(lane)).expect("root");
    }
    let ours = config.replace("@ROOTS@", path(env.dir.path()));
    env.write("select.yaml", ours);
    let field = env.write("field.bin", "x");
    for key in &keys {
        env.run(&[
            "archive",
            "--config",
            "select.yaml",
            "--quiet",
            "--key",
            key,
            path(&field),
        ])
        .ok();
    }
    assert_eq!(
        env.run(&["list", "--config", "select.yaml"]).ok().lines(),
        want
    );
}
