//! fieldstore's keys, requests, locations and schemas as the client sends
//! and receives them.

use fieldstore_core::types::CivilDate;
use fieldstore_core::{
    CollocationKey, DatasetKey, ElementKey, Error, FieldLocation, Item, Key, ListElement, Request,
    Result, Schema, Values,
};

#[cfg(test)]
use crate::elements::ListElement as WireElement;
use crate::key::Key as WireKey;
use crate::location::{FieldLocation as WireLocation, Uri, REMOTE_FIELD_LOCATION};
use crate::request::{MarsRequest, ToolRequest};
use crate::schema as ws;
use crate::Reader;

/// A fieldstore key as a wire key, pairs in the key's (schema) order,
/// absent optional keywords with their empty values, as FDB5 sends them.
pub(crate) fn wire_key(key: &Key) -> WireKey {
    WireKey::new(key.iter())
}

fn key(w: &WireKey, endpoint: &str) -> Result<Key> {
    Key::from_pairs(w.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| Error::corrupt(format!("server {endpoint} sent the key {w:?}: {e}")))
}

/// A list or inspect element as fieldstore's, decoded plainly: what
/// [`ElementDecoder`] must give (its test).
#[cfg(test)]
pub(crate) fn element(w: WireElement, endpoint: &str) -> Result<ListElement> {
    let [d, c, e] = &w.keys;
    Ok(ListElement {
        dataset: DatasetKey(key(d, endpoint)?),
        collocation: CollocationKey(key(c, endpoint)?),
        element: ElementKey(key(e, endpoint)?),
        location: match &w.location {
            Some(l) if !e.is_empty() => Some(location(l)),
            _ => None,
        },
    })
}

/// Integer ranges as FDB5's client sends them (MARS expands them before
/// they travel); any other range as written, which `fieldstore serve`
/// reads and FDB5's server does not.
fn values(item: &Item, out: &mut Vec<String>) {
    match item {
        Item::Value(v) => out.push(v.clone()),
        Item::Range { from, to, by } => {
            if let Some(dates) = date_range(from, to, by.as_deref()) {
                out.extend(dates);
                return;
            }
            let parsed = (
                from.parse::<i64>(),
                to.parse::<i64>(),
                by.as_deref().map_or(Ok(1), str::parse::<i64>),
            );
            match parsed {
                (Ok(a), Ok(b), Ok(step)) if step > 0 && a <= b && (b - a) / step < 100_000 => {
                    let mut v = a;
                    while v <= b {
                        out.push(v.to_string());
                        v += step;
                    }
                }
                _ => out.push(item.to_string()),
            }
        }
    }
}

/// Days since 1970-01-01 of a `YYYYMMDD` date.
fn ymd(s: &str) -> Option<i64> {
    if s.len() != 8 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let date = CivilDate::new(
        s[..4].parse().ok()?,
        s[4..6].parse().ok()?,
        s[6..].parse().ok()?,
    )?;
    Some(date.to_days())
}

/// A range of `YYYYMMDD` dates, by days, expanded.
fn date_range(from: &str, to: &str, by: Option<&str>) -> Option<Vec<String>> {
    let (a, b) = (ymd(from)?, ymd(to)?);
    let step: i64 = by.map_or(Some(1), |s| s.parse().ok())?;
    if step <= 0 || a > b || (b - a) / step >= 100_000 {
        return None;
    }
    Some(
        (a..=b)
            .step_by(usize::try_from(step).ok()?)
            .map(|d| CivilDate::from_days(d).to_string())
            .collect(),
    )
}

/// A request as FDB5's tools send it: a MARS request (keywords with their
/// values; `all` and absent keywords send nothing) and whether it is empty
/// (`--all`).
pub(crate) fn tool_request(request: &Request) -> ToolRequest {
    let mut params = Vec::new();
    for (keyword, v) in request.iter() {
        if let Values::Items(items) = v {
            let mut out = Vec::new();
            for i in items {
                values(i, &mut out);
            }
            params.push((keyword.to_string(), out));
        }
    }
    ToolRequest {
        all: params.is_empty(),
        request: MarsRequest {
            verb: "retrieve".into(),
            params,
        },
    }
}

/// The query key carrying a location's inner scheme.
const INNER: &str = "internalScheme";

