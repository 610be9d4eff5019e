//! Keys: ordered `keyword=value` pairs identifying a field or a part of one.
//!
//! A [`Key`] is the general form. A schema splits a field's full key into a
//! [`DatasetKey`] (level 1), a [`CollocationKey`] (level 2) and an
//! [`ElementKey`] (level 3); the three newtypes keep the levels apart in
//! signatures.
//!
//! # Invariants
//! - Keywords are non-empty and made of ASCII letters, digits, `_` and `.`;
//!   each appears at most once. Their case is kept: FDB5's keywords are
//!   case-sensitive and a schema may spell one in camelCase
//!   (`generatingProcessIdentifier`); a schema gives keys its own spelling
//!   when it splits them ([`crate::schema::Schema::resolve_key`]).
//! - Values contain no `,`, `=`, `{`, `}`, whitespace or control characters.
//!   A value may be empty (an optional keyword the field did not carry).
//! - The canonical string form (`class=od,expver=0001,...`) keeps insertion
//!   order and round-trips exactly through [`Key::from_str`](std::str::FromStr).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};

/// Why a key could not be built. Mapped to [`ErrorKind::InvalidInput`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A keyword is empty or has characters keys cannot hold.
    #[error("invalid keyword '{keyword}' in key: keywords are ASCII letters, digits, '_' and '.'")]
    InvalidKeyword {
        /// The offending keyword.
        keyword: String,
    },
    /// A value holds a character keys cannot hold.
    #[error("invalid value '{value}' for keyword '{keyword}' in key: values may not contain ',', '=', '{{', '}}', whitespace or control characters")]
    InvalidValue {
        /// The keyword.
        keyword: String,
        /// The offending value.
        value: String,
    },
    /// A keyword appears twice.
    #[error("keyword '{keyword}' appears twice in key")]
    DuplicateKeyword {
        /// The repeated keyword.
        keyword: String,
    },
    /// A stored value no request could name ([`check_requestable`]).
    #[error("value '{value}' of keyword '{keyword}' cannot be archived: {reason}")]
    Unrequestable {
        /// The keyword.
        keyword: String,
        /// The offending value (canonical).
        value: String,
        /// Why no request can name it.
        reason: &'static str,
    },
    /// A `k=v` item has no `=`.
    #[error("malformed key item '{item}': expected keyword=value")]
    MissingEquals {
        /// The item as written.
        item: String,
    },
}

impl From<KeyError> for Error {
    fn from(e: KeyError) -> Self {
        Error::from_source(ErrorKind::InvalidInput, e)
    }
}

/// Whether `keyword` is a valid keyword (see the module invariants).
pub fn is_valid_keyword(keyword: &str) -> bool {
    !keyword.is_empty()
        && keyword
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// Whether `value` is a valid key value (see the module invariants).
pub fn is_valid_value(value: &str) -> bool {
    value
        .chars()
        .all(|c| !matches!(c, ',' | '=' | '{' | '}') && !c.is_whitespace() && !c.is_control())
}

/// Whether a request can name `value` (canonical) of `keyword`, checked
/// before a field is archived: what a request cannot name could only ever
/// be reached by listing everything. A request separates values with `/`
/// and reads `all`, `to` and `by` as words, so a value holding `/` or equal
/// to one of those words is refused. (Characters keys cannot hold at all —
/// `,`, `=`, braces, whitespace, control characters such as NUL and
/// newline — are refused when the key is built, so the canonical form
/// `k=v,k=v` always round-trips.)
///
/// # Errors
/// [`KeyError::Unrequestable`] naming the keyword, the value and why.
pub fn check_requestable(keyword: &str, value: &str) -> Result<(), KeyError> {
    let reason = if value.contains('/') {
        "'/' separates values in requests, so no request could name it"
    } else if ["all", "to", "by"]
        .iter()
        .any(|w| value.eq_ignore_ascii_case(w))
    {
        "requests read it as a word ('all', 'to', 'by'), so no request could name it"
    } else {
        return Ok(());
    };
    Err(KeyError::Unrequestable {
        keyword: keyword.to_string(),
        value: value.to_string(),
        reason,
    })
}

/// An ordered list of `keyword=value` pairs with unique keywords.
///
/// Held as its canonical text (`class=od,expver=0001`) in one shared
/// allocation: a key decoded from an index entry costs one allocation and
/// no reference count per pair, a clone one reference count, equality and
/// hashing one byte comparison or pass. The text is unambiguous because
/// keywords and values can hold neither `,` nor `=` (the module
/// invariants); pairs are read back by scanning it (keys are short).
/// Mutation builds a new text.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Key {
    /// `None` for the empty key (no allocation), else the canonical text,
    /// never empty.
    text: Option<std::sync::Arc<str>>,
}

