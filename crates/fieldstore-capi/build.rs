//! Link arguments of the C library.
//!
//! - ecCodes' library directories, as crates/fieldstore-grib/build.rs found
//!   them (`DEP_ECCODES_RPATH`, empty for the system's ecCodes), go into the
//!   rpath of the shared library and of this crate's test binaries, as
//!   `DT_RPATH` (which, unlike `DT_RUNPATH`, also serves the libraries' own
//!   dependencies: the wheel's `libeccodes.so` needs eckit from a sibling
//!   directory). `$ORIGIN` comes first, so that an installed copy also finds
//!   an ecCodes placed next to it.
//! - The same directories are given to the crate's tests
//!   (`FIELDSTORE_CAPI_ECCODES_DIRS`), which link C programs against the
//!   library.
//! - The shared library's `SONAME` is `libfieldstore.so`: the install step
//!   puts it on disk under that name and links `libfdb5.so` to it.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_ECCODES_RPATH");
    let dirs = std::env::var("DEP_ECCODES_RPATH").unwrap_or_default();
    // The tests link C programs against the library: the linker needs
    // ecCodes' directories to check the library's own dependencies.
    println!("cargo:rustc-env=FIELDSTORE_CAPI_ECCODES_DIRS={dirs}");
    let dirs: Vec<&str> = dirs.split(':').filter(|d| !d.is_empty()).collect();
    println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags");
    println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,$ORIGIN");
    for dir in dirs {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    println!("cargo:rustc-link-arg-cdylib=-Wl,-soname,libfieldstore.so");
}
