//! fieldstore's own client (`type: remote`) against both servers: FDB5's
//! `fdb-server` (a catalogue and a store server, from the 5.25 wheels)
//! and `fieldstore serve`. The same GRIB files archived through the
//! client into each must list (three depths, several requests), give the
//! same axes and read back the same bytes as a local fieldstore store
//! holding them; a watch through the client sees fields as they are
//! flushed.
//!
//! Then faults, with real processes: a server that is not there, one that
//! accepts and never answers, and `fieldstore serve` SIGKILLed in the
//! middle of a client's session and restarted on the same port: the client
//! gets an error within its time-out (never a hang), nothing it had
//! flushed is lost and nothing it had not is visible.
//!
//! `FIELDSTORE_SKIP_FDB5=1` skips the FDB5 side explicitly (it never skips
//! by itself).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::servers::{start_fdb5, start_fieldstore, start_fieldstore_on, Wheels, FILES, REQUESTS};
use common::{fdb5, repo, Env};
use fieldstore::{Config, FieldStore, Key, Request};

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/grib").join(name)
}

/// A `type: remote` client config for a catalogue server on `port`.
fn remote_config(dir: &Path, name: &str, port: u16, timeout: f64) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("type: remote\nhost: localhost\nport: {port}\ntimeout: {timeout}\n"),
    )
    .expect("write");
    p
}

/// The fieldstore binary with `config`; `(exit code, stdout, stderr)`,
/// bounded by 60 s (a hang fails the test naming the command).
fn fieldstore(config: &Path, args: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .arg("--config")
        .arg(config)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fieldstore");
    let until = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("fieldstore {args:?} hung for 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(config: &Path, args: &[&str]) -> String {
    match fieldstore(config, args) {
        (0, out, _) => out,
        (code, _, err) => panic!(
            "fieldstore {args:?} via {}: exit {code}: {err}",
            config.display()
        ),
    }
}

/// What a store holds, as the CLI shows it.
#[derive(Debug, PartialEq)]
struct Contents {
    /// (request, depth) → listed lines, in order, or the error.
    lists: BTreeMap<(String, u8), Result<Vec<String>, String>>,
    /// (request, level) → `axes --json`, empty values left out, or the
    /// error.
    axes: BTreeMap<(String, u8), Result<Axes, String>>,
    /// Each field's key → its bytes, or the error.
    fields: BTreeMap<String, Result<Vec<u8>, String>>,
}

type Axes = BTreeMap<String, BTreeSet<String>>;

/// `axes --json` (fieldstore's or FDB5's), empty values left out.
fn axes_json(out: &str) -> Axes {
    let json: serde_json::Value = serde_json::from_str(out).expect("axes json");
    let mut a = Axes::new();
    for (k, v) in json.as_object().expect("object") {
        let values: BTreeSet<String> = v
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|x| x.as_str())
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect();
        if !values.is_empty() {
            a.insert(k.clone(), values);
        }
    }
    a
}

fn attempt(config: &Path, args: &[&str]) -> Result<String, String> {
    match fieldstore(config, args) {
        (0, out, _) => Ok(out),
        (code, _, err) => Err(format!("exit {code}: {err}")),
    }
}

