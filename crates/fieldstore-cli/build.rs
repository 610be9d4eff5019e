//! ecCodes' library directories, as crates/fieldstore-grib/build.rs found
//! them (`DEP_ECCODES_RPATH`, empty or unset for the system's ecCodes), go
//! into the binary's rpath, so that `fieldstore` runs without
//! `LD_LIBRARY_PATH`. `DT_RPATH` (`--disable-new-dtags`), not `DT_RUNPATH`:
//! it also serves the libraries' own dependencies (the wheel's libeccodes.so
//! needs eckit from a sibling directory).
fn main() {
    let dirs = std::env::var("DEP_ECCODES_RPATH").unwrap_or_default();
    let dirs: Vec<&str> = dirs.split(':').filter(|d| !d.is_empty()).collect();
    if !dirs.is_empty() {
        println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags");
        for dir in dirs {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
