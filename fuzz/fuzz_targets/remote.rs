//! Any bytes as FDB5 remote-protocol traffic: frames decode or fail
//! cleanly (bounded by the limit, never panicking), and any payload given
//! to any message decoder decodes or fails cleanly; what decodes
//! re-encodes to a payload that decodes to the same value.
#![no_main]
use fieldstore_remote::frame::{decode_frame, read_frame};
use fieldstore_remote::roundtrip::every_decoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok((_, _, r)) = decode_frame(rest, 1 << 16) {
        rest = r;
    }
    let _ = read_frame(&mut &data[..], 1 << 16);
    every_decoder(data);
});
