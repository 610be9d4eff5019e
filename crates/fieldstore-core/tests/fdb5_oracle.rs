//! Key splitting agrees with the real FDB5.
//!
//! The fixtures in `tests/fixtures/oracle/` were produced by archiving keys
//! into FDB5 5.25 with ECMWF's schema and listing them back (see that
//! folder's README). Every row must split exactly as FDB5 listed it, unless
//! it is in [`DIVERGENCES`], where fieldstore deliberately differs and the
//! reason is given (also in `docs/compatibility.md`).

use fieldstore_core::{Key, Schema};

const GRIB_SPLITS: &str = include_str!("../../../tests/fixtures/oracle/ecmwf-splits.tsv");
const EXPLICIT_SPLITS: &str =
    include_str!("../../../tests/fixtures/oracle/ecmwf-explicit-splits.tsv");

/// `(row id, what fieldstore gives instead, why)`.
const DIVERGENCES: &[(&str, &str, &str)] = &[
    // Non-canonical spellings: FDB5 refuses them on archive ("Rule check");
    // fieldstore canonicalises them, so `time=12` and `time=1200` are one key.
    ("explicit:41", "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "time=12 canonicalised"),
    ("explicit:42", "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "time=12:00 canonicalised"),
    ("explicit:43", "{class=od,expver=0001,stream=oper,date=20231201,time=0600,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "time=6 canonicalised"),
    ("explicit:44", "{class=od,expver=0001,stream=oper,date=20231201,time=0000,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "time=0 canonicalised"),
    ("explicit:46", "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "expver=1 padded"),
    ("explicit:67", "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "class=OD lower-cased"),
    ("explicit:68", "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "levtype=SFC lower-cased before matching"),
    // FDB5 keeps explicit keys' values as written for these types, so the same
    // field can be archived under two keys; fieldstore canonicalises.
    ("explicit:37", "{class=e6,expver=0001,stream=elda,date=20231201,domain=g}{type=an,levtype=sfc,anoffset=9}{number=1,time=0000,param=167}", "param 167.128 is paramId 167"),
    ("explicit:57", "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "param 167.128 is paramId 167"),
    ("explicit:58", "{class=od,expver=0001,stream=oper,date=20231201,time=0000,domain=g}{type=an,levtype=pl}{levelist=850,param=129}", "param 129.128 is paramId 129"),
    ("explicit:65", "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}", "date 2023-12-01 is 20231201"),
    ("explicit:66", "{class=od,expver=0001,stream=enfo,date=20231201,time=0000,domain=g}{type=pf,levtype=sfc}{step=24,number=1,param=167}", "number 01 is 1"),
    // ClimateDaily accepts its own canonical form MMDD (idempotence).
    ("explicit:22", "{class=ei,expver=0001,stream=dacl,domain=g}{type=em,levtype=sfc}{date=0115,time=0000,step=0,param=167}", "MMDD is a ClimateDaily value"),
    // Errors: same refusal, fieldstore's words.
    ("explicit:69", "ERROR: unknown keyword 'foo': no rule of the schema uses it", ""),
    ("explicit:70", "ERROR: keyword 'number' is not used by the matching rule [ class, expver, stream=oper, date, time, domain?g [ type=fc, levtype=sfc, timespan?none [ step, param, frequency?, direction? ]]] (line 384)", ""),
    ("explicit:71", "ERROR: missing keyword 'param' required by rule [ class, expver, stream=oper, date, time, domain?g [ type=fc, levtype=sfc, timespan?none [ step, param, frequency?, direction? ]]] (line 384)", ""),
    ("explicit:72", "ERROR: missing keyword 'levelist' required by rule [ class, expver, stream=oper, date, time, domain?g [ type=fc, levtype=ml/pl/sol/layer/o3d/pt/pv, timespan?none [ step, levelist, param ]]] (line 380)", ""),
    ("explicit:73", "ERROR: value 'zzzz' of keyword 'stream' is not allowed by rule [ class, expver, stream=lwda, date, time, domain?g [ type=an, levtype=pl/ml/sol/layer/o3d/pv/pt, anoffset, timespan?none [ step?0, levelist, param ]]] (line 335)", ""),
    ("explicit:74", "ERROR: keyword 'country' is not used by the matching rule [ class, expver, stream=oper, date, time, domain?g [ type=fc, levtype=sfc, timespan?none [ step, param, frequency?, direction? ]]] (line 384)", ""),
];

struct Row<'a> {
    id: String,
    input: &'a str,
    fdb5: &'a str,
}

fn rows(tsv: &str) -> impl Iterator<Item = Row<'_>> {
    tsv.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 4, "bad fixture row: {l}");
            Row {
                id: format!("{}:{}", cols[0], cols[1]),
                input: cols[2],
                fdb5: cols[3],
            }
        })
}

fn ours(schema: &Schema, input: &str) -> String {
    let key: Key = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
    match schema.split(&key) {
        Ok(split) => split.braced(),
        Err(e) => format!("ERROR: {e}"),
    }
}

#[test]
fn splits_agree_with_fdb5() {
    let schema = Schema::ecmwf();
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for row in rows(GRIB_SPLITS).chain(rows(EXPLICIT_SPLITS)) {
        let got = ours(&schema, row.input);
        let want = match DIVERGENCES.iter().find(|(id, _, _)| *id == row.id) {
            Some((_, ours, _)) => ours.to_string(),
            None => row.fdb5.to_string(),
        };
        if got != want {
            mismatches.push(format!(
                "{}: {}\n  fdb5: {}\n  want: {want}\n  got:  {got}",
                row.id, row.input, row.fdb5
            ));
        }
        checked += 1;
    }
    assert!(checked >= 80, "only {checked} rows");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn every_divergence_is_still_a_divergence() {
    // A divergence that FDB5 now agrees with must be removed from the table.
    for row in rows(EXPLICIT_SPLITS) {
        if let Some((_, ours, why)) = DIVERGENCES.iter().find(|(id, _, _)| *id == row.id) {
            assert_ne!(
                *ours, row.fdb5,
                "{}: listed as divergence ({why}) but FDB5 agrees",
                row.id
            );
        }
    }
}
