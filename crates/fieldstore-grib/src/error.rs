//! What can be wrong with GRIB input, and where.
//!
//! Every problem is reported as a [`GribError`] naming the message's index
//! (0-based, in the order of the input) and the byte offset where it starts
//! (or where it was expected to start). At the crate boundary it becomes a
//! [`fieldstore_core::Error`] of kind [`ErrorKind::InvalidInput`] (fix the
//! input; retrying is pointless), with the `GribError` as its `source` for
//! callers that want to match on the [`Problem`] — except
//! [`Problem::NoEccodes`], of kind [`ErrorKind::Unavailable`] (the input may
//! be fine; ecCodes' library is missing).

use fieldstore_core::{Error, ErrorKind, KeyError, SchemaError};

/// A problem with one GRIB message, located in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("GRIB message {index} at byte offset {offset}: {problem}")]
pub struct GribError {
    /// The message's index in the input, 0-based.
    pub index: usize,
    /// The byte offset in the input where the message starts, or was expected
    /// to start.
    pub offset: usize,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with a GRIB message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The bytes where the one message expected should start are not
    /// `GRIB` ([`crate::mars_key`]; files and streams skip such bytes
    /// instead, see [`crate::SkippedBytes`]).
    #[error("expected 'GRIB', found {found}")]
    Garbage {
        /// The first bytes found, printed for humans.
        found: String,
    },
    /// The input ends before the message does.
    #[error("truncated: the message is {declared} bytes long but only {available} bytes are left")]
    Truncated {
        /// The length the message declares (or the bytes needed to read it).
        declared: u64,
        /// The bytes left in the input from the message's start.
        available: usize,
    },
    /// The message's last four bytes are not `7777`.
    #[error(
        "no '7777' end marker at byte offset {at} (found {found}): wrong length or damaged message"
    )]
    MissingEndMarker {
        /// Where the end marker should be, in the input.
        at: usize,
        /// The bytes found there, printed for humans.
        found: String,
    },
    /// Bytes after the end of the one message expected.
    #[error("{len} bytes after the message's end marker (one message expected)")]
    TrailingBytes {
        /// How many bytes follow the message (padding included).
        len: usize,
    },
    /// The sections inside the message do not add up to its length.
    #[error("damaged section structure at byte offset {at}: {detail}")]
    BadSections {
        /// Where the offending section starts, in the input.
        at: usize,
        /// What is wrong.
        detail: String,
    },
    /// The declared length cannot hold a message.
    #[error("impossible message length {declared}")]
    BadLength {
        /// The declared length.
        declared: u64,
    },
    /// Edition 0 or an unknown edition.
    #[error("unsupported GRIB edition {edition} (only 1 and 2 are supported)")]
    UnsupportedEdition {
        /// The edition byte.
        edition: u8,
    },
    /// ecCodes' library cannot be loaded (none found, or not ecCodes).
    #[error("ecCodes cannot be loaded: {reason}")]
    NoEccodes {
        /// What the loader said, step by step.
        reason: String,
    },
    /// ecCodes could not decode the message.
    #[error("ecCodes cannot decode the message: {reason}")]
    Undecodable {
        /// What ecCodes said.
        reason: String,
    },
    /// ecCodes decoded the message, but its `mars` namespace is empty: the
    /// message has no MARS metadata to index it by.
    #[error("no MARS keys (ecCodes' 'mars' namespace is empty): the message cannot be indexed")]
    NoMarsKeys,
    /// ecCodes failed to read one MARS key.
    #[error("ecCodes cannot read MARS key '{keyword}': {reason}")]
    KeyUnreadable {
        /// The key.
        keyword: String,
        /// What ecCodes said.
        reason: String,
    },
    /// The message declares more bytes than a stream reader holds
    /// ([`crate::MessageReader`]); it is refused before it is read.
    #[error(
        "the message is {declared} bytes long, more than the largest message allowed ({limit} bytes)"
    )]
    TooLarge {
        /// The length the message declares (or the bytes needed to frame it).
        declared: u64,
        /// The largest message allowed.
        limit: usize,
    },
    /// A stream reader found no GRIB message in more bytes than the largest
    /// message allowed (NULs after a message, or a damaged stretch being
    /// skipped): the input has no end in sight and is not GRIB. This ends
    /// the reading even when bad messages are skipped.
    #[error(
        "no GRIB message in the {scanned} bytes from here (more than the largest message allowed): \
         giving up"
    )]
    NoMessageAhead {
        /// How many bytes were read without finding a message.
        scanned: u64,
    },
    /// The input holds no GRIB message at all (it is empty).
    #[error("no GRIB message: the input is empty")]
    Empty,
    /// The input holds no GRIB message at all: none of its bytes starts
    /// one (it is not GRIB).
    #[error("no GRIB message: none of the input's {len} bytes starts one (not a GRIB file?)")]
    NotGrib {
        /// The input's length.
        len: u64,
    },
    /// ecCodes failed one of its own assertions on the message (it would
    /// have aborted the process: see the `eccodes` module's documentation).
    #[error("ecCodes cannot decode the message: {message}")]
    EccodesAssertion {
        /// What ecCodes said: `ecCodes assertion failed: `…' in file:line`.
        message: String,
    },
    /// The message's MARS key does not fit the store's schema (no rule
    /// matches it, a keyword is missing or unknown, a value is refused).
    #[error("MARS key {key} does not fit the schema: {source}")]
    Schema {
        /// The MARS key, as ecCodes gives it.
        key: String,
        /// The schema's complaint, naming the keyword and the rule.
        source: Box<SchemaError>,
    },
    /// A MARS key or value that fieldstore keys cannot hold.
    #[error("MARS key '{keyword}' has value {value:?}: {source}")]
    BadKey {
        /// The key.
        keyword: String,
        /// Its value.
        value: String,
        /// Why it was refused.
        source: KeyError,
    },
}

impl From<GribError> for Error {
    fn from(e: GribError) -> Self {
        let kind = match e.problem {
            Problem::NoEccodes { .. } => ErrorKind::Unavailable,
            _ => ErrorKind::InvalidInput,
        };
        Error::from_source(kind, e)
    }
}

/// Print up to 8 bytes for an error message: `"GRIX"` when printable, hex
/// otherwise, and "end of input" for none.
pub(crate) fn show_bytes(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(8)];
    if shown.is_empty() {
        return "end of input".to_string();
    }
    if shown.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("'{}'", String::from_utf8_lossy(shown))
    } else {
        let hex: Vec<String> = shown.iter().map(|b| format!("{b:02x}")).collect();
        format!("bytes {}", hex.join(" "))
    }
}