/// A wire location as a fieldstore location: `fdb://host:port/path?internalScheme=file`
/// for one behind a store server (what catalogues hand out), as is for
/// any other.
pub fn location(l: &WireLocation) -> FieldLocation {
    let location = FieldLocation::new(
        uri_text(&l.uri),
        u64::try_from(l.offset).unwrap_or(0),
        u64::try_from(l.length).unwrap_or(0),
    );
    match l.uri.checksum() {
        Some(c) => location.with_checksum(c),
        None => location,
    }
}

/// A wire URI as fieldstore writes URIs (a field's checksum is its
/// location's, not part of the URI).
fn uri_text(u: &Uri) -> String {
    let mut uri = format!("{}://", u.scheme);
    if !u.host.is_empty() {
        uri.push_str(&u.host);
        if u.port >= 0 {
            uri.push_str(&format!(":{}", u.port));
        }
    }
    uri.push_str(&u.name);
    let query = u
        .query
        .iter()
        .filter(|(k, _)| k != crate::location::CHECKSUM_QUERY);
    for (i, (k, v)) in query.enumerate() {
        uri.push(if i == 0 { '?' } else { '&' });
        uri.push_str(&format!("{k}={v}"));
    }
    uri
}

/// Decodes a listing's elements, re-using what consecutive elements share
/// (the encoded dataset key, collocation key and location head found again
/// byte for byte): the counterpart of the server's
/// [`ListEncoder`](crate::elements::ListEncoder), and as exact as
/// [`WireElement::decode`] followed by [`element`], which the tests check.
#[derive(Default)]
pub(crate) struct ElementDecoder {
    db: (Vec<u8>, Option<DatasetKey>),
    idx: (Vec<u8>, Option<CollocationKey>),
    /// A location's class and URI but its query, and the URI as
    /// fieldstore writes it (no checksum: that is the location's own).
    head: (Vec<u8>, std::sync::Arc<str>),
    /// The last URI decoded, with the query its fields share.
    uri: Uri,
}

impl ElementDecoder {
    /// One element of a list or inspect reply.
    ///
    /// # Errors
    /// `Corrupt` naming the server for bytes that do not decode.
    pub(crate) fn decode(&mut self, blob: &[u8], endpoint: &str) -> Result<ListElement> {
        let corrupt = |e: crate::DecodeError| {
            Error::corrupt(format!("server {endpoint}: undecodable list element: {e}"))
        };
        let mut r = Reader::new(blob);
        let n = r.count(10).map_err(corrupt)?;
        if n != 3 {
            return Err(Error::corrupt(format!(
                "server {endpoint}: a list element has 3 keys, not {n}"
            )));
        }
        let dataset = match (r.skip_if(&self.db.0), &self.db.1) {
            (true, Some(d)) => d.clone(),
            _ => {
                let start = r.position();
                let k = WireKey::decode(&mut r).map_err(corrupt)?;
                let d = DatasetKey(key(&k, endpoint)?);
                self.db = (r.since(start).to_vec(), Some(d.clone()));
                d
            }
        };
        let collocation = match (r.skip_if(&self.idx.0), &self.idx.1) {
            (true, Some(c)) => c.clone(),
            _ => {
                let start = r.position();
                let k = WireKey::decode(&mut r).map_err(corrupt)?;
                let c = CollocationKey(key(&k, endpoint)?);
                self.idx = (r.since(start).to_vec(), Some(c.clone()));
                c
            }
        };
        let datum = WireKey::decode(&mut r).map_err(corrupt)?;
        let element = ElementKey(key(&datum, endpoint)?);
        let location = if datum.is_empty() {
            None
        } else {
            let same_head = r.skip_if(&self.head.0);
            if !same_head {
                let start = r.position();
                let class = r.start_object().map_err(corrupt)?;
                if !class.ends_with("FieldLocation") {
                    return Err(Error::corrupt(format!(
                        "server {endpoint}: {class} is not a field location"
                    )));
                }
                self.uri = Uri::decode_head(&mut r).map_err(corrupt)?;
                self.head.0 = r.since(start).to_vec();
            }
            // The query: the field's checksum, and what the file's
            // fields share (the URI's text is made again only when that
            // changes).
            let n = r.count(10).map_err(corrupt)?;
            let mut checksum = None;
            let mut query = Vec::with_capacity(n);
            for _ in 0..n {
                let (k, v) = (r.string().map_err(corrupt)?, r.string().map_err(corrupt)?);
                if k == crate::location::CHECKSUM_QUERY {
                    checksum = u32::from_str_radix(&v, 16).ok();
                } else {
                    query.push((k, v));
                }
            }
            if !same_head || query != self.uri.query {
                self.uri.query = query;
                self.head.1 = uri_text(&self.uri).into();
            }
            let offset = r.long_long().map_err(corrupt)?;
            let length = r.long_long().map_err(corrupt)?;
            WireKey::decode(&mut r).map_err(corrupt)?;
            r.end_object().map_err(corrupt)?;
            let location = FieldLocation::new(
                self.head.1.clone(),
                u64::try_from(offset).unwrap_or(0),
                u64::try_from(length).unwrap_or(0),
            );
            Some(match checksum {
                Some(c) => location.with_checksum(c),
                None => location,
            })
        };
        r.long().map_err(corrupt)?;
        Ok(ListElement {
            dataset,
            collocation,
            element,
            location,
        })
    }
}

