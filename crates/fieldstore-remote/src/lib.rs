//! FDB5's remote protocol, as spoken by ECMWF's `fdb-server` and the remote
//! client in `libfdb5` (FDB5 5.25: frame version 12, remote protocol
//! version 3), for `fieldstore serve` and fieldstore's own client
//! ([`client`], `type: remote`).
//!
//! Three layers, one concept per module:
//! - [`frame`]: the 36-byte header, the payload and the end marker;
//!   [`message`]: the message types a header names.
//! - [`stream`]: eckit's `Stream` serialisation (tagged values, big-endian
//!   numbers), both directions; [`value`]: eckit's `Value` on top of it.
//! - The objects FDB5 sends in payloads: [`key`] (its `Key`), [`location`]
//!   (URIs and field locations), [`request`] (MARS and tool requests),
//!   [`session`] (session ids and endpoints), [`startup`] (the handshake and
//!   the negotiated configuration), [`elements`] (list and axes results,
//!   the stores map), [`archive`] (archive, flush and read payloads),
//!   [`schema`] (a schema as FDB5 serialises it), [`wipe`] (the remote
//!   wipe's states and requests).
//!
//! [`roundtrip`] holds the decoders' round-trip property for the fuzz
//! target and the tests.
//!
//! Decoding never panics and never allocates more than the input could
//! hold: every length is checked against the bytes left before anything
//! is reserved.
#![deny(rustdoc::broken_intra_doc_links)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod archive;
pub mod client;
pub mod elements;
pub mod frame;
pub mod key;
pub mod location;
pub mod message;
pub mod request;
pub mod roundtrip;
pub mod schema;
pub mod session;
pub mod startup;
pub mod stream;
pub mod value;
pub mod wipe;

pub use frame::{FrameError, Header};
pub use message::Message;
pub use stream::{DecodeError, Reader, Writer};
