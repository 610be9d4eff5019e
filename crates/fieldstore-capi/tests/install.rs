//! The install step (`scripts/install-capi.sh`) and the README's C example:
//! the library lands under both names, with its header and pkg-config
//! files, and the README's program builds with those files (dynamically,
//! and statically from `libfieldstore.a`) and runs.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// The README's C example (the block after the `capi-example` marker).
fn readme_example() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README");
    let after = readme
        .split("<!-- capi-example")
        .nth(1)
        .expect("the README's capi-example marker");
    let start = after.find("```c\n").expect("a C block") + 5;
    let end = after[start..].find("```").expect("its end") + start;
    after[start..end].to_string()
}

/// `Libs`, `Libs.private` and `Cflags` of a `.pc` file, variables
/// substituted (when pkg-config itself is not installed).
fn pc_fields(pc: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(pc).expect("read .pc");
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut fields = HashMap::new();
    let subst = |s: &str, vars: &HashMap<String, String>| {
        let mut s = s.to_string();
        for (k, v) in vars {
            s = s.replace(&format!("${{{k}}}"), v);
        }
        s
    };
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=').filter(|(k, _)| !k.contains(':')) {
            let v = subst(v.trim(), &vars);
            vars.insert(k.trim().to_string(), v);
        } else if let Some((k, v)) = line.split_once(':') {
            fields.insert(k.trim().to_string(), subst(v.trim(), &vars));
        }
    }
    fields
}

fn install(prefix: &Path) {
    let out = Command::new("bash")
        .arg(repo().join("scripts/install-capi.sh"))
        .arg("--from")
        .arg(built_library().parent().expect("a directory"))
        .arg(prefix)
        .output()
        .expect("run scripts/install-capi.sh");
    assert!(
        out.status.success(),
        "install-capi.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn build(example: &Path, exe: &Path, flags: &[String]) {
    let out = Command::new(cc())
        .args(["-std=c11", "-Wall", "-Werror"])
        .arg(example)
        .arg("-o")
        .arg(exe)
        .args(flags)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "building the README's example with {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_example(exe: &Path, root: &Path) -> String {
    let out = Command::new(exe)
        .env_clear()
        .env("FIELDSTORE_ROOT", root)
        .output()
        .expect("run the example");
    assert!(
        out.status.success(),
        "{}: {}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_install_step_lays_out_what_clients_look_for_and_the_readme_example_runs() {
    let dir = scratch("install");
    let prefix = dir.join("prefix");
    install(&prefix);
    let lib = prefix.join("lib");
    assert_eq!(
        std::fs::read_link(lib.join("libfdb5.so")).expect("libfdb5.so is a link"),
        PathBuf::from("libfieldstore.so")
    );
    for f in [
        "lib/libfieldstore.so",
        "lib/libfieldstore.a",
        "include/fdb5/api/fdb_c.h",
        "lib/pkgconfig/fieldstore.pc",
        "lib/pkgconfig/fdb5.pc",
    ] {
        assert!(prefix.join(f).is_file(), "{f} missing");
    }

    let example = dir.join("example.c");
    std::fs::write(&example, readme_example()).expect("write");
    let pc = lib.join("pkgconfig/fdb5.pc");
    let fields = pc_fields(&pc);
    let pkg_config = Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
        .args(["--cflags", "--libs", "fdb5"])
        .output();
    let dynamic: Vec<String> = match pkg_config {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect(),
        _ => {
            eprintln!("pkg-config is not installed: reading fdb5.pc directly");
            format!("{} {}", fields["Cflags"], fields["Libs"])
                .split_whitespace()
                .map(String::from)
                .collect()
        }
    };
    let exe = dir.join("example");
    build(&example, &exe, &dynamic);
    let root = dir.join("root");
    let out = run_example(&exe, &root);
    assert!(out.contains(" offset 0 length 11"), "{out}");
    assert!(out.starts_with(&root.display().to_string()), "{out}");

    // Statically: the archive and its native dependencies (Libs.private).
    let mut flags: Vec<String> = fields["Cflags"]
        .split_whitespace()
        .map(String::from)
        .collect();
    flags.push(lib.join("libfieldstore.a").display().to_string());
    flags.extend(fields["Libs.private"].split_whitespace().map(String::from));
    let exe = dir.join("example-static");
    build(&example, &exe, &flags);
    let out = run_example(&exe, &dir.join("root-static"));
    assert!(out.contains(" offset 0 length 11"), "{out}");
    let needed = Command::new("readelf")
        .arg("-d")
        .arg(&exe)
        .output()
        .expect("readelf");
    assert!(
        !String::from_utf8_lossy(&needed.stdout).contains("libfieldstore"),
        "the static build needs no libfieldstore.so"
    );
}
