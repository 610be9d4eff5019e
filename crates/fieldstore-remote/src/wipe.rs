//! The payloads of FDB5's remote wipe.
//!
//! 1. The client asks the catalogue `Wipe` with a tool request and two
//!    `bool`s (`--doit`, `--unsafe-wipe-all`); the catalogue streams one
//!    [`CatalogueWipeState`] per dataset (`Blob`s, then `Complete`).
//! 2. For each store state in it, the client sends the store `Wipe`: a
//!    (5.25: empty) key, the [`StoreWipeState`] as the catalogue signed it,
//!    then `unsafe-wipe-all` and `doit`; the store checks the signature
//!    with the shared secret (`FDB_WIPE_SECRET`: only the catalogue could
//!    have produced it) and answers `Received` with a [`StoreWipeReply`].
//! 3. With `--doit`: `DoMaskIndexEntries` to the catalogue, then
//!    `DoUnsafeFullWipe` to each store (a `bool` reply: whether it wiped
//!    everything itself), then `DoWipeURIs` to the stores and the
//!    catalogue, then `DoWipeFinish` to the catalogue and the stores; each
//!    carries a key (the dataset's to the catalogue, an empty one to
//!    stores).
//!
//! A wipe state is: for each kind of item ([`kind`]) an `int` and the
//! URIs to delete (a `size_t` count, then [`Uri`]s), then the URIs kept
//! ("safe"), then the URIs nobody claims ("unknown").

use crate::key::Key;
use crate::location::Uri;
use crate::request::ToolRequest;
use crate::stream::{DecodeError, Reader, Writer};

/// FDB5's `WipeElementType` numbers.
pub mod kind {
    /// An error line.
    pub const ERROR: i32 = 0;
    /// A line of information about the dataset.
    pub const CATALOGUE_INFO: i32 = 1;
    /// The catalogue's own files.
    pub const CATALOGUE: i32 = 2;
    /// Index files.
    pub const CATALOGUE_INDEX: i32 = 3;
    /// Catalogue files kept.
    pub const CATALOGUE_SAFE: i32 = 4;
    /// Lock files.
    pub const CATALOGUE_CONTROL: i32 = 5;
    /// Data files.
    pub const STORE: i32 = 6;
    /// A store's auxiliary files.
    pub const STORE_AUX: i32 = 7;
    /// Store files kept.
    pub const STORE_SAFE: i32 = 8;
    /// Files nobody claims.
    pub const UNKNOWN: i32 = 9;
}

fn encode_uris(w: &mut Writer, uris: &[Uri]) {
    w.count(uris.len());
    for u in uris {
        u.encode(w);
    }
}

fn decode_uris(r: &mut Reader<'_>) -> Result<Vec<Uri>, DecodeError> {
    // A URI takes at least 6 strings, an int and a count: 40 bytes.
    let n = r.count(40)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(Uri::decode(r)?);
    }
    Ok(out)
}

/// What a wipe deletes, keeps and does not recognise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WipeState {
    /// URIs to delete, by kind ([`kind`]), kinds in increasing order.
    pub delete: Vec<(i32, Vec<Uri>)>,
    /// URIs kept.
    pub safe: Vec<Uri>,
    /// URIs nobody claims.
    pub unknown: Vec<Uri>,
}

impl WipeState {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        w.count(self.delete.len());
        for (k, uris) in &self.delete {
            w.int(*k);
            encode_uris(w, uris);
        }
        encode_uris(w, &self.safe);
        encode_uris(w, &self.unknown);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<WipeState, DecodeError> {
        let n = r.count(10)?;
        let mut delete = Vec::with_capacity(n);
        for _ in 0..n {
            let k = r.int()?;
            delete.push((k, decode_uris(r)?));
        }
        Ok(WipeState {
            delete,
            safe: decode_uris(r)?,
            unknown: decode_uris(r)?,
        })
    }

    /// Every URI to delete.
    pub fn deleted(&self) -> impl Iterator<Item = &Uri> + '_ {
        self.delete.iter().flat_map(|(_, u)| u)
    }
}

/// A store's part of a wipe, signed by the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreWipeState {
    /// What to delete there.
    pub state: WipeState,
    /// The catalogue's signature (an `unsigned long long`).
    pub signature: u64,
    /// The store (`fdb://host:port/…`).
    pub store_uri: Uri,
}

impl StoreWipeState {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.state.encode(w);
        w.ulong_long(self.signature);
        self.store_uri.encode(w);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<StoreWipeState, DecodeError> {
        Ok(StoreWipeState {
            state: WipeState::decode(r)?,
            signature: r.ulong_long()?,
            store_uri: Uri::decode(r)?,
        })
    }
}

