//! fieldstore's GRIB edge: split files into GRIB messages and read each
//! message's MARS key through ECMWF's ecCodes.
//!
//! - [`split_messages`] finds the GRIB messages (editions 1 and 2) in a byte
//!   buffer, checking lengths and `7777` end markers. It does not call ecCodes.
//! - [`mars_key`] (or [`Message::mars_key`]) returns the key ecCodes' `mars`
//!   namespace gives a message: keywords in ecCodes' order, values as ecCodes
//!   prints them (`param=167.128`, `date=jan-01`). Canonicalising them is the
//!   schema's job ([`fieldstore_core::Schema::split`]).
//! - [`fields`] does both, message by message.
//! - [`MessageReader`] splits messages off a stream (a file, a pipe) one at a
//!   time, holding at most one message of bounded size: for inputs that
//!   need not fit in memory, or need not end.
//! - [`decode_values`] unpacks a message's values into a caller's buffer
//!   (missing points NaN); [`read_keys`] and [`read_array`] read what
//!   describes them (parameter, grid, coordinates): for array views.
//! - [`ArchiveGrib`] (`fs.archive_grib(bytes)`) archives every message of a
//!   GRIB file into a [`fieldstore::FieldStore`], unchanged, under its key
//!   canonicalised by the store's schema: what `fieldstore archive` does.
//!
//! ```
//! let file = std::fs::read(concat!(
//!     env!("CARGO_MANIFEST_DIR"),
//!     "/../../tests/fixtures/grib/levtypes.grib"
//! ))?;
//! for field in fieldstore_grib::fields(&file) {
//!     let field = field?;
//!     println!("{} at {}: {} ({} bytes)", field.index, field.offset, field.key, field.bytes.len());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Errors are [`fieldstore_core::Error`]s of kind
//! [`InvalidInput`](fieldstore_core::ErrorKind::InvalidInput) whose message
//! names the message index, its byte offset and the problem; the source is a
//! [`GribError`] for callers that match on the [`Problem`]. Callers add the
//! file name with [`fieldstore_core::Error::context`].
//!
//! ecCodes calls are serialised by a process-wide lock; see the `eccodes`
//! module's documentation (threads, contexts, diagnostics) in the source.
#![deny(rustdoc::broken_intra_doc_links)]

mod archive;
pub mod bitmap;
pub mod ccsds;
mod ccsds_walk;
mod decode;
mod eccodes;
mod error;
mod extract;
mod ffi;
mod identity;
pub mod jump;
mod jump_codec;
mod params;
mod skipped;
mod split;
mod stream;
mod unpack;

use std::iter::FusedIterator;

use fieldstore_core::{Key, Result};

pub use archive::{ArchiveGrib, Duplicate, GribOptions, GribSummary, Skipped};
pub use decode::{decode_values, number_of_values, read_array, read_keys, KeyValue, Sample};
pub use eccodes::{
    eccodes_library, eccodes_thread_safe, eccodes_version, hold_for_fork, param_id,
    param_id_of_cf_var_name,
};
pub use error::{GribError, Problem};
pub use extract::{
    extract_fields, extract_listed, in_request_order, ExtractGrib, ExtractOptions, Extraction,
    FieldValues, GridPoint, Method, Selection, EARTH_RADIUS_KM,
};
pub use identity::IdentityKeys;
pub use params::{param_names, EcCodesParamNames};
pub use skipped::SkippedBytes;
pub use split::{split_messages, Message, Messages};
pub use stream::{MessageReader, OwnedMessage, DEFAULT_MAX_MESSAGE_SIZE};
pub use unpack::{values_at, ReadCost};

/// The MARS key of one complete GRIB message (from `GRIB` to `7777`), exactly
/// as ecCodes' `mars` namespace gives it: keywords in ecCodes' order, values
/// as strings.
///
/// Only the message's metadata is decoded (ecCodes parses the message in
/// place, without copying it or unpacking its values). Errors name message
/// index 0 at offset 0; use [`Message::mars_key`] for messages of a file.
/// Unlike a file, the bytes must be the message and nothing else (MARS's
/// NUL padding after it aside): bytes before it or after it are an error,
/// not skipped.
///
/// # Errors
/// [`fieldstore_core::ErrorKind::InvalidInput`] if the bytes are not one
/// message, ecCodes cannot decode it, its `mars` namespace is empty, or a
/// key cannot be read or held.
pub fn mars_key(message: &[u8]) -> Result<Key> {
    let error = |problem| -> fieldstore_core::Error {
        GribError {
            index: 0,
            offset: 0,
            problem,
        }
        .into()
    };
    if !message.starts_with(b"GRIB") && !b"GRIB".starts_with(message) {
        return Err(error(Problem::Garbage {
            found: error::show_bytes(message),
        }));
    }
    let mut messages = split_messages(message);
    let first = messages.next().unwrap_or_else(|| {
        Err(error(Problem::Truncated {
            declared: 8,
            available: message.len(),
        }))
    })?;
    let rest = messages.by_ref().count();
    if rest > 0 || !messages.skipped().is_empty() {
        let len = message.len() - first.bytes().len();
        return Err(error(Problem::TrailingBytes { len }));
    }
    first.mars_key()
}

/// A GRIB message with its MARS key: one field to archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<'a> {
    /// The message's index in the input, 0-based.
    pub index: usize,
    /// Where the message starts in the input, in bytes.
    pub offset: usize,
    /// The GRIB edition, 1 or 2.
    pub edition: u8,
    /// The MARS key, as ecCodes gives it (see [`mars_key`]).
    pub key: Key,
    /// The message's bytes, to archive unchanged.
    pub bytes: &'a [u8],
}

/// Split `bytes` into GRIB messages and read each one's MARS key.
///
/// An error in a message's key (no MARS keys, undecodable) is yielded for
/// that message and the iteration goes on with the next one, so a caller can
/// skip bad messages; a framing error (a damaged message, truncation) ends
/// the iteration, as in [`split_messages`]. Bytes that are not GRIB are
/// skipped and kept in [`Fields::skipped`].
pub fn fields(bytes: &[u8]) -> Fields<'_> {
    Fields {
        messages: split_messages(bytes),
    }
}

/// The iterator of [`fields`].
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    messages: Messages<'a>,
}

impl Fields<'_> {
    /// The bytes that are not GRIB skipped so far (see
    /// [`Messages::skipped`]).
    pub fn skipped(&self) -> &SkippedBytes {
        self.messages.skipped()
    }

    /// After a framing error, go on with the next well-formed message
    /// instead of ending (see [`Messages::resync`]).
    #[must_use]
    pub fn resync(mut self) -> Self {
        self.messages = self.messages.resync();
        self
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let message = match self.messages.next()? {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        Some(message.mars_key().map(|key| Field {
            index: message.index(),
            offset: message.offset(),
            edition: message.edition(),
            key,
            bytes: message.bytes(),
        }))
    }
}

impl FusedIterator for Fields<'_> {}
