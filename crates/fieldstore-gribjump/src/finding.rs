//! Finding the fields of many one-field requests with one listing.
//!
//! Polytope asks for a time series of 1,000 steps as 1,000 requests of one
//! field each. Listing each alone costs a catalogue walk per field; as
//! GribJump does, the requests that name the same keywords are listed once,
//! as their union (each keyword's values across the requests), and each
//! request's field is then found in what the union listed: by its
//! keyword-value pairs when they are a listed key's (values in canonical
//! form, as Polytope gives the ones `axes` answered), else by the
//! canonical keys the schema expands the request to
//! ([`fieldstore::Schema::expand`]: with and without optional keywords,
//! under each rule that fits), looked up among the listed keys in the
//! order retrieve tries them: the first one there is the request's field.
//!
//! The union may list fields no request names (its cross product): they are
//! ignored. A request none of whose keys is among them is listed alone
//! (which finds its field if the union missed it, or confirms it is not
//! stored).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use fieldstore::{FieldStore, Item, Key, ListElement, ListOptions, Request, Values};

use crate::error::CError;
use crate::request_text::RequestText;

/// Requests at or below which each is listed alone.
const ALONE: usize = 2;

/// Keys of a request's expansion looked up (a one-field request expands to
/// a few: optional keywords present or not, one per rule that fits).
const EXPANDED: usize = 64;

/// The stored fields of each request, in order (each request names one
/// field: a listing of it is the fallback).
///
/// Cost: one listing per group and, per request and listed field, a hash
/// of its pairs (no text built): Polytope's 1,000-step series is found in
/// about the time of its one listing.
///
/// # Errors
/// The store's listing errors; a request the schema refuses (an unknown
/// keyword or value).
pub fn fields_of(
    fs: &FieldStore,
    requests: &[&RequestText],
) -> Result<Vec<Vec<ListElement>>, CError> {
    let mut found: Vec<Option<Vec<ListElement>>> = vec![None; requests.len()];
    if requests.len() > ALONE {
        // Requests by the keywords they name, in the order they name them.
        let mut groups: HashMap<Vec<&str>, Vec<usize>> = HashMap::new();
        for (i, r) in requests.iter().enumerate() {
            let keywords = match r.pairs() {
                Some(pairs) => pairs.map(|(k, _)| k).collect(),
                None => r.request().keywords().collect(),
            };
            groups.entry(keywords).or_default().push(i);
        }
        for (keywords, members) in groups {
            if members.len() <= ALONE {
                continue;
            }
            let Some(union) = union_of(&keywords, members.iter().map(|&i| requests[i])) else {
                continue;
            };
            let listed = fs.list(&union, ListOptions::default())?;
            let stored: Vec<(&ListElement, Key)> = listed
                .iter()
                .filter(|e| e.location.is_some())
                .map(|e| (e, e.full_key()))
                .collect();
            // By the hash of their pairs: a collision only sends a request
            // to the slow path below (a hit is checked pair by pair).
            let by_pairs: HashMap<u64, usize> = stored
                .iter()
                .enumerate()
                .map(|(at, (_, k))| (pairs_hash(k.iter()), at))
                .collect();
            let mut by_key: Option<HashMap<String, &ListElement>> = None;
            for i in members {
                // The common case first: the request gives every keyword of
                // the key, one value each, in its canonical form (Polytope
                // gives the values `axes` answered).
                if let Some(pairs) = single_values(requests[i]) {
                    let hit = by_pairs
                        .get(&pairs_hash(pairs.iter().copied()))
                        .map(|&at| &stored[at])
                        .filter(|(_, key)| same_pairs(key, &pairs));
                    if let Some((e, _)) = hit {
                        found[i] = Some(vec![(*e).clone()]);
                        continue;
                    }
                }
                let Ok(keys) = fs.schema().expand(requests[i].request()) else {
                    continue;
                };
                // The keys the request can name (with and without optional
                // keywords, under each rule that fits), in the order
                // retrieve tries them: the first one stored.
                let by_key = by_key.get_or_insert_with(|| {
                    stored.iter().map(|(e, k)| (k.to_string(), *e)).collect()
                });
                let hit = keys
                    .take(EXPANDED)
                    .find_map(|k| by_key.get(&k.full_key().to_string()));
                if let Some(e) = hit {
                    found[i] = Some(vec![(*e).clone()]);
                }
            }
        }
    }
    found
        .into_iter()
        .zip(requests)
        .map(|(f, r)| match f {
            Some(f) => Ok(f),
            None => Ok(fs.list(r.request(), ListOptions::default())?),
        })
        .collect()
}

