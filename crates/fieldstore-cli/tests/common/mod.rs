//! Running the `fieldstore` binary against a private store.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The full key of a test field at `step` with `param`.
pub const BASE: &str =
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc";

/// A temporary directory holding a store root (`root/`, not created in
/// advance) and whatever files a test writes.
pub struct Env {
    pub dir: tempfile::TempDir,
}

/// What a run of the binary gave.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// Standard output as text.
    pub fn out(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("utf-8 output")
    }

    /// Standard output's lines.
    pub fn lines(&self) -> Vec<String> {
        self.out().lines().map(String::from).collect()
    }

    /// Assert success and return self.
    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "failed: {self:?}");
        self
    }

    /// Assert the exit code and the one-line error message, verbatim.
    #[track_caller]
    pub fn fails(&self, code: i32, message: &str) {
        assert_eq!(self.code, code, "exit code: {self:?}");
        assert_eq!(
            self.stderr,
            format!("fieldstore: error: {message}\n"),
            "{self:?}"
        );
    }
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The store root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// A path in the test directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write a file in the test directory.
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).expect("write");
        p
    }

    /// `config.yaml` in the test directory: a POSIX store at this test's
    /// root (created) with the schema file `schema`.
    pub fn config_with_schema(&self, schema: &Path) -> PathBuf {
        std::fs::create_dir_all(self.root()).expect("root");
        self.write(
            "config.yaml",
            format!(
                "type: local\nengine: toc\nschema: {}\nspaces:\n- roots:\n  - path: {}\n",
                schema.display(),
                self.root().display()
            ),
        )
    }

    /// The command, with `FIELDSTORE_ROOT` set to this store and the
    /// environment otherwise clean.
    pub fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fieldstore"));
        c.env_remove("FIELDSTORE_CONFIG")
            .env("FIELDSTORE_ROOT", self.root())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        c
    }

    /// Run with `args`.
    pub fn run(&self, args: &[&str]) -> Run {
        run(self.command().args(args))
    }

    /// Archive `bytes` under `key` (one invocation).
    #[track_caller]
    pub fn archive(&self, key: &str, bytes: &[u8]) {
        let f = self.write("field.bin", bytes);
        self.run(&["archive", "--key", key, f.to_str().expect("utf-8 path")])
            .ok();
    }
}

/// Flip one byte in the middle of the stored bytes of the one field
/// `selection` lists, found through `list --location` (the store's checksum
/// must then catch it).
#[track_caller]
pub fn damage_field(env: &Env, selection: &str) {
    let r = env.run(&["list", "--location", selection]).ok();
    let line = r.out();
    let uri = line.split(", file://").nth(1).expect("location");
    let (path, rest) = uri.split_once(" offset=").expect("offset");
    let offset: usize = rest
        .split_once(' ')
        .expect("length")
        .0
        .parse()
        .expect("offset");
    let mut data = std::fs::read(path).expect("read");
    data[offset + 3] ^= 0x20;
    std::fs::write(path, &data).expect("write");
}

/// Run a prepared command.
pub fn run(c: &mut Command) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().expect("run fieldstore");
    Run {
        code: status.code().expect("exited normally"),
        stdout,
        stderr: String::from_utf8(stderr).expect("utf-8 stderr"),
    }
}

pub mod fdb5;
pub mod raw;
pub mod servers;

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The repository's GRIB fixtures (`tests/fixtures/grib/*.grib`), sorted
/// by name.
pub fn fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/fixtures/grib"))
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "grib"))
        .collect();
    files.sort();
    files
}
