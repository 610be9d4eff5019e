//! Bad input through the binary: the exact message on standard error, the
//! documented exit code, and nothing stored harmed.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Env, BASE};

fn key(rest: &str) -> String {
    format!("{BASE},{rest}")
}

/// One stored field, to check that failures leave it alone.
fn with_one_field() -> Env {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"kept");
    env
}

#[track_caller]
fn still_intact(env: &Env) {
    let r = env.run(&["retrieve", &key("step=0,param=167")]).ok();
    assert_eq!(r.stdout, b"kept");
}

#[test]
fn malformed_requests_are_usage_errors_with_the_position() {
    let env = with_one_field();
    for cmd in ["list", "axes", "retrieve", "where"] {
        let r = env.run(&[cmd, "class=od,,x"]);
        r.fails(
            2,
            "malformed request at character 9: empty item (two commas in a row?)",
        );
        assert!(r.stdout.is_empty());
    }
    env.run(&["list", "class=od,expver"]).fails(
        2,
        "malformed request at character 9: expected keyword=value, found 'expver'",
    );
    still_intact(&env);
}

#[test]
fn unknown_keywords_and_bad_values_are_named() {
    let env = with_one_field();
    env.run(&["list", "class=od,foo=bar"]).fails(
        2,
        "unknown keyword 'foo' in request: the schema has no rule using it",
    );
    env.run(&["retrieve", "class=od,foo=bar"]).fails(
        2,
        "unknown keyword 'foo' in request: the schema has no rule using it",
    );
    env.run(&["axes", "step=abc"]).fails(
        2,
        "keyword 'step' in request: 'abc' is not a valid Step: expected a number of hours, optionally with a unit (30m, 90s)",
    );
    still_intact(&env);
}

