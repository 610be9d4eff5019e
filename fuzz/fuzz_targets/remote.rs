//! Any bytes as FDB5 remote-protocol traffic: frames decode or fail
//! cleanly (bounded by the limit, never panicking), and any payload given
//! to any message decoder decodes or fails cleanly; what decodes
//! re-encodes to a payload that decodes to the same value.
#![no_main]
use fieldstore_remote::archive::{CatalogueBlob, ReadRequest, StoreBlob};
use fieldstore_remote::elements::{AxesElement, ListElement, Stores};
use fieldstore_remote::frame::{decode_frame, read_frame};
use fieldstore_remote::key::Key;
use fieldstore_remote::request::ToolRequest;
use fieldstore_remote::schema::Schema;
use fieldstore_remote::startup::{ClientStartup, DataStartup, ServerStartup};
use fieldstore_remote::value::Value;
use fieldstore_remote::wipe::{CatalogueWipeState, StoreWipeReply, StoreWipeRequest, WipeRequest};
use fieldstore_remote::{Reader, Writer};
use libfuzzer_sys::fuzz_target;

/// Decode with `decode`; if it works, encode and decode again: same value.
fn again<T: PartialEq + std::fmt::Debug>(
    data: &[u8],
    decode: impl Fn(&mut Reader<'_>) -> Result<T, fieldstore_remote::DecodeError>,
    encode: impl Fn(&T, &mut Writer),
) {
    if let Ok(v) = decode(&mut Reader::new(data)) {
        let mut w = Writer::new();
        encode(&v, &mut w);
        let back = decode(&mut Reader::new(w.bytes())).expect("re-encoded value decodes");
        assert_eq!(back, v);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok((_, _, r)) = decode_frame(rest, 1 << 16) {
        rest = r;
    }
    let _ = read_frame(&mut &data[..], 1 << 16);
    again(data, Key::decode, Key::encode);
    again(data, Value::decode, Value::encode);
    again(data, ToolRequest::decode, ToolRequest::encode);
    again(data, ClientStartup::decode, ClientStartup::encode);
    again(data, ServerStartup::decode, ServerStartup::encode);
    again(data, DataStartup::decode, DataStartup::encode);
    again(data, ListElement::decode, ListElement::encode);
    again(data, AxesElement::decode, AxesElement::encode);
    again(data, Stores::decode, Stores::encode);
    again(data, Schema::decode, Schema::encode);
    again(data, CatalogueBlob::decode, CatalogueBlob::encode);
    again(data, ReadRequest::decode, ReadRequest::encode);
    again(data, WipeRequest::decode, WipeRequest::encode);
    again(data, CatalogueWipeState::decode, CatalogueWipeState::encode);
    again(data, StoreWipeRequest::decode, StoreWipeRequest::encode);
    again(data, StoreWipeReply::decode, StoreWipeReply::encode);
    let _ = StoreBlob::decode(&mut Reader::new(data));
});
