//! The binary end to end on the embedded POSIX store: archive, list,
//! retrieve, axes, where, schema, info across separate invocations.

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::process::Stdio;

use common::{repo, Env, BASE};
use fieldstore::{Config, FieldStore, Key};

fn key(rest: &str) -> String {
    format!("{BASE},{rest}")
}

/// Three fields in one dataset, one of them archived twice.
fn populated() -> Env {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"first");
    env.archive(&key("step=6,param=167"), b"six");
    env.archive(&key("step=12,param=167"), b"twelve");
    env.archive(&key("step=0,param=167"), b"FIRST AGAIN");
    env
}

const DS: &str = "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}";
const COL: &str = "{type=fc,levtype=sfc}";

#[test]
fn archive_reports_and_makes_the_field_visible_to_the_next_process() {
    let env = Env::new();
    let f = env.write("t2m.bin", b"GRIB....7777");
    let r = env
        .run(&[
            "archive",
            "--key",
            &key("step=6,param=167"),
            f.to_str().expect("path"),
        ])
        .ok();
    assert!(r.stdout.is_empty());
    assert_eq!(
        r.stderr,
        "fieldstore: archived 1 field (12 bytes) from 1 file\n"
    );
    let r = env.run(&["list"]).ok();
    assert_eq!(r.out(), format!("{DS}{COL}{{step=6,param=167}}\n"));
    // Non-canonical spellings are canonicalised (time=12, expver=1).
    let r = env.run(&[
        "-q",
        "archive",
        "--key",
        "class=od,expver=1,stream=oper,date=20231201,time=12,domain=g,type=fc,levtype=sfc,step=12,param=167",
        f.to_str().expect("path"),
    ]);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""), "--quiet: no summary");
    assert_eq!(
        env.run(&["list", "step=12"]).ok().out(),
        format!("{DS}{COL}{{step=12,param=167}}\n")
    );
}

#[test]
fn archive_reads_standard_input() {
    let env = Env::new();
    let mut c = env.command();
    c.args(["archive", "--key", &key("step=0,param=167"), "-"])
        .stdin(Stdio::piped());
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"from stdin").expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{out:?}");
    let r = env.run(&["retrieve", &key("step=0,param=167")]).ok();
    assert_eq!(r.stdout, b"from stdin");
}

#[test]
fn list_prints_fdb_list_lines_at_every_depth() {
    let env = populated();
    let lines: BTreeSet<String> = env
        .run(&["list", "class=od"])
        .ok()
        .lines()
        .into_iter()
        .collect();
    let want: BTreeSet<String> = ["step=0", "step=6", "step=12"]
        .iter()
        .map(|s| format!("{DS}{COL}{{{s},param=167}}"))
        .collect();
    assert_eq!(lines, want);
    assert_eq!(
        env.run(&["list", "--depth", "1"]).ok().out(),
        format!("{DS}\n")
    );
    assert_eq!(
        env.run(&["list", "--depth", "2"]).ok().out(),
        format!("{DS}{COL}\n")
    );
    // --porcelain is the same stable form.
    let porcelain: BTreeSet<String> = env
        .run(&["list", "--porcelain", "class=od"])
        .ok()
        .lines()
        .into_iter()
        .collect();
    assert_eq!(porcelain, want);
    // Ranges and lists in requests.
    let r = env.run(&["list", "step=0/to/6/by/6"]).ok();
    assert_eq!(r.lines().len(), 2, "{r:?}");
    // Nothing matching: no output, success.
    let r = env.run(&["list", "class=rd"]).ok();
    assert!(r.stdout.is_empty() && r.stderr.is_empty(), "{r:?}");
}

