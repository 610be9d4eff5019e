//! URIs and field locations, as FDB5 serialises them.
//!
//! A field location is an object whose class names the kind
//! (`TocFieldLocation` for a POSIX data file, `RemoteFieldLocation` for one
//! behind a store server, …) holding a URI, the offset and length of the
//! field's bytes (`long long`s), and a "remap key" (a [`Key`], empty in
//! practice). A URI is scheme, user, host, port (`int`, -1 for none),
//! name (the path), fragment, then the query as a map of strings.
//!
//! A location a store server returns names the data file as the store
//! sees it (`file` scheme, no host). The client wraps it: scheme `fdb`,
//! the store server's host and port, the inner scheme in the query
//! (`internalScheme=file`); that is what the catalogue stores and lists.
//! To read, the client unwraps it again and sends the store server the
//! `file` location.

use crate::key::Key;
use crate::stream::{DecodeError, Reader, Writer};

/// The URI query key carrying a field's CRC-32C (8 hex digits) in the
/// locations `fieldstore serve` hands out: FDB5's clients keep a URI's
/// query as they send a location back to read it, so the store can verify
/// what it sends; fieldstore's client verifies what it receives.
pub const CHECKSUM_QUERY: &str = "crc32c";

/// An eckit URI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uri {
    /// `file`, `fdb`, …
    pub scheme: String,
    /// User part (empty).
    pub user: String,
    /// Host (empty for local files).
    pub host: String,
    /// Port, -1 for none.
    pub port: i32,
    /// The path.
    pub name: String,
    /// Fragment (empty).
    pub fragment: String,
    /// Query pairs, in key order (as eckit's map sends them; encoded as
    /// given).
    pub query: Vec<(String, String)>,
}

impl Uri {
    /// A URI of `scheme` and path `name`, nothing else.
    pub fn new(scheme: impl Into<String>, name: impl Into<String>) -> Uri {
        Uri {
            scheme: scheme.into(),
            user: String::new(),
            host: String::new(),
            port: -1,
            name: name.into(),
            fragment: String::new(),
            query: Vec::new(),
        }
    }

    /// The field's checksum its [`CHECKSUM_QUERY`] key carries, if any
    /// (and well formed).
    pub fn checksum(&self) -> Option<u32> {
        self.query_value(CHECKSUM_QUERY)
            .and_then(|v| u32::from_str_radix(v, 16).ok())
    }

    /// With `checksum` in its [`CHECKSUM_QUERY`] key (replacing any),
    /// the query kept in key order as eckit sends it; `None` removes it.
    #[must_use]
    pub fn with_checksum(mut self, checksum: Option<u32>) -> Uri {
        self.query.retain(|(k, _)| k != CHECKSUM_QUERY);
        if let Some(c) = checksum {
            self.query.push((CHECKSUM_QUERY.into(), format!("{c:08x}")));
            self.query.sort_by(|a, b| a.0.cmp(&b.0));
        }
        self
    }

    /// The value of query key `key`.
    pub fn query_value(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.encode_head(w);
        encode_query(w, self.query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }

    /// Encode all but the query (which [`encode_query`] encodes next):
    /// what the fields of one data file share.
    pub fn encode_head(&self, w: &mut Writer) {
        w.string(&self.scheme)
            .string(&self.user)
            .string(&self.host)
            .int(self.port)
            .string(&self.name)
            .string(&self.fragment);
    }

    /// Decode all but the query (its query left empty).
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode_head(r: &mut Reader<'_>) -> Result<Uri, DecodeError> {
        Ok(Uri {
            scheme: r.string()?,
            user: r.string()?,
            host: r.string()?,
            port: r.int()?,
            name: r.string()?,
            fragment: r.string()?,
            query: Vec::new(),
        })
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<Uri, DecodeError> {
        let mut uri = Uri::decode_head(r)?;
        let n = r.count(10)?;
        uri.query.reserve(n);
        for _ in 0..n {
            uri.query.push((r.string()?, r.string()?));
        }
        Ok(uri)
    }
}

/// Encode a URI's query pairs, as given: eckit sends its query map in key
/// order, which the caller keeps.
pub fn encode_query<'a>(w: &mut Writer, pairs: impl ExactSizeIterator<Item = (&'a str, &'a str)>) {
    w.count(pairs.len());
    for (k, v) in pairs {
        w.string(k).string(v);
    }
}

/// A field location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldLocation {
    /// The class name (`TocFieldLocation`, `RemoteFieldLocation`, …).
    pub class: String,
    /// Where.
    pub uri: Uri,
    /// First byte.
    pub offset: i64,
    /// Number of bytes.
    pub length: i64,
    /// FDB5's remap key (empty in practice).
    pub remap_key: Key,
}

/// The class of a location in a POSIX data file.
pub const TOC_FIELD_LOCATION: &str = "TocFieldLocation";
/// The class of a location behind a store server.
pub const REMOTE_FIELD_LOCATION: &str = "RemoteFieldLocation";

impl FieldLocation {
    /// Encode, as an object.
    pub fn encode(&self, w: &mut Writer) {
        w.start_object(&self.class);
        self.uri.encode(w);
        w.long_long(self.offset).long_long(self.length);
        self.remap_key.encode(w);
        w.end_object();
    }

    /// Decode an object of any location class (they all encode alike).
    ///
    /// # Errors
    /// [`DecodeError`]; [`DecodeError::Invalid`] for a negative offset or
    /// length, or a class that is not a field location.
    pub fn decode(r: &mut Reader<'_>) -> Result<FieldLocation, DecodeError> {
        let class = r.start_object()?;
        if !class.ends_with("FieldLocation") {
            return Err(r.invalid(format!("{class} is not a field location")));
        }
        let uri = Uri::decode(r)?;
        let offset = r.long_long()?;
        let length = r.long_long()?;
        if offset < 0 || length < 0 {
            return Err(r.invalid(format!("negative offset {offset} or length {length}")));
        }
        let remap_key = Key::decode(r)?;
        r.end_object()?;
        Ok(FieldLocation {
            class,
            uri,
            offset,
            length,
            remap_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn locations_round_trip(name in "/[a-z:./]{0,30}", host in "[a-z]{0,8}", port in -1i32..65536,
                                offset in 0i64..i64::MAX, length in 0i64..i64::MAX,
                                q in prop::collection::btree_map("[a-z]{1,5}", "[a-z]{0,5}", 0..3)) {
            let loc = FieldLocation {
                class: REMOTE_FIELD_LOCATION.into(),
                uri: Uri { host, port, query: q.into_iter().collect(), ..Uri::new("fdb", name) },
                offset, length, remap_key: Key::default(),
            };
            let mut w = Writer::new();
            loc.encode(&mut w);
            let b = w.into_bytes();
            let mut r = Reader::new(&b);
            prop_assert_eq!(FieldLocation::decode(&mut r).unwrap(), loc);
            r.finish().unwrap();
        }
    }
}
