//! The C API from Fortran: `tests/fortran/fdb_client.f90` binds `fdb_c.h`
//! through ISO_C_BINDING, as MeteoSwiss's FDB5 bindings do, is compiled
//! here with gfortran and linked with `-lfdb5` (the name those bindings
//! link), and runs set up for FDB5 (`FDB5_CONFIG_FILE`, no fieldstore
//! variable): archive, flush, list by parameter names, retrieve and check
//! the bytes, an error message, a deleted handle refused.
//!
//! gfortran comes from `scripts/setup-capi.sh` (Debian's `gfortran`);
//! without it the test says so and passes, except under CI (`CI=true`).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;

fn gfortran() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("gfortran"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            !in_ci(),
            "gfortran is not installed (scripts/setup-capi.sh installs it)"
        );
        eprintln!("gfortran is not installed: not running the Fortran client (bash scripts/setup-capi.sh installs it)");
    }
    found
}

#[test]
fn a_fortran_client_bound_with_iso_c_binding_runs_on_the_library() {
    let Some(fc) = gfortran() else {
        return;
    };
    let dir = scratch("fortran");
    let exe = dir.join("fdb_client");
    let lib = lib_dir();
    let mut c = Command::new(fc);
    c.args(["-std=f2018", "-Wall", "-Werror", "-g"])
        .arg(crate_dir().join("tests/fortran/fdb_client.f90"))
        .arg("-J")
        .arg(&dir)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg("-lfdb5")
        .arg(format!("-Wl,-rpath,{}", lib.display()));
    let dirs = eccodes_dirs();
    if !dirs.is_empty() {
        c.arg(format!("-Wl,-rpath-link,{}", dirs.join(":")));
    }
    let out = c.output().expect("run gfortran");
    assert!(
        out.status.success(),
        "compiling the Fortran client:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let root = dir.join("root");
    std::fs::create_dir(&root).expect("root");
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "type: local\nengine: toc\nspaces:\n- roots:\n  - path: {}\n",
            root.display()
        ),
    )
    .expect("config");
    let mut run = Command::new(&exe);
    for var in [
        "FIELDSTORE_CONFIG",
        "FIELDSTORE_ROOT",
        "FDB_CONFIG",
        "FDB5_CONFIG",
        "FDB_CONFIG_FILE",
        "FDB_HOME",
        "FDB5_HOME",
    ] {
        run.env_remove(var);
    }
    let out = run
        .env("FDB5_CONFIG_FILE", &config)
        .current_dir(&dir)
        .output()
        .expect("run the Fortran client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(", 0 failed"),
        "the Fortran client failed ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("fortran: 78 checks"), "{stdout}");
    eprint!("{stdout}");
}
