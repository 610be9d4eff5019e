//! FDB5's `Key` on the wire: a map of keyword to value (in keyword order),
//! then the keywords in the schema's order, each followed by a type name
//! that FDB5 5.25 always leaves empty.
//!
//! Keys FDB5 sends hold every keyword of their rule, optional ones with the
//! empty value (`timespan=`); a reader that wants only present values uses
//! [`Key::present`].

use std::collections::BTreeMap;

use crate::stream::{DecodeError, Reader, Writer};

/// A key: keyword/value pairs in the schema's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Key {
    /// The pairs, in order.
    pub pairs: Vec<(String, String)>,
}

impl Key {
    /// A key of these pairs, in this order.
    pub fn new<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Key {
        Key {
            pairs: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `keyword`.
    pub fn get(&self, keyword: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == keyword)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the key has no pairs.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs whose value is not empty.
    pub fn present(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.pairs
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Encode. A keyword given twice is sent once (the first value), as the
    /// map FDB5 decodes into would keep one.
    pub fn encode(&self, w: &mut Writer) {
        // A handful of pairs: a sorted vector, not a map (this runs once
        // per listed element).
        let mut names: Vec<&str> = Vec::with_capacity(self.pairs.len());
        for (k, _) in &self.pairs {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
        let mut sorted: Vec<(&str, &str)> = names
            .iter()
            .filter_map(|n| self.get(n).map(|v| (*n, v)))
            .collect();
        sorted.sort_unstable_by_key(|(k, _)| *k);
        w.count(sorted.len());
        for (k, v) in &sorted {
            w.string(k).string(v);
        }
        w.count(names.len());
        for k in names {
            w.string(k).string("");
        }
    }

    /// Decode. Values are lower-cased, as FDB5 does on decoding.
    ///
    /// # Errors
    /// [`DecodeError`]; [`DecodeError::Invalid`] for a keyword named twice
    /// or a name without a value.
    pub fn decode(r: &mut Reader<'_>) -> Result<Key, DecodeError> {
        // A pair takes at least two empty strings: 10 bytes.
        let n = r.count(10)?;
        let mut map = BTreeMap::new();
        for _ in 0..n {
            let k = r.string()?;
            let v = r.string()?.to_lowercase();
            if map.insert(k.clone(), v).is_some() {
                return Err(r.invalid(format!("keyword {k} twice in a key")));
            }
        }
        let m = r.count(10)?;
        let mut pairs = Vec::with_capacity(m.min(n));
        for _ in 0..m {
            let k = r.string()?;
            let _type = r.string()?;
            match map.remove(&k) {
                Some(v) => pairs.push((k, v)),
                None => return Err(r.invalid(format!("key names {k} without a value"))),
            }
        }
        // Values without a name (FDB5 never sends them): kept, in keyword order.
        pairs.extend(map);
        Ok(Key { pairs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn keys_round_trip(m in prop::collection::btree_map("[a-z]{1,8}", "[a-z0-9]{0,6}", 0..8)) {
            // Reverse order: names order differs from map order.
            let key = Key::new(m.into_iter().rev());
            let mut w = Writer::new();
            key.encode(&mut w);
            let b = w.into_bytes();
            let mut r = Reader::new(&b);
            prop_assert_eq!(Key::decode(&mut r).unwrap(), key);
            r.finish().unwrap();
        }
    }

    #[test]
    fn map_in_keyword_order_names_in_schema_order() {
        let key = Key::new([("type", "fc"), ("levtype", "sfc"), ("timespan", "")]);
        let mut w = Writer::new();
        key.encode(&mut w);
        let mut r = Reader::new(w.bytes());
        assert_eq!(r.ulong().unwrap(), 3);
        assert_eq!(r.string().unwrap(), "levtype");
        assert_eq!(Key::new([("a", "b")]).present().count(), 1);
    }
}