#[test]
fn list_full_shows_the_masked_field_and_location_points_at_the_bytes() {
    let env = populated();
    let r = env
        .run(&["list", "--full", "--location", "--length", "step=0"])
        .ok();
    let lines = r.lines();
    assert_eq!(lines.len(), 2, "{r:?}");
    let prefix = format!("{DS}{COL}{{step=0,param=167}}, file://");
    for (line, len) in lines.iter().zip([11, 5]) {
        // Newest first.
        assert!(line.starts_with(&prefix), "{line}");
        assert!(
            line.ends_with(&format!(" length={len}, length={len}")),
            "{line}"
        );
    }
    // The location is real: its bytes are the field's.
    let loc = lines[0].strip_prefix(&prefix).expect("prefix");
    let (path, rest) = loc.split_once(" offset=").expect("offset");
    let offset: usize = rest
        .split_once(' ')
        .expect("length")
        .0
        .parse()
        .expect("number");
    let data = std::fs::read(path).expect("data file");
    assert_eq!(&data[offset..offset + 11], b"FIRST AGAIN");
    assert_eq!(env.run(&["list", "step=0"]).ok().lines().len(), 1);
}

#[test]
fn list_json_lines_parse_and_their_keys_retrieve_the_fields() {
    let env = populated();
    let r = env.run(&["list", "--json"]).ok();
    let mut total = 0;
    for line in r.lines() {
        let v: serde_json::Value = serde_json::from_str(&line).expect("each line is JSON");
        assert_eq!(v["dataset"]["class"], "od");
        assert_eq!(
            v["collocation"]["timespan"], "",
            "empty values kept in levels"
        );
        assert!(v["key"].get("timespan").is_none(), "left out of key");
        assert!(v["location"]["uri"]
            .as_str()
            .expect("uri")
            .starts_with("file:///"));
        let request = v["key"]
            .as_object()
            .expect("object")
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().expect("string")))
            .collect::<Vec<_>>()
            .join(",");
        let bytes = env.run(&["retrieve", &request]).ok().stdout;
        assert_eq!(
            bytes.len() as u64,
            v["location"]["length"].as_u64().expect("length")
        );
        total += 1;
    }
    assert_eq!(total, 3);
    let r = env.run(&["list", "--json", "--depth", "1"]).ok();
    let v: serde_json::Value = serde_json::from_str(r.out().trim()).expect("JSON");
    assert_eq!(v["key"]["date"], "20231201");
    assert!(v.get("collocation").is_none() && v.get("location").is_none());
}

#[test]
fn list_matches_the_real_fdb_list_on_the_oracle_keys() {
    // Archive, with explicit keys, every field of the fixture GRIB files as
    // the real FDB5 listed them, and list them back.
    let oracle = std::fs::read_to_string(repo().join("tests/fixtures/oracle/ecmwf-list.txt"))
        .expect("oracle");
    let env = Env::new();
    let want: BTreeSet<String> = oracle
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(String::from)
        .collect();
    for (i, line) in want.iter().enumerate() {
        let key = line
            .trim_start_matches('{')
            .trim_end_matches('}')
            .replace("}{", ",");
        env.archive(&key, format!("field {i}").as_bytes());
    }
    let got: BTreeSet<String> = env.run(&["list"]).ok().lines().into_iter().collect();
    assert_eq!(got, want);
}

#[test]
fn retrieve_writes_fields_in_request_order_and_reports() {
    let env = populated();
    let r = env.run(&["retrieve", &key("step=12/0/6,param=167")]).ok();
    assert_eq!(r.stdout, b"twelveFIRST AGAINsix");
    assert_eq!(
        r.stderr,
        "fieldstore: retrieved 3 fields (20 bytes) to standard output\n"
    );
    let r = env
        .run(&[
            "retrieve",
            &key("step=0/to/12/by/6,param=167"),
            "-o",
            "out.bin",
        ])
        .ok();
    assert!(r.stdout.is_empty());
    assert_eq!(
        r.stderr,
        "fieldstore: retrieved 3 fields (20 bytes) to out.bin\n"
    );
    assert_eq!(
        std::fs::read(env.path("out.bin")).expect("read"),
        b"FIRST AGAINsixtwelve"
    );
    // Missing fields are absent, not errors.
    let r = env.run(&["retrieve", &key("step=6/18,param=167")]).ok();
    assert_eq!(r.stdout, b"six");
    let r = env.run(&["retrieve", &key("step=18,param=167")]).ok();
    assert!(r.stdout.is_empty());
    assert_eq!(
        r.stderr,
        "fieldstore: retrieved 0 fields (0 bytes) to standard output: no stored field matches the request\n"
    );
}