/// The pairs of a key's canonical text, in order.
#[derive(Debug, Clone)]
pub struct Pairs<'a> {
    rest: &'a str,
    left: usize,
}

impl<'a> Pairs<'a> {
    fn new(text: &'a str) -> Self {
        // One more pair than commas, but none in the empty text.
        let left = usize::from(!text.is_empty()) + text.bytes().filter(|&b| b == b',').count();
        Pairs { rest: text, left }
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // A plain byte scan: keys are short, and `str::find`'s searcher
        // cost more than the scan (`=` and `,` are ASCII, so the cuts are
        // on character boundaries). Every item has an `=` (the text is
        // built only by this type).
        let bytes = self.rest.as_bytes();
        let end = bytes.iter().position(|&b| b == b',').unwrap_or(bytes.len());
        let eq = bytes[..end].iter().position(|&b| b == b'=').unwrap_or(end);
        let keyword = &self.rest[..eq];
        let value = self.rest.get(eq + 1..end).unwrap_or("");
        self.rest = self.rest.get(end + 1..).unwrap_or("");
        Some((keyword, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Pairs<'_> {}

/// A key built pair by pair in one text and allocated once, by
/// [`KeyText::finish`]: a split builds three keys per archived field, and
/// [`Key::push_unchecked`] copied and allocated the whole text again for
/// every pair (with the keyword's and the value's own strings, some 4
/// allocations per pair; the hammer's 64 KiB archive spent about a tenth
/// of its CPU splitting keys).
#[derive(Debug, Default)]
pub(crate) struct KeyText(String);

impl KeyText {
    /// Forget the pairs, keeping the allocation.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// Append a pair known to be valid, its keyword not yet in the text
    /// (checked in debug builds only, as [`Key::push_unchecked`]).
    pub(crate) fn push_unchecked(&mut self, keyword: &str, value: &str) {
        debug_assert!(
            is_valid_keyword(keyword) && is_valid_value(value),
            "{keyword}={value}"
        );
        debug_assert!(
            Pairs::new(&self.0).all(|(k, _)| k != keyword),
            "duplicate {keyword}"
        );
        append(&mut self.0, keyword, value);
    }

    /// The key of the pairs appended so far.
    pub(crate) fn finish(&self) -> Key {
        Key::from_text(&self.0)
    }
}

/// Append `keyword=value` to a canonical text being built.
fn append(text: &mut String, keyword: &str, value: &str) {
    if !text.is_empty() {
        text.push(',');
    }
    text.push_str(keyword);
    text.push('=');
    text.push_str(value);
}

impl Key {
    /// An empty key.
    pub fn new() -> Self {
        Key { text: None }
    }

    /// The key whose canonical text is `text` (valid: built by this type).
    fn from_text(text: &str) -> Key {
        Key {
            text: (!text.is_empty()).then(|| text.into()),
        }
    }

    /// The canonical text, `k=v,k=v` (empty for the empty key).
    pub fn as_str(&self) -> &str {
        self.text.as_deref().unwrap_or("")
    }

    /// Build a key from pairs, validating each.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for an invalid keyword or value, or a
    /// keyword given twice.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<Self, KeyError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        // Checked where they lie and copied once, into the text: a model
        // builds a key per field it archives.
        let mut text = String::new();
        for (k, v) in pairs {
            let (keyword, value) = checked_pair(k.as_ref(), v.as_ref())?;
            if value_in(&text, keyword).is_some() {
                return Err(KeyError::DuplicateKeyword {
                    keyword: keyword.to_string(),
                });
            }
            append(&mut text, keyword, value);
        }
        Ok(Key::from_text(&text))
    }

    /// Append `keyword=value`.
    ///
    /// # Errors
    /// See [`Key::from_pairs`].
    pub fn push(
        &mut self,
        keyword: impl AsRef<str>,
        value: impl AsRef<str>,
    ) -> Result<(), KeyError> {
        let (keyword, value) = checked_pair(keyword.as_ref(), value.as_ref())?;
        if self.get(keyword).is_some() {
            return Err(KeyError::DuplicateKeyword {
                keyword: keyword.to_string(),
            });
        }
        self.append_unchecked(keyword, value);
        Ok(())
    }

    /// A key of `keywords` (valid and distinct: checked by the caller, once
    /// for many keys) with `values` in that order, each checked here, built
    /// in `scratch` (reused from key to key) and allocated once. For
    /// decoding index entries, where per-pair checks and allocations were a
    /// good part of a listing.
    ///
    /// # Errors
    /// [`KeyError::InvalidValue`] for the first invalid value.
    pub(crate) fn from_checked_keywords<'v>(
        keywords: &[&str],
        values: impl IntoIterator<Item = &'v str>,
        scratch: &mut String,
    ) -> Result<Key, KeyError> {
        debug_assert!(keywords.iter().all(|k| is_valid_keyword(k)));
        scratch.clear();
        for (k, v) in keywords.iter().zip(values) {
            if !is_valid_value(v) {
                return Err(KeyError::InvalidValue {
                    keyword: k.to_string(),
                    value: v.to_string(),
                });
            }
            append(scratch, k, v);
        }
        Ok(Key::from_text(scratch))
    }

    /// Append a pair known to be valid (produced by the schema from validated
    /// parts). Crate-internal: skips validation. Each call copies the text
    /// and allocates it again: a key built pair by pair goes through
    /// [`KeyText`] instead.
    pub(crate) fn push_unchecked(&mut self, keyword: String, value: String) {
        debug_assert!(
            is_valid_keyword(&keyword) && is_valid_value(&value),
            "{keyword}={value}"
        );
        debug_assert!(self.get(&keyword).is_none(), "duplicate {keyword}");
        self.append_unchecked(&keyword, &value);
    }

    fn append_unchecked(&mut self, keyword: &str, value: &str) {
        let old = self.as_str();
        let mut text = String::with_capacity(old.len() + keyword.len() + value.len() + 2);
        text.push_str(old);
        append(&mut text, keyword, value);
        *self = Key::from_text(&text);
    }

    /// Set `keyword` to `value`, replacing an existing value in place or
    /// appending.
    ///
    /// # Errors
    /// See [`Key::from_pairs`].
    pub fn set(
        &mut self,
        keyword: impl AsRef<str>,
        value: impl AsRef<str>,
    ) -> Result<(), KeyError> {
        let (keyword, value) = checked_pair(keyword.as_ref(), value.as_ref())?;
        if self.get(keyword).is_none() {
            self.append_unchecked(keyword, value);
            return Ok(());
        }
        let mut text = String::with_capacity(self.as_str().len() + value.len());
        for (k, v) in self.iter() {
            append(&mut text, k, if k == keyword { value } else { v });
        }
        *self = Key::from_text(&text);
        Ok(())
    }

    /// Remove `keyword`, returning its value.
    pub fn remove(&mut self, keyword: &str) -> Option<String> {
        let value = self.get(keyword)?.to_string();
        let mut text = String::with_capacity(self.as_str().len());
        for (k, v) in self.iter().filter(|(k, _)| *k != keyword) {
            append(&mut text, k, v);
        }
        *self = Key::from_text(&text);
        Some(value)
    }

    /// The value of `keyword`, if present.
    pub fn get(&self, keyword: &str) -> Option<&str> {
        value_in(self.as_str(), keyword)
    }

    /// Whether `keyword` is present.
    pub fn contains(&self, keyword: &str) -> bool {
        self.get(keyword).is_some()
    }

    /// The pairs, in order.
    pub fn iter(&self) -> Pairs<'_> {
        Pairs::new(self.as_str())
    }

    /// The keywords, in order.
    pub fn keywords(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.iter().len()
    }

    /// Whether the key has no pairs.
    pub fn is_empty(&self) -> bool {
        self.text.is_none()
    }

    /// Compare as FDB5 orders the fingerprints ([`Key::fingerprint`]) of
    /// keys split by one rule: byte by byte over the values joined by `:`,
    /// a prefix first. This is the order of a TOC index's B-tree, which
    /// FDB5 lists an index in, and of its database directories' names.
    /// Allocates nothing: listings compare every entry.
    pub fn cmp_fingerprint(&self, other: &Key) -> std::cmp::Ordering {
        fn bytes(key: &Key) -> impl Iterator<Item = u8> + '_ {
            key.values().enumerate().flat_map(|(i, v)| {
                let sep = (i > 0).then_some(b':');
                sep.into_iter().chain(v.bytes())
            })
        }
        bytes(self).cmp(bytes(other))
    }

