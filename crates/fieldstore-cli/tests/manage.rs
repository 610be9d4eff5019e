//! Data management through the binary: wipe, purge, stats, status,
//! lock/unlock and move on the embedded POSIX store, across invocations:
//! output, summaries and exit codes.

mod common;

use common::{Env, BASE};

fn key(rest: &str) -> String {
    format!("{BASE},{rest}")
}

const DS: &str = "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}";
const REQ: &str = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g";
const DIR: &str = "od:0001:oper:20231201:1200:g";

/// Two fields in the dataset, one in another (expver 0002).
fn populated() -> Env {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"first");
    env.archive(&key("step=6,param=167"), b"six");
    env.archive(
        "class=od,expver=0002,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step=0,param=167",
        b"other",
    );
    env
}

/// The files of the dataset directory, sorted.
fn files(env: &Env, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(env.root().join(dir))
        .expect("the dataset directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn wipe_is_a_dry_run_until_doit_and_says_what_goes() {
    let env = populated();
    let root = env.root();
    let dir = root.join(DIR);
    let before = files(&env, DIR);
    let r = env.run(&["wipe", REQ]).ok();
    let lines = r.lines();
    assert_eq!(
        lines[0],
        format!(
            "wipe {DS} (whole dataset: 2 fields, 8 bytes) at {}",
            dir.display()
        )
    );
    // Every file of the directory, then the directory itself.
    let mut want: Vec<String> = before
        .iter()
        .map(|f| {
            let p = dir.join(f);
            let kind = if f == "toc" {
                "catalogue"
            } else if f.ends_with(".index") {
                "index"
            } else {
                "data"
            };
            let len = std::fs::metadata(&p).expect("a file").len();
            format!("  delete {kind} {} {len}", p.display())
        })
        .collect();
    want.push(format!("  delete catalogue {}/ -", dir.display()));
    assert_eq!(lines[1..], want[..], "{}", r.out());
    assert!(
        r.stderr.starts_with(&format!(
            "fieldstore: dry run: would delete {} files or objects (",
            want.len()
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .ends_with(" bytes) of 1 dataset; nothing deleted (add --doit to delete)\n"),
        "{}",
        r.stderr
    );
    assert_eq!(files(&env, DIR), before, "a dry run deletes nothing");

    let porcelain = env.run(&["wipe", REQ, "--porcelain"]).ok();
    assert_eq!(porcelain.lines().len(), want.len());
    assert!(porcelain.lines()[0].starts_with(&dir.display().to_string()));

    let r = env.run(&["wipe", REQ, "--doit"]).ok();
    assert_eq!(r.lines()[0], lines[0]);
    assert!(
        r.stderr.starts_with(&format!(
            "fieldstore: wiped 1 dataset: deleted {} files or objects (",
            want.len()
        )),
        "{}",
        r.stderr
    );
    assert!(!dir.exists(), "the dataset directory is gone");
    assert_eq!(
        env.run(&["list", "--depth", "1"]).ok().out(),
        "{class=od,expver=0002,stream=oper,date=20231201,time=1200,domain=g}\n"
    );
    let r = env.run(&["wipe", REQ, "--doit"]).ok();
    assert_eq!(r.out(), "");
    assert_eq!(
        r.stderr,
        "fieldstore: nothing to wipe: no dataset or collocation matches the request\n"
    );
}

#[test]
fn wipe_refuses_what_it_cannot_do_whole() {
    let env = populated();
    env.run(&["wipe", &format!("{REQ},step=0")]).fails(
        2,
        "wipe deletes whole datasets or whole collocations, but keyword 'step' names fields within \
         a collocation ([ class, expver, stream=oper, date, time, domain?g [ type=an, \
         levtype=pl/ml/sol/layer/o3d/pt/pv, timespan?none [ step?0, levelist, param ]]] (line 374)): \
         remove it from the request",
    );
    // A file fieldstore did not create blocks a whole-dataset wipe.
    let notes = env.root().join(DIR).join("notes.txt");
    std::fs::write(&notes, b"mine").expect("a stray file");
    let r = env.run(&["wipe", REQ]).ok();
    assert!(
        r.lines().contains(&format!(
            "  unknown {} 4 (not created by fieldstore: the wipe refuses to run without \
             --unsafe-wipe-all)",
            notes.display()
        )),
        "{}",
        r.out()
    );
    env.run(&["wipe", REQ, "--doit"]).fails(
        2,
        &format!(
            "refusing to wipe: the dataset holds files or objects fieldstore did not create: {}; \
             move them away, or wipe with unsafe_wipe_all (--unsafe-wipe-all) to delete them too",
            notes.display()
        ),
    );
    assert_eq!(
        env.run(&["retrieve", &key("step=6,param=167")]).ok().stdout,
        b"six",
        "nothing was deleted"
    );
    env.run(&["wipe", REQ, "--doit", "--unsafe-wipe-all"]).ok();
    assert!(!env.root().join(DIR).exists());
}

#[test]
fn wipe_of_a_collocation_keeps_the_others() {
    let env = populated();
    env.archive(
        &key("step=0,param=167").replace("type=fc", "type=an"),
        b"an",
    );
    let r = env.run(&["wipe", &format!("{REQ},type=an"), "--doit"]).ok();
    assert_eq!(
        r.lines()[0],
        format!(
            "wipe {DS} (collocations {{type=an,levtype=sfc}}: 1 fields, 2 bytes) at {}",
            env.root().join(DIR).display()
        )
    );
    assert_eq!(
        env.run(&["list", REQ]).ok().lines(),
        [
            format!("{DS}{{type=fc,levtype=sfc}}{{step=6,param=167}}"),
            format!("{DS}{{type=fc,levtype=sfc}}{{step=0,param=167}}"),
        ]
    );
}

#[test]
fn purge_reclaims_replaced_fields_and_stats_count_them() {
    let env = populated();
    env.archive(&key("step=0,param=167"), b"FIRST AGAIN");
    let r = env.run(&["stats", REQ]).ok();
    assert_eq!(
        r.out(),
        format!(
            "{DS} collocations=1 fields=2 bytes=14 duplicates=1 duplicate_bytes=5 reclaimable_bytes={} units=3\n",
            // The first writer's data file holds only the replaced field.
            reclaimable(&env)
        )
    );
    assert_eq!(
        r.stderr,
        format!(
            "fieldstore: 1 datasets: 2 fields (14 bytes), 1 replaced (5 bytes), {} bytes reclaimable by purge\n",
            reclaimable(&env)
        )
    );
    let dry = env.run(&["purge", REQ]).ok();
    let lines = dry.lines();
    assert_eq!(
        lines[0],
        format!(
            "purge {DS} (1 replaced fields, 5 bytes) at {}",
            env.root().join(DIR).display()
        )
    );
    assert_eq!(
        lines.len(),
        3,
        "the data file and its index file: {}",
        dry.out()
    );
    // Data and index files alike by their paths (issue 42: data files
    // were file:// URIs beside bare index paths).
    let place = env.root().join(DIR).display().to_string();
    assert!(
        lines[1].starts_with(&format!("  delete data {place}/")),
        "{}",
        dry.out()
    );
    assert!(
        lines[2].starts_with(&format!("  delete index {place}/")),
        "{}",
        dry.out()
    );
    let full = env.run(&["list", REQ, "--full"]).ok();
    assert_eq!(full.lines().len(), 3, "a dry run deletes nothing");
    env.run(&["purge", REQ, "--doit"]).ok();
    assert_eq!(env.run(&["list", REQ, "--full"]).ok().lines().len(), 2);
    assert_eq!(
        env.run(&["retrieve", &key("step=0,param=167")]).ok().stdout,
        b"FIRST AGAIN"
    );
    let r = env.run(&["stats", REQ]).ok();
    assert!(
        r.out()
            .contains(" duplicates=0 duplicate_bytes=0 reclaimable_bytes=0 units=2\n"),
        "{}",
        r.out()
    );
    env.run(&["purge", &format!("{REQ},type=fc")]).fails(
        2,
        "purge works on whole datasets, but keyword 'type' is below the dataset level: remove it \
         from the request",
    );
}

/// The size of the data file holding only the replaced field.
fn reclaimable(env: &Env) -> u64 {
    let first = env
        .run(&["list", REQ, "--full", "--location"])
        .ok()
        .lines()
        .into_iter()
        .rfind(|l| l.contains("step=0"))
        .expect("the replaced field");
    let path = first
        .split("file://")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("a file location")
        .to_string();
    std::fs::metadata(path).expect("the data file").len()
}

#[test]
fn locks_are_honoured_across_invocations_and_shown_by_status() {
    let env = populated();
    let place = env.root().join(DIR).display().to_string();
    let r = env.run(&["lock", REQ, "--retrieve", "--wipe"]).ok();
    assert_eq!(r.out(), format!("{DS}, {place}, locked: retrieve,wipe\n"));
    env.run(&["retrieve", &key("step=0,param=167")]).fails(
        8,
        &format!("dataset {DS} is locked against retrieve (unlock it to allow retrieve)"),
    );
    env.run(&["wipe", REQ, "--doit"]).fails(
        8,
        &format!("dataset {DS} is locked against wipe (unlock it to allow wipe)"),
    );
    assert_eq!(
        env.run(&["status", "class=od"]).ok().out(),
        format!(
            "{DS}, {place}, locked: retrieve,wipe\n\
             {{class=od,expver=0002,stream=oper,date=20231201,time=1200,domain=g}}, {}, locked: none\n",
            env.root().join("od:0002:oper:20231201:1200:g").display()
        )
    );
    let json = env.run(&["status", REQ, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(json.out().trim()).expect("one JSON line");
    assert_eq!(v["locks"], serde_json::json!(["retrieve", "wipe"]));
    env.run(&["lock", REQ]).fails(
        2,
        "name the operations: --archive, --retrieve, --list, --wipe, or --all",
    );
    env.run(&["lock", "class=rd", "--all"])
        .fails(4, "no dataset matches the request");
    let r = env.run(&["unlock", REQ, "--all"]).ok();
    assert_eq!(r.out(), format!("{DS}, {place}, locked: none\n"));
    assert_eq!(
        env.run(&["retrieve", &key("step=0,param=167")]).ok().stdout,
        b"first"
    );
    // Archive locks stop later invocations.
    env.run(&["lock", REQ, "--archive"]).ok();
    let f = env.write("x.bin", b"x");
    env.run(&[
        "archive",
        "--key",
        &key("step=12,param=167"),
        f.to_str().expect("path"),
    ])
    .fails(
        8,
        &format!(
            "archiving {}: dataset {DS} is locked against archive (unlock it to allow archive)",
            f.display()
        ),
    );
}

#[test]
fn move_to_another_root_keeps_every_field() {
    let env = Env::new();
    let a = env.path("a");
    let b = env.path("b");
    std::fs::create_dir_all(&a).expect("root a");
    std::fs::create_dir_all(&b).expect("root b");
    let config = env.write(
        "config.yaml",
        format!(
            "type: local\nengine: toc\nstore: file\nspaces:\n  - roots:\n      - path: {}\n      - path: {}\n",
            a.display(),
            b.display()
        ),
    );
    let cfg = config.to_str().expect("path");
    let f = env.write("f.bin", b"moved bytes");
    env.run(&[
        "--config",
        cfg,
        "archive",
        "--key",
        &key("step=0,param=167"),
        f.to_str().expect("path"),
    ])
    .ok();
    let r = env
        .run(&[
            "--config",
            cfg,
            "move",
            REQ,
            "--dest",
            b.to_str().expect("path"),
        ])
        .ok();
    assert_eq!(
        r.out(),
        format!(
            "{DS}, {} -> {}\n",
            a.join(DIR).display(),
            b.join(DIR).display()
        )
    );
    assert!(!a.join(DIR).exists() && b.join(DIR).join("toc").exists());
    assert_eq!(
        env.run(&["--config", cfg, "retrieve", &key("step=0,param=167")])
            .ok()
            .stdout,
        b"moved bytes"
    );
    env.run(&[
        "--config",
        cfg,
        "move",
        REQ,
        "--dest",
        b.to_str().expect("path"),
    ])
    .fails(
        2,
        &format!("dataset {DS} is already in root {}", b.display()),
    );
    env.run(&["--config", cfg, "move", REQ, "--dest", "/nowhere"])
        .fails(
            2,
            &format!(
                "/nowhere is not a root of this store (its roots: {}, {})",
                a.display(),
                b.display()
            ),
        );
}

/// What one `fieldstore archive` call did: the key, the bytes, the exit
/// code and what it said on standard error.
type ArchiveCall = (String, Vec<u8>, i32, String);

/// The hostile test of issue 26, item 1, through the binary: four
/// processes each archiving 25 fields, one `fieldstore archive --key` call
/// each, while `move` runs eight times between two roots of one file
/// system; three runs. Every archive that exited 0 reads back its bytes
/// and lists once, `list` succeeds, nothing is left where the dataset was,
/// and moving back is never refused.
#[test]
fn moves_racing_archive_calls_lose_nothing_through_the_binary() {
    for run in 0..3 {
        let env = Env::new();
        let (a, b) = (env.path("a"), env.path("b"));
        std::fs::create_dir_all(&a).expect("root a");
        std::fs::create_dir_all(&b).expect("root b");
        let config = env.write(
            "config.yaml",
            format!(
                "type: local\nengine: toc\nstore: file\nspaces:\n  - roots:\n      - path: {}\n      - path: {}\n",
                a.display(),
                b.display()
            ),
        );
        let cfg = config.to_str().expect("path").to_string();
        // The dataset exists before the race, in root a.
        let first = env.write("first.bin", b"first");
        env.run(&[
            "--config",
            &cfg,
            "archive",
            "--key",
            &key("step=0,param=1"),
            first.to_str().expect("path"),
        ])
        .ok();
        let writers: Vec<std::thread::JoinHandle<Vec<ArchiveCall>>> = (0..4)
            .map(|w| {
                let (cfg, dir) = (cfg.clone(), env.path(&format!("w{w}")));
                let bin = env!("CARGO_BIN_EXE_fieldstore");
                std::thread::spawn(move || {
                    std::fs::create_dir_all(&dir).expect("writer dir");
                    (0..25)
                        .map(|i| {
                            let k = key(&format!("step={},param={}", i + 1, 100 + w));
                            let bytes = format!("run {run} writer {w} field {i}").into_bytes();
                            let f = dir.join(format!("{i}.bin"));
                            std::fs::write(&f, &bytes).expect("field file");
                            let o = std::process::Command::new(bin)
                                .args(["--config", &cfg, "archive", "--key", &k])
                                .arg(&f)
                                .env_remove("FIELDSTORE_CONFIG")
                                .stdin(std::process::Stdio::null())
                                .output()
                                .expect("run fieldstore archive");
                            let err = String::from_utf8_lossy(&o.stderr).into_owned();
                            (k, bytes, o.status.code().unwrap_or(-1), err)
                        })
                        .collect()
                })
            })
            .collect();
        for m in 0..8 {
            let to = if m % 2 == 0 { &b } else { &a };
            let r = env.run(&[
                "--config",
                &cfg,
                "move",
                REQ,
                "--dest",
                to.to_str().expect("path"),
            ]);
            assert_eq!(r.code, 0, "run {run}, move {m}: {}", r.stderr);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut archived = vec![(key("step=0,param=1"), b"first".to_vec())];
        for h in writers {
            for (k, bytes, code, err) in h.join().expect("writer thread") {
                match code {
                    0 => archived.push((k, bytes)),
                    // Only a definite failure that names why.
                    4 => assert!(err.contains("moved") || err.contains("wiped"), "{k}: {err}"),
                    _ => panic!("run {run}: archive {k} exited {code}: {err}"),
                }
            }
        }
        let listed = env.run(&["--config", &cfg, "list", REQ]).ok();
        assert_eq!(
            listed.lines().len(),
            archived.len(),
            "run {run}: each field listed once"
        );
        for (k, bytes) in &archived {
            let out = env.path("out.bin");
            env.run(&[
                "--config",
                &cfg,
                "retrieve",
                k,
                "-o",
                out.to_str().expect("path"),
            ])
            .ok();
            assert_eq!(
                &std::fs::read(&out).expect("retrieved"),
                bytes,
                "run {run}: {k}"
            );
        }
        // One dataset directory, back in a (eight moves); nothing left in
        // b, and moving there again is not refused.
        assert!(a.join(DIR).join("toc").exists(), "run {run}");
        assert_eq!(
            std::fs::read_dir(&b).expect("root b").count(),
            0,
            "run {run}: b is empty"
        );
        env.run(&[
            "--config",
            &cfg,
            "move",
            REQ,
            "--dest",
            b.to_str().expect("path"),
        ])
        .ok();
    }
}
