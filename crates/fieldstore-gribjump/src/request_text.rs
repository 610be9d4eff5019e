//! A request as GribJump's clients give it (`retrieve,class=od,…,step=6`):
//! its text, its pairs read in place when it is plain, the parsed
//! [`Request`] made only when needed.
//!
//! Polytope's 1,000-step series is 1,000 requests made, extracted and
//! deleted at each call; parsing each into a [`Request`] (dozens of small
//! allocations, and as many frees at its deletion) cost more than finding
//! the fields. A *plain* request — an optional `retrieve` verb, then
//! `keyword=value` items with lower-case distinct keywords and one plain
//! value each — is read as spans of its text: exactly the pairs the full
//! parser gives it (it trims, splits and lower-cases nothing such a text
//! holds). Any other text goes through the full parser when made, so a
//! bad request fails at `gribjump_new_request`, as before.

use std::sync::OnceLock;

use fieldstore::{Item, Request, Values};

use crate::error::CError;

/// A request's text, and what it names.
#[derive(Debug)]
pub struct RequestText {
    text: String,
    /// Plain: each pair's keyword and value, as byte spans of `text`.
    plain: Option<Vec<[u32; 4]>>,
    parsed: OnceLock<Request>,
}

impl RequestText {
    /// The request `text`.
    ///
    /// # Errors
    /// The parser's, naming the text, when it is not plain.
    pub fn new(text: &str) -> Result<RequestText, CError> {
        let plain = plain_pairs(text);
        let parsed = OnceLock::new();
        if plain.is_none() {
            let request = text
                .parse::<Request>()
                .map_err(|e| CError::new(format!("the request {text:?}: {e}")))?;
            let _ = parsed.set(request);
        }
        Ok(RequestText {
            text: text.to_string(),
            plain,
            parsed,
        })
    }

    /// The text as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The pairs, in order, if the request is plain (every keyword one
    /// value, no range).
    pub fn pairs(&self) -> Option<impl Iterator<Item = (&str, &str)> + '_> {
        let spans = self.plain.as_ref()?;
        let t = self.text.as_str();
        Some(spans.iter().map(move |&[k0, k1, v0, v1]| {
            (&t[k0 as usize..k1 as usize], &t[v0 as usize..v1 as usize])
        }))
    }

    /// The request parsed (made at the first call for a plain one).
    pub fn request(&self) -> &Request {
        self.parsed.get_or_init(|| {
            let mut request = Request::new();
            for (k, v) in self.pairs().into_iter().flatten() {
                // Distinct keywords: checked by `plain_pairs`.
                let _ = request.insert(k, Values::Items(vec![Item::Value(v.to_string())]));
            }
            request
        })
    }
}

/// The spans of `text`'s pairs if it is plain (see the module
/// documentation), else `None` (the full parser decides).
fn plain_pairs(text: &str) -> Option<Vec<[u32; 4]>> {
    if text.len() > u32::MAX as usize {
        return None;
    }
    let mut spans: Vec<[u32; 4]> = Vec::with_capacity(16);
    let mut at = 0usize;
    for (n, item) in text.split(',').enumerate() {
        let start = at;
        at += item.len() + 1;
        let Some(eq) = item.find('=') else {
            if n == 0 && item == "retrieve" {
                continue;
            }
            return None;
        };
        let (k, v) = (&item[..eq], &item[eq + 1..]);
        let keyword_ok = !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
        let value_ok = !v.is_empty()
            && v.bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'/' | b'=' | b'{' | b'}' | b','))
            && !["to", "by", "all"]
                .iter()
                .any(|w| v.eq_ignore_ascii_case(w));
        if !keyword_ok || !value_ok {
            return None;
        }
        let t = text.as_bytes();
        if spans
            .iter()
            .any(|&[a, b, _, _]| &t[a as usize..b as usize] == k.as_bytes())
        {
            return None;
        }
        let (k0, v0) = (start, start + eq + 1);
        spans.push([
            k0 as u32,
            (k0 + k.len()) as u32,
            v0 as u32,
            (v0 + v.len()) as u32,
        ]);
    }
    (!spans.is_empty()).then_some(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain text's pairs are the full parser's, and its request equal.
    #[test]
    fn plain_requests_read_as_the_parser_reads_them() {
        for text in [
            "retrieve,class=od,expver=0001,step=6,param=167",
            "class=od,step=6",
            "levtype=sfc,param=2t,date=-1",
        ] {
            let r = RequestText::new(text).unwrap();
            let pairs: Vec<(&str, &str)> = r.pairs().expect("plain").collect();
            let parsed: Request = text.parse().unwrap();
            let want: Vec<(&str, String)> =
                parsed.iter().map(|(k, v)| (k, v.to_string())).collect();
            assert_eq!(
                pairs
                    .iter()
                    .map(|&(k, v)| (k, v.to_string()))
                    .collect::<Vec<_>>(),
                want
            );
            assert_eq!(r.request(), &parsed);
        }
    }

    /// What is not plain goes through the parser: its request, or its error.
    #[test]
    fn other_requests_are_parsed_when_made() {
        for text in [
            "retrieve,class=od,step=0/6",
            "retrieve,class=od,step=0/to/6",
            "Class=od,step=6",
            "class=od, step=6",
            "list,class=od",
            "class=od,step=all",
        ] {
            let r = RequestText::new(text).unwrap();
            assert!(r.pairs().is_none(), "{text}");
            assert_eq!(r.request(), &text.parse::<Request>().unwrap(), "{text}");
        }
        for text in [
            "class=od,class=rd",
            "retrieve",
            "class=od,,step=1",
            "class=od,step=to",
            "x y=1",
        ] {
            assert!(RequestText::new(text).is_err(), "{text}");
        }
    }
}
