//! Link arguments of the C library, as crates/fieldstore-capi/build.rs:
//! ecCodes' library directories (as crates/fieldstore-grib/build.rs found
//! them) into the rpath, `$ORIGIN` first; `SONAME` `libgribjump.so`.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_ECCODES_RPATH");
    let dirs = std::env::var("DEP_ECCODES_RPATH").unwrap_or_default();
    let dirs: Vec<&str> = dirs.split(':').filter(|d| !d.is_empty()).collect();
    println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags");
    println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,$ORIGIN");
    for dir in dirs {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    println!("cargo:rustc-link-arg-cdylib=-Wl,-soname,libgribjump.so");
}
