//! What list, inspect, axes and stores requests return.

use crate::key::Key;
use crate::location::FieldLocation;
use crate::session::Endpoint;
use crate::stream::{DecodeError, Reader, Writer};

/// One element of a list or inspect reply (FDB5's `ListElement`): the key
/// at its three levels (a `size_t` count, always 3, then the keys), the
/// location when the third level is not empty, and a time stamp (`long`,
/// seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListElement {
    /// Dataset, collocation and element keys (the lower ones empty above
    /// the element level).
    pub keys: [Key; 3],
    /// Where the field is (element level only).
    pub location: Option<FieldLocation>,
    /// When the entry was written, in seconds (FDB5 shows it with
    /// `--timestamp`).
    pub timestamp: i32,
}

impl ListElement {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        w.count(3);
        for k in &self.keys {
            k.encode(w);
        }
        if let Some(loc) = &self.location {
            loc.encode(w);
        }
        w.long(self.timestamp);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`]; [`DecodeError::Invalid`] unless there are three
    /// keys, or for a location missing at the element level.
    pub fn decode(r: &mut Reader<'_>) -> Result<ListElement, DecodeError> {
        let n = r.count(10)?;
        if n != 3 {
            return Err(r.invalid(format!("a list element has 3 keys, not {n}")));
        }
        let keys = [Key::decode(r)?, Key::decode(r)?, Key::decode(r)?];
        let location = if keys[2].is_empty() {
            None
        } else {
            Some(FieldLocation::decode(r)?)
        };
        let timestamp = r.long()?;
        Ok(ListElement {
            keys,
            location,
            timestamp,
        })
    }
}

/// Encodes a listing's elements, re-using the encoded bytes of what
/// consecutive elements share: the dataset key, the collocation key and
/// the location's class and URI (the fields of one data file). The bytes
/// are exactly [`ListElement::encode`]'s; only the work differs: a
/// listing of one collocation builds and encodes those once, not once per
/// field.
#[derive(Debug, Default)]
pub struct ListEncoder {
    /// (identity, encoded bytes) of the last dataset key, collocation key
    /// and location head (class and URI but its query).
    memo: [(String, Vec<u8>); 3],
    /// The last location head's query (a field's checksum joins it).
    query: Vec<(String, String)>,
}

impl ListEncoder {
    fn remembered(&mut self, slot: usize, id: &str, make: impl FnOnce(&mut Writer)) -> &[u8] {
        let (memo_id, bytes) = &mut self.memo[slot];
        if memo_id != id || bytes.is_empty() {
            let mut w = Writer::new();
            make(&mut w);
            *bytes = w.into_bytes();
            memo_id.clear();
            memo_id.push_str(id);
        }
        bytes
    }

    /// Encode one element. `db` and `idx` are the keys' identities (their
    /// text) and how to build them; `location` the identity of its class
    /// and URI (the data file's: the fields of one file share it), how to
    /// build them, the field's checksum (joining the URI's query, as
    /// [`Uri::with_checksum`](crate::location::Uri::with_checksum) puts
    /// it), the offset and the length.
    pub fn encode<L: FnOnce() -> (String, crate::location::Uri)>(
        &mut self,
        w: &mut Writer,
        db: (&str, impl FnOnce() -> Key),
        idx: (&str, impl FnOnce() -> Key),
        datum: &Key,
        location: Option<(&str, L, Option<u32>, i64, i64)>,
        timestamp: i32,
    ) {
        w.count(3);
        w.raw(self.remembered(0, db.0, |w| db.1().encode(w)));
        w.raw(self.remembered(1, idx.0, |w| idx.1().encode(w)));
        datum.encode(w);
        if let Some((id, make, checksum, offset, length)) = location {
            let (memo_id, bytes) = &mut self.memo[2];
            if memo_id != id || bytes.is_empty() {
                let (class, uri) = make();
                let mut h = Writer::new();
                h.start_object(&class);
                uri.encode_head(&mut h);
                *bytes = h.into_bytes();
                memo_id.clear();
                memo_id.push_str(id);
                self.query = uri.query;
            }
            w.raw(&self.memo[2].1);
            match checksum {
                None => crate::location::encode_query(
                    w,
                    self.query.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                ),
                Some(c) => {
                    let c = format!("{c:08x}");
                    let mut pairs: Vec<(&str, &str)> = self
                        .query
                        .iter()
                        .filter(|(k, _)| k != crate::location::CHECKSUM_QUERY)
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect();
                    pairs.push((crate::location::CHECKSUM_QUERY, &c));
                    pairs.sort_by(|a, b| a.0.cmp(b.0));
                    crate::location::encode_query(w, pairs.into_iter());
                }
            }
            w.long_long(offset).long_long(length);
            Key::default().encode(w);
            w.end_object();
        }
        w.long(timestamp);
    }
}

/// One element of an axes reply (FDB5's `AxesElement`): a dataset key and
/// the values of each keyword below it. The axes are an anonymous object
/// holding `"size"`, the number of keywords, then `"axes"` and for each
/// keyword its name, the number of values and the values. FDB5's reader
/// asserts the size is not zero: an empty axes must not be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxesElement {
    /// The dataset.
    pub db_key: Key,
    /// Keyword → values, keywords in order.
    pub axes: Vec<(String, Vec<String>)>,
}

impl AxesElement {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.db_key.encode(w);
        w.raw(&[crate::stream::TAG_START_OBJ]);
        w.string("size").count(self.axes.len()).string("axes");
        for (k, values) in &self.axes {
            w.string(k).count(values.len());
            for v in values {
                w.string(v);
            }
        }
        w.end_object();
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`]; [`DecodeError::Invalid`] for an unknown field.
    pub fn decode(r: &mut Reader<'_>) -> Result<AxesElement, DecodeError> {
        let db_key = Key::decode(r)?;
        let at = r.position();
        if r.peek_tag() != Some(crate::stream::TAG_START_OBJ) {
            return Err(DecodeError::BadTag {
                want: "the axes object",
                got: r.peek_tag().unwrap_or(0),
                at,
            });
        }
        // The start tag is followed directly by the field names (the
        // object has no class name).
        r.skip_tag();
        let mut size = 0usize;
        let mut axes = Vec::new();
        while !r.at_end_of_object() {
            match r.string()?.as_str() {
                "size" => size = r.count(5)?,
                "axes" => {
                    for _ in 0..size {
                        let k = r.string()?;
                        let n = r.count(5)?;
                        let mut values = Vec::with_capacity(n);
                        for _ in 0..n {
                            values.push(r.string()?);
                        }
                        axes.push((k, values));
                    }
                }
                other => return Err(r.invalid(format!("unknown axes field {other}"))),
            }
        }
        r.end_object()?;
        Ok(AxesElement { db_key, axes })
    }
}

