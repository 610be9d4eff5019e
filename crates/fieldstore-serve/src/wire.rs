//! fieldstore's values as FDB5's remote protocol carries them, and back.

use fieldstore::schema::{Matcher, Rule};
use fieldstore::{Error, FieldLocation, Key, Level, Request, Result, Schema};
use fieldstore_remote::key::Key as WireKey;
use fieldstore_remote::location::{FieldLocation as WireLocation, Uri, TOC_FIELD_LOCATION};
use fieldstore_remote::request::MarsRequest;
use fieldstore_remote::schema as ws;

/// A fieldstore key as a wire key, pairs in the key's order.
pub(crate) fn wire_key(key: &Key) -> WireKey {
    WireKey::new(key.iter())
}

/// An element's (datum's) key as FDB5's list replies carry it: only the
/// keywords the field has. FDB5 keeps the empty values of absent optional
/// keywords in dataset and collocation keys, not in datum keys, and
/// pyfdb's `keys()` and `combined_key()` show what was sent.
pub(crate) fn datum_key(key: &Key) -> WireKey {
    WireKey::new(key.iter().filter(|(_, v)| !v.is_empty()))
}

/// A wire key as a fieldstore key, every pair (empty values of absent
/// optional keywords included), in order.
///
/// # Errors
/// `InvalidInput` for a keyword twice or an invalid keyword or value.
pub(crate) fn key(key: &WireKey) -> Result<Key> {
    Ok(Key::from_pairs(
        key.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )?)
}

/// The present (non-empty) pairs of wire keys, joined into one fieldstore
/// key. FDB5 sends optional keywords with empty values; fieldstore stores
/// an absent optional keyword as absent.
///
/// # Errors
/// `InvalidInput` for a keyword twice or an invalid keyword or value.
pub(crate) fn join_keys<'a>(keys: impl IntoIterator<Item = &'a WireKey>) -> Result<Key> {
    let pairs: Vec<(&str, &str)> = keys.into_iter().flat_map(WireKey::present).collect();
    Ok(Key::from_pairs(pairs)?)
}

/// A MARS request (from a tool request) as a fieldstore request: the
/// verb is dropped, keywords with no values mean "any".
///
/// # Errors
/// `InvalidInput` as the request parser says.
pub(crate) fn request(mars: &MarsRequest) -> Result<Request> {
    let pairs = mars.params.iter().filter(|(_, v)| !v.is_empty());
    Ok(Request::from_pairs(
        pairs.map(|(k, v)| (k.as_str(), v.iter())),
    )?)
}

/// The schema level a client's depth or level names (`what`, for the
/// error: "list depth", "axes level").
///
/// # Errors
/// `InvalidInput` for anything but 1, 2 or 3.
pub(crate) fn level(what: &str, n: i32) -> Result<Level> {
    u8::try_from(n)
        .ok()
        .and_then(Level::from_depth)
        .ok_or_else(|| Error::invalid_input(format!("{what} {n} (expected 1, 2 or 3)")))
}

/// [`request`] for a lookup (list, axes, inspect): keywords no rule of
/// `schema` uses are dropped, as FDB5 matches requests against its schema
/// and ignores the rest. FDB5's clients expand requests through the MARS
/// language first, so such keywords are MARS's own (`fdb-hammer` sends
/// `optimised=on`), not typing mistakes. A wipe keeps [`request`]'s
/// refusal: a dropped keyword would widen what it deletes.
///
/// # Errors
/// As [`request`].
pub(crate) fn lookup_request(mars: &MarsRequest, schema: &Schema) -> Result<Request> {
    let pairs = mars
        .params
        .iter()
        .filter(|(k, v)| !v.is_empty() && schema.knows(k));
    Ok(Request::from_pairs(
        pairs.map(|(k, v)| (k.as_str(), v.iter())),
    )?)
}

/// The path part of a wire location naming field bytes of this server:
/// a `file://` URI's path as is (as FDB5's own store names its data
/// files), any other URI behind this prefix.
const OTHER_URI: &str = "/.fieldstore-uri/";

/// A location of this server's store as the path a `file` location
/// carries.
pub(crate) fn location_name(location: &FieldLocation) -> String {
    match location.uri.strip_prefix("file://") {
        Some(path) if path.starts_with('/') => path.to_string(),
        _ => format!("{OTHER_URI}{}", location.uri),
    }
}

/// The fieldstore location a wire location of this server names.
///
/// # Errors
/// `InvalidInput` for a location that is not one of this server's
/// (another scheme, a negative range).
pub(crate) fn from_wire_location(loc: &WireLocation) -> Result<FieldLocation> {
    let scheme = match loc.uri.scheme.as_str() {
        "fdb" => loc.uri.query_value("internalScheme").unwrap_or("file"),
        s => s,
    };
    if scheme != "file" {
        return Err(Error::invalid_input(format!(
            "location scheme {scheme}: this server hands out file locations only"
        )));
    }
    let uri = match loc.uri.name.strip_prefix(OTHER_URI) {
        Some(rest) => rest.to_string(),
        None => format!("file://{}", loc.uri.name),
    };
    let (offset, length) = (
        u64::try_from(loc.offset).map_err(|_| Error::invalid_input("negative offset"))?,
        u64::try_from(loc.length).map_err(|_| Error::invalid_input("negative length"))?,
    );
    let location = FieldLocation::new(uri, offset, length);
    Ok(match loc.uri.checksum() {
        Some(c) => location.with_checksum(c),
        None => location,
    })
}

