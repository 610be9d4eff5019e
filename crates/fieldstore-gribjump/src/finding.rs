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

use std::collections::HashMap;

use fieldstore::{FieldStore, ListElement, ListOptions, Request};

use crate::error::CError;

/// Requests at or below which each is listed alone.
const ALONE: usize = 2;

/// Keys of a request's expansion looked up (a one-field request expands to
/// a few: optional keywords present or not, one per rule that fits).
const EXPANDED: usize = 64;

/// The stored fields of each request, in order (each request names one
/// field: a listing of it is the fallback).
///
/// # Errors
/// The store's listing errors; a request the schema refuses (an unknown
/// keyword or value).
pub fn fields_of(fs: &FieldStore, requests: &[&Request]) -> Result<Vec<Vec<ListElement>>, CError> {
    let mut found: Vec<Option<Vec<ListElement>>> = vec![None; requests.len()];
    if requests.len() > ALONE {
        // Requests by the keywords they name, in the order they name them.
        let mut groups: HashMap<Vec<&str>, Vec<usize>> = HashMap::new();
        for (i, r) in requests.iter().enumerate() {
            groups.entry(r.keywords().collect()).or_default().push(i);
        }
        for (keywords, members) in groups {
            if members.len() <= ALONE {
                continue;
            }
            let Some(union) = union_of(&keywords, members.iter().map(|&i| requests[i])) else {
                continue;
            };
            let listed = fs.list(&union, ListOptions::default())?;
            let stored: Vec<&ListElement> =
                listed.iter().filter(|e| e.location.is_some()).collect();
            let by_key: HashMap<String, &ListElement> = stored
                .iter()
                .map(|e| (e.full_key().to_string(), *e))
                .collect();
            let by_pairs: HashMap<String, &ListElement> = stored
                .iter()
                .map(|e| (signature(e.full_key().iter()), *e))
                .collect();
            for i in members {
                // The common case first: the request gives every keyword of
                // the key, in its canonical form (Polytope gives the values
                // `axes` answered).
                let given = requests[i].iter().map(|(k, v)| (k, v.to_string()));
                if let Some(e) = by_pairs.get(&signature(given)) {
                    found[i] = Some(vec![(*e).clone()]);
                    continue;
                }
                let Ok(keys) = fs.schema().expand(requests[i]) else {
                    continue;
                };
                // The keys the request can name (with and without optional
                // keywords, under each rule that fits), in the order
                // retrieve tries them: the first one stored.
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
            None => Ok(fs.list(r, ListOptions::default())?),
        })
        .collect()
}

/// `k=v` pairs in keyword order: the same for a key and a request that
/// give the same keywords the same values, in any order.
fn signature<K: AsRef<str>, V: AsRef<str>>(pairs: impl Iterator<Item = (K, V)>) -> String {
    let mut pairs: Vec<String> = pairs
        .map(|(k, v)| format!("{}={}", k.as_ref(), v.as_ref()))
        .collect();
    pairs.sort_unstable();
    pairs.join(",")
}

/// The request naming, for each keyword, every value the requests give it
/// (in first-seen order); `None` if a value cannot be joined (it holds the
/// separator, or is `all`).
fn union_of<'a>(keywords: &[&str], requests: impl Iterator<Item = &'a Request>) -> Option<Request> {
    let mut values: Vec<Vec<String>> = vec![Vec::new(); keywords.len()];
    for r in requests {
        for (slot, kw) in values.iter_mut().zip(keywords) {
            let v = r.get(kw)?.to_string();
            if v.contains('/') || v.contains(',') || v.eq_ignore_ascii_case("all") {
                return None;
            }
            if !slot.contains(&v) {
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
        let a: Request = "class=od,step=0,param=167".parse().unwrap();
        let b: Request = "class=od,step=6,param=167".parse().unwrap();
        let u = union_of(&["class", "step", "param"], [&a, &b].into_iter()).unwrap();
        assert_eq!(u.to_string(), "class=od,step=0/6,param=167");
        assert_eq!(
            signature([("step", "0"), ("class", "od")].into_iter()),
            signature([("class", "od"), ("step", "0")].into_iter())
        );
        let c: Request = "class=od,step=0/to/6,param=167".parse().unwrap();
        assert!(union_of(&["class", "step", "param"], [&a, &c].into_iter()).is_none());
    }
}
