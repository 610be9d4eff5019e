//! Any bytes as a GRIB file, through the archive path (split, then each
//! message's MARS key through ecCodes) and, for messages that frame, the
//! values and keys an array view reads: every call returns, `Ok` or `Err`.
//! An ecCodes assertion is an error of its message (`Problem::EccodesAssertion`),
//! never the end of the process; a crash or abort here is a bug to fix.
//! Seed the corpus with ecCodes-made messages (`scripts/fuzz.sh` copies
//! `tests/fixtures/grib*/`), so that mutations stay close to real GRIB.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fields = fieldstore_grib::fields(data);
    for field in fields.by_ref() {
        let _ = field;
    }
    let skipped = fields.skipped();
    assert!(skipped.total() <= data.len() as u64);
    let mut stream = fieldstore_grib::MessageReader::new(data).max_message_size(1 << 20);
    for m in stream.by_ref() {
        if let Ok(m) = m {
            let _ = m.mars_key();
        }
    }
});