/// One dataset's wipe, as the catalogue streams it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogueWipeState {
    /// The catalogue's part.
    pub state: WipeState,
    /// The dataset.
    pub db_key: Key,
    /// Each store's part, by store URI.
    pub stores: Vec<(Uri, StoreWipeState)>,
    /// A line describing the dataset (`[Database: …, FDB Owner: …]`).
    pub info: String,
}

impl CatalogueWipeState {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.state.encode(w);
        self.db_key.encode(w);
        w.count(self.stores.len());
        for (uri, s) in &self.stores {
            uri.encode(w);
            s.encode(w);
        }
        w.string(&self.info);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<CatalogueWipeState, DecodeError> {
        let state = WipeState::decode(r)?;
        let db_key = Key::decode(r)?;
        let n = r.count(80)?;
        let mut stores = Vec::with_capacity(n);
        for _ in 0..n {
            stores.push((Uri::decode(r)?, StoreWipeState::decode(r)?));
        }
        Ok(CatalogueWipeState {
            state,
            db_key,
            stores,
            info: r.string()?,
        })
    }
}

/// The catalogue's `Wipe` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WipeRequest {
    /// What to wipe.
    pub tool: ToolRequest,
    /// Delete (else report only).
    pub doit: bool,
    /// Also delete what nobody claims.
    pub unsafe_wipe_all: bool,
}

impl WipeRequest {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.tool.encode(w);
        w.bool(self.doit).bool(self.unsafe_wipe_all);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<WipeRequest, DecodeError> {
        Ok(WipeRequest {
            tool: ToolRequest::decode(r)?,
            doit: r.bool()?,
            unsafe_wipe_all: r.bool()?,
        })
    }
}

/// A store's `Wipe` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreWipeRequest {
    /// A key (empty from FDB5 5.25's client).
    pub key: Key,
    /// The store's part, as the catalogue signed it.
    pub state: StoreWipeState,
    /// Also delete what nobody claims.
    pub unsafe_wipe_all: bool,
    /// Delete (else report only).
    pub doit: bool,
}

impl StoreWipeRequest {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.key.encode(w);
        self.state.encode(w);
        w.bool(self.unsafe_wipe_all).bool(self.doit);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<StoreWipeRequest, DecodeError> {
        Ok(StoreWipeRequest {
            key: Key::decode(r)?,
            state: StoreWipeState::decode(r)?,
            unsafe_wipe_all: r.bool()?,
            doit: r.bool()?,
        })
    }
}

/// A store's answer to `Wipe`: auxiliary URIs it will delete too, URIs it
/// does not recognise, URIs named that it does not have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreWipeReply {
    /// Auxiliary URIs.
    pub auxiliary: Vec<Uri>,
    /// Unrecognised URIs.
    pub unrecognised: Vec<Uri>,
    /// Missing URIs.
    pub missing: Vec<Uri>,
}

impl StoreWipeReply {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        encode_uris(w, &self.auxiliary);
        encode_uris(w, &self.unrecognised);
        encode_uris(w, &self.missing);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<StoreWipeReply, DecodeError> {
        Ok(StoreWipeReply {
            auxiliary: decode_uris(r)?,
            unrecognised: decode_uris(r)?,
            missing: decode_uris(r)?,
        })
    }
}

/// The signature a catalogue puts on a store's part of a wipe, keyed by
/// the shared secret: 64-bit FNV-1a over the secret, a domain tag and each
/// URI (scheme, host, port, path, query), kept and deleted URIs hashed
/// apart. Only the server that made it checks it (fieldstore serves
/// catalogue and store from one process), so it need not be FDB5's
/// function; like FDB5's, it keeps an honest client from replaying a state
/// the catalogue did not produce, not an attacker who can read traffic.
pub fn sign(state: &WipeState, secret: &str) -> u64 {
    fn fnv(h: &mut u64, bytes: &[u8]) {
        for b in bytes {
            *h ^= u64::from(*b);
            *h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        *h ^= 0xff;
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    fnv(&mut h, secret.as_bytes());
    for (tag, uris) in state
        .delete
        .iter()
        .map(|(k, u)| (k.to_string(), u))
        .chain([("safe".to_string(), &state.safe)])
    {
        fnv(&mut h, tag.as_bytes());
        for u in uris {
            for part in [&u.scheme, &u.host, &u.name] {
                fnv(&mut h, part.as_bytes());
            }
            fnv(&mut h, &u.port.to_be_bytes());
            for (k, v) in &u.query {
                fnv(&mut h, k.as_bytes());
                fnv(&mut h, v.as_bytes());
            }
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_depend_on_secret_and_contents() {
        let mut s = WipeState {
            delete: vec![(kind::STORE, vec![Uri::new("file", "/a")])],
            ..WipeState::default()
        };
        let a = sign(&s, "x");
        assert_ne!(a, sign(&s, "y"));
        s.safe.push(Uri::new("file", "/b"));
        assert_ne!(a, sign(&s, "x"));
    }
}
