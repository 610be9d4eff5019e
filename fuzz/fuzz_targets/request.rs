//! Any text: the request parser returns a request or an error, never panics;
//! a parsed request round-trips through its printed form; matching and
//! expanding against ECMWF's schema never panic.
#![no_main]
use std::sync::OnceLock;

use fieldstore_core::{Key, Request, Schema};
use libfuzzer_sys::fuzz_target;

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(Schema::ecmwf)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(req) = text.parse::<Request>() {
        let again: Request = req.to_string().parse().expect("printed request parses");
        assert_eq!(again, req);
        let _ = schema().selector(&req);
        if let Ok(expansion) = schema().expand(&req) {
            for split in expansion.take(1000) {
                assert_eq!(schema().split(&split.full_key()).ok(), Some(split));
            }
        }
    }
    if let Ok(key) = text.parse::<Key>() {
        let _ = schema().split(&key);
    }
});
