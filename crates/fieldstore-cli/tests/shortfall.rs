//! Errors and notes that say what to do: a request naming no complete key
//! names the keywords the nearest rule requires and the rule; a retrieve
//! or extract finding only part of what the request names says how many
//! fields are missing and the first (`--json`: lists them).

mod common;

use common::{repo, Env};

const REQUEST: &str =
    "class=od,expver=0001,stream=oper,date=20070323,time=1200,type=fc,levtype=sfc,step=0,param=130";

fn setup() -> Env {
    let env = Env::new();
    let m = std::fs::read(repo().join("tests/fixtures/grib/extract/ccsds-g2-bitmap.grib")).unwrap();
    env.write("f.grib", &m);
    env.run(&[
        "archive",
        "--defaults",
        "class=od,expver=0001,stream=oper,type=fc",
        "f.grib",
    ])
    .ok();
    env
}

#[test]
fn extract_names_the_missing_fields() {
    let env = setup();
    let request = REQUEST.replace("step=0", "step=0/6/12");
    let r = env.run(&["extract", &request, "--index", "1"]).ok();
    assert!(
        r.stderr.contains(
            "fieldstore: 2 of the 3 fields the request names are missing, the first: \
             class=od,expver=0001,stream=oper,date=20070323,time=1200,type=fc,levtype=sfc,step=6,param=130"
        ),
        "{}",
        r.stderr
    );
    let r = env
        .run(&["extract", &request, "--index", "1", "--json"])
        .ok();
    let lines: Vec<serde_json::Value> = r
        .lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["key"]["step"], "0");
    assert_eq!(lines[1]["missing"]["step"], "6");
    assert_eq!(lines[2]["missing"]["step"], "12");
    assert_eq!(lines[2]["missing"]["param"], "130");
}

#[test]
fn a_request_leaving_out_a_required_keyword_is_told_which() {
    let env = setup();
    let request = "class=od,expver=0001,stream=oper,date=20070323,time=1200,domain=g,\
                   type=an,levtype=pl,param=130";
    let r = env.run(&["retrieve", request, "-o", "out.grib"]).ok();
    assert!(
        r.stderr.contains(
            "it names no complete key: it leaves out the keyword levelist, which the nearest rule \
             requires: [ class, expver, stream=oper, date, time, domain?g [ type=an, levtype="
        ),
        "{}",
        r.stderr
    );
    let r = env.run(&["extract", request, "--index", "1"]);
    assert!(
        r.stderr.contains("it leaves out the keyword levelist"),
        "{}",
        r.stderr
    );
}