fn contents(config: &Path, dir: &Path) -> Contents {
    let mut lists = BTreeMap::new();
    let mut axes = BTreeMap::new();
    for request in std::iter::once("").chain(REQUESTS.iter().copied()) {
        for depth in 1..=3u8 {
            let mut args = vec!["list".to_string(), format!("--depth={depth}")];
            if !request.is_empty() {
                args.push(request.to_string());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let lines = attempt(config, &args).map(|o| o.lines().map(String::from).collect());
            lists.insert((request.to_string(), depth), lines);
            let mut args = vec![
                "axes".to_string(),
                "--json".to_string(),
                format!("--level={depth}"),
            ];
            if !request.is_empty() {
                args.push(request.to_string());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let a = attempt(config, &args).map(|out| axes_json(&out));
            axes.insert((request.to_string(), depth), a);
        }
    }
    let mut fields = BTreeMap::new();
    let everything: Vec<String> = lists[&(String::new(), 3)].clone().expect("list everything");
    for (n, line) in everything.iter().enumerate() {
        let key: Vec<&str> = line
            .split(['{', '}', ','])
            .filter(|p| p.contains('=') && !p.ends_with('='))
            .collect();
        let key = key.join(",");
        let out = dir.join(format!("field{n}.grib"));
        let got = attempt(
            config,
            &["retrieve", &key, "-o", out.to_str().expect("utf-8")],
        )
        .map(|_| std::fs::read(&out).expect("read"));
        fields.insert(key, got);
    }
    Contents {
        lists,
        axes,
        fields,
    }
}

/// fieldstore's client config (in `dir`) reaching the `fdb-server` that
/// FDB5's client config `fdb5_config` names.
fn fdb5_side(dir: &Path, fdb5_config: &Path) -> PathBuf {
    let port: u16 = std::fs::read_to_string(fdb5_config)
        .expect("read")
        .lines()
        .find_map(|l| l.strip_prefix("port: "))
        .and_then(|p| p.parse().ok())
        .expect("port");
    remote_config(dir, "f5.yaml", port, 20.0)
}

fn archive_fixtures(config: &Path) {
    let files: Vec<String> = FILES
        .iter()
        .map(|f| fixture(f).display().to_string())
        .collect();
    let mut args = vec!["archive"];
    args.extend(files.iter().map(String::as_str));
    ok(config, &args);
}

#[test]
fn the_client_gives_what_a_local_store_gives_through_both_servers() {
    // The reference: the same files in a local store.
    let local = Env::new();
    let local_config = local.config_with_schema(&repo().join("tests/fixtures/schema/ecmwf.schema"));
    archive_fixtures(&local_config);
    let expected = contents(&local_config, local.dir.path());
    assert_eq!(expected.fields.len(), 13, "{:?}", expected.fields.keys());

    let dir = tempfile::tempdir().expect("tempdir");
    let (_serve, port, _log) = start_fieldstore(dir.path(), "", false);
    let mut sides = vec![(
        "fieldstore serve",
        remote_config(dir.path(), "fs.yaml", port, 20.0),
    )];
    let wheels = (!fdb5::skipped()).then(Wheels::find);
    let mut fdb5_client = None;
    let _fdb5 = match &wheels {
        None => None,
        Some(w) => {
            let (servers, fdb5_config) = start_fdb5(w, dir.path());
            sides.push(("fdb-server", fdb5_side(dir.path(), &fdb5_config)));
            fdb5_client = Some(fdb5_config);
            Some(servers)
        }
    };
    // FDB5's own `fdb-axes` through its server, as fieldstore's client's
    // test normalises it.
    let fdb5_axes = |request: &str, level: u8| -> Option<Axes> {
        let (w, config) = (wheels.as_ref()?, fdb5_client.as_ref()?);
        let mut c = w.tool("fdb-axes", config, &dir.path().join("home"));
        c.args(["--minimum-keys=", "--json", &format!("--level={level}")]);
        c.arg(if request.is_empty() { "--all" } else { request });
        let out = c.output().expect("fdb-axes");
        out.status
            .success()
            .then(|| axes_json(&String::from_utf8_lossy(&out.stdout)))
    };
    for (name, config) in &sides {
        // A watch through the client, started before anything exists,
        // must see every field once the archive's flush returns.
        let watch = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
            .arg("--config")
            .arg(config)
            .args(["watch", "--count=4", "--timeout=60", "class=od/rd"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("watch");
        std::thread::sleep(Duration::from_millis(300));
        archive_fixtures(config);
        let got = contents(config, dir.path());
        // FDB5's server fails some listings and axes of ECMWF's schema
        // itself (an assertion of its own, docs/serve.md); fieldstore's
        // client must then report the server's error, and everything
        // FDB5 answers must agree.
        let mut compared = 0;
        let fdb5_own = |e: &str| *name == "fdb-server" && e.contains("Assertion failed");
        for ((request, depth), lines) in &expected.lists {
            let lines = lines.as_ref().expect("local list");
            let theirs = match &got.lists[&(request.clone(), *depth)] {
                Ok(l) => l,
                Err(e) if fdb5_own(e) => continue,
                Err(e) => panic!("{name}: list --depth={depth} {request:?}: {e}"),
            };
            compared += 1;
            // FDB5's server lists in its own order; fieldstore's in
            // fieldstore's. The lines are the same.
            let (mut a, mut b) = (lines.clone(), theirs.clone());
            a.sort();
            b.sort();
            assert_eq!(a, b, "{name}: list --depth={depth} {request:?}");
            if *name == "fieldstore serve" {
                assert_eq!(
                    lines, theirs,
                    "{name}: order of list --depth={depth} {request:?}"
                );
            }
        }
        for (k, a) in &expected.axes {
            let a = a.as_ref().expect("local axes");
            match &got.axes[k] {
                // FDB5's server also counts the values of datasets none of
                // whose collocations match (docs/compatibility.md, "FDB5
                // keeps collocations"): there the client must give what
                // FDB5's own `fdb-axes` gives.
                Ok(theirs) if *name == "fdb-server" && a != theirs => {
                    compared += 1;
                    let fdb5 = fdb5_axes(&k.0, k.1).expect("FDB5's fdb-axes");
                    assert_eq!(&fdb5, theirs, "{name}: axes {k:?}, FDB5's own client");
                }
                Ok(theirs) => {
                    compared += 1;
                    assert_eq!(a, theirs, "{name}: axes {k:?}");
                }
                Err(e) if fdb5_own(e) => {}
                Err(e) => panic!("{name}: axes {k:?}: {e}"),
            }
        }
        eprintln!("{name}: {compared} of 36 listings and axes compared");
        assert!(compared >= 24, "{name}: only {compared} of 36 compared");
        assert_eq!(
            expected.fields.keys().collect::<Vec<_>>(),
            got.fields.keys().collect::<Vec<_>>(),
            "{name}"
        );
        let mut read = 0;
        for (k, bytes) in &expected.fields {
            let bytes = bytes.as_ref().expect("local retrieve");
            match &got.fields[k] {
                Ok(theirs) => {
                    read += 1;
                    assert!(theirs == bytes, "{name}: bytes of {k}");
                }
                // FDB5's server cannot look up a ClimateDaily date (its own
                // `fdb-read` fails the same way, docs/serve.md).
                Err(e) if *name == "fdb-server" && e.contains("Invalid date") => {}
                Err(e) => panic!("{name}: retrieve {k}: {e}"),
            }
        }
        eprintln!("{name}: {read} of 13 fields read back");
        assert!(read >= 11, "{name}: only {read} of 13 fields read back");
        let out = watch.wait_with_output().expect("watch");
        assert!(out.status.success(), "{name}: watch: {out:?}");
        let seen = String::from_utf8_lossy(&out.stdout).lines().count();
        assert_eq!(seen, 4, "{name}: watch saw {seen} fields: {out:?}");
    }
}

/// Fields archived twice through the client are listed once, the newest,
/// unless duplicates are asked for: then both, the newest first. Through
/// both servers: each sends masked entries too (FDB5's server lists with
/// deduplication off, its client drops them), and before the client
/// dropped them a list through `fdb-server` gave the masked entries as
/// if they were current.
#[test]
fn a_field_archived_again_is_listed_once_unless_duplicates_are_asked_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_serve, port, _log) = start_fieldstore(dir.path(), "", false);
    let mut sides = vec![(
        "fieldstore serve",
        remote_config(dir.path(), "fs.yaml", port, 20.0),
    )];
    let _fdb5 = (!fdb5::skipped()).then(|| {
        let (servers, fdb5_config) = start_fdb5(&Wheels::find(), dir.path());
        sides.push(("fdb-server", fdb5_side(dir.path(), &fdb5_config)));
        servers
    });
    for (name, config) in &sides {
        archive_fixtures(config);
        archive_fixtures(config);
        let fs = open(config).expect("open the client");
        let request: Request = "class=od/rd".parse().expect("request");
        let list = |duplicates| {
            fs.list(
                &request,
                fieldstore::ListOptions {
                    depth: fieldstore::Level::Element,
                    duplicates,
                },
            )
            .unwrap_or_else(|e| panic!("{name}: list: {e}"))
        };
        let (once, twice) = (list(false), list(true));
        let keys = |l: &[fieldstore::ListElement]| -> Vec<String> {
            l.iter().map(|e| e.full_key().to_string()).collect()
        };
        let distinct: BTreeSet<String> = keys(&twice).into_iter().collect();
        assert!(!once.is_empty(), "{name}: nothing listed");
        assert_eq!(
            distinct.len(),
            once.len(),
            "{name}: without duplicates: {:?}",
            keys(&once)
        );
        assert_eq!(
            twice.len(),
            2 * once.len(),
            "{name}: with duplicates: {:?}",
            keys(&twice)
        );
        for e in &once {
            let key = e.full_key().to_string();
            let all: Vec<_> = twice
                .iter()
                .filter(|t| t.full_key().to_string() == key)
                .collect();
            assert_eq!(all.len(), 2, "{name}: {key} with duplicates");
            assert_eq!(
                all[0].location, e.location,
                "{name}: {key}: the newest comes first and is the one listed"
            );
            assert_ne!(
                all[0].location, all[1].location,
                "{name}: {key}: two versions"
            );
        }
    }
}

/// A client config of the handle's own (in-process) client.
fn open(config: &Path) -> fieldstore::Result<FieldStore> {
    FieldStore::open(Config::from_file(config)?)
}

#[test]
fn a_missing_or_silent_server_is_an_error_within_the_time_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let config = remote_config(dir.path(), "none.yaml", port, 1.0);
    let started = Instant::now();
    let (code, _, err) = fieldstore(&config, &["list", "class=od"]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot connect"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // Accepts, never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let held = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().take(1) {
            held.push(s);
            std::thread::sleep(Duration::from_secs(6));
        }
    });
    let config = remote_config(dir.path(), "silent.yaml", port, 1.0);
    let started = Instant::now();
    let (code, _, err) = fieldstore(&config, &["list", "class=od"]);
    let took = started.elapsed();
    assert_ne!(code, 0);
    assert!(
        err.contains("unavailable") || err.contains("timed out"),
        "{err}"
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    held.join().expect("listener");
}

