//! Object names and location URIs.

use fieldstore_core::engine::cut_long_name;
use fieldstore_core::{DatasetKey, Error, Result};

/// The object whose omap lists the datasets.
pub(crate) const ROOT: &str = "fieldstore.root";

/// The dataset's name: its values joined by `:` (FDB5's database naming),
/// `%` written `%25`; names over 200 bytes are cut at 180 and end in `~`
/// and the CRC-32C of the key's canonical form.
pub(crate) fn dataset_name(key: &DatasetKey) -> String {
    let values = key.iter().map(|(_, v)| v.replace('%', "%25"));
    let mut s = values.collect::<Vec<_>>().join(":");
    cut_long_name(&mut s, 200, || key.to_string());
    s
}

/// The object holding a dataset's log and index.
pub(crate) fn dataset_object(key: &DatasetKey) -> String {
    format!("{}.catalogue", dataset_name(key))
}

fn escape(s: &str) -> String {
    s.replace('%', "%25").replace('/', "%2F")
}

fn unescape(s: &str) -> String {
    s.replace("%2F", "/").replace("%25", "%")
}

/// `rados://<pool>/<namespace>/<object>` (pool and namespace with `%` and
/// `/` escaped; the object name verbatim).
pub(crate) fn uri(pool: &str, namespace: &str, object: &str) -> String {
    format!("rados://{}/{}/{object}", escape(pool), escape(namespace))
}

/// The `(pool, namespace, object)` of a `rados://` URI.
pub(crate) fn parse_uri(uri: &str) -> Result<(String, String, &str)> {
    let bad = || Error::invalid_input(format!("not a RADOS location: {uri}"));
    let rest = uri.strip_prefix("rados://").ok_or_else(bad)?;
    let (pool, rest) = rest.split_once('/').ok_or_else(bad)?;
    let (ns, object) = rest.split_once('/').ok_or_else(bad)?;
    if pool.is_empty() || object.is_empty() {
        return Err(bad());
    }
    Ok((unescape(pool), unescape(ns), object))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip() {
        let u = uri("p/1%", "", "a.b/c");
        assert_eq!(u, "rados://p%2F1%25//a.b/c");
        let (p, n, o) = parse_uri(&u).unwrap();
        assert_eq!((p.as_str(), n.as_str(), o), ("p/1%", "", "a.b/c"));
        assert!(parse_uri("file:///x").is_err());
        assert!(parse_uri("rados://p").is_err());
    }

    #[test]
    fn long_dataset_names_are_cut_and_hashed() {
        let long = "x".repeat(300);
        let key = DatasetKey(format!("class=od,expver={long}").parse().unwrap());
        let n = dataset_name(&key);
        assert!(n.len() < 200 && n.contains('~'), "{n}");
        let short = DatasetKey("class=od,expver=0001".parse().unwrap());
        assert_eq!(dataset_name(&short), "od:0001");
    }
}
