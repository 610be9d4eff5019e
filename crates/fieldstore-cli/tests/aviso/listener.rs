//! Unmodified `aviso listen` (pyaviso 2.4.2's command, from
//! `FIELDSTORE_AVISO_CLIENT`) with a filter, its echo trigger's JSON lines
//! collected as they come.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `aviso` command, from `FIELDSTORE_AVISO_CLIENT`.
pub(crate) fn client() -> Option<PathBuf> {
    std::env::var_os("FIELDSTORE_AVISO_CLIENT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// One received notification: its sequence number, identifier (`k=v,…`
/// sorted) and payload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Received {
    pub(crate) sequence: u64,
    pub(crate) identifier: String,
    pub(crate) payload: serde_json::Value,
}

pub(crate) fn parse(line: &str) -> Option<Received> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let id: BTreeMap<String, String> = v["identifier"]
        .as_object()?
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().map_or_else(|| v.to_string(), String::from),
            )
        })
        .collect();
    let identifier: Vec<String> = id.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Some(Received {
        sequence: v["sequence"].as_u64()?,
        identifier: identifier.join(","),
        payload: v["payload"].clone(),
    })
}

/// A running `aviso listen`; killed when dropped.
pub(crate) struct Listener {
    child: Child,
    got: Arc<Mutex<Vec<Received>>>,
    err: Arc<Mutex<String>>,
    pub(crate) name: String,
}

impl Listener {
    /// `aviso listen --event mars --identifier k=v …` against `url`, from
    /// `from` (a sequence id: replay, then live) or live only.
    pub(crate) fn start(
        client: &Path,
        url: &str,
        name: &str,
        filter: &[(&str, &str)],
        from: Option<u64>,
    ) -> Listener {
        let mut c = Command::new(client);
        c.args([
            "--base-url",
            url,
            "--json",
            "listen",
            "--no-state-store",
            "--event",
            "mars",
        ]);
        for (k, v) in filter {
            c.args(["--identifier", &format!("{k}={v}")]);
        }
        if let Some(id) = from {
            c.args(["--from", &id.to_string()]);
        }
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start aviso listen");
        let got = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(String::new()));
        let out = child.stdout.take().expect("stdout");
        let g = got.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(r) = parse(&line) {
                    g.lock().expect("lock").push(r);
                }
            }
        });
        let stderr = child.stderr.take().expect("stderr");
        let e = err.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut e = e.lock().expect("lock");
                e.push_str(&line);
                e.push('\n');
            }
        });
        let l = Listener {
            child,
            got,
            err,
            name: name.to_string(),
        };
        l.wait_listening();
        l
    }

    /// Until it says it listens (its stream is open), at most 30 s.
    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.err.lock().expect("lock").contains("Listening for") {
            assert!(
                Instant::now() < deadline,
                "listener {} not listening after 30 s: {}",
                self.name,
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What it received so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.got.lock().expect("lock").clone()
    }

    /// Its standard error so far.
    pub(crate) fn stderr(&self) -> String {
        self.err.lock().expect("lock").clone()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
