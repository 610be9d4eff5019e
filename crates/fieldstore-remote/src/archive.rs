//! Payloads of archival, flush, read and exists.
//!
//! Archival is split between the two roles. The store client sends each
//! field to a store server as a blob: the dataset key, the collocation
//! key, then the field's bytes *untagged* to the end of the payload (no
//! element key: the store does not need it). The store answers `Store`
//! with the field's [`FieldLocation`]. The catalogue client then sends the
//! catalogue a blob of collocation key, element key and the (wrapped)
//! location; the dataset was named before by a `Schema` request. `Flush`
//! carries the number of fields sent since the last flush (`size_t`); the
//! catalogue waits until it has taken that many before it commits.

use crate::key::Key;
use crate::location::FieldLocation;
use crate::stream::{DecodeError, Reader, Writer};

/// A field sent to a store server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreBlob<'a> {
    /// Dataset key.
    pub db_key: Key,
    /// Collocation key.
    pub idx_key: Key,
    /// The field.
    pub data: &'a [u8],
}

impl<'a> StoreBlob<'a> {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.db_key.encode(w);
        self.idx_key.encode(w);
        w.raw(self.data);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'a>) -> Result<StoreBlob<'a>, DecodeError> {
        Ok(StoreBlob {
            db_key: Key::decode(r)?,
            idx_key: Key::decode(r)?,
            data: r.rest(),
        })
    }
}

/// A field location sent to the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogueBlob {
    /// Collocation key.
    pub idx_key: Key,
    /// Element key.
    pub datum_key: Key,
    /// Where the store put it.
    pub location: FieldLocation,
}

impl CatalogueBlob {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.idx_key.encode(w);
        self.datum_key.encode(w);
        self.location.encode(w);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<CatalogueBlob, DecodeError> {
        Ok(CatalogueBlob {
            idx_key: Key::decode(r)?,
            datum_key: Key::decode(r)?,
            location: FieldLocation::decode(r)?,
        })
    }
}

/// A read request to a store server: the location (as the store gave it)
/// and a remap key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    /// What to read.
    pub location: FieldLocation,
    /// FDB5's remap key (empty in practice).
    pub remap_key: Key,
}

impl ReadRequest {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.location.encode(w);
        self.remap_key.encode(w);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<ReadRequest, DecodeError> {
        Ok(ReadRequest {
            location: FieldLocation::decode(r)?,
            remap_key: Key::decode(r)?,
        })
    }
}

/// The payload of `Flush`: how many fields were archived since the last.
///
/// # Errors
/// [`DecodeError`].
pub fn decode_flush(r: &mut Reader<'_>) -> Result<u32, DecodeError> {
    r.ulong()
}

/// The payload of `Flush`.
pub fn encode_flush(w: &mut Writer, n: u32) {
    w.ulong(n);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::location::{Uri, TOC_FIELD_LOCATION};

    #[test]
    fn blobs_round_trip() {
        let b = StoreBlob {
            db_key: Key::new([("class", "od")]),
            idx_key: Key::new([("type", "fc")]),
            data: b"GRIB....7777",
        };
        let mut w = Writer::new();
        b.encode(&mut w);
        let bytes = w.into_bytes();
        assert_eq!(StoreBlob::decode(&mut Reader::new(&bytes)).unwrap(), b);

        let c = ReadRequest {
            location: FieldLocation {
                class: TOC_FIELD_LOCATION.into(),
                uri: Uri::new("file", "/x"),
                offset: 0,
                length: 3,
                remap_key: Key::default(),
            },
            remap_key: Key::default(),
        };
        let mut w = Writer::new();
        c.encode(&mut w);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(ReadRequest::decode(&mut r).unwrap(), c);
        r.finish().unwrap();
    }
}
