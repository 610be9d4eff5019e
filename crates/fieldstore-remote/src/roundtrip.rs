//! The decoders' shared property, for the fuzz target (`fuzz/`) and the
//! damaged-payload tests: any bytes given to any payload decoder decode or
//! fail cleanly, and what decodes re-encodes to bytes that decode to the
//! same value.
//!
//! A test aid: it *panics* when the property fails (a fuzzer or a test
//! harness then reports the input). Never call it on the server's path.

use crate::archive::{CatalogueBlob, ReadRequest, StoreBlob};
use crate::elements::{AxesElement, ListElement, Stores};
use crate::key::Key;
use crate::request::ToolRequest;
use crate::schema::Schema;
use crate::startup::{ClientStartup, DataStartup, ServerStartup};
use crate::value::Value;
use crate::wipe::{CatalogueWipeState, StoreWipeReply, StoreWipeRequest, WipeRequest};
use crate::{DecodeError, Reader, Writer};

/// Decode `data` with `decode`; if that works, encode and decode again.
///
/// # Panics
/// If the re-encoded bytes do not decode, or decode to another value.
pub fn again<T: PartialEq + std::fmt::Debug>(
    data: &[u8],
    decode: impl Fn(&mut Reader<'_>) -> Result<T, DecodeError>,
    encode: impl Fn(&T, &mut Writer),
) {
    if let Ok(v) = decode(&mut Reader::new(data)) {
        let mut w = Writer::new();
        encode(&v, &mut w);
        #[allow(clippy::unwrap_used)]
        let back = decode(&mut Reader::new(w.bytes())).unwrap();
        assert_eq!(back, v, "re-encoded value decodes to another");
    }
}

/// [`again`] with every payload decoder of the crate (and the store blob,
/// which has no encoder here, decoded only).
///
/// # Panics
/// As [`again`].
pub fn every_decoder(data: &[u8]) {
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
}
