//! `fieldstore notify` against the real Aviso: `aviso-server` 0.13.1 and
//! unmodified `aviso listen` listeners of pyaviso 2.4.2 (both built or
//! installed and cached by scripts/test-aviso.sh, which names them in
//! `FIELDSTORE_AVISO_SERVER` and `FIELDSTORE_AVISO_CLIENT`; without them
//! the tests that need them say so and pass, unless
//! `FIELDSTORE_AVISO_REQUIRED` is set). Writers are processes of their
//! own that archive and flush through the library while the publisher
//! follows the store.
//!
//! The tests of bad input need no server and always run.

#[cfg(target_os = "linux")]
mod bench;
#[path = "../common/mod.rs"]
mod common;
mod listener;
mod server;
mod writer;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Env;
use listener::{Listener, Received};
use server::Server;

/// The writer processes' entry point (does nothing in a normal run).
#[test]
fn writer_process() {
    if let Ok(spec) = std::env::var(writer::SPEC) {
        writer::run(&spec);
    }
}

/// The server binary and the `aviso` command, or `None` (the test is
/// skipped, unless they are required).
fn aviso() -> Option<(PathBuf, PathBuf)> {
    match (server::binary(), listener::client()) {
        (Some(s), Some(c)) => Some((s, c)),
        _ => {
            assert!(
                std::env::var_os("FIELDSTORE_AVISO_REQUIRED").is_none(),
                "FIELDSTORE_AVISO_REQUIRED is set but FIELDSTORE_AVISO_SERVER or \
                 FIELDSTORE_AVISO_CLIENT is not"
            );
            eprintln!("skipped: no Aviso (run scripts/test-aviso.sh)");
            None
        }
    }
}

/// Wait until `cond`, at most `secs` seconds; `what` names it on failure.
#[track_caller]
fn wait_until(secs: u64, what: impl Fn() -> String, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "after {secs} s: {}", what());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `fieldstore notify`, its standard error collected.
struct Publisher {
    child: Child,
    err: Arc<Mutex<String>>,
}

impl Publisher {
    fn start(env: &Env, url: &str, state: &Path, extra: &[&str]) -> Publisher {
        let mut child = env
            .command()
            .args(["notify", "--aviso", url, "--state"])
            .arg(state)
            .args(["--max-backoff", "0.3"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fieldstore notify");
        let err = Arc::new(Mutex::new(String::new()));
        let e = err.clone();
        let stderr = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut e = e.lock().expect("lock");
                e.push_str(&line);
                e.push('\n');
            }
        });
        Publisher { child, err }
    }

    fn stderr(&self) -> String {
        self.err.lock().expect("lock").clone()
    }

    /// SIGKILL.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The listeners: a name, the `--identifier` filter, and which writers'
/// identifiers it matches.
struct Filter {
    name: &'static str,
    keys: &'static [(&'static str, &'static str)],
    matches: fn(&str) -> bool,
}

const FILTERS: [Filter; 4] = [
    Filter {
        name: "class=od",
        keys: &[("class", "od")],
        matches: |_| true,
    },
    Filter {
        name: "expver=0002",
        keys: &[("class", "od"), ("expver", "0002")],
        matches: |id| id.contains("expver=0002"),
    },
    Filter {
        name: "expver=0001,step=12",
        keys: &[("class", "od"), ("expver", "0001"), ("step", "12")],
        matches: |id| id.contains("expver=0001") && id.contains(",step=12,"),
    },
    Filter {
        name: "class=rd",
        keys: &[("class", "rd")],
        matches: |_| false,
    },
];

fn identifiers(got: &[Received]) -> BTreeSet<String> {
    got.iter().map(|r| r.identifier.clone()).collect()
}

/// Two writers (expvers 0001 and 0002) of `steps`, one flush of two fields
/// per step every 20 ms; what they flush, once both ended.
fn write_steps(env: &Env, steps: std::ops::Range<u32>) -> BTreeSet<String> {
    let mut writers: Vec<Child> = ["0001", "0002"]
        .iter()
        .map(|e| {
            writer::spawn(
                &env.root(),
                e,
                steps.clone(),
                Duration::from_millis(20),
                2,
                &env.path(&format!("times-{e}-{}", steps.start)),
                None,
            )
        })
        .collect();
    for w in &mut writers {
        assert!(w.wait().expect("writer").success(), "a writer failed");
    }
    ["0001", "0002"]
        .iter()
        .flat_map(|e| steps.clone().map(move |s| writer::identifier(e, s)))
        .collect()
}

