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

use common::fdb5::{self, path};
use common::fixtures;
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

/// Which roots hold each dataset directory (sorted).
fn placed(roots: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for root in std::fs::read_dir(roots).expect("roots") {
        let root = root.expect("root").path();
        for db in std::fs::read_dir(&root).expect("root") {
            let db = db.expect("dataset").path();
            if db.join("toc").exists() {
                let name = db.file_name().expect("name").to_string_lossy().into_owned();
                let holder = root.file_name().expect("name").to_string_lossy();
                out.entry(name).or_default().push(holder.into_owned());
            }
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// FDB5's side: `fdb5_spaces.py` with the config template `config`
/// (`@ROOTS@` → `roots`), the environment `vars`, `locals` (root, GRIB)
/// archived first through a local config of that root; its JSON.
fn fdb5_side(
    work: &Path,
    config: &str,
    roots: &Path,
    vars: &[(&'static str, String)],
    locals: &[(&str, &Path)],
) -> Value {
    let template = work.join("config.yaml");
    std::fs::write(&template, config).expect("config");
    let json = work.join("fdb5.json");
    let mut c = fdb5::side("fdb5_spaces.py");
    c.args(["--config", path(&template)])
        .args(["--roots", path(roots)])
        .args(["--workdir", path(&work.join("fdb5"))])
        .args(["--out", path(&json)]);
    for (root, grib) in locals {
        c.args(["--local", root, path(grib)]);
    }
    c.args(fixtures().iter().map(|f| path(f)))
        .envs(vars.iter().map(|(k, v)| (k, v)));
    let fdb5 = fdb5::report(c, &json);
    fdb5::assert_same_eccodes(&fdb5);
    fdb5
}

#[test]
fn new_datasets_land_in_the_root_fdb5_chooses() {
    if fdb5::skipped() {
        return;
    }
    let expected: BTreeMap<String, Vec<String>> = EXPECTED
        .iter()
        .map(|(d, r)| (d.to_string(), vec![r.to_string()]))
        .collect();
    assert_eq!(fixtures().len(), 7);
    let files = fixtures();

    // FDB5.
    let work = tempfile::tempdir().expect("tempdir");
    let (config, roots, vars) = side(work.path());
    let fdb5 = fdb5_side(work.path(), &config, &roots, &vars, &[]);
    let fdb5_placed: BTreeMap<String, Vec<String>> =
        serde_json::from_value(fdb5["placed"].clone()).expect("placed");
    assert_eq!(fdb5_placed, expected, "FDB5 placed the datasets otherwise");

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
        .map(|(d, r)| path(&roots.join(&r[0]).join(d)).to_string())
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

/// Sub-FDBs chosen by `select`/`excludes` regexes, found anywhere in the
/// value (as FDB5: `class=o` takes `od`).
const SELECT: &str = "\
type: select
schema: @SCHEMA@
fdbs:
- select: class=o
  type: local
  engine: toc
  spaces: [{roots: [{path: '@ROOTS@/l0'}]}]
- select: class=rd|e6
  type: local
  engine: toc
  spaces: [{roots: [{path: '@ROOTS@/l1'}]}]
- select: class=e
  excludes: ['stream=dacl']
  type: local
  engine: toc
  spaces: [{roots: [{path: '@ROOTS@/l2'}]}]
- select: expver=0001
  type: local
  engine: toc
  spaces: [{roots: [{path: '@ROOTS@/l3'}]}]
";

/// Where each dataset goes; `od:…:20251125` also sits in `l1` beforehand
/// (archived there through a local config), where the select config finds
/// it too.
const SELECTED: &[(&str, &[&str])] = &[
    ("od:0001:oper:20251125:0000:g", &["l0", "l1"]),
    ("od:0001:oper:20230508:1200:g", &["l0"]),
    ("rd:xxxx:oper:20191110:0000:g", &["l1"]),
    ("rd:xxxx:oper:20201102:0000:g", &["l1"]),
    ("e6:5659:oper:20161230:g", &["l1"]),
    // `class=e` takes ea; ei is excluded by its stream.
    ("ea:0001:enda:20200101:0000:g", &["l2"]),
    ("ei:0001:dacl:g", &["l3"]),
];

#[test]
fn select_routes_datasets_and_resolves_duplicates_as_fdb5_does() {
    if fdb5::skipped() {
        return;
    }
    let schema = repo().join("tests/fixtures/schema/ecmwf.schema");
    let levtypes = repo().join("tests/fixtures/grib/levtypes.grib");
    let config = |roots: &Path| {
        SELECT
            .replace("@ROOTS@", path(roots))
            .replace("@SCHEMA@", path(&schema))
    };
    let expected: BTreeMap<String, Vec<String>> = SELECTED
        .iter()
        .map(|(d, r)| (d.to_string(), r.iter().map(|s| s.to_string()).collect()))
        .collect();

    // FDB5.
    let work = tempfile::tempdir().expect("tempdir");
    let roots = work.path().join("roots");
    let fdb5 = fdb5_side(
        work.path(),
        &config(&roots),
        &roots,
        &[],
        &[("l1", &levtypes)],
    );
    let fdb5_placed: BTreeMap<String, Vec<String>> =
        serde_json::from_value(fdb5["placed"].clone()).expect("placed");
    assert_eq!(fdb5_placed, expected, "FDB5 routed the datasets otherwise");
    let fdb5_listed: BTreeMap<String, Vec<String>> =
        serde_json::from_value(fdb5["listed"].clone()).expect("listed");

    // fieldstore.
    let env = Env::new();
    let roots = env.dir.path().join("roots");
    for r in ["l0", "l1", "l2", "l3"] {
        std::fs::create_dir_all(roots.join(r)).expect("root");
    }
    env.write("select.yaml", config(&roots));
    env.write(
        "local.yaml",
        format!(
            "schema: {}\nspaces: [{{roots: [{{path: {}}}]}}]\n",
            schema.display(),
            roots.join("l1").display()
        ),
    );
    env.run(&["--config", "local.yaml", "archive", path(&levtypes)])
        .ok();
    let mut archive = vec!["--config", "select.yaml", "archive"];
    let files = fixtures();
    archive.extend(files.iter().map(|f| path(f)));
    env.run(&archive).ok();
    assert_eq!(
        placed(&roots),
        expected,
        "fieldstore and FDB5 route differently"
    );

    // The listing of everything shows the duplicate dataset once, from the
    // first sub-store, as FDB5's.
    let mut listed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in env
        .run(&["--config", "select.yaml", "list", "--location"])
        .ok()
        .lines()
    {
        let data = line.split(", file://").nth(1).expect("location");
        let data = Path::new(data.split(" offset=").next().expect("path"));
        let db = data.parent().expect("dataset");
        let name = |p: &Path| p.file_name().expect("name").to_string_lossy().into_owned();
        let roots = listed.entry(name(db)).or_default();
        let root = name(db.parent().expect("root"));
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    assert_eq!(listed, fdb5_listed);
    assert_eq!(listed["od:0001:oper:20251125:0000:g"], ["l0"]);
}