    /// Compare as FDB5 compares keys held as dictionaries (its `Key`'s
    /// `operator<`): the pairs sorted by keyword, then pair by pair. The
    /// order in which an FDB5 writer writes its indexes at a flush.
    pub fn cmp_as_dict(&self, other: &Key) -> std::cmp::Ordering {
        fn sorted(key: &Key) -> Vec<(&str, &str)> {
            let mut pairs: Vec<(&str, &str)> = key.iter().collect();
            pairs.sort_unstable();
            pairs
        }
        sorted(self).cmp(&sorted(other))
    }

    /// The values joined by `:`, FDB5's fingerprint (`od:0001:oper:...`).
    /// Not unique across schemas; used for names, not identity.
    pub fn fingerprint(&self) -> String {
        let mut s = String::with_capacity(self.as_str().len());
        for (i, v) in self.values().enumerate() {
            if i > 0 {
                s.push(':');
            }
            s.push_str(v);
        }
        s
    }

    /// Concatenate keys (dataset + collocation + element = full key).
    ///
    /// A keyword present in several parts keeps its first position and takes
    /// the value of the last part: a schema may type one keyword at several
    /// levels (`hdate: Year` above `hdate: Date`), and the finest level holds
    /// the field's own value.
    pub fn join<'a>(parts: impl IntoIterator<Item = &'a Key> + Clone) -> Key {
        Key::joined(parts, false)
    }

    /// [`Key::join`] then [`Key::without_empty`], in one pass (retrieve
    /// builds one such key per field).
    pub fn join_present<'a>(parts: impl IntoIterator<Item = &'a Key> + Clone) -> Key {
        Key::joined(parts, true)
    }

    fn joined<'a>(parts: impl IntoIterator<Item = &'a Key> + Clone, present: bool) -> Key {
        let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(16);
        for part in parts {
            for (k, v) in part.iter() {
                match pairs.iter_mut().find(|(ok, _)| *ok == k) {
                    Some(entry) => entry.1 = v,
                    None => pairs.push((k, v)),
                }
            }
        }
        let mut text = String::new();
        for (k, v) in pairs.into_iter().filter(|(_, v)| !present || !v.is_empty()) {
            append(&mut text, k, v);
        }
        Key::from_text(&text)
    }

    /// The key without pairs whose value is empty (absent optional keywords).
    pub fn without_empty(&self) -> Key {
        if self.values().all(|v| !v.is_empty()) {
            return self.clone(); // the common case: a shared copy
        }
        Key::join_present([self])
    }

    /// Print in `fdb-list`'s brace form: `{class=od,expver=0001}`. Pairs with
    /// an empty value (absent optional keywords) are left out, as FDB5 does.
    pub fn braced(&self) -> String {
        format!("{{{}}}", self.without_empty())
    }
}

