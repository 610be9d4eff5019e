//! `fieldstore watch` and `retrieve --wait` as a user runs them: a watcher
//! process prints each field as soon as another process flushes it (line by
//! line, while it runs), and `retrieve --wait` returns once the last field
//! of its request is flushed.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::{Env, BASE};

fn key(step: u32) -> String {
    format!("{BASE},step={step},param=167")
}

#[test]
fn watch_prints_each_field_as_it_is_flushed() {
    let env = Env::new();
    env.archive(&key(0), b"zero");
    let mut child = env
        .command()
        .args(["watch", "class=od", "--count", "3", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the watcher");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || lines.next().expect("a line").expect("utf-8");
    // What is there first; then each field once it is flushed, printed
    // while the watcher still runs (it needs three).
    assert!(next().ends_with("{step=0,param=167}"));
    env.archive(&key(6), b"six");
    assert!(next().ends_with("{step=6,param=167}"));
    env.archive(&key(0), b"zero again");
    assert!(next().ends_with("{step=0,param=167} (replaced)"));
    let status = child.wait().expect("the watcher ends at its count");
    assert!(status.success());
}

#[test]
fn watch_json_and_since_now() {
    let env = Env::new();
    env.archive(&key(0), b"zero");
    let mut child = env
        .command()
        .args([
            "watch",
            "--since",
            "now",
            "--json",
            "--count",
            "1",
            "--timeout",
            "60",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the watcher");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Until the watcher has looked, a flush could count as "there already":
    // flush until a line comes (each flush a new step).
    let mut step = 6;
    let reader = std::thread::spawn(move || lines.next().expect("a line").expect("utf-8"));
    while !reader.is_finished() {
        env.archive(&key(step), b"new");
        step += 6;
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let line = reader.join().expect("reader");
    let v: serde_json::Value = serde_json::from_str(&line).expect("json");
    assert_ne!(v["key"]["step"], "0", "{line}");
    assert_eq!(v["replaced"], false);
    assert!(v["location"]["uri"]
        .as_str()
        .unwrap()
        .starts_with("file://"));
    assert!(child.wait().expect("ends").success());
}

#[test]
fn retrieve_waits_for_the_last_field() {
    let env = Env::new();
    env.archive(&key(0), b"zero");
    let out = env.path("out.grib");
    let request = format!("{BASE},step=0/6,param=167");
    let child = env
        .command()
        .args(["retrieve", &request, "--wait", "60", "-o"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start retrieve --wait");
    std::thread::sleep(std::time::Duration::from_millis(200));
    env.archive(&key(6), b"six");
    let r = child.wait_with_output().expect("retrieve ends");
    assert!(r.status.success(), "{r:?}");
    assert_eq!(std::fs::read(&out).expect("output"), b"zerosix");
    // What never comes: exit 11, naming it.
    let r = env.run(&[
        "retrieve",
        &format!("{BASE},step=12,param=167"),
        "--wait",
        "0.2",
    ]);
    assert_eq!(r.code, 11, "{r:?}");
    assert!(
        r.stderr
            .contains("1 field of the request still missing after")
            && r.stderr.contains("step=12"),
        "{r:?}"
    );
}

/// The polling fallback (for NFS and Lustre, where inotify does not see
/// other nodes' writes), forced: the same lines, found by polling.
#[test]
fn watch_by_polling_sees_each_flush() {
    let env = Env::new();
    env.archive(&key(0), b"zero");
    let mut child = env
        .command()
        .args([
            "watch",
            "class=od",
            "--poll",
            "--count",
            "2",
            "--timeout",
            "60",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the watcher");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || lines.next().expect("a line").expect("utf-8");
    assert!(next().ends_with("{step=0,param=167}"));
    env.archive(&key(6), b"six");
    assert!(next().ends_with("{step=6,param=167}"));
    assert!(child.wait().expect("ends at its count").success());
}
