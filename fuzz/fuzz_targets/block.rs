//! Any bytes as an index block's payload (what a damaged block whose frame
//! checksums were ignored would hand the decoder): decoded or `Corrupt`,
//! never a panic or an allocation the bytes merely claim; a block that
//! decodes re-encodes to one that decodes to the same entries.
#![no_main]
use std::borrow::Cow;
use std::sync::Arc;

use fieldstore_core::record::block::{self, BlockFormat, ValueLen};
use fieldstore_core::CollocationKey;
use libfuzzer_sys::fuzz_target;

struct Objects;

impl BlockFormat for Objects {
    const VALUES: ValueLen = ValueLen::U32;
    const UNIT: &'static str = "location";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        Cow::Borrowed(uri)
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(name)
    }
}

fuzz_target!(|data: &[u8]| {
    let what = String::new;
    match block::decode(&Objects, data, &what) {
        Ok(b) => {
            let Ok(key) = b.collocation.parse() else { return };
            let (again, _) = block::encode(&Objects, &CollocationKey(key), &b.entries);
            let decoded = block::decode(&Objects, &again, &what).expect("a re-encoded block decodes");
            assert_eq!(decoded.entries, b.entries);
        }
        Err(e) => assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt),
    }
});
