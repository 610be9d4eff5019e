//! Servers for the remote-protocol tests: FDB5's `fdb-server` (a
//! catalogue and a store server, from the 5.25 wheels) and `fieldstore
//! serve`, on free loopback ports, killed when dropped; and the wheels'
//! tools.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::fdb5;
use super::repo;

/// GRIB fixtures the remote tests write through FDB5's and fieldstore's
/// clients.
pub const FILES: &[&str] = &[
    "synth11.grib",
    "levtypes.grib",
    "rd-fc.grib",
    "template.grib",
    "timespan.grib",
    "climatology.grib",
];

/// Requests they list and take axes of (besides everything).
pub const REQUESTS: &[&str] = &[
    "class=od",
    "class=od,levtype=pl",
    "class=od,param=167/130",
    "class=rd",
    "stream=oper,levtype=sfc",
];

/// The wipe secret FDB5's servers (and `fieldstore serve`, when the test
/// wants wipes) share.
pub const SECRET: &str = "fdb5-serve-test";

/// A child process killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The wheels: their `bin/`, the `LD_LIBRARY_PATH` naming their
/// libraries, and the venv's python (pyfdb 5.25).
pub struct Wheels {
    pub bin: PathBuf,
    pub libs: String,
    pub python: PathBuf,
}

impl Wheels {
    pub fn find() -> Wheels {
        let python = fdb5::python();
        let venv = python.parent().and_then(Path::parent).expect("venv");
        let lib = std::fs::read_dir(venv.join("lib"))
            .expect("venv lib")
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("site-packages"))
            .find(|p| p.join("fdb5lib").is_dir())
            .expect("site-packages with fdb5lib");
        let libs = ["fdb5lib", "eckitlib", "metkitlib", "eccodeslib"]
            .iter()
            .map(|l| lib.join(l).join("lib64").display().to_string())
            .collect::<Vec<_>>()
            .join(":");
        Wheels {
            bin: lib.join("fdb5lib/bin"),
            libs,
            python,
        }
    }

    /// Give `c` the wheels' libraries and `config` as its FDB5 config,
    /// isolated from any system FDB configuration.
    pub fn isolate(&self, c: &mut Command, config: &Path, home: &Path) {
        c.env("LD_LIBRARY_PATH", &self.libs)
            .env("FDB5_CONFIG_FILE", config)
            .env("FDB_HOME", home)
            .env("FDB_WIPE_SECRET", SECRET)
            .stdin(Stdio::null());
        for var in [
            "FDB_CONFIG",
            "FDB5_CONFIG",
            "FDB_CONFIG_FILE",
            "FDB5_SCHEMA_FILE",
            "FDB_ROOT",
            "FDB5_ROOT",
            "FDB_ROOT_DIRECTORY",
        ] {
            c.env_remove(var);
        }
    }

    /// A wheel tool with `config` as its FDB5 config ([`Wheels::isolate`]).
    pub fn tool(&self, name: &str, config: &Path, home: &Path) -> Command {
        let mut c = Command::new(self.bin.join(name));
        self.isolate(&mut c, config, home);
        c
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub fn wait_for_port(port: u16) {
    let until = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn schema() -> PathBuf {
    repo().join("tests/fixtures/schema/ecmwf.schema")
}

pub fn spaces(root: &Path) -> String {
    std::fs::create_dir_all(root).expect("root");
    format!(
        "spaces: [{{handler: Default, roots: [{{path: {}}}]}}]\n",
        root.display()
    )
}

/// FDB5's servers (catalogue, store); the client config reaching them.
pub fn start_fdb5(w: &Wheels, dir: &Path) -> (Vec<Killed>, PathBuf) {
    let (cport, sport) = (free_port(), free_port());
    let cat = dir.join("fdb5-cat.yaml");
    let store = dir.join("fdb5-store.yaml");
    std::fs::write(
        &cat,
        format!(
            "type: catalogue\nengine: toc\nstore: file\nschema: {}\nserverPort: {cport}\n\
             stores: [{{default: \"localhost:{sport}\"}}]\n{}",
            schema().display(),
            spaces(&dir.join("fdb5-cat-root"))
        ),
    )
    .expect("write");
    std::fs::write(
        &store,
        format!(
            "type: store\nengine: toc\nstore: file\nschema: {}\nserverPort: {sport}\n{}",
            schema().display(),
            spaces(&dir.join("fdb5-store-root"))
        ),
    )
    .expect("write");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let mut servers = Vec::new();
    for (config, port) in [(&cat, cport), (&store, sport)] {
        let child = w
            .tool("fdb-server", config, &home)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fdb-server");
        servers.push(Killed(child));
        wait_for_port(port);
    }
    (servers, client_config(dir, "fdb5-client.yaml", cport))
}

pub fn client_config(dir: &Path, name: &str, port: u16) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("type: remote\nengine: remote\nstore: remote\nhost: localhost\nport: {port}\n"),
    )
    .expect("write");
    p
}

/// `fieldstore serve` on free ports: the child, its catalogue port, and
/// what it writes to standard error after its first line (complete once
/// the child is gone).
pub fn start_fieldstore(
    dir: &Path,
    extra: &str,
    secret: bool,
) -> (Killed, u16, std::thread::JoinHandle<String>) {
    start_fieldstore_on(dir, 0, extra, secret)
}

/// [`start_fieldstore`] on catalogue port `port` (0: any free one), so
/// that a test can restart it where its clients look.
pub fn start_fieldstore_on(
    dir: &Path,
    port: u16,
    extra: &str,
    secret: bool,
) -> (Killed, u16, std::thread::JoinHandle<String>) {
    let config = dir.join("serve.yaml");
    std::fs::write(
        &config,
        format!(
            "type: catalogue\nengine: toc\nstore: file\nschema: {}\nserverPort: {port}\n{extra}{}",
            schema().display(),
            spaces(&dir.join("fieldstore-root"))
        ),
    )
    .expect("write");
    let (child, port, log) = spawn_serve(&config, secret);
    (Killed(child), port, log)
}

/// `fieldstore serve` with the role config `config`, FDB5's wipe secret
/// given if `secret`: the child, the port of its listening line, and what
/// it writes to standard error after that line (complete once the child
/// is gone). A port just freed by a killed server is retried for a few
/// seconds.
pub fn spawn_serve(config: &Path, secret: bool) -> (Child, u16, std::thread::JoinHandle<String>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fieldstore"));
    c.arg("--config")
        .arg(config)
        .arg("serve")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    if secret {
        c.env("FDB_WIPE_SECRET", SECRET);
    } else {
        c.env_remove("FDB_WIPE_SECRET");
    }
    let until = Instant::now() + Duration::from_secs(10);
    let (child, mut stderr, port) = loop {
        let mut child = c.spawn().expect("start fieldstore serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("the listening line");
        let found = line
            .split("listening on 127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse().ok());
        if let Some(port) = found {
            break (child, stderr, port);
        }
        let _ = child.wait();
        assert!(
            line.contains("Address already in use") && Instant::now() < until,
            "fieldstore serve did not start: {line}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let log = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    (child, port, log)
}

/// Run a tool; (exit code, stdout, stderr).
pub fn run(mut c: Command) -> (i32, String, String) {
    let out = c.output().expect("run a wheel tool");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
