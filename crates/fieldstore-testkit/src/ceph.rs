//! A throwaway single-node Ceph cluster for tests (`scripts/ceph-start.sh`),
//! shared by the RADOS backend's tests and the hammer's.
//!
//! A cluster is stopped by the script's watchdog when the test process that
//! started it exits (it is given our PID), so a test binary that panics or
//! is killed leaves no daemons behind. Without Ceph installed, [`start`]
//! says so and returns `None` (the test skips), except under `CI=true`,
//! where that is a failure.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// A running cluster.
#[derive(Debug)]
pub struct Cluster {
    /// Its directory (logs, ceph.conf).
    pub dir: PathBuf,
    /// Its ceph.conf.
    pub conf: String,
    /// The pool the script created.
    pub pool: String,
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// Whether Ceph's daemons and `rados` tool are installed.
pub fn installed() -> bool {
    ["ceph-mon", "ceph-osd", "rados"].iter().all(|c| {
        Command::new("sh")
            .args(["-c", &format!("command -v {c}")])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Start a cluster with `objectstore` (memstore or bluestore).
///
/// # Panics
/// If the cluster does not start, or Ceph is not installed under `CI=true`.
pub fn start(objectstore: &str) -> Option<Cluster> {
    start_osds(objectstore, 1)
}

/// Start a cluster with `osds` OSDs on `objectstore`: its pool is replicated
/// across them (size min(osds, 3), min_size 2 from 3 OSDs on) and a dead OSD
/// is noticed within seconds (see `scripts/ceph-start.sh`).
///
/// # Panics
/// If the cluster does not start, or Ceph is not installed under `CI=true`.
pub fn start_osds(objectstore: &str, osds: usize) -> Option<Cluster> {
    if !installed() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but Ceph is not installed: scripts/setup-ceph.sh installs it (ceph-mon, ceph-osd, ceph-common, ceph-mgr)");
        }
        // Straight to the file descriptor: libtest captures eprintln!.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: Ceph is not installed (ceph-mon, ceph-osd, rados): the RADOS tests do nothing; scripts/setup-ceph.sh installs it"
        );
        return None;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("fieldstore-ceph-{}-{nanos}", std::process::id()));
    let out = Command::new(scripts().join("ceph-start.sh"))
        .arg(&dir)
        .env("CEPH_OBJECTSTORE", objectstore)
        .env("CEPH_OWNER_PID", std::process::id().to_string())
        .env("CEPH_OP_TIMEOUT", "60")
        .env("CEPH_OSDS", osds.to_string())
        .output()
        .expect("running scripts/ceph-start.sh");
    assert!(
        out.status.success(),
        "scripts/ceph-start.sh {} failed ({}):\n{}",
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = dir.canonicalize().expect("the cluster directory");
    Some(Cluster {
        conf: dir.join("ceph.conf").display().to_string(),
        pool: "fieldstore".to_string(),
        dir,
    })
}

/// This test binary's memstore cluster, started on first use; `None`
/// (skip) without Ceph outside CI.
pub fn cluster() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    CLUSTER.get_or_init(|| start("memstore")).as_ref()
}

/// A namespace no other test uses.
pub fn namespace(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl Cluster {
    /// The `rados:` section of a config for `namespace`, as YAML.
    pub fn section(&self, namespace: &str) -> String {
        format!(
            "rados:\n  conf: {}\n  pool: {}\n  namespace: {namespace}\n  timeout: 60\n",
            self.conf, self.pool
        )
    }

    /// Run the `rados` tool on this cluster; its stdout.
    ///
    /// # Panics
    /// If the tool fails.
    pub fn rados(&self, namespace: &str, args: &[&str]) -> Vec<u8> {
        let out = Command::new("rados")
            .args(["-c", &self.conf, "-p", &self.pool, "-N", namespace])
            .args(args)
            .output()
            .expect("running rados");
        assert!(
            out.status.success(),
            "rados {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Run the `ceph` tool on this cluster (`ceph -c CONF ARGS`); its stdout.
    ///
    /// # Panics
    /// If the tool fails.
    pub fn ceph(&self, args: &[&str]) -> String {
        let out = Command::new("ceph")
            .args(["-c", &self.conf, "--connect-timeout", "30"])
            .args(args)
            .output()
            .expect("running ceph");
        assert!(
            out.status.success(),
            "ceph {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// SIGKILL (`"kill"`), restart (`"start"`), SIGSTOP (`"stop"`: a hung
    /// OSD) or SIGCONT (`"cont"`) OSD `id`
    /// (`scripts/ceph-osd.sh`).
    ///
    /// # Panics
    /// If the script fails.
    pub fn osd(&self, id: usize, action: &str) {
        let out = Command::new(scripts().join("ceph-osd.sh"))
            .arg(&self.dir)
            .arg(action)
            .arg(id.to_string())
            .output()
            .expect("running scripts/ceph-osd.sh");
        assert!(
            out.status.success(),
            "ceph-osd.sh {action} {id}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stop it now (`scripts/ceph-stop.sh`) rather than when the process
    /// exits.
    pub fn stop(&self) {
        let _ = Command::new(scripts().join("ceph-stop.sh"))
            .arg(&self.dir)
            .output();
    }
}
