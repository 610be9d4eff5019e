//! The modules keep the layer order `lib.rs` documents (its "# Layers"
//! section): `fieldstore_testkit::layers`.

#[test]
fn modules_name_only_modules_below_them() {
    fieldstore_testkit::layers::check(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
}
