//! Where to find ECMWF's ecCodes C library, in order:
//! 1. `ECCODES_DIR` — an install prefix (`$ECCODES_DIR/lib` or `lib64`), or
//!    the directory holding `libeccodes.so` itself. A wheel's `eccodeslib`
//!    directory works too: its sibling `eckitlib/lib64` (which the wheel's
//!    `libeccodes.so` needs) is added.
//! 2. `target/eccodes/lib-dirs` in the workspace, written by
//!    `scripts/setup.sh`: the PyPI wheel `eccodeslib` (the ecCodes FDB5's
//!    wheels use) in a project venv, one library directory per line; or
//!    `# system` when setup fell back to Debian's package.
//! 3. `pkg-config eccodes` — Debian's `libeccodes-dev`, in the default
//!    search path.
//! 4. The linker's default search path.
//!
//! For 1 and 2, executables need an rpath: this package's own tests and
//! benches get it here, and the directories are passed on as the `links`
//! metadata `rpath` (`DEP_ECCODES_RPATH`, `:`-separated) for dependents'
//! build scripts to do the same (see `crates/fieldstore-cli/build.rs`). The
//! rpath is written as `DT_RPATH` (`--disable-new-dtags`): unlike
//! `DT_RUNPATH` it also applies to the libraries' own dependencies, which is
//! how the wheel's `libeccodes.so` finds eckit. (It also means
//! `LD_LIBRARY_PATH` cannot swap the library at run time.)
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=ECCODES_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dirs = if let Some(prefix) = std::env::var_os("ECCODES_DIR") {
        from_prefix(Path::new(&prefix))
    } else {
        match from_setup() {
            Some(dirs) => dirs,
            None => {
                from_system();
                return;
            }
        }
    };
    if let Some(first) = dirs.first() {
        println!("cargo:rustc-link-search=native={}", first.display());
    }
    if !dirs.is_empty() {
        println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags");
        for dir in &dirs {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
        let joined: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        println!("cargo:rpath={}", joined.join(":"));
    }
    // The library is not linked: src/ffi.rs loads it at run time (dlopen),
    // found through these rpaths among other places (see `ffi::load`).
}

/// `ECCODES_DIR`: itself if it holds `libeccodes.so`, else its `lib`/`lib64`
/// and a wheel's sibling `eckitlib/lib64`.
fn from_prefix(prefix: &Path) -> Vec<PathBuf> {
    if prefix.join("libeccodes.so").exists() {
        return vec![prefix.to_path_buf()];
    }
    let mut dirs: Vec<PathBuf> = ["lib", "lib64"]
        .iter()
        .map(|sub| prefix.join(sub))
        .filter(|d| d.is_dir())
        .collect();
    if let Some(parent) = prefix.parent() {
        let eckit = parent.join("eckitlib").join("lib64");
        if eckit.is_dir() {
            dirs.push(eckit);
        }
    }
    if dirs.is_empty() {
        println!(
            "cargo:warning=ECCODES_DIR={} has no lib or lib64 directory",
            prefix.display()
        );
    }
    dirs
}

/// `target/eccodes/lib-dirs`: `Some(dirs)` for the wheel, `None` to use the
/// system's ecCodes.
fn from_setup() -> Option<Vec<PathBuf>> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let stamp = manifest.join("../../target/eccodes/lib-dirs");
    // (A missing file makes cargo rerun this script on every build, until
    // scripts/setup.sh writes it; the warning below says so.)
    println!("cargo:rerun-if-changed={}", stamp.display());
    let text = match std::fs::read_to_string(&stamp) {
        Ok(text) => text,
        Err(_) => {
            println!(
                "cargo:warning=no target/eccodes/lib-dirs: run scripts/setup.sh to build \
                 against the ecCodes FDB5 uses (PyPI eccodeslib); using the system's meanwhile"
            );
            return None;
        }
    };
    let dirs: Vec<PathBuf> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(PathBuf::from)
        .collect();
    if dirs.is_empty() {
        return None;
    }
    if !dirs[0].join("libeccodes.so").exists() {
        println!(
            "cargo:warning={} names {}, which has no libeccodes.so: delete target/eccodes and \
             run scripts/setup.sh again",
            stamp.display(),
            dirs[0].display()
        );
    }
    Some(dirs)
}

/// Debian's `libeccodes-dev` (through pkg-config), or the default paths.
fn from_system() {
    let found = match Command::new("pkg-config")
        .args(["--libs-only-L", "eccodes"])
        .output()
    {
        Ok(out) if out.status.success() => {
            for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    println!("cargo:rustc-link-search=native={dir}");
                }
            }
            true
        }
        _ => in_default_dirs(),
    };
    if !found {
        println!(
            "cargo:warning=ecCodes not found: run scripts/setup.sh (PyPI eccodeslib) \
             or set ECCODES_DIR to an ecCodes install prefix"
        );
        return;
    }
    let version = Command::new("pkg-config")
        .args(["--modversion", "eccodes"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let old = version.as_deref().is_none_or(|v| {
        let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) < (2, 50)
    });
    if old {
        println!(
            "cargo:warning=building against the system's ecCodes {}: GRIB2 statistically \
             processed fields get no 'timespan' key and are filed differently from FDB5 \
             (docs/grib.md)",
            version.as_deref().unwrap_or("(version unknown)")
        );
    }
}

/// Whether `libeccodes.so` is in one of the usual system library directories.
fn in_default_dirs() -> bool {
    let mut dirs: Vec<PathBuf> = [
        "/usr/lib",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/local/lib64",
    ]
    .iter()
    .map(Into::into)
    .collect();
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        dirs.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with("-linux-gnu")),
        );
    }
    dirs.iter().any(|d| d.join("libeccodes.so").exists())
}
