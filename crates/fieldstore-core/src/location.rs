//! Where a store put a field's bytes.

use std::fmt;

/// The location of one field's bytes: a URI naming a file or an object, and
/// a byte range within it.
///
/// The URI's scheme names the store that wrote it (`file`, `daos`, `rados`,
/// `memory`), so a catalogue of one backend can index fields of another.
/// Carrying the length means reading a field never needs a size lookup.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FieldLocation {
    /// `scheme://…`. Shared: the many entries of one data file clone it
    /// for a reference count.
    pub uri: std::sync::Arc<str>,
    /// First byte of the field.
    pub offset: u64,
    /// Number of bytes.
    pub length: u64,
    /// CRC-32C of the bytes, when the store computed one; readers verify it
    /// and report a mismatch as corruption instead of returning the bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<u32>,
    /// Opaque per-entry data the catalogue keeps with the entry and hands
    /// back with it: every catalogue stores it (`docs/format/`), none
    /// interprets it, so wipe, purge, move and replacement carry it as they
    /// carry the entry. Its first byte says what it is and in which version
    /// (today GRIB jump info, `docs/extract.md`). Not part of the JSON
    /// form.
    #[serde(skip)]
    pub extension: Option<std::sync::Arc<[u8]>>,
    /// An *annotation*: written to a catalogue, this entry is not a field
    /// of its own; it only adds its [`FieldLocation::extension`] to the
    /// entry of the same key whose location is this one (same URI, offset
    /// and length), and is ignored otherwise (`annotation.rs`). So
    /// something learnt about a field after it was archived (GRIB jump
    /// info built on its first extraction) can be kept with its entry
    /// without ever resurrecting a field replaced or wiped meanwhile: a
    /// replaced field has another location. Never set on what catalogues
    /// hand back. Not part of the JSON form.
    #[serde(skip)]
    pub annotates: bool,
}

impl FieldLocation {
    /// A location.
    pub fn new(uri: impl Into<std::sync::Arc<str>>, offset: u64, length: u64) -> Self {
        FieldLocation {
            uri: uri.into(),
            offset,
            length,
            checksum: None,
            extension: None,
            annotates: false,
        }
    }

    /// The same location, with an entry extension (see
    /// [`FieldLocation::extension`]).
    pub fn with_extension(mut self, extension: impl Into<std::sync::Arc<[u8]>>) -> Self {
        self.extension = Some(extension.into());
        self
    }

    /// An annotation of the field at this location: an entry that adds
    /// `extension` to the entry of the same key at this location, if that
    /// is still where the key's field is (see [`FieldLocation::annotates`]).
    pub fn annotation(&self, extension: impl Into<std::sync::Arc<[u8]>>) -> Self {
        FieldLocation {
            extension: Some(extension.into()),
            annotates: true,
            ..self.clone()
        }
    }

    /// Whether `other` names the same bytes (URI, offset and length):
    /// the same field, whatever its checksum or extension say.
    pub fn same_field(&self, other: &FieldLocation) -> bool {
        self.offset == other.offset && self.length == other.length && self.uri == other.uri
    }

    /// The same location, with the bytes' CRC-32C.
    pub fn with_checksum(mut self, crc32c: u32) -> Self {
        self.checksum = Some(crc32c);
        self
    }

    /// The bytes `offset..offset + len` of this field, as a location of
    /// their own without a checksum (the field's checksum covers the whole
    /// field): what [`Store::read_range`](crate::store::Store::read_range) reads.
    ///
    /// # Errors
    /// `InvalidInput` if the range is not inside the field.
    pub fn range(&self, offset: u64, len: u64) -> crate::error::Result<FieldLocation> {
        match offset.checked_add(len) {
            Some(end) if end <= self.length => Ok(FieldLocation::new(
                self.uri.clone(),
                self.offset + offset,
                len,
            )),
            _ => Err(crate::error::Error::invalid_input(format!(
                "bytes {offset}..{} are outside the {}-byte field at {self}",
                offset.saturating_add(len),
                self.length
            ))),
        }
    }

    /// The URI's scheme (`file`, `daos`, …), or the empty string.
    pub fn scheme(&self) -> &str {
        self.uri.split_once("://").map_or("", |(s, _)| s)
    }

    /// The URI without its scheme.
    pub fn path(&self) -> &str {
        self.uri.split_once("://").map_or(&self.uri, |(_, p)| p)
    }
}

/// `uri offset=N length=M`.
impl fmt::Display for FieldLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (uri, offset, length) = (&self.uri, self.offset, self.length);
        write!(f, "{uri} offset={offset} length={length}")
    }
}