/// `keyword` and `value` checked.
fn checked_pair<'p>(keyword: &'p str, value: &'p str) -> Result<(&'p str, &'p str), KeyError> {
    if !is_valid_keyword(keyword) {
        return Err(KeyError::InvalidKeyword {
            keyword: keyword.to_string(),
        });
    }
    if !is_valid_value(value) {
        return Err(KeyError::InvalidValue {
            keyword: keyword.to_string(),
            value: value.to_string(),
        });
    }
    Ok((keyword, value))
}

/// The value of `keyword` in a key's text `k=v,k=v`, if present.
///
/// Straight on the text: compare each item's start with `keyword=`, skip to
/// the next `,` (the schema asks for every keyword of each key it splits:
/// `iter().find` cost a tenth of an archive's CPU).
fn value_in<'t>(text: &'t str, keyword: &str) -> Option<&'t str> {
    let mut rest = text.as_bytes();
    let n = keyword.len();
    loop {
        let end = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
        let item = &rest[..end];
        if item.len() > n && item[n] == b'=' && &item[..n] == keyword.as_bytes() {
            // Cut after an ASCII `=` and before an ASCII `,`: on character
            // boundaries of the (valid UTF-8) text.
            return std::str::from_utf8(&item[n + 1..]).ok();
        }
        if end == rest.len() {
            return None;
        }
        rest = &rest[end + 1..];
    }
}