#[test]
fn a_server_killed_mid_session_costs_only_the_unflushed_and_the_client_is_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (serve, port, _log) = start_fieldstore(dir.path(), "", false);
    let config = remote_config(dir.path(), "client.yaml", port, 3.0);
    let fs = open(&config).expect("open");
    let key = |step: u32| -> Key {
        format!(
            "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,\
             levtype=sfc,step={step},param=167"
        )
        .parse()
        .expect("key")
    };
    let field = |step: u32| format!("GRIB field {step} ").repeat(1000).into_bytes();
    for step in 0..5 {
        fs.archive(&key(step), &field(step)).expect("archive");
    }
    fs.flush().expect("flush");
    for step in 5..8 {
        fs.archive(&key(step), &field(step)).expect("archive");
    }
    drop(serve); // SIGKILL
    let started = Instant::now();
    let e = fs.flush().expect_err("a flush to a killed server fails");
    assert!(
        matches!(
            e.kind(),
            fieldstore::ErrorKind::Unavailable | fieldstore::ErrorKind::TimedOut
        ),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let e = fs
        .list(&Request::new(), fieldstore::ListOptions::default())
        .expect_err("listing through the dead connection fails");
    assert_eq!(e.kind(), fieldstore::ErrorKind::Unavailable, "{e}");
    drop(fs);

    // Restarted where the client looks: the first flush is all there, the
    // second not at all.
    let (_serve, _, _log) = start_fieldstore_on(dir.path(), port, "", false);
    let fs = open(&config).expect("open after the restart");
    let listed = fs
        .list(
            &"class=od".parse().expect("request"),
            fieldstore::ListOptions::default(),
        )
        .expect("list");
    let steps: BTreeSet<String> = listed
        .iter()
        .map(|e| e.element.key().get("step").expect("step").to_string())
        .collect();
    assert_eq!(
        steps,
        (0..5).map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
    for step in 0..5 {
        let got = fs
            .retrieve(&Request::from_pairs(key(step).iter().map(|(k, v)| (k, [v]))).expect("req"))
            .expect("retrieve")
            .read_all()
            .expect("read");
        assert_eq!(got, field(step), "step {step}");
    }
    // And the client writes again.
    fs.archive(&key(9), &field(9)).expect("archive");
    fs.flush().expect("flush after the restart");
}

/// `fieldstore serve` with `config` (a role's config file): the child, its
/// port.
fn serve_role(config: &Path) -> (common::servers::Killed, u16) {
    let (child, port, _log) = common::servers::spawn_serve(config, false);
    (common::servers::Killed(child), port)
}

#[test]
fn one_catalogue_and_three_stores_spread_the_writers_and_answer_as_one_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = repo().join("tests/fixtures/schema/ecmwf.schema");
    let role = |name: &str, head: &str| -> PathBuf {
        let root = dir.path().join(name);
        std::fs::create_dir_all(&root).expect("root");
        let p = dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &p,
            format!(
                "{head}engine: toc\nstore: file\nschema: {}\nspaces: [{{roots: [{{path: {}}}]}}]\n",
                schema.display(),
                root.display()
            ),
        )
        .expect("write");
        p
    };
    let mut servers = Vec::new();
    let mut endpoints = Vec::new();
    for i in 0..3 {
        let (child, port) = serve_role(&role(&format!("store{i}"), "type: store\nserverPort: 0\n"));
        servers.push(child);
        endpoints.push(format!("{{default: \"localhost:{port}\"}}"));
    }
    let head = format!(
        "type: catalogue\nserverPort: 0\nstores: [{}]\n",
        endpoints.join(", ")
    );
    let (child, port) = serve_role(&role("catalogue", &head));
    servers.push(child);
    let config = remote_config(dir.path(), "client.yaml", port, 20.0);

    // Sixteen writer processes, each its own client, the same dataset.
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let key = format!(
                "class=od,expver=0001,stream=enfo,date=20231201,time=1200,domain=g,type=pf,\
                 levtype=sfc,number={w},step=0,param=167"
            );
            let file = dir.path().join(format!("field{w}"));
            std::fs::write(&file, format!("GRIB member {w} ").repeat(500)).expect("write");
            Command::new(env!("CARGO_BIN_EXE_fieldstore"))
                .arg("--config")
                .arg(&config)
                .args(["archive", "--key", &key])
                .arg(&file)
                .output()
                .expect("archive")
        })
        .collect();
    for out in &writers {
        assert!(out.status.success(), "{out:?}");
    }
    // The catalogue lists every member, each read back from its store.
    let listed = ok(&config, &["list", "--location", "class=od,stream=enfo"]);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 16, "{listed}");
    let mut used = BTreeSet::new();
    for line in &lines {
        let store = line
            .split("fdb://localhost:")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .expect("a store endpoint");
        used.insert(store.to_string());
    }
    assert!(
        used.len() >= 2,
        "sixteen writers all went to one store of three: {used:?}"
    );
    for w in 0..16 {
        let out = dir.path().join(format!("back{w}"));
        ok(
            &config,
            &[
                "retrieve",
                &format!(
                    "class=od,expver=0001,stream=enfo,date=20231201,time=1200,domain=g,type=pf,\
                     levtype=sfc,number={w},step=0,param=167"
                ),
                "-o",
                out.to_str().expect("utf-8"),
            ],
        );
        assert_eq!(
            std::fs::read(&out).expect("read"),
            format!("GRIB member {w} ").repeat(500).into_bytes(),
            "member {w}"
        );
    }
    // FDB5's own client archives and reads through the same servers.
    if fdb5::skipped() {
        return;
    }
    let w = Wheels::find();
    let fdb5_config = dir.path().join("fdb5-client.yaml");
    std::fs::write(
        &fdb5_config,
        format!("type: remote\nengine: remote\nstore: remote\nhost: localhost\nport: {port}\n"),
    )
    .expect("write");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let mut c = w.tool("fdb-write", &fdb5_config, &home);
    c.arg(fixture("template.grib"));
    let out = c.output().expect("fdb-write");
    assert!(out.status.success(), "fdb-write: {out:?}");
    let listed = ok(&config, &["list", "class=ea"]);
    let line = listed.lines().next().expect("FDB5's field listed");
    let key: Vec<&str> = line
        .split(['{', '}', ','])
        .filter(|p| p.contains('=') && !p.ends_with('='))
        .collect();
    let back = dir.path().join("fdb5-back.grib");
    ok(
        &config,
        &[
            "retrieve",
            &key.join(","),
            "-o",
            back.to_str().expect("utf-8"),
        ],
    );
    // The message as FDB5 archives it: up to its end marker (the file
    // pads it after).
    let written = std::fs::read(fixture("template.grib")).expect("fixture");
    let end = written
        .windows(4)
        .position(|w| w == b"7777")
        .expect("end marker")
        + 4;
    assert!(std::fs::read(&back).expect("read") == written[..end]);
}