/// The one value `values` names, if it names exactly one and no range.
fn single(values: &Values) -> Option<&str> {
    match values {
        Values::Items(items) => match items.as_slice() {
            [Item::Value(v)] => Some(v),
            _ => None,
        },
        Values::All => None,
    }
}

/// The request's pairs, if it gives every keyword one value.
fn single_values(request: &RequestText) -> Option<Vec<(&str, &str)>> {
    if let Some(pairs) = request.pairs() {
        return Some(pairs.collect());
    }
    request
        .request()
        .iter()
        .map(|(k, v)| Some((k, single(v)?)))
        .collect()
}

/// A hash of `keyword=value` pairs that does not depend on their order
/// (the sum of each pair's hash): equal for a key and a request that give
/// the same keywords the same values.
fn pairs_hash<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> u64 {
    pairs.fold(0u64, |sum, (k, v)| {
        let mut h = DefaultHasher::new();
        k.hash(&mut h);
        v.hash(&mut h);
        sum.wrapping_add(h.finish())
    })
}

/// Whether `key` has exactly the keywords of `pairs`, with their values.
fn same_pairs(key: &Key, pairs: &[(&str, &str)]) -> bool {
    key.len() == pairs.len() && pairs.iter().all(|&(k, v)| key.get(k) == Some(v))
}

/// The request naming, for each keyword, every value the requests give it
/// (in first-seen order); `None` if a value cannot be joined (it holds the
/// separator, or is `all`). Every request names `keywords`, in that order.
fn union_of<'a>(
    keywords: &[&str],
    requests: impl Iterator<Item = &'a RequestText>,
) -> Option<Request> {
    let mut values: Vec<Vec<&str>> = vec![Vec::new(); keywords.len()];
    let mut seen: Vec<HashSet<&str>> = vec![HashSet::new(); keywords.len()];
    for r in requests {
        // Only plain requests and parsed ones of single values are joined.
        let pairs = single_values(r)?;
        for ((slot, seen), (_, v)) in values.iter_mut().zip(&mut seen).zip(pairs) {
            if v.contains('/') || v.contains(',') || v.eq_ignore_ascii_case("all") {
                return None;
            }
            if seen.insert(v) {
                slot.push(v);
            }
        }
    }
    let text: Vec<String> = keywords
        .iter()
        .zip(&values)
        .map(|(k, v)| format!("{k}={}", v.join("/")))
        .collect();
    text.join(",").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_names_every_value_once() {
        let a = RequestText::new("class=od,step=0,param=167").unwrap();
        let b = RequestText::new("class=od,step=6,param=167").unwrap();
        let u = union_of(&["class", "step", "param"], [&a, &b].into_iter()).unwrap();
        assert_eq!(u.to_string(), "class=od,step=0/6,param=167");
        assert_eq!(
            pairs_hash([("step", "0"), ("class", "od")].into_iter()),
            pairs_hash([("class", "od"), ("step", "0")].into_iter())
        );
        let key = Key::from_pairs([("class", "od"), ("step", "0")]).unwrap();
        assert!(same_pairs(&key, &[("step", "0"), ("class", "od")]));
        assert!(!same_pairs(&key, &[("step", "0")]));
        assert!(!same_pairs(&key, &[("step", "6"), ("class", "od")]));
        assert_eq!(
            single_values(&a),
            Some(vec![("class", "od"), ("step", "0"), ("param", "167")])
        );
        let c = RequestText::new("class=od,step=0/to/6,param=167").unwrap();
        assert_eq!(single_values(&c), None);
        assert!(union_of(&["class", "step", "param"], [&a, &c].into_iter()).is_none());
    }
}
