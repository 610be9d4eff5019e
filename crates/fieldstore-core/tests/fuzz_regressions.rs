//! Inputs that once broke a fuzz target's invariant, kept as regressions
//! (`scripts/fuzz.sh` finds them; copy new ones into `fuzz_regressions/`).

use fieldstore_core::Schema;

/// The schema target's invariant: a schema that parses prints as rules that
/// parse again.
#[test]
fn schema_regressions_hold_the_fuzz_invariant() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz_regressions/schema");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if let Ok(schema) = Schema::parse("fuzz", text) {
            let printed = schema.to_string();
            if let Err(e) = Schema::parse("printed", &printed) {
                panic!(
                    "{}: printed schema does not parse: {e}\n{printed}",
                    path.display()
                );
            }
        }
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {dir}");
}