/// Pair by pair, as a list of `(keyword, value)` compares (not the text's
/// byte order, in which `a1=` sorts before `a=`).
impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.iter().cmp(other.iter())
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Hashes the canonical text, which equal keys share.
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.as_str().as_bytes());
        state.write_u8(0xff);
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

impl FromStr for Key {
    type Err = KeyError;

    /// Parse `k=v,k=v`. Whitespace around items is ignored; an empty string
    /// is the empty key.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(Key::new());
        }
        // Built as one text by `from_pairs`, not pushed pair by pair (each
        // push copies the whole key so far).
        let pairs = s.split(',').map(|item| {
            let item = item.trim();
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| KeyError::MissingEquals {
                    item: item.to_string(),
                })?;
            Ok((k.trim(), v.trim()))
        });
        Key::from_pairs(pairs.collect::<Result<Vec<_>, KeyError>>()?)
    }
}

impl serde::Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // `Pairs` knows its length: the map's is given up front.
        serializer.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of keyword to value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Key, A::Error> {
                let mut key = Key::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    key.push(k, v).map_err(serde::de::Error::custom)?;
                }
                Ok(key)
            }
        }
        deserializer.deserialize_map(V)
    }
}

macro_rules! level_key {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Key);

        impl $name {
            /// The underlying key.
            pub fn key(&self) -> &Key {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = Key;
            fn deref(&self) -> &Key {
                &self.0
            }
        }

        impl From<Key> for $name {
            fn from(k: Key) -> Self {
                $name(k)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }

        impl FromStr for $name {
            type Err = KeyError;
            fn from_str(s: &str) -> Result<Self, KeyError> {
                Key::from_str(s).map($name)
            }
        }
    };
}