/// The catalogue's reply to `Stores`: for each location endpoint (the
/// `host:port` string field locations carry), the store endpoints that
/// serve it. A `size_t` count, then per entry the string, a `size_t` count
/// and the endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stores {
    /// Entries, in order.
    pub stores: Vec<(String, Vec<Endpoint>)>,
}

impl Stores {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        w.count(self.stores.len());
        for (name, endpoints) in &self.stores {
            w.string(name).count(endpoints.len());
            for e in endpoints {
                e.encode(w);
            }
        }
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<Stores, DecodeError> {
        let n = r.count(10)?;
        let mut stores = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.string()?;
            let m = r.count(10)?;
            let mut endpoints = Vec::with_capacity(m);
            for _ in 0..m {
                endpoints.push(Endpoint::decode(r)?);
            }
            stores.push((name, endpoints));
        }
        Ok(Stores { stores })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::location::{Uri, TOC_FIELD_LOCATION};

    #[test]
    fn elements_round_trip() {
        let e = ListElement {
            keys: [
                Key::new([("class", "od")]),
                Key::new([("type", "fc")]),
                Key::new([("step", "0")]),
            ],
            location: Some(FieldLocation {
                class: TOC_FIELD_LOCATION.into(),
                uri: Uri::new("file", "/a"),
                offset: 1,
                length: 2,
                remap_key: Key::default(),
            }),
            timestamp: 7,
        };
        let mut w = Writer::new();
        e.encode(&mut w);
        let b = w.into_bytes();
        let mut r = Reader::new(&b);
        assert_eq!(ListElement::decode(&mut r).unwrap(), e);
        r.finish().unwrap();

        let a = AxesElement {
            db_key: Key::new([("class", "od")]),
            axes: vec![("step".into(), vec!["0".into(), "1".into()])],
        };
        let mut w = Writer::new();
        a.encode(&mut w);
        let b = w.into_bytes();
        let mut r = Reader::new(&b);
        assert_eq!(AxesElement::decode(&mut r).unwrap(), a);
        r.finish().unwrap();

        let s = Stores {
            stores: vec![(
                "h:1".into(),
                vec![Endpoint {
                    host: "h".into(),
                    port: 1,
                }],
            )],
        };
        let mut w = Writer::new();
        s.encode(&mut w);
        let b = w.into_bytes();
        assert_eq!(Stores::decode(&mut Reader::new(&b)).unwrap(), s);
    }

    #[test]
    fn the_list_encoder_writes_what_elements_encode() {
        let mut enc = ListEncoder::default();
        let cases = [
            ("od", "fc", "0", Some(("/a", 1, Some(0xdead_beef)))),
            ("od", "fc", "6", Some(("/a", 2, Some(7)))),
            ("od", "an", "0", Some(("/b", 3, None))),
            ("rd", "an", "0", None),
            ("rd", "an", "12", Some(("/b", 4, Some(9)))),
        ];
        // Fields of one file share its URI but for their checksums.
        let uri = |path: &str| Uri {
            query: vec![("internalScheme".into(), "file".into())],
            ..Uri::new("fdb", path)
        };
        for (class, ty, step, loc) in cases {
            let keys = [
                Key::new([("class", class)]),
                Key::new([("type", ty)]),
                Key::new([("step", step)]),
            ];
            let location = loc.map(|(path, offset, checksum)| FieldLocation {
                class: TOC_FIELD_LOCATION.into(),
                uri: uri(path).with_checksum(checksum),
                offset,
                length: 10,
                remap_key: Key::default(),
            });
            let e = ListElement {
                keys: keys.clone(),
                location,
                timestamp: 0,
            };
            let mut want = Writer::new();
            e.encode(&mut want);
            let mut got = Writer::new();
            enc.encode(
                &mut got,
                (class, || keys[0].clone()),
                (&format!("{class}/{ty}"), || keys[1].clone()),
                &keys[2],
                loc.map(|(path, offset, checksum)| {
                    (
                        path,
                        move || (TOC_FIELD_LOCATION.to_string(), uri(path)),
                        checksum,
                        offset,
                        10,
                    )
                }),
                0,
            );
            assert_eq!(got.bytes(), want.bytes(), "{class} {ty} {step}");
        }
    }
}
