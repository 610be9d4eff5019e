//! Where to find ECMWF's ecCodes C library at link time, in order:
//! 1. `ECCODES_DIR` — an install prefix (`$ECCODES_DIR/lib` or `lib64`); an
//!    rpath is added to this package's own tests and benches, other binaries
//!    need `LD_LIBRARY_PATH`.
//! 2. `pkg-config eccodes` — Debian's `libeccodes-dev` (what
//!    `scripts/setup.sh` installs) lives in the default search path anyway.
//! 3. The linker's default search path.
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=ECCODES_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Some(prefix) = std::env::var_os("ECCODES_DIR") {
        let prefix = Path::new(&prefix);
        for sub in ["lib", "lib64"] {
            let dir = prefix.join(sub);
            if dir.is_dir() {
                println!("cargo:rustc-link-search=native={}", dir.display());
                println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
            }
        }
    } else {
        match Command::new("pkg-config")
            .args(["--libs-only-L", "eccodes"])
            .output()
        {
            Ok(out) if out.status.success() => {
                for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    if let Some(dir) = flag.strip_prefix("-L") {
                        println!("cargo:rustc-link-search=native={dir}");
                    }
                }
            }
            _ if !in_default_dirs() => println!(
                "cargo:warning=ecCodes not found: install libeccodes-dev \
                 (scripts/setup.sh does) or set ECCODES_DIR to an ecCodes install prefix"
            ),
            _ => {}
        }
    }
    // The library itself is named by `#[link(name = "eccodes")]` in src/ffi.rs.
}

/// Whether `libeccodes.so` is in one of the usual system library directories.
fn in_default_dirs() -> bool {
    let mut dirs: Vec<std::path::PathBuf> = [
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