#[test]
fn every_flush_reaches_every_matching_listener_across_kills_and_replays() {
    let Some((server_bin, client)) = aviso() else {
        return;
    };
    let env = Env::new();
    std::fs::create_dir_all(env.root()).expect("root");
    let mut server = Server::start(&server_bin, env.dir.path());
    let url = server.url();
    let live: Vec<Listener> = FILTERS
        .iter()
        .map(|f| Listener::start(&client, &url, f.name, f.keys, None))
        .collect();
    let state = env.path("notify.state");
    let mut publisher = Publisher::start(&env, &url, &state, &[]);

    // 1. The publisher is killed (SIGKILL) while writers flush, and
    //    restarted from its state file.
    let writers = std::thread::scope(|s| {
        let w = s.spawn(|| write_steps(&env, 0..25));
        wait_until(
            60,
            || format!("notifications before the kill: {:?}", live[0].received()),
            || live[0].received().len() >= 4,
        );
        publisher.kill();
        w.join().expect("writers")
    });
    let mut expected = writers;
    let publisher = Publisher::start(&env, &url, &state, &[]);
    wait_until(
        60,
        || {
            let got = identifiers(&live[0].received());
            format!(
                "missing after the publisher's restart: {:?}\npublisher: {}",
                expected.difference(&got).collect::<Vec<_>>(),
                publisher.stderr()
            )
        },
        || identifiers(&live[0].received()).is_superset(&expected),
    );
    std::thread::sleep(Duration::from_millis(300));
    for (f, l) in FILTERS.iter().zip(&live) {
        let want: BTreeSet<String> = expected
            .iter()
            .filter(|i| (f.matches)(i))
            .cloned()
            .collect();
        assert_eq!(identifiers(&l.received()), want, "listener {}", f.name);
    }
    assert!(
        publisher.stderr().contains("resuming after"),
        "{}",
        publisher.stderr()
    );
    let first: Vec<Received> = live[0].received();
    let duplicates = first.len() - identifiers(&first).len();
    eprintln!(
        "after the publisher's SIGKILL: {} notifications for {} identifiers ({duplicates} duplicates)",
        first.len(),
        expected.len()
    );
    // At most the one notification in flight when it was killed comes
    // twice: the restarted publisher announced only what it had not.
    assert!(duplicates <= 1, "{duplicates} duplicates: {first:?}");

    // 2. The server is killed (SIGKILL) and flushes go on: the publisher
    //    keeps them pending until it is back. The in-memory server forgets
    //    everything when it dies, so listeners started after it came back
    //    replay its history from the start (and go on live): pyaviso's
    //    `--from N` delivers the ids after N.
    server.kill();
    expected.extend(write_steps(&env, 25..40));
    wait_until(
        30,
        || format!("no pending notice: {}", publisher.stderr()),
        || publisher.stderr().contains("pending, kept"),
    );
    server.restart();
    let replaying: Vec<Listener> = FILTERS
        .iter()
        .map(|f| Listener::start(&client, &url, f.name, f.keys, Some(0)))
        .collect();
    let union = |i: usize| -> BTreeSet<String> {
        let mut s = identifiers(&live[i].received());
        s.extend(identifiers(&replaying[i].received()));
        s
    };
    wait_until(
        60,
        || {
            format!(
                "missing after the server's restart: {:?}\npublisher: {}",
                expected.difference(&union(0)).collect::<Vec<_>>(),
                publisher.stderr()
            )
        },
        || union(0).is_superset(&expected),
    );
    std::thread::sleep(Duration::from_millis(300));
    for (i, f) in FILTERS.iter().enumerate() {
        let want: BTreeSet<String> = expected
            .iter()
            .filter(|i| (f.matches)(i))
            .cloned()
            .collect();
        assert_eq!(union(i), want, "listener {} (live and replaying)", f.name);
    }
    wait_until(
        10,
        || publisher.stderr(),
        || publisher.stderr().contains("accepts notifications again"),
    );

    // 3. Aviso's replay from an id gives the same notifications again (the
    //    ids after it).
    let mut since_restart = replaying[0].received();
    since_restart.sort_by_key(|r| r.sequence);
    let from = since_restart[since_restart.len() / 3].sequence;
    let until = since_restart.last().expect("some").sequence;
    let replayed = replay(&client, &url, from, until);
    let want: Vec<Received> = since_restart
        .into_iter()
        .filter(|r| r.sequence > from)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(replayed, want, "aviso replay --from {from} --until {until}");
    // Every payload names its fields and where to retrieve them.
    for r in &want {
        assert_eq!(r.payload["count"], 2, "{r:?}");
        assert_eq!(
            r.payload["keys"]["param"],
            serde_json::json!(["167", "168"])
        );
        let req = r.payload["request"].as_str().expect("request");
        assert!(req.contains("param=167/168"), "{req}");
    }
    drop(publisher);
}