#[test]
fn axes_text_and_json() {
    let env = populated();
    env.archive(
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=pl,step=0,levelist=500,param=130",
        b"z500",
    );
    let r = env.run(&["axes"]).ok();
    assert_eq!(
        r.out(),
        "class=od\ndate=20231201\ndomain=g\nexpver=0001\nlevelist=500\nlevtype=pl/sfc\nparam=130/167\nstep=0/12/6\nstream=oper\ntime=1200\ntype=fc\n"
    );
    let r = env.run(&["axes", "--level", "2"]).ok();
    assert_eq!(
        r.out(),
        "class=od\ndate=20231201\ndomain=g\nexpver=0001\nlevtype=pl/sfc\nstream=oper\ntime=1200\ntype=fc\n"
    );
    let r = env.run(&["axes", "--json", "levtype=sfc"]).ok();
    let v: serde_json::Value = serde_json::from_str(&r.out()).expect("JSON");
    assert_eq!(v["step"], serde_json::json!(["0", "12", "6"]));
    assert_eq!(v["timespan"], serde_json::json!([""]), "empty values kept");
    assert_eq!(v["levtype"], serde_json::json!(["sfc"]));
    assert!(
        v.get("levelist").is_none(),
        "sfc fields have no levelist: {v}"
    );
}

#[test]
fn where_gives_field_locations_and_dataset_places() {
    let env = populated();
    let r = env.run(&["where", &key("step=6/12,param=167")]).ok();
    let lines = r.lines();
    assert_eq!(lines.len(), 2, "{r:?}");
    assert!(
        lines[0].starts_with(&format!("{DS}{COL}{{step=6,param=167}}, file://")),
        "{r:?}"
    );
    assert!(lines[0].ends_with(" length=3"), "{r:?}");
    let r = env.run(&["where", "class=od"]).ok();
    let (keys, place) = r
        .out()
        .trim()
        .split_once(", ")
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .expect("line");
    assert_eq!(keys, DS);
    assert!(std::path::Path::new(&place).is_dir(), "{place}");
    assert!(
        place.starts_with(env.root().to_str().expect("path")),
        "{place}"
    );
    let r = env
        .run(&[
            "where",
            "--porcelain",
            "--datasets",
            &key("step=6,param=167"),
        ])
        .ok();
    assert_eq!(r.out(), format!("{place}\n"));
    let r = env.run(&["where", "--json", &key("step=6,param=167")]).ok();
    let v: serde_json::Value = serde_json::from_str(r.out().trim()).expect("JSON");
    assert_eq!(v["location"]["length"], 3);
    assert_eq!(v["key"]["step"], "6");
    env.run(&["where", &key("step=18,param=167")])
        .fails(4, "no stored field matches the request");
}

