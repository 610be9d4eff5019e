//! Without librados, opening a RADOS backend is a clear `Unsupported`
//! error naming the library; nothing else needs it. (Its own test binary:
//! the library is loaded once per process.)

use fieldstore::{Config, ErrorKind, FieldStore};

#[test]
fn missing_librados_is_named() {
    std::env::set_var("FIELDSTORE_LIBRADOS", "/nonexistent/librados.so.2");
    let config = Config::from_yaml(
        "engine: rados\nstore: rados\nrados:\n  pool: p\n",
        std::path::Path::new("."),
        "test",
    )
    .expect("config");
    let e = FieldStore::open(config).expect_err("no librados");
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("/nonexistent/librados.so.2"), "{e}");
    assert!(e.to_string().contains("librados2"), "{e}");
}