/// `aviso replay --from FROM --until UNTIL` of everything (`class=od`).
fn replay(client: &Path, url: &str, from: u64, until: u64) -> Vec<Received> {
    let mut child = std::process::Command::new(client)
        .args(["--base-url", url, "--json", "replay", "--event", "mars"])
        .args(["--identifier", "class=od", "--from", &from.to_string()])
        .args(["--until", &until.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aviso replay");
    let out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "aviso replay: {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("aviso replay did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let lines = reader.join().expect("reader");
    let mut got: Vec<Received> = lines.iter().filter_map(|l| listener::parse(l)).collect();
    got.sort_by_key(|r| r.sequence);
    got
}

#[test]
fn what_the_server_refuses_stays_pending_and_is_said() {
    let Some((server_bin, _)) = aviso() else {
        return;
    };
    let env = Env::new();
    std::fs::create_dir_all(env.root()).expect("root");
    let server = Server::start(&server_bin, env.dir.path());
    env.archive(&writer::key("0001", 0, 167), b"zero");
    // An event type the server has no schema for: refused.
    let r = common::run(env.command().args([
        "notify",
        "--aviso",
        &server.url(),
        "--event",
        "nosuch",
        "--state",
        "state",
        "--timeout",
        "0.5",
        "--max-backoff",
        "0.2",
    ]));
    assert_eq!(r.code, 9, "{r:?}");
    assert!(r.stderr.contains("refused with HTTP 4"), "{}", r.stderr);
    assert!(
        r.stderr.contains("1 notification pending, kept"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("the next run posts them"), "{}", r.stderr);
    // Nothing was recorded as notified: the next run, with the right
    // event type, posts it.
    let r = common::run(env.command().args([
        "notify",
        "--aviso",
        &server.url(),
        "--state",
        "state",
        "--timeout",
        "0.5",
    ]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.out().starts_with("posted 1 notifications for 1 fields"),
        "{r:?}"
    );
}

#[test]
fn a_server_that_does_not_answer_keeps_everything_pending() {
    let env = Env::new();
    env.archive(&writer::key("0001", 0, 167), b"zero");
    env.archive(&writer::key("0001", 6, 167), b"six");
    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let r = common::run(env.command().args([
        "notify",
        "--aviso",
        &url,
        "--state",
        "state",
        "--timeout",
        "0.3",
        "--max-backoff",
        "0.1",
    ]));
    assert_eq!(r.code, 9, "{r:?}");
    assert!(
        r.stderr
            .contains(&format!("cannot post to {url}: no answer")),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("2 notifications pending, kept"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("fieldstore: error: 2 notifications still pending"),
        "{}",
        r.stderr
    );
}

/// One publisher per state file: a second one, a process of its own, is
/// refused at start naming the first (whose lock it found), and the first
/// goes on; once the first is killed (SIGKILL: the kernel lets go of its
/// lock) a new one takes the state file over.
#[test]
fn a_second_publisher_on_one_state_file_is_refused() {
    let env = Env::new();
    env.archive(&writer::key("0001", 0, 167), b"zero");
    // A port nothing listens on: the publishers keep what they have pending.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let state = env.path("notify.state");
    let mut first = Publisher::start(&env, &url, &state, &[]);
    wait_until(
        30,
        || first.stderr(),
        || first.stderr().contains("following the store"),
    );
    let second = |extra: &[&str]| {
        let mut c = env.command();
        c.args(["notify", "--aviso", &url, "--state"])
            .arg(&state)
            .args(["--timeout", "0.3", "--max-backoff", "0.1"])
            .args(extra);
        common::run(&mut c)
    };
    let r = second(&[]);
    assert_eq!(r.code, 9, "{r:?}");
    let said = format!(
        "the notify state file {} is in use by another publisher (process {}",
        state.display(),
        first.child.id()
    );
    assert!(r.stderr.contains(&said), "{}", r.stderr);
    assert!(
        !r.stderr.contains("resuming"),
        "refused before reading the state file: {}",
        r.stderr
    );
    assert!(
        first.child.try_wait().expect("try_wait").is_none(),
        "the first publisher goes on: {}",
        first.stderr()
    );
    first.kill();
    let r = second(&[]);
    assert!(!r.stderr.contains("in use"), "{}", r.stderr);
    assert!(
        r.stderr.contains("resuming after 0 notified fields"),
        "{}",
        r.stderr
    );
    // Pending (nothing answers), kept for the next run.
    assert_eq!(r.code, 9, "{r:?}");
    assert!(
        r.stderr.contains("1 notification still pending"),
        "{}",
        r.stderr
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let env = Env::new();
    env.archive(&writer::key("0001", 0, 167), b"zero");
    let notify = |extra: &[&str]| {
        let mut c = env.command();
        c.args(["notify", "--state", "state"]).args(extra);
        common::run(&mut c)
    };
    // Identifier keys the store's schema cannot fill.
    let r = notify(&[
        "--aviso",
        "http://127.0.0.1:9",
        "--identifier",
        "class,nosuch,run=origin2",
    ]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(
        r.stderr.contains("needs 'nosuch', 'run' (from keyword 'origin2') but no rule of the store's schema has them"),
        "{}",
        r.stderr
    );
    // A malformed spec.
    let r = notify(&[
        "--aviso",
        "http://127.0.0.1:9",
        "--identifier",
        "class,,step",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("is not `name` or `name=keyword`"),
        "{}",
        r.stderr
    );
    // Not an http URL.
    let r = notify(&["--aviso", "https://aviso.example"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("https is not built in"), "{}", r.stderr);
    let r = notify(&["--aviso", "aviso:8000"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("is not http://HOST:PORT"), "{}", r.stderr);
    // A request no rule can match: keywords of two different rules.
    let schema = env.write(
        "schema",
        "[ class, expver [ type [ step, param ]]]\n[ class, stream [ date [ number, param ]]]\n",
    );
    let config = env.config_with_schema(&schema);
    let mut c = env.command();
    c.arg("--config")
        .arg(&config)
        .args(["notify", "--aviso", "http://127.0.0.1:9", "--state", "s2"])
        .args(["--identifier", "class,expver", "type=fc,number=1"]);
    let r = common::run(&mut c);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("the request names nothing: no rule of the schema has all of its keywords (type, number)"),
        "{}",
        r.stderr
    );
    // No state file was written by refused runs.
    assert!(!env.path("state").exists());
}

#[test]
fn through_type_remote_the_publisher_follows_a_fieldstore_server() {
    let Some((server_bin, client)) = aviso() else {
        return;
    };
    let env = Env::new();
    std::fs::create_dir_all(env.root()).expect("root");
    let server = Server::start(&server_bin, env.dir.path());
    let listener = Listener::start(&client, &server.url(), "class=od", &[("class", "od")], None);
    // A fieldstore server of the store, and a client config of it.
    let serve_config = env.write(
        "serve.yaml",
        format!(
            "type: catalogue\nengine: toc\nstore: file\nserverPort: 0\nspaces: [{{roots: [{{path: {}}}]}}]\n",
            env.root().display()
        ),
    );
    let mut serve = env
        .command()
        .arg("--config")
        .arg(&serve_config)
        .arg("serve")
        .stderr(Stdio::piped())
        .spawn()
        .expect("fieldstore serve");
    let mut lines = BufReader::new(serve.stderr.take().expect("stderr")).lines();
    let first = lines.next().expect("a line").expect("utf-8");
    let port = first
        .split("listening on 127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no port in {first:?}"))
        .to_string();
    std::thread::spawn(move || for _ in lines {});
    let remote = env.write(
        "remote.yaml",
        format!("type: remote\nhost: 127.0.0.1\nport: {port}\n"),
    );
    let mut publisher = env
        .command()
        .arg("--config")
        .arg(&remote)
        .args([
            "notify",
            "--aviso",
            &server.url(),
            "--state",
            "remote.state",
        ])
        .args(["--timeout", "20"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fieldstore notify");
    let perr = publisher.stderr.take().expect("stderr");
    let said = Arc::new(Mutex::new(String::new()));
    let s = said.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(perr).lines().map_while(Result::ok) {
            s.lock().expect("lock").push_str(&(line + "\n"));
        }
    });
    wait_until(
        30,
        || said.lock().expect("lock").clone(),
        || {
            said.lock()
                .expect("lock")
                .contains("told of flushes by 127.0.0.1")
        },
    );
    let f = env.write("f.bin", b"abc");
    for step in [3, 9] {
        common::run(
            env.command()
                .arg("--config")
                .arg(&remote)
                .args(["archive", "--key", &writer::key("0001", step, 167)])
                .arg(&f),
        )
        .ok();
    }
    let want: BTreeSet<String> = [3, 9]
        .iter()
        .map(|s| writer::identifier("0001", *s))
        .collect();
    wait_until(
        30,
        || format!("{:?}\n{}", listener.received(), said.lock().expect("lock")),
        || identifiers(&listener.received()) == want,
    );
    let _ = publisher.kill();
    let _ = publisher.wait();
    let _ = serve.kill();
    let _ = serve.wait();
}