#[test]
fn keys_that_do_not_fit_the_schema_archive_nothing() {
    let env = with_one_field();
    let f = env.write("f", "new bytes");
    let f = f.to_str().expect("path");
    let k = key("step=0,param=167,foo=2");
    env.run(&["archive", "--key", &k, f]).fails(
        2,
        &format!("--key {k}: unknown keyword 'foo': no rule of the schema uses it"),
    );
    env.run(&["archive", "--key", "class=od,step", f]).fails(
        2,
        "--key: malformed key item 'step': expected keyword=value",
    );
    let r = env.run(&["archive", "--key", "class=od,expver=0001", f]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .starts_with("fieldstore: error: --key class=od,expver=0001: missing keyword '"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("required by rule [ class, expver"),
        "{r:?}"
    );
    env.run(&["archive", "--key", &key("step=0,param=167"), f, f])
        .fails(2, "--key names one field: give exactly one FILE (got 2)");
    still_intact(&env);
    assert_eq!(env.run(&["list"]).ok().lines().len(), 1);
}

#[test]
fn missing_files_are_not_found() {
    let env = with_one_field();
    env.run(&["archive", "--key", &key("step=6,param=167"), "nofile"])
        .fails(4, "nofile: No such file or directory (os error 2)");
    env.run(&["schema", "--check", "nofile"])
        .fails(4, "nofile: No such file or directory (os error 2)");
    env.run(&["retrieve", &key("step=0,param=167"), "-o", "no/dir/out"])
        .fails(4, "no/dir/out: No such file or directory (os error 2)");
    still_intact(&env);
}

#[test]
fn unreadable_and_malformed_configs() {
    let env = with_one_field();
    let missing = env.path("missing.yaml");
    env.run(&["--config", missing.to_str().expect("path"), "list"])
        .fails(
            4,
            &format!(
                "config {}: No such file or directory (os error 2)",
                missing.display()
            ),
        );
    // The same through the environment.
    let r = common::run(env.command().env("FIELDSTORE_CONFIG", &missing).arg("info"));
    r.fails(
        4,
        &format!(
            "config {}: No such file or directory (os error 2)",
            missing.display()
        ),
    );
    // A directory is not a config file.
    let r = env.run(&["--config", ".", "list"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.starts_with("fieldstore: error: config .: "),
        "{r:?}"
    );
    env.write("bad.yaml", "engine: [\n");
    let r = env.run(&["--config", "bad.yaml", "list"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(
        r.stderr.starts_with("fieldstore: error: bad.yaml: "),
        "{r:?}"
    );
    env.write("typo.yaml", "enigne: toc\n");
    env.run(&["info", "--config", "typo.yaml"]).fails(
        3,
        "typo.yaml: unknown field `enigne`, expected one of `type`, `engine`, `store`, `schema`, `fdb_home`, `spaces`, `daos`, `rados`, `s3`, `file`, `archive-defaults`",
    );
    env.write("lmdb.yaml", "engine: lmdb\n");
    env.run(&["list", "--config", "lmdb.yaml"]).fails(
        3,
        "lmdb.yaml: engine 'lmdb' is not supported (expected toc, daos, rados, s3 or memory)",
    );
    still_intact(&env);
}

#[test]
fn a_missing_root_is_not_found() {
    let env = Env::new();
    let config = env.write(
        "c.yaml",
        "type: local\nengine: toc\nstore: file\nspaces:\n- handler: Default\n  roots:\n  - path: nowhere\n",
    );
    let nowhere = env.path("nowhere");
    let message = format!(
        "root {} does not exist or is not a directory",
        nowhere.display()
    );
    let config = config.to_str().expect("path");
    env.run(&["--config", config, "list"]).fails(4, &message);
    env.run(&["--config", config, "axes"]).fails(4, &message);
    let f = env.write("f", "x");
    env.run(&[
        "--config",
        config,
        "archive",
        "--key",
        &key("step=0,param=167"),
        f.to_str().expect("path"),
    ])
    .fails(4, &message);
    assert!(!nowhere.exists(), "nothing created");
}

/// Issue 26, item 10: a mistyped `FIELDSTORE_ROOT` is `NotFound` naming it
/// for every reading command, which never creates it; the implicit
/// default (`./fieldstore-data`, nothing set) reads as empty and is not
/// created either; archive still creates the embedded store's root.
#[test]
fn reading_commands_never_create_a_root_and_a_named_missing_one_is_not_found() {
    let env = Env::new();
    let typo = env.path("typo");
    let message = format!(
        "root {} does not exist or is not a directory",
        typo.display()
    );
    let field = key("step=0,param=167");
    for args in [
        vec!["list"],
        vec!["list", "class=od"],
        vec!["axes"],
        vec!["retrieve", &field],
        vec!["where", &field],
        vec!["where", "--datasets", "class=od"],
        vec!["stats"],
        vec!["status"],
    ] {
        let r = common::run(env.command().env("FIELDSTORE_ROOT", &typo).args(&args));
        r.fails(4, &message);
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    // The implicit default: empty, and still not there afterwards.
    let default = env.path("fieldstore-data");
    for cmd in ["list", "axes", "stats"] {
        let r = common::run(env.command().env_remove("FIELDSTORE_ROOT").arg(cmd)).ok();
        assert!(r.stdout.is_empty() || cmd == "stats", "{cmd}: {r:?}");
        assert!(!default.exists(), "{cmd} created {}", default.display());
    }
    // Archive creates the root FIELDSTORE_ROOT names (a first run needs
    // nothing set up), and the default.
    assert!(!env.root().exists());
    env.archive(&field, b"first");
    assert!(env.root().is_dir());
    assert_eq!(env.run(&["list"]).ok().lines().len(), 1);
    let f = env.write("f", "x");
    common::run(env.command().env_remove("FIELDSTORE_ROOT").args([
        "archive",
        "--key",
        &field,
        f.to_str().expect("path"),
    ]))
    .ok();
    assert!(default.is_dir());
}

#[test]
fn schema_check_reports_line_and_column() {
    let env = Env::new();
    env.write(
        "bad.schema",
        "param: Param;\n[ class, expver\n  [ type [ step, param ]]\n",
    );
    let r = env.run(&["schema", "--check", "bad.schema"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stdout.is_empty());
    let message = r
        .stderr
        .strip_prefix("fieldstore: error: bad.schema:")
        .unwrap_or_else(|| panic!("{r:?}"));
    let mut parts = message.splitn(3, ':');
    let line: u32 = parts
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("{r:?}"));
    let column: u32 = parts
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{r:?}"));
    assert!((1..=4).contains(&line) && column <= 30, "{r:?}");
    assert!(parts.next().is_some_and(|m| m.len() > 2), "{r:?}");

    env.write(
        "typo.schema",
        "param: Parm;\n[ class [ type [ step, param ]]]\n",
    );
    let r = env.run(&["schema", "--check", "typo.schema"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(
        r.stderr.starts_with("fieldstore: error: typo.schema:1:"),
        "{r:?}"
    );

    // No configuration is needed, a broken one included.
    env.write("bad.yaml", "engine: [\n");
    let r = env.run(&["schema", "--config", "bad.yaml", "--check", "typo.schema"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(
        r.stderr.starts_with("fieldstore: error: typo.schema:1:"),
        "{r:?}"
    );

    env.write("twice.schema", "[ class, class [ type [ step ]]]\n");
    let r = env.run(&["schema", "--check", "twice.schema"]);
    r.fails(
        3,
        "twice.schema: keyword 'class' appears twice in the rule at line 1",
    );
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    for args in [
        vec!["list", "--depth", "5"],
        vec!["bogus"],
        vec!["archive"],
        vec!["retrieve"],
        vec!["list", "--json", "--porcelain"],
    ] {
        let r = env.run(&args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert!(r.stderr.starts_with("error: "), "{args:?}: {r:?}");
    }
    let r = env.run(&["--help"]).ok();
    assert!(r.out().contains("Usage: fieldstore"), "{r:?}");
}

/// A tmpfs mounted for one test, unmounted when dropped. Mounting needs
/// root; CI runs as root, so there the tests must not skip.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_path_buf();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must be able to mount a tmpfs (runs as root)"
            );
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        Some(Tmpfs { path, _dir: dir })
    }

    fn remount_read_only(&self) {
        let s = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.path)
            .status()
            .expect("mount");
        assert!(s.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

fn at_root(env: &Env, root: &std::path::Path, args: &[&str]) -> common::Run {
    common::run(env.command().env("FIELDSTORE_ROOT", root).args(args))
}

#[test]
fn a_full_disk_exits_6_and_keeps_what_was_flushed() {
    let Some(tmp) = Tmpfs::mount("512k") else {
        return;
    };
    let env = Env::new();
    let small = env.write("small", "kept");
    let big = env.write("big", vec![1u8; 2 << 20]);
    at_root(
        &env,
        &tmp.path,
        &[
            "archive",
            "--key",
            &key("step=0,param=167"),
            small.to_str().expect("path"),
        ],
    )
    .ok();
    let r = at_root(
        &env,
        &tmp.path,
        &[
            "archive",
            "--key",
            &key("step=6,param=167"),
            big.to_str().expect("path"),
        ],
    );
    assert_eq!(r.code, 6, "{r:?}");
    assert!(r.stderr.starts_with("fieldstore: error: "), "{r:?}");
    assert!(
        r.stderr.contains(tmp.path.to_str().expect("path")),
        "names the file: {r:?}"
    );
    let r = at_root(&env, &tmp.path, &["list"]).ok();
    assert_eq!(r.lines().len(), 1, "{r:?}");
    let r = at_root(&env, &tmp.path, &["retrieve", &key("step=0,param=167")]).ok();
    assert_eq!(r.stdout, b"kept");
}

#[test]
fn a_read_only_root_exits_7_and_still_serves_reads() {
    let Some(tmp) = Tmpfs::mount("4m") else {
        return;
    };
    let env = Env::new();
    let f = env.write("f", "before");
    at_root(
        &env,
        &tmp.path,
        &[
            "archive",
            "--key",
            &key("step=0,param=167"),
            f.to_str().expect("path"),
        ],
    )
    .ok();
    tmp.remount_read_only();
    let r = at_root(
        &env,
        &tmp.path,
        &[
            "archive",
            "--key",
            &key("step=6,param=167"),
            f.to_str().expect("path"),
        ],
    );
    assert_eq!(r.code, 7, "{r:?}");
    assert!(r.stderr.contains(tmp.path.to_str().expect("path")), "{r:?}");
    let r = at_root(&env, &tmp.path, &["retrieve", &key("step=0,param=167")]).ok();
    assert_eq!(r.stdout, b"before");
}

#[test]
fn damaged_data_exits_5_and_outputs_no_byte_of_it() {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"good field");
    env.archive(&key("step=6,param=167"), b"will be damaged");
    // Find the second field's bytes through `list --location` and flip one.
    common::damage_field(&env, "step=6");

    let r = env.run(&["retrieve", &key("step=0/6,param=167"), "-o", "out.bin"]);
    assert_eq!(r.code, 5, "{r:?}");
    assert!(r.stderr.starts_with("fieldstore: error: "), "{r:?}");
    assert!(
        !env.path("out.bin").exists(),
        "the partial output is removed"
    );
    let r = env.run(&["retrieve", &key("step=6,param=167")]);
    assert_eq!(r.code, 5, "{r:?}");
    assert!(r.stdout.is_empty(), "no byte of a damaged field: {r:?}");
    // The undamaged field is still served.
    let r = env.run(&["retrieve", &key("step=0,param=167")]).ok();
    assert_eq!(r.stdout, b"good field");
}

#[test]
fn a_damaged_toc_exits_5_naming_the_file() {
    let env = Env::new();
    for step in [0, 6, 12] {
        env.archive(&key(&format!("step={step},param=167")), b"x");
    }
    let dataset = std::fs::read_dir(env.root())
        .expect("root")
        .next()
        .expect("a dataset")
        .expect("entry")
        .path();
    let toc = dataset.join("toc");
    let mut bytes = std::fs::read(&toc).expect("toc");
    let last = bytes.len() - 3;
    bytes[last] ^= 0x55;
    std::fs::write(&toc, &bytes).expect("write");
    // Everything readable is listed, then the damage is named: exit 5.
    let r = env.run(&["list"]);
    assert_eq!(r.code, 5, "{r:?}");
    assert_eq!(
        String::from_utf8_lossy(&r.stdout).lines().count(),
        2,
        "{r:?}"
    );
    assert!(
        r.stderr
            .starts_with("fieldstore: error: 1 damaged place stepped over")
            && r.stderr.contains(&format!("{} at offset ", toc.display())),
        "{r:?}"
    );
}

/// The append of a flush's record to `toc` cut short, as on a full disk
/// (here by the file size limit, `prlimit --fsize`, which cuts one write
/// exactly where a full file system would): the flush fails, and the
/// dataset is not broken for good — the next flush appends after the torn
/// bytes, and list, retrieve, stats, status and wipe all work, fields
/// flushed before and after alike.
#[test]
fn a_short_append_to_the_toc_breaks_nothing() {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"before");
    let dataset = std::fs::read_dir(env.root())
        .expect("root")
        .next()
        .expect("a dataset")
        .expect("entry")
        .path();
    let toc = dataset.join("toc");
    let len = std::fs::metadata(&toc).expect("toc").len();
    // Room for 7 bytes of the next record, as in the report.
    let limit = (len + 7).to_string();
    let file = env.write("field.bin", b"cut short");
    let k = key("step=6,param=167");
    let mut c = Command::new("bash");
    c.env_remove("FIELDSTORE_CONFIG")
        .env("FIELDSTORE_ROOT", env.root())
        .current_dir(env.dir.path())
        .stdin(std::process::Stdio::null())
        .args([
            "-c",
            "trap '' XFSZ; exec prlimit --fsize=\"$0\" \"$@\"",
            &limit,
            env!("CARGO_BIN_EXE_fieldstore"),
            "archive",
            "--key",
            &k,
            file.to_str().expect("utf-8"),
        ]);
    let r = common::run(&mut c);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("short append (7 of "), "{r:?}");
    assert_eq!(std::fs::metadata(&toc).expect("toc").len(), len + 7);
    // The failed writer gave back what it wrote for the flush: its index
    // and data files are empty (nothing of them was ever visible).
    let sizes = |ext: &str| -> Vec<u64> {
        std::fs::read_dir(&dataset)
            .expect("dataset")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .map(|p| std::fs::metadata(p).expect("file").len())
            .collect()
    };
    for ext in ["index", "data"] {
        assert!(sizes(ext).contains(&0), "{ext}: {:?}", sizes(ext));
    }
    // The next flush appends after the torn bytes.
    env.archive(&key("step=12,param=167"), b"after");
    let r = env.run(&["list"]).ok();
    assert_eq!(r.lines().len(), 2, "{r:?}");
    for (step, want) in [(0, &b"before"[..]), (12, b"after")] {
        let r = env
            .run(&["retrieve", &key(&format!("step={step},param=167"))])
            .ok();
        assert_eq!(r.stdout, want);
    }
    let r = env.run(&["retrieve", &key("step=6,param=167")]).ok();
    assert!(r.stdout.is_empty(), "the failed flush is not visible");
    env.run(&["stats", "class=od"]).ok();
    let r = env.run(&["status", "class=od"]).ok();
    assert!(
        r.out().contains("an append cut short"),
        "status names the torn append: {r:?}"
    );
    // Purge is not refused for it, and removes the failed writer's files.
    let r = env.run(&["purge", "class=od", "--doit"]).ok();
    assert!(
        !r.out().contains("damaged") && !r.stderr.contains("damaged"),
        "{r:?}"
    );
    for ext in ["index", "data"] {
        assert!(!sizes(ext).contains(&0), "{ext}: {:?}", sizes(ext));
    }
    env.run(&["wipe", "class=od", "--doit"]).ok();
    assert_eq!(env.run(&["list"]).ok().lines().len(), 0);
}
