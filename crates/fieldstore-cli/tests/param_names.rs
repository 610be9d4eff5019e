//! Parameter names agree with FDB5: `tests/fixtures/params/params.grib` (15
//! fields, GRIB1: t z u v q on 1000 hPa; 2t msl 10u sp tp cp zust pt sdor
//! and 228228 at the surface) is archived into FDB5 (ECMWF's PyPI wheels,
//! `scripts/setup-fdb5.sh`) and into fieldstore (this binary); then, for
//! every spelling of [`SPELLINGS`] (short names in either case, paramIds,
//! `number.table`, lists, and an unknown name), `list class=od,param=S` must
//! find the same paramIds on both, and retrieve of a surface and a pressure
//! level request with `param=S` the same bytes (md5). An unknown name is an
//! error naming it on both. FDB5 resolves names with metkit, fieldstore
//! with ecCodes' parameter database (`fieldstore_grib::param_names`).
//!
//! Needs the FDB5 wheels (installed on first use, as `fdb5_agreement.rs`);
//! `FIELDSTORE_SKIP_FDB5=1` skips it explicitly.

mod common;

use std::process::Command;

use common::fdb5;
use common::{repo, Env};

/// What both are asked, each as `param=<spelling>`.
const SPELLINGS: &[&str] = &[
    "t",
    "T",
    "2t",
    "2T",
    "msl",
    "z",
    "u",
    "v",
    "q",
    "10u",
    "tp",
    "sp",
    "cp",
    "zust",
    "pt",
    "sdor",
    "130",
    "130.128",
    "167.128",
    "228.128",
    "3.228",
    "228.228",
    "228228",
    "3.128",
    "143",
    "t/2t",
    "2t/167/msl",
    "nosuchname",
    "3",
];

/// Where FDB5 answers differently on purpose of its own: (spelling,
/// retrieve request index, the spelling whose answer each gives instead).
/// metkit rewrites some bare paramIds by context when it expands a
/// retrieve (`param-matching.yaml`'s `bareIds`: in a surface forecast, `3`
/// is 228003, while its list of the same `3` finds 3); fieldstore reads a
/// number as the paramId it is, everywhere (docs/capi.md).
const DIVERGENCES: &[(&str, usize, &str, &str)] = &[("3", 0, "3.228", "3.128")];

const LIST: &str = "class=od";
const RETRIEVE: &[&str] = &[
    "class=od,expver=0001,stream=oper,type=fc,date=20251125,time=0000,domain=g,levtype=sfc,step=0",
    "class=od,expver=0001,stream=oper,type=fc,date=20251125,time=0000,domain=g,levtype=pl,levelist=1000,step=0",
];

fn md5(bytes: &[u8], dir: &std::path::Path) -> String {
    let f = dir.join("md5-input");
    std::fs::write(&f, bytes).expect("write");
    let out = Command::new("md5sum").arg(&f).output().expect("md5sum");
    String::from_utf8(out.stdout).expect("utf-8")[..32].to_string()
}

#[test]
fn parameter_spellings_name_the_same_fields_as_in_fdb5() {
    if fdb5::skipped() {
        return;
    }
    let schema = repo().join("tests/fixtures/schema/ecmwf.schema");
    let grib = repo().join("tests/fixtures/params/params.grib");
    let work = tempfile::tempdir().expect("tempdir");
    let json = work.path().join("fdb5.json");
    let mut c = fdb5::side("param_names_side.py");
    c.arg("--schema")
        .arg(&schema)
        .arg("--workdir")
        .arg(work.path().join("fdb5"))
        .arg("--out")
        .arg(&json)
        .args(["--list", LIST])
        .arg("--grib")
        .arg(&grib);
    for r in RETRIEVE {
        c.args(["--retrieve", r]);
    }
    c.args(SPELLINGS);
    let fdb5 = fdb5::report(c, &json);

    let env = Env::new();
    env.config_with_schema(&schema);
    let run = |args: &[&str]| {
        let mut all = vec!["--config", "config.yaml"];
        all.extend_from_slice(args);
        run_in(&env, &all)
    };
    let (ok, _, err) = run(&["archive", "--quiet", grib.to_str().expect("utf-8")]);
    assert!(ok, "archive: {err}");

    let mut found = std::collections::BTreeSet::new();
    for s in SPELLINGS {
        let theirs = &fdb5[s];
        // list: the paramIds found.
        let (ok, out, err) = run(&["list", &format!("{LIST},param={s}")]);
        match theirs["list"].as_array() {
            Some(ids) => {
                assert!(ok, "param={s}: list failed: {err}");
                let ours: std::collections::BTreeSet<String> = out
                    .lines()
                    .filter_map(|l| l.split("param=").nth(1))
                    .map(|v| {
                        v.trim_end_matches('}')
                            .split(',')
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .collect();
                let want: std::collections::BTreeSet<String> = ids
                    .iter()
                    .map(|v| v.as_str().expect("id").to_string())
                    .collect();
                assert_eq!(ours, want, "param={s}: list");
                assert!(!want.is_empty(), "param={s}: FDB5 lists nothing");
                found.extend(want);
            }
            None => {
                let said = theirs["list"]["error"].as_str().expect("error");
                assert!(
                    said.contains("Cannot match parameter"),
                    "FDB5, param={s}: {said}"
                );
                assert!(
                    !ok,
                    "param={s}: FDB5 fails ({said}), fieldstore lists {out}"
                );
                assert!(
                    err.contains(&format!("unknown parameter '{s}'")),
                    "param={s}: {err}"
                );
            }
        }
        // retrieve: the same bytes.
        for (i, r) in RETRIEVE.iter().enumerate() {
            let theirs = &theirs["retrieve"][i];
            let target = work.path().join("retrieved");
            let _ = std::fs::remove_file(&target);
            let (ok, _, err) = run(&[
                "retrieve",
                "--quiet",
                "-o",
                target.to_str().expect("utf-8"),
                &format!("{r},param={s}"),
            ]);
            if let Some(&(_, _, fdb5_reads, we_read)) =
                DIVERGENCES.iter().find(|d| d.0 == *s && d.1 == i)
            {
                let bytes = std::fs::read(&target).unwrap_or_default();
                assert!(ok, "param={s}, {r}: {err}");
                assert_eq!(
                    theirs, &fdb5[fdb5_reads]["retrieve"][i],
                    "FDB5: param={s} is no longer read as {fdb5_reads}"
                );
                assert_eq!(
                    Some(md5(&bytes, work.path()).as_str()),
                    fdb5[we_read]["retrieve"][i].as_str(),
                    "param={s}: retrieve {r}"
                );
                continue;
            }
            match theirs.as_str() {
                Some(want) => {
                    let bytes = std::fs::read(&target).unwrap_or_default();
                    assert!(ok || bytes.is_empty(), "param={s}, {r}: {err}");
                    assert_eq!(md5(&bytes, work.path()), want, "param={s}: retrieve {r}");
                }
                None => {
                    assert!(
                        !ok,
                        "param={s}: FDB5 fails ({theirs}), fieldstore retrieves"
                    );
                    assert!(err.contains(&format!("'{s}'")), "param={s}: {err}");
                }
            }
        }
    }
    // Every field of the fixture was named by some spelling.
    assert_eq!(found.len(), 15, "{found:?}");
}

/// Run the binary; (success, stdout, stderr).
fn run_in(env: &Env, args: &[&str]) -> (bool, String, String) {
    let out = env.command().args(args).output().expect("run fieldstore");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