#[test]
fn a_watch_through_fieldstore_serve_is_told_of_flushes() {
    use fieldstore::watch::{Since, WatchOptions};
    let dir = tempfile::tempdir().expect("tempdir");
    let (_serve, port, _log) = start_fieldstore(dir.path(), "", false);
    let config = remote_config(dir.path(), "client.yaml", port, 20.0);
    let watcher = open(&config).expect("open");
    let request: Request = "class=od,stream=oper,step=0/6/12".parse().expect("request");
    let mut watch = watcher
        .watch(
            &request,
            WatchOptions {
                since: Since::Now,
                count: Some(3),
                timeout: Some(Duration::from_secs(30)),
                ..WatchOptions::default()
            },
        )
        .expect("watch");
    // Told by the server, not polling.
    assert!(
        watch.mechanism().contains("told of flushes"),
        "{}",
        watch.mechanism()
    );
    let writer = std::thread::spawn(move || {
        let fs = open(&config).expect("open");
        for step in [0, 6, 12] {
            std::thread::sleep(Duration::from_millis(200));
            let key: Key = format!(
                "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,\
                 levtype=sfc,step={step},param=167"
            )
            .parse()
            .expect("key");
            fs.archive(&key, format!("GRIB {step} 7777").as_bytes())
                .expect("archive");
            fs.flush().expect("flush");
        }
    });
    let mut steps = Vec::new();
    for event in &mut watch {
        let event = event.expect("event");
        steps.push(
            event
                .element
                .element
                .key()
                .get("step")
                .expect("step")
                .to_string(),
        );
    }
    writer.join().expect("writer");
    assert_eq!(steps, ["0", "6", "12"]);
}
