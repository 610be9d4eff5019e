//! Agreement with the real FDB5 on where new datasets go: the same
//! multi-space, multi-root configuration (a read-only root before the
//! writable ones, `Default` and `First`, the `expver` handler with its map,
//! the `envvar` handler, a catch-all space) and the same GRIB fixtures on
//! both sides; each dataset must land in the root of the same name. Then
//! fieldstore's `where --datasets` and `info` must show those roots.
//!
//! FDB5 runs from ECMWF's wheels (`scripts/setup-fdb5.sh`, as
//! `fdb5_agreement.rs`); `FIELDSTORE_SKIP_FDB5=1` skips it explicitly (it
//! never skips by itself: CI runs it). A few seconds.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{repo, Env};
use serde_json::Value;

/// `@ROOTS@` is the directory holding the roots, different per side.
const CONFIG: &str = "\
type: local
engine: toc
schema: @SCHEMA@
spaces:
- name: ops
  regex: '^od:0001:oper:2025'
  handler: Default
  roots:
  - {path: '@ROOTS@/ro', writable: false}
  - {path: '@ROOTS@/a'}
  - {path: '@ROOTS@/b'}
- regex: '^od:'
  handler: First
  roots:
  - {path: '@ROOTS@/c'}
- regex: ':xxxx:'
  handler: expver
  roots:
  - {path: '@ROOTS@/x'}
  - {path: '@ROOTS@/y'}
- regex: '^e[a6]:'
  handler: envvar
  roots:
  - {path: '@ROOTS@/e'}
  - {path: '@ROOTS@/f'}
- regex: '.*'
  roots:
  - {path: '@ROOTS@/g', wipe: false}
  - {path: '@ROOTS@/h'}
";

/// Where each fixture's dataset must go (the reason in the comment).
const EXPECTED: &[(&str, &str)] = &[
    // ops: `ro` is not writable, `a` is the first writable root.
    ("od:0001:oper:20251125:0000:g", "a"),
    // The second space, First.
    ("od:0001:oper:20230508:1200:g", "c"),
    // expver: the map says xxxx → y.
    ("rd:xxxx:oper:20191110:0000:g", "y"),
    ("rd:xxxx:oper:20201102:0000:g", "y"),
    // envvar: the variable names f.
    ("e6:5659:oper:20161230:g", "f"),
    ("ea:0001:enda:20200101:0000:g", "f"),
    // The catch-all.
    ("ei:0001:dacl:g", "g"),
];

const ENVVAR: &str = "FIELDSTORE_SPACES_TEST_HOST";

fn fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/fixtures/grib"))
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "grib"))
        .collect();
    files.sort();
    files
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn fdb5_python() -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("scripts/setup-fdb5.sh"))
        .output()
        .expect("run scripts/setup-fdb5.sh");
    assert!(
        out.status.success(),
        "scripts/setup-fdb5.sh failed (needs python3 and PyPI; FIELDSTORE_SKIP_FDB5=1 skips \
         this test): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).expect("utf-8").trim())
}

