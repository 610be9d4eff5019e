//! Give the shared library libdaos's SONAME, so that it can also stand in
//! for libdaos through `LD_LIBRARY_PATH` for programs linked against it.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdaos.so.2");
}
