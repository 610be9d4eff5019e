//! What the C-API tests share: the library under the names clients use,
//! compiling C programs against it, and running them (under valgrind).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;

/// The repository's root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// This crate's directory.
pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>`, where cargo put the library (the test binary is in
/// its `deps/`).
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// The library cargo built for this test: rustc's output in `deps/` (what
/// cargo builds for integration tests), or its copy in `target/<profile>`,
/// whichever is newer.
pub(crate) fn built_library() -> PathBuf {
    let profile = profile_dir();
    [
        profile.join("deps/libfieldstore_capi.so"),
        profile.join("libfieldstore_capi.so"),
    ]
    .into_iter()
    .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
    .max()
    .map(|(_, p)| p)
    .unwrap_or_else(|| {
        panic!(
            "libfieldstore_capi.so was not built in {}",
            profile.display()
        )
    })
}

/// A directory holding the library as clients find it, `libfieldstore.so`
/// and `libfdb5.so` (symbolic links to what cargo built), as
/// `scripts/install-capi.sh` installs it.
pub(crate) fn lib_dir() -> PathBuf {
    static ONCE: Once = Once::new();
    let dir = profile_dir().join("capi-test/lib");
    ONCE.call_once(|| {
        std::fs::create_dir_all(&dir).expect("create lib dir");
        let target = built_library();
        for name in ["libfieldstore.so", "libfdb5.so"] {
            let link = dir.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&target, &link).expect("symlink");
        }
    });
    dir
}

/// A scratch directory under `target/<profile>/capi-test/`, emptied.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = profile_dir().join("capi-test").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The C compiler: `$CC`, else `cc`.
pub(crate) fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// ecCodes' library directories the library was linked against.
pub(crate) fn eccodes_dirs() -> Vec<String> {
    env!("FIELDSTORE_CAPI_ECCODES_DIRS")
        .split(':')
        .filter(|d| !d.is_empty())
        .map(String::from)
        .collect()
}

fn check(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compile and link the C program `source` against the library (as a
/// client does: `-lfieldstore` and the header of `include/`) into `out`.
pub(crate) fn compile_c(source: &Path, out: &Path, extra: &[&str]) {
    let lib = lib_dir();
    let mut c = Command::new(cc());
    c.args([
        "-std=c11",
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
    ])
    .arg("-I")
    .arg(crate_dir().join("include"))
    .arg(source)
    .arg("-o")
    .arg(out)
    .arg(format!("-L{}", lib.display()))
    .arg("-lfieldstore")
    .arg(format!("-Wl,-rpath,{}", lib.display()))
    .arg("-lpthread");
    let dirs = eccodes_dirs();
    if !dirs.is_empty() {
        c.arg(format!("-Wl,-rpath-link,{}", dirs.join(":")));
    }
    c.args(extra);
    let output = c.output().unwrap_or_else(|e| panic!("run {}: {e}", cc()));
    check(&output, &format!("compiling {}", source.display()));
}

/// Whether this is CI (`CI=true`), where nothing may be skipped.
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// valgrind, if installed. Under CI it must be (scripts/setup-capi.sh
/// installs it).
pub(crate) fn valgrind() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("valgrind"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            !in_ci(),
            "valgrind is not installed (scripts/setup-capi.sh installs it)"
        );
        eprintln!("valgrind is not installed: running without it (bash scripts/setup-capi.sh installs it)");
    }
    found
}

/// Run `exe args…`, under valgrind when `memcheck` and it is installed:
/// any invalid access or leak (definite, indirect or possible) fails.
/// Returns standard output.
pub(crate) fn run(exe: &Path, args: &[&Path], memcheck: bool) -> String {
    let tool = if memcheck { valgrind() } else { None };
    let mut c = match &tool {
        Some(v) => {
            let mut c = Command::new(v);
            c.args([
                "--quiet",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect,possible",
                "--show-leak-kinds=definite,indirect,possible",
                "--error-exitcode=99",
                "--track-origins=yes",
            ])
            // A false positive inside glibc's dynamic linker (explained there).
            .arg(format!(
                "--suppressions={}",
                crate_dir().join("tests/valgrind.supp").display()
            ))
            .arg(exe);
            c
        }
        None => Command::new(exe),
    };
    c.args(args);
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
    check(
        &out,
        &format!(
            "{}{}",
            exe.display(),
            if tool.is_some() {
                " under valgrind"
            } else {
                ""
            }
        ),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