/// Where a location's bytes are: the store server's host and port, and
/// the location to send it in `Read` (the store's own, inner scheme and
/// path).
///
/// # Errors
/// `InvalidInput` for a location that is not an `fdb://host:port/...`
/// one.
pub fn store_of(l: &FieldLocation) -> Result<(String, u16, WireLocation)> {
    let bad = || {
        Error::invalid_input(format!(
            "location {}: not one of a remote store (fdb://host:port/path)",
            l.uri
        ))
    };
    let rest = l.uri.strip_prefix("fdb://").ok_or_else(bad)?;
    let slash = rest.find('/').ok_or_else(bad)?;
    let (authority, path_query) = rest.split_at(slash);
    let (host, port) = authority.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
    let inner = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == INNER)
        .map_or("file", |(_, v)| v);
    let range = |v: u64| i64::try_from(v).map_err(|_| bad());
    // The location's own checksum, not its URI's: a range of a field
    // (same URI) has none.
    let checksum = l.checksum;
    let wire = WireLocation {
        class: crate::location::TOC_FIELD_LOCATION.into(),
        uri: Uri::new(inner, path).with_checksum(checksum),
        offset: range(l.offset)?,
        length: range(l.length)?,
        remap_key: WireKey::default(),
    };
    Ok((host.to_string(), port, wire))
}

/// A store's location as the catalogue is sent it: wrapped in the store
/// server's `fdb://host:port`, the store's scheme kept in the query (as
/// FDB5's client wraps it).
pub fn wrapped(store: &WireLocation, host: &str, port: u16) -> WireLocation {
    WireLocation {
        class: REMOTE_FIELD_LOCATION.into(),
        uri: Uri {
            host: host.to_string(),
            port: i32::from(port),
            query: vec![(INNER.into(), store.uri.scheme.clone())],
            ..Uri::new("fdb", store.uri.name.clone())
        }
        .with_checksum(store.uri.checksum()),
        offset: store.offset,
        length: store.length,
        remap_key: WireKey::default(),
    }
}

fn predicate(p: &ws::Predicate, types: &[(String, String)], out: &mut String) {
    out.push_str(&p.keyword);
    // FDB5 types hidden keywords `Ignore`; fieldstore's schema language
    // implies it (and has no way to write it before the `-`).
    let hidden = matches!(p.matcher, ws::Matcher::Hidden(_));
    if let Some((_, t)) = types
        .iter()
        .find(|(k, t)| *k == p.keyword && !(hidden && t == "Ignore"))
    {
        out.push(':');
        out.push_str(t);
    }
    let default = |d: &[String]| d.first().cloned().unwrap_or_default();
    match &p.matcher {
        ws::Matcher::Always => {}
        ws::Matcher::Value(v) => out.push_str(&format!("={v}")),
        ws::Matcher::Any(v) => out.push_str(&format!("={}", v.join("/"))),
        ws::Matcher::Exclude(v) => out.push_str(&format!("=!{}", v.join("/"))),
        ws::Matcher::Optional(d) => out.push_str(&format!("?{}", default(d))),
        ws::Matcher::Hidden(d) => out.push_str(&format!("-{}", default(d))),
    }
}

fn rule(r: &ws::Rule, depth: usize, out: &mut String) {
    out.push_str(&"  ".repeat(depth));
    out.push('[');
    for (i, p) in r.predicates.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        predicate(p, &r.types, out);
    }
    if r.children.is_empty() {
        out.push_str(" ]\n");
        return;
    }
    out.push('\n');
    for c in &r.children {
        rule(c, depth + 1, out);
    }
    out.push_str(&"  ".repeat(depth));
    out.push_str("]\n");
}

