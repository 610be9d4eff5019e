//! ecCodes is loaded at first use (crates/fieldstore-grib/src/ffi.rs):
//! `FIELDSTORE_ECCODES_LIBRARY` names the library; one that cannot be
//! loaded, or is not ecCodes, is a clear error at the first GRIB use, and
//! nothing is archived.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fieldstore(root: &Path, library: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .env("FIELDSTORE_ROOT", root)
        .env_remove("FIELDSTORE_CONFIG")
        .env("FIELDSTORE_ECCODES_LIBRARY", library)
        .args(args)
        .output()
        .expect("run fieldstore")
}

fn eccodes_of_info(root: &Path, library: &str) -> String {
    let out = fieldstore(root, library, &["info", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    v["eccodes"].as_str().expect("eccodes").to_string()
}

#[test]
fn a_library_that_cannot_be_loaded_is_named_and_nothing_is_archived() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let grib = repo().join("tests/fixtures/grib/x138-300.grib");
    for (library, says) in [
        (
            "/nonexistent/libeccodes.so",
            "cannot open shared object file",
        ),
        // Loaded, but not ecCodes.
        ("libm.so.6", "no codes_get_api_version in it"),
    ] {
        let info = eccodes_of_info(&root, library);
        assert!(
            info.starts_with(&format!(
                "unavailable (FIELDSTORE_ECCODES_LIBRARY={library}: "
            )) && info.contains(says),
            "{info}"
        );
        let out = fieldstore(&root, library, &["archive", grib.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{out:?}");
        assert!(
            err.contains("ecCodes cannot be loaded")
                && err.contains(&format!("FIELDSTORE_ECCODES_LIBRARY={library}"))
                && err.contains(says),
            "{err}"
        );
        let listed = fieldstore(&root, library, &["list", "class=rd"]);
        assert!(listed.stdout.is_empty(), "{listed:?}");
    }
}

#[test]
fn the_library_named_is_the_one_used() {
    // The build's ecCodes (scripts/setup.sh's wheel), by path.
    let dirs = std::fs::read_to_string(repo().join("target/eccodes/lib-dirs")).unwrap_or_default();
    let Some(dir) = dirs
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
    else {
        eprintln!("the system's ecCodes: no wheel to name by path");
        return;
    };
    let library = format!("{dir}/libeccodes.so");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let version = eccodes_of_info(&root, &library);
    assert!(version.starts_with("2."), "{version}");
    let grib = repo().join("tests/fixtures/grib/x138-300.grib");
    let out = fieldstore(&root, &library, &["archive", grib.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let listed = fieldstore(&root, &library, &["list", "class=rd"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout).trim(),
        "{class=rd,expver=xxxx,stream=oper,date=20191110,time=0000,domain=g}{type=an,levtype=pl}{step=0,levelist=300,param=138}"
    );
}