/// The config for roots under `roots`, and the expver map and envvar
/// setting that go with it (`FDB_EXPVER_FILE`, the handler's variable).
fn side(dir: &Path) -> (String, PathBuf, Vec<(&'static str, String)>) {
    let roots = dir.join("roots");
    let schema = repo().join("tests/fixtures/schema/ecmwf.schema");
    let config = CONFIG
        .replace("@ROOTS@", path(&roots))
        .replace("@SCHEMA@", path(&schema));
    let map = dir.join("expver_to_fdb_root.map");
    std::fs::write(
        &map,
        format!("# expver root\nxxxx {}\n", roots.join("y").display()),
    )
    .expect("map");
    let env = vec![
        ("FDB_EXPVER_FILE", path(&map).to_string()),
        ("FDB_FILESPACEHANDLER_ENVVARNAME", ENVVAR.to_string()),
        (ENVVAR, path(&roots.join("f")).to_string()),
    ];
    (config, roots, env)
}

/// Which root holds each dataset directory.
fn placed(roots: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for root in std::fs::read_dir(roots).expect("roots") {
        let root = root.expect("root").path();
        for db in std::fs::read_dir(&root).expect("root") {
            let db = db.expect("dataset").path();
            if db.join("toc").exists() {
                let name = db.file_name().expect("name").to_string_lossy().into_owned();
                let holder = root
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned();
                assert!(out.insert(name.clone(), holder).is_none(), "{name} twice");
            }
        }
    }
    out
}

#[test]
fn new_datasets_land_in_the_root_fdb5_chooses() {
    if std::env::var_os("FIELDSTORE_SKIP_FDB5").is_some_and(|v| v == "1") {
        eprintln!("FIELDSTORE_SKIP_FDB5=1: not comparing with FDB5");
        return;
    }
    let expected: BTreeMap<String, String> = EXPECTED
        .iter()
        .map(|(d, r)| (d.to_string(), r.to_string()))
        .collect();
    let files = fixtures();
    assert_eq!(files.len(), 7);

    // FDB5.
    let python = fdb5_python();
    let work = tempfile::tempdir().expect("tempdir");
    let (config, roots, vars) = side(work.path());
    let template = work.path().join("config.yaml");
    std::fs::write(&template, &config).expect("config");
    let json = work.path().join("fdb5.json");
    let mut c = Command::new(&python);
    c.arg(repo().join("crates/fieldstore-cli/tests/fdb5/fdb5_spaces.py"))
        .args(["--config", path(&template)])
        .args(["--roots", path(&roots)])
        .args(["--workdir", path(&work.path().join("fdb5"))])
        .args(["--out", path(&json)])
        .args(files.iter().map(|f| path(f)))
        .envs(vars);
    let out = c.output().expect("run fdb5_spaces.py");
    assert!(
        out.status.success(),
        "fdb5_spaces.py: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let fdb5: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("fdb5.json")).expect("JSON");
    let fdb5_placed: BTreeMap<String, String> =
        serde_json::from_value(fdb5["placed"].clone()).expect("placed");
    assert_eq!(fdb5_placed, expected, "FDB5 placed the datasets otherwise");
    let eccodes = fdb5["versions"]["eccodeslib"].as_str().expect("version");
    assert!(
        eccodes.starts_with(&format!("{}.", fieldstore_grib::eccodes_version())),
        "FDB5 runs ecCodes {eccodes}, fieldstore {}: keys would differ; run scripts/setup.sh",
        fieldstore_grib::eccodes_version()
    );

    // fieldstore, with the same configuration over its own roots.
    let env = Env::new();
    let (config, roots, vars) = side(env.dir.path());
    for r in ["ro", "a", "b", "c", "x", "y", "e", "f", "g", "h"] {
        std::fs::create_dir_all(roots.join(r)).expect("root");
    }
    env.write("config.yaml", &config);
    let run = |args: &[&str]| {
        let mut all = vec!["--config", "config.yaml"];
        all.extend_from_slice(args);
        common::run(env.command().args(&all).envs(vars.clone()))
    };
    let mut archive = vec!["archive"];
    archive.extend(files.iter().map(|f| path(f)));
    run(&archive).ok();
    assert_eq!(placed(&roots), fdb5_placed, "fieldstore and FDB5 disagree");

    // `where --datasets` names each dataset's directory in its root.
    let lines = run(&["where", "--datasets", "--porcelain", ""])
        .ok()
        .lines();
    let mut shown: Vec<String> = lines.clone();
    shown.sort();
    let mut want: Vec<String> = expected
        .iter()
        .map(|(d, r)| path(&roots.join(r).join(d)).to_string())
        .collect();
    want.sort();
    assert_eq!(shown, want);
    // `info` shows the spaces and their roots.
    let info = run(&["info"]).ok().out();
    for want in [
        "  space 0 ops: regex '^od:0001:oper:2025', handler Default",
        "  space 2: regex ':xxxx:', handler expver",
        "  space 3: regex '^e[a6]:', handler envvar",
        "  space 4: regex '.*', handler Default",
    ] {
        assert!(info.contains(want), "{want} not in\n{info}");
    }
    assert!(
        info.contains(&format!("    {} (visit)\n", roots.join("ro").display())),
        "{info}"
    );
    assert!(
        info.contains(&format!(
            "    {} (writable, visit, no wipe)\n",
            roots.join("g").display()
        )),
        "{info}"
    );
}
