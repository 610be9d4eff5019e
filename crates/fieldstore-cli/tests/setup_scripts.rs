//! The setup scripts people source in their own shells (`scripts/setup.sh`,
//! `scripts/setup-ceph.sh`) leave the caller's shell options as they were,
//! and a failure makes `source` fail instead of closing the caller's shell
//! (issue 42, item 6).

mod common;

use std::process::Command;

use common::repo;

/// Run `script` in bash from the repository's root; its status and output
/// (standard error into standard output, in the order written).
fn bash(script: &str, path: &str, home: &std::path::Path) -> (i32, String) {
    let out = Command::new("/usr/bin/bash")
        .arg("-c")
        .arg(format!("exec 2>&1\n{script}"))
        .current_dir(repo())
        .env("PATH", path)
        .env("HOME", home)
        .output()
        .expect("run bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A shell with options unlike the scripts' own (`+e`, `+u`, no
/// `pipefail`, and some others set), which sources `script` and then
/// compares `set +o` and `shopt -p` with what they were.
fn options_kept(script: &str) -> String {
    format!(
        r#"set +e +u +o pipefail -o noclobber; shopt -s nullglob extglob
before="$(set +o; shopt -p)"
source {script} || {{ echo "source failed: $?"; exit 3; }}
after="$(set +o; shopt -p)"
if [ "$before" != "$after" ]; then
    diff <(echo "$before") <(echo "$after")
    exit 1
fi
false | true
echo "still here"
"#
    )
}

#[test]
fn setup_leaves_the_callers_options_as_they_were() {
    let path = std::env::var("PATH").unwrap_or_default();
    let home = std::env::var_os("HOME").map_or_else(|| "/root".into(), std::path::PathBuf::from);
    let (code, out) = bash(&options_kept("scripts/setup.sh"), &path, &home);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("still here\n"), "{out}");
}

#[test]
fn setup_without_cargo_fails_the_source_not_the_shell() {
    let home = tempfile::tempdir().expect("tempdir");
    let script =
        "source scripts/setup.sh; echo \"source said $?\"; [[ $- != *e* ]] && echo \"no -e\"";
    let (code, out) = bash(script, "/usr/bin:/bin", home.path());
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "setup: cargo not found; install Rust with rustup first\nsource said 1\nno -e\n"
        ),
        "{out}"
    );
}

#[test]
fn setup_ceph_leaves_the_callers_options_as_they_were() {
    // Stand-ins for Ceph's commands, so that nothing is installed.
    let bin = tempfile::tempdir().expect("tempdir");
    for tool in ["ceph-mon", "ceph-osd", "rados", "ceph-mgr"] {
        let p = bin.path().join(tool);
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let (code, out) = bash(&options_kept("scripts/setup-ceph.sh"), &path, bin.path());
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("still here\n"), "{out}");
}