/// FDB5's schema language for a schema as a server sends it.
pub(crate) fn schema_text(s: &ws::Schema) -> String {
    let mut out = String::new();
    for (k, t) in &s.types {
        out.push_str(&format!("{k}: {t};\n"));
    }
    for r in &s.rules {
        rule(r, 0, &mut out);
    }
    out
}

/// The schema a server sends, parsed as fieldstore's.
///
/// # Errors
/// `Corrupt` naming the server if it does not parse.
pub(crate) fn schema(s: &ws::Schema, endpoint: &str) -> Result<Schema> {
    let text = schema_text(s);
    let name = format!("schema of {endpoint}");
    Schema::parse(&name, &text).map_err(|e| {
        Error::corrupt(format!(
            "server {endpoint} sent a schema fieldstore cannot read: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_locations_round_trip_through_fieldstore_uris() {
        let store = WireLocation {
            class: crate::location::TOC_FIELD_LOCATION.into(),
            uri: Uri::new("file", "/r/od:0001/fc:sfc.1.data"),
            offset: 4096,
            length: 812,
            remap_key: WireKey::default(),
        };
        let w = wrapped(&store, "node1", 7655);
        let l = location(&w);
        assert_eq!(
            &*l.uri,
            "fdb://node1:7655/r/od:0001/fc:sfc.1.data?internalScheme=file"
        );
        let (host, port, back) = store_of(&l).unwrap();
        assert_eq!((host.as_str(), port), ("node1", 7655));
        assert_eq!(back, store);
        assert!(store_of(&FieldLocation::new("file:///x", 0, 1)).is_err());
        assert!(store_of(&FieldLocation::new("fdb://nohost/x", 0, 1)).is_err());
    }

    #[test]
    fn the_element_decoder_decodes_as_element_does() {
        use crate::elements::ListElement as WE;
        let mut dec = ElementDecoder::default();
        let loc = |path: &str, offset| WireLocation {
            class: crate::location::TOC_FIELD_LOCATION.into(),
            uri: Uri {
                host: "h".into(),
                port: 7655,
                query: vec![("internalScheme".into(), "file".into())],
                ..Uri::new("fdb", path)
            },
            offset,
            length: 9,
            remap_key: WireKey::default(),
        };
        let k = |pairs: &[(&str, &str)]| WireKey::new(pairs.iter().copied());
        let cases = [
            WE {
                keys: [
                    k(&[("class", "od")]),
                    k(&[("type", "fc")]),
                    k(&[("step", "0")]),
                ],
                location: Some(loc("/a", 0)),
                timestamp: 0,
            },
            WE {
                keys: [
                    k(&[("class", "od")]),
                    k(&[("type", "fc")]),
                    k(&[("step", "6")]),
                ],
                location: Some(loc("/a", 9)),
                timestamp: 0,
            },
            WE {
                keys: [k(&[("class", "od")]), k(&[("type", "an")]), k(&[])],
                location: None,
                timestamp: 3,
            },
            WE {
                keys: [
                    k(&[("class", "rd")]),
                    k(&[("type", "an")]),
                    k(&[("step", "0")]),
                ],
                location: Some(loc("/b", 0)),
                timestamp: 0,
            },
        ];
        for e in cases {
            let mut w = crate::Writer::new();
            e.encode(&mut w);
            let want = element(e.clone(), "s").unwrap();
            assert_eq!(dec.decode(w.bytes(), "s").unwrap(), want);
        }
        // Damage is an error, not a wrong element.
        let mut w = crate::Writer::new();
        WE {
            keys: [
                k(&[("class", "od")]),
                k(&[("type", "fc")]),
                k(&[("step", "0")]),
            ],
            location: Some(loc("/a", 0)),
            timestamp: 0,
        }
        .encode(&mut w);
        let b = w.bytes();
        assert!(dec.decode(&b[..b.len() - 3], "s").is_err());
    }

    #[test]
    fn integer_ranges_are_expanded_others_sent_as_written() {
        let r: Request = "class=od,step=0/to/12/by/6,date=20240228/to/20240301,param=all"
            .parse()
            .unwrap();
        let t = tool_request(&r);
        assert!(!t.all);
        assert_eq!(
            t.request.params,
            vec![
                ("class".to_string(), vec!["od".to_string()]),
                ("step".into(), vec!["0".into(), "6".into(), "12".into()]),
                (
                    "date".into(),
                    vec!["20240228".into(), "20240229".into(), "20240301".into()]
                ),
            ]
        );
        assert!(tool_request(&Request::new()).all);
    }
}
