//! Any bytes as a catalogue log: record framing finds records, resyncs past
//! damage and never panics; a record it finds re-frames to the same bytes;
//! an index block in it decodes or is `Corrupt`.
#![no_main]
use std::borrow::Cow;
use std::sync::Arc;

use fieldstore_core::record::block::{self, BlockFormat, ValueLen};
use fieldstore_core::record::{Framed, Framing};
use libfuzzer_sys::fuzz_target;

const FRAMING: Framing = Framing::new(*b"FSR1");

struct Files;

impl BlockFormat for Files {
    const VALUES: ValueLen = ValueLen::U16;
    const UNIT: &'static str = "data file";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        Cow::Borrowed(uri)
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(name)
    }
}

fuzz_target!(|data: &[u8]| {
    let what = String::new;
    let mut at = 0;
    while at < data.len() {
        match FRAMING.unframe(&data[at..], &what) {
            Ok(Framed::Record(kind, payload, n)) => {
                assert_eq!(FRAMING.framed(kind, payload), &data[at..at + n]);
                if let Err(e) = block::decode(&Files, payload, &what) {
                    assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt);
                }
                at += n;
            }
            Ok(Framed::Incomplete) | Err(_) => match FRAMING.resync(&data[at + 1..]) {
                Some(skip) => at += skip + 1,
                None => break,
            },
        }
    }
});