#[test]
fn schema_prints_the_schema_in_force_and_checks_files() {
    let env = Env::new();
    let r = env.run(&["schema"]).ok();
    assert_eq!(r.out().trim_end(), fieldstore::ECMWF_SCHEMA.trim_end());
    let schema = env.write(
        "my.schema",
        "param: Param;\n[ class, expver [ type [ step, param ]]]\n",
    );
    let r = env.run(&["schema", "--check", "my.schema"]).ok();
    assert_eq!(
        r.out(),
        "my.schema: ok: 1 dataset rules, 1 rule chains, 5 keywords\n"
    );
    // With a config naming that schema, it is the one in force.
    let config = env.write(
        "c.yaml",
        "type: local\nengine: toc\nstore: file\nschema: my.schema\nspaces:\n- handler: Default\n  roots:\n  - path: root\n",
    );
    std::fs::create_dir_all(env.root()).expect("mkdir");
    let r = env
        .run(&["schema", "--config", config.to_str().expect("path")])
        .ok();
    assert_eq!(r.out(), std::fs::read_to_string(&schema).expect("read"));
    // And keys follow it.
    let f = env.write("x", "x");
    env.run(&[
        "--config",
        "c.yaml",
        "archive",
        "--key",
        "class=od,expver=1,type=fc,step=3,param=2t",
        f.to_str().expect("path"),
    ])
    .ok();
    // (`param` is a Param: the name 2t is stored as its paramId.)
    assert_eq!(
        env.run(&["--config", "c.yaml", "list"]).ok().out(),
        "{class=od,expver=1}{type=fc}{step=3,param=167}\n"
    );
}

#[test]
fn info_describes_the_configuration() {
    let env = Env::new();
    let r = env.run(&["info"]).ok();
    let root = env.root();
    assert_eq!(
        r.out(),
        format!(
            "version: {}\nconfig: embedded store at {r} (FIELDSTORE_ROOT)\nengine: toc\nstore: file\nroots:\n  {r} (writable, visit)\nschema: <built-in ECMWF schema> ({} dataset rules)\neccodes: {}\nc api: FDB5 5.25.0 fdb_c.h (libfieldstore.so, also as libfdb5.so: scripts/install-capi.sh)\n",
            env!("CARGO_PKG_VERSION"),
            fieldstore::Schema::ecmwf().rules().len(),
            fieldstore_grib::eccodes_version(),
            r = root.display(),
        )
    );
    let config = env.write(
        "c.yaml",
        "spaces:\n- roots:\n  - path: data\n    writable: false\n",
    );
    let r = env
        .command()
        .env("FIELDSTORE_CONFIG", &config)
        .args(["info", "--json"])
        .output()
        .expect("run");
    assert!(r.status.success());
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    assert_eq!(v["config"], config.to_str().expect("path"));
    assert_eq!(v["config_origin"], "FIELDSTORE_CONFIG");
    assert_eq!(
        v["roots"][0]["path"],
        env.path("data").to_str().expect("path")
    );
    assert_eq!(v["roots"][0]["writable"], false);
    let r = env.run(&["info", "--config", "c.yaml"]).ok();
    assert!(r.out().contains("config: c.yaml (--config)\n"), "{r:?}");
    assert!(r.out().contains("(visit)\n"), "{r:?}");
}

#[test]
fn a_closed_pipe_ends_the_listing_quietly() {
    // More output than a pipe holds, from a store populated in-process.
    let env = Env::new();
    {
        std::fs::create_dir_all(env.root()).expect("mkdir");
        let fs = FieldStore::open(Config::embedded(env.root())).expect("open");
        for step in 0..3000 {
            let k: Key = key(&format!("step={step},param=167")).parse().expect("key");
            fs.archive(&k, b"x").expect("archive");
        }
        fs.flush().expect("flush");
    }
    let mut child = env
        .command()
        .args(["list", "--location"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(first.starts_with(DS.as_bytes()));
}

/// `fieldstore hammer` runs the benchmark through the binary, workers
/// included (they re-execute it), and verifies every byte it reads.
#[test]
fn hammer_runs_pattern_a_with_worker_processes_and_full_check() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .args(["hammer", "--root"])
        .arg(dir.path())
        .args([
            "--scenario",
            "a",
            "--processes",
            "2",
            "--nsteps",
            "2",
            "--nlevels",
            "2",
        ])
        .args([
            "--nparams",
            "2",
            "--field-size",
            "4096",
            "--full-check",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report.to_string();
    assert!(
        text.contains("\"write\"") && text.contains("\"read\""),
        "{text}"
    );
    assert_eq!(
        report["problems"].as_array().map(Vec::len),
        Some(0),
        "{text}"
    );
}