level_key!(
    /// Level 1: names a dataset (FDB5's database; a directory, a DAOS
    /// container, a RADOS namespace).
    DatasetKey
);
level_key!(
    /// Level 2: names a collocation within a dataset (FDB5's index; fields
    /// stored together).
    CollocationKey
);
level_key!(
    /// Level 3: names a field within a collocation (FDB5's datum key).
    ElementKey
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_canonical_form() {
        let s = "class=od,expver=0001,stream=oper,levelist=,param=130";
        let k: Key = s.parse().unwrap();
        assert_eq!(k.to_string(), s);
        assert_eq!(k.get("levelist"), Some(""));
        assert_eq!(k.braced(), "{class=od,expver=0001,stream=oper,param=130}");
        assert_eq!(k.fingerprint(), "od:0001:oper::130");
    }

    #[test]
    fn fingerprint_order_is_fdb5_btree_order() {
        // Measured with FDB5 5.25: one flush of these lists 0:165, 0:167,
        // 12:167, 24:228, 24:31, 6:167 (text order, not numeric).
        let mut keys: Vec<Key> = ["6:167", "24:31", "0:167", "12:167", "24:228", "0:165"]
            .iter()
            .map(|f| {
                let (step, param) = f.split_once(':').unwrap();
                format!("step={step},levelist=,param={param}")
                    .parse()
                    .unwrap()
            })
            .collect();
        keys.sort_by(Key::cmp_fingerprint);
        let got: Vec<String> = keys.iter().map(Key::fingerprint).collect();
        assert_eq!(
            got,
            ["0::165", "0::167", "12::167", "24::228", "24::31", "6::167"]
        );
        // A prefix first, and ':' after the digits: "1:x" after "10:x".
        let a: Key = "step=1,param=x".parse().unwrap();
        let b: Key = "step=10,param=x".parse().unwrap();
        assert_eq!(a.cmp_fingerprint(&b), std::cmp::Ordering::Greater);
        let c: Key = "step=1".parse().unwrap();
        assert_eq!(c.cmp_fingerprint(&a), std::cmp::Ordering::Less);
    }

    #[test]
    fn dict_order_sorts_keywords_first() {
        // FDB5 compares {type=fc,levtype=ml} and {type=an,levtype=pl} by
        // levtype first.
        let a: Key = "type=fc,levtype=ml".parse().unwrap();
        let b: Key = "type=an,levtype=pl".parse().unwrap();
        assert_eq!(a.cmp_as_dict(&b), std::cmp::Ordering::Less);
        assert_eq!(a.cmp(&b), std::cmp::Ordering::Greater);
    }

    #[test]
    fn rejects_bad_items_verbatim() {
        assert_eq!(
            "class=od,class=rd".parse::<Key>().unwrap_err().to_string(),
            "keyword 'class' appears twice in key"
        );
        assert_eq!(
            "class=od,step".parse::<Key>().unwrap_err().to_string(),
            "malformed key item 'step': expected keyword=value"
        );
        assert_eq!(
            "cl ass=od".parse::<Key>().unwrap_err().to_string(),
            "invalid keyword 'cl ass' in key: keywords are ASCII letters, digits, '_' and '.'"
        );
    }

    #[test]
    fn from_pairs_checks_as_parsing_does() {
        let twice = Key::from_pairs([("class", "od"), ("step", "1"), ("class", "rd")]);
        assert_eq!(
            twice.unwrap_err().to_string(),
            "keyword 'class' appears twice in key"
        );
        // A keyword that begins another is not the same keyword.
        let k = Key::from_pairs([("stepx", "2"), ("step", "1"), ("s", "3")]).unwrap();
        assert_eq!(k.to_string(), "stepx=2,step=1,s=3");
        assert_eq!(k.get("step"), Some("1"));
        let bad = Key::from_pairs([("class", "od"), ("step", "1,2")]).unwrap_err();
        assert!(
            matches!(&bad, KeyError::InvalidValue { keyword, value }
            if keyword == "step" && value == "1,2"),
            "{bad}"
        );
        let owned = vec![("param".to_string(), "130".to_string())];
        assert_eq!(Key::from_pairs(owned).unwrap().to_string(), "param=130");
    }

    #[test]
    fn keywords_keep_their_case() {
        // A schema gives them its spelling when it splits them
        // (schema::tests::camel_case_keywords_take_the_schemas_spelling).
        let k: Key = "CLASS=od,generatingProcessIdentifier=1".parse().unwrap();
        assert_eq!(k.to_string(), "CLASS=od,generatingProcessIdentifier=1");
    }

    #[test]
    fn join_present_is_join_without_empty() {
        let a: Key = "class=od,stream=,hdate=2023".parse().unwrap();
        let b: Key = "type=an,hdate=20231201,levelist=".parse().unwrap();
        let c: Key = "type=,step=6".parse().unwrap();
        for parts in [vec![&a, &b, &c], vec![&c, &b, &a], vec![&a], vec![]] {
            let joined = Key::join(parts.iter().copied());
            let present = Key::from_pairs(joined.iter().filter(|(_, v)| !v.is_empty())).unwrap();
            assert_eq!(Key::join_present(parts.iter().copied()), present);
            assert_eq!(joined.without_empty(), present);
        }
        assert_eq!(
            Key::join_present([&a, &b, &c]).to_string(),
            "class=od,hdate=20231201,step=6"
        );
    }

    #[test]
    fn join_keeps_order_and_last_value() {
        let a: Key = "class=od,hdate=2023".parse().unwrap();
        let b: Key = "type=an,hdate=20231201".parse().unwrap();
        assert_eq!(
            Key::join([&a, &b]).to_string(),
            "class=od,hdate=20231201,type=an"
        );
    }
}