/// A location as a store answers an archived field: the `file` URI of the
/// data as this store sees it, with the field's checksum.
pub(crate) fn store_location(location: &FieldLocation) -> WireLocation {
    WireLocation {
        class: TOC_FIELD_LOCATION.into(),
        uri: Uri::new("file", location_name(location)).with_checksum(location.checksum),
        offset: i64::try_from(location.offset).unwrap_or(i64::MAX),
        length: i64::try_from(location.length).unwrap_or(i64::MAX),
        remap_key: WireKey::default(),
    }
}

/// A location as list and inspect replies carry it: the `fdb` URI of this
/// server's store endpoint, the inner scheme `file` and the field's
/// checksum in the query.
pub(crate) fn remote_location(
    class: &str,
    location: &FieldLocation,
    host: &str,
    port: u16,
) -> WireLocation {
    WireLocation {
        class: class.to_string(),
        uri: Uri {
            host: host.to_string(),
            port: i32::from(port),
            query: vec![("internalScheme".into(), "file".into())],
            ..Uri::new("fdb", location_name(location))
        }
        .with_checksum(location.checksum),
        offset: i64::try_from(location.offset).unwrap_or(i64::MAX),
        length: i64::try_from(location.length).unwrap_or(i64::MAX),
        remap_key: WireKey::default(),
    }
}

fn matcher(m: &Matcher) -> ws::Matcher {
    let defaults = |d: &Option<String>| vec![d.clone().unwrap_or_default()];
    match m {
        Matcher::Always => ws::Matcher::Always,
        Matcher::OneOf(v) if v.len() == 1 => ws::Matcher::Value(v[0].clone()),
        Matcher::OneOf(v) => ws::Matcher::Any(v.clone()),
        Matcher::NoneOf(v) => ws::Matcher::Exclude(v.clone()),
        Matcher::Optional(d) => ws::Matcher::Optional(defaults(d)),
        Matcher::Hidden(d) => ws::Matcher::Hidden(defaults(d)),
    }
}

fn head(r: &Rule, children: Vec<ws::Rule>) -> ws::Rule {
    let mut types: Vec<(String, String)> = r
        .predicates
        .iter()
        .filter_map(|p| Some((p.keyword.clone(), p.declared_type?.name().to_string())))
        .collect();
    // FDB5's registries are maps: keyword order.
    types.sort();
    ws::Rule {
        types,
        line: r.line,
        predicates: r
            .predicates
            .iter()
            .map(|p| ws::Predicate {
                keyword: p.keyword.clone(),
                matcher: matcher(&p.matcher),
            })
            .collect(),
        children,
    }
}

/// A dataset rule in FDB5 5.25's shape: each collocation rule holding one
/// element rule, repeated for each of its element rules.
fn dataset_rule(d: &Rule) -> ws::Rule {
    let collocations = d
        .children
        .iter()
        .flat_map(|c| {
            c.children
                .iter()
                .map(move |e| head(c, vec![head(e, Vec::new())]))
        })
        .collect();
    head(d, collocations)
}

/// A schema as FDB5 serialises it: the client splits keys with it.
pub(crate) fn schema(s: &Schema) -> ws::Schema {
    ws::Schema {
        types: s
            .declared_types()
            .iter()
            .map(|(k, t)| (k.clone(), t.name().to_string()))
            .collect(),
        path: s.name().to_string(),
        rules: s.rules().iter().map(dataset_rule).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_round_trip_through_wire_names() {
        for uri in [
            "file:///root/a b/x.data",
            "daos://pool/cont/1.2",
            "memory://m/3",
        ] {
            let l = FieldLocation::new(uri, 10, 20);
            let w = remote_location("TocFieldLocation", &l, "localhost", 1);
            let back = from_wire_location(&w).unwrap();
            assert_eq!((back.uri.as_ref(), back.offset, back.length), (uri, 10, 20));
        }
        let mut w = remote_location("X", &FieldLocation::new("file:///a", 0, 1), "h", 1);
        w.uri.query = vec![("internalScheme".into(), "daos".into())];
        assert!(from_wire_location(&w).is_err());
    }

    /// A lookup drops MARS keywords the schema does not use (`fdb-hammer
    /// --read` sends `optimised=on`); a wipe's request still refuses them.
    #[test]
    fn lookups_ignore_keywords_the_schema_does_not_use_and_wipes_refuse_them() {
        let mars = MarsRequest {
            verb: "retrieve".into(),
            params: vec![
                ("class".into(), vec!["od".into()]),
                ("optimised".into(), vec!["on".into()]),
            ],
        };
        let schema = Schema::ecmwf();
        let lookup = lookup_request(&mars, &schema).unwrap();
        assert_eq!(lookup.to_string(), "class=od");
        let e = request(&mars).unwrap().to_string();
        assert!(e.contains("optimised"), "{e}");
    }

    #[test]
    fn the_ecmwf_schema_encodes_as_fdb5_shapes_it() {
        let s = schema(&Schema::ecmwf());
        assert!(s.types.iter().any(|(k, t)| k == "step" && t == "Step"));
        assert!(s
            .rules
            .iter()
            .all(|r| r.children.iter().all(|c| !c.children.is_empty())));
    }
}
