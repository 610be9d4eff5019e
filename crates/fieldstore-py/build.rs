//! Where the extension finds ecCodes at run time (feature `grib`).
//!
//! `crates/fieldstore-grib` links ecCodes; its build script passes the
//! library directories it linked against on as `DEP_ECCODES_RPATH`. The
//! extension gets, as `DT_RPATH` (which also serves the libraries' own
//! dependencies: the wheel's `libeccodes.so` needs eckit from a sibling
//! directory):
//! 1. `$ORIGIN/../eccodeslib/lib64` and `$ORIGIN/../eckitlib/lib64`: the
//!    PyPI wheels `eccodeslib`/`eckitlib`, which the Python package depends
//!    on, installed next to the package in `site-packages`;
//! 2. the directories the build linked against, when they still exist after
//!    the build (a development build against `target/eccodes`; pip's build
//!    environment is deleted after the build).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_ECCODES_RPATH");
    if std::env::var_os("CARGO_FEATURE_GRIB").is_none() {
        return;
    }
    let linked = std::env::var("DEP_ECCODES_RPATH").unwrap_or_default();
    let mut dirs = vec![
        "$ORIGIN/../eccodeslib/lib64".to_string(),
        "$ORIGIN/../eckitlib/lib64".to_string(),
    ];
    dirs.extend(
        linked
            .split(':')
            .filter(|d| !d.is_empty() && !d.contains("pip-build-env"))
            .map(str::to_string),
    );
    println!("cargo:rustc-link-arg-cdylib=-Wl,--disable-new-dtags");
    for dir in dirs {
        println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,{dir}");
    }
}
