//! Any text: the schema parser returns a schema or an error, never panics;
//! a parsed schema's printed rules parse again.
#![no_main]
use fieldstore_core::Schema;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(schema) = Schema::parse("fuzz", text) {
        let printed = schema.to_string();
        // Types are resolved into the printed rules' declared types only, so
        // re-parsing may differ in undeclared types but must not fail.
        Schema::parse("printed", &printed).expect("printed schema parses");
    }
});
