//! Driving the real FDB5 (ECMWF's PyPI wheels, installed by
//! `scripts/setup-fdb5.sh`) from the agreement tests: its Python, its
//! side scripts under `tests/fdb5/`, what they report.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::repo;

/// Whether `FIELDSTORE_SKIP_FDB5=1` asks to skip the comparison (said on
/// stderr): the only way these tests skip.
pub fn skipped() -> bool {
    let skip = std::env::var_os("FIELDSTORE_SKIP_FDB5").is_some_and(|v| v == "1");
    if skip {
        eprintln!("FIELDSTORE_SKIP_FDB5=1: not comparing with FDB5");
    }
    skip
}

/// The FDB5 venv's python, installing FDB5 on first use.
pub fn python() -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("scripts/setup-fdb5.sh"))
        .output()
        .expect("run scripts/setup-fdb5.sh");
    assert!(
        out.status.success(),
        "scripts/setup-fdb5.sh failed (needs python3 and PyPI; FIELDSTORE_SKIP_FDB5=1 skips \
         this test): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).expect("utf-8").trim())
}

/// A command running the side script `tests/fdb5/<script>` with FDB5's
/// python.
pub fn side(script: &str) -> Command {
    let mut c = Command::new(python());
    c.arg(repo().join("crates/fieldstore-cli/tests/fdb5").join(script));
    c
}

/// Run a side script built by [`side`]; the JSON it wrote to `json`.
pub fn report(mut c: Command, json: &Path) -> Value {
    let out = c.output().expect("run an FDB5 side script");
    assert!(
        out.status.success(),
        "{:?}: {}{}",
        c.get_args().next().unwrap_or_default(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).expect("the side script's JSON"))
        .expect("JSON")
}

/// Fail unless FDB5 ran the ecCodes fieldstore runs (`report`'s
/// `versions.eccodeslib`): keys would differ.
pub fn assert_same_eccodes(report: &Value) {
    let eccodes = report["versions"]["eccodeslib"].as_str().expect("version");
    assert!(
        eccodes.starts_with(&format!("{}.", fieldstore_grib::eccodes_version())),
        "FDB5 runs ecCodes {eccodes}, fieldstore {}: GRIB2 keys would differ \
         (docs/grib.md); run scripts/setup.sh",
        fieldstore_grib::eccodes_version()
    );
}

/// `p` as text, for arguments.
pub fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
