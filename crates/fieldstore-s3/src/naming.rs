//! Object keys and location URIs (`docs/format/s3.md`).
//!
//! - data: `<dataset>/data/<writer id>.<n>`, the `n`th object of a writer
//!   (from 1): the fields of one flush, or of one part of it;
//! - lease: `<dataset>/lease/<writer id>.<lease ms>`, renewed while the
//!   writer lives (`crate::lease`);
//! - the catalogue's (`engine: s3`, `crate::catalogue`): `<dataset>/meta`
//!   naming the dataset's incarnation `<inc>` (a writer id), its log slots
//!   `<dataset>/<inc>/log/<slot, 20 digits>` and locks
//!   `<dataset>/<inc>/control` and tail hints `<dataset>/<inc>/tail/<…>`;
//!   the registry of datasets
//!   `%datasets/<dataset key>` and list-lock markers
//!   `%list-locked/<dataset key>`, which no dataset's prefix can start
//!   with (a `%` in a name is written `%25`).
//!
//! `<dataset>` is the dataset key's values joined by `:` (FDB5's database
//! naming), `%` written `%25` and `/` written `%2F`; a name over 200 bytes
//! is cut at 180 and ends in `~` and the CRC-32C of the key's canonical
//! form. A location is `s3://<bucket>/<key>` with the field's offset,
//! length and CRC-32C.

use fieldstore_core::engine::cut_long_name;
use fieldstore_core::{DatasetKey, Error, Result};

/// The key prefix of everything the store keeps for `dataset`:
/// `<dataset>/`.
pub(crate) fn dataset_prefix(key: &DatasetKey) -> String {
    let values = key
        .iter()
        .map(|(_, v)| v.replace('%', "%25").replace('/', "%2F"));
    let mut s = values.collect::<Vec<_>>().join(":");
    cut_long_name(&mut s, 200, || key.to_string());
    s.push('/');
    s
}

/// The prefix of a dataset's data objects.
pub(crate) fn data_prefix(dataset: &str) -> String {
    format!("{dataset}data/")
}

/// The prefix of a dataset's lease objects.
pub(crate) fn lease_prefix(dataset: &str) -> String {
    format!("{dataset}lease/")
}

/// The key of a dataset's META record.
pub(crate) fn meta_key(dataset: &str) -> String {
    format!("{dataset}meta")
}

/// The prefix of everything of one incarnation of a dataset's catalogue.
pub(crate) fn incarnation_prefix(dataset: &str, inc: &str) -> String {
    format!("{dataset}{inc}/")
}

/// The key of an incarnation's `control` object (under its prefix).
pub(crate) fn control_key(incarnation: &str) -> String {
    format!("{incarnation}control")
}

/// The prefix of an incarnation's tail hints (under its prefix).
pub(crate) fn hint_prefix(incarnation: &str) -> String {
    format!("{incarnation}tail/")
}

/// The key of the tail hint naming slot `n` (under the incarnation's
/// prefix): an empty object PUT after slot `n` is published, named by
/// `u64::MAX - n` in 20 digits so that a listing's first key names the
/// greatest slot. A hint is never rewritten, so writers racing cannot
/// lower it.
pub(crate) fn hint_key(incarnation: &str, n: u64) -> String {
    format!("{incarnation}tail/{:020}", u64::MAX - n)
}

/// The slot a tail hint's key names.
pub(crate) fn hint_slot(incarnation: &str, key: &str) -> Option<u64> {
    let digits = key.strip_prefix(&hint_prefix(incarnation))?;
    digits.parse::<u64>().ok().map(|k| u64::MAX - k)
}

/// The key of the single tail hint stores written before 2026-11-29
/// keep (the slot in decimal, rewritten after every publish): read when
/// no hint of [`hint_key`]'s kind exists.
pub(crate) fn old_tail_key(incarnation: &str) -> String {
    format!("{incarnation}tail")
}

/// The prefix of an incarnation's log slots (under its prefix).
pub(crate) fn log_prefix(incarnation: &str) -> String {
    format!("{incarnation}log/")
}

/// The key of log slot `n` of an incarnation (under its prefix): 20
/// digits, so that listings give slots in order.
pub(crate) fn slot_key(incarnation: &str, n: u64) -> String {
    format!("{incarnation}log/{n:020}")
}

/// The prefix of the registry of datasets.
pub(crate) const REGISTRY: &str = "%datasets/";

/// The prefix of the markers of datasets locked against `list`.
pub(crate) const LIST_LOCKED: &str = "%list-locked/";

/// The prefix of the objects that check, at open, that the server honours
/// conditional PUTs (each removed at once).
pub(crate) const PROBE: &str = "%probe/";

/// The key of data object `n` of writer `writer`.
pub(crate) fn data_key(dataset: &str, writer: &str, n: u64) -> String {
    format!("{dataset}data/{writer}.{n}")
}

/// The key of the lease of writer `writer`, of `lease_ms`.
pub(crate) fn lease_key(dataset: &str, writer: &str, lease_ms: u64) -> String {
    format!("{dataset}lease/{writer}.{lease_ms}")
}

/// The writer of a data object's key (`…/data/<writer id>.<n>`).
pub(crate) fn data_writer(key: &str) -> Option<&str> {
    let (_, name) = key.rsplit_once("/data/")?;
    let (writer, n) = name.rsplit_once('.')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && is_writer(writer)).then_some(writer)
}

/// The writer and lease (ms) of a lease object's key.
pub(crate) fn lease_writer(key: &str) -> Option<(&str, u64)> {
    let (_, name) = key.rsplit_once("/lease/")?;
    let (writer, ms) = name.rsplit_once('.')?;
    let ms = ms.parse().ok()?;
    is_writer(writer).then_some((writer, ms))
}

fn is_writer(s: &str) -> bool {
    fieldstore_core::writer_id::parse(s).is_some()
}

/// What an object under a dataset's prefix is, by the rest of its key:
/// what `inventory` reports and `wipe` removes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// `data/…`, `lease/…`: the store's.
    Store,
    /// `meta`, and the current incarnation's log slots, tail hints and
    /// `control`.
    Catalogue,
    /// Anything else under the current incarnation's prefix.
    Stray,
    /// Under another incarnation's prefix: what a wipe left.
    Old,
    /// Not fieldstore's.
    Foreign,
}

impl Part {
    /// The part `rest` (a key less its dataset's prefix) is, `current`
    /// being the dataset's incarnation (`None`: there is none).
    pub(crate) fn of(rest: &str, current: Option<&str>) -> Part {
        match rest.split_once('/') {
            None if rest == "meta" => Part::Catalogue,
            Some(("data" | "lease", _)) => Part::Store,
            Some((inc, r)) if Some(inc) == current => {
                let ours = r == "control" || r.starts_with("tail") || r.starts_with("log/");
                if ours {
                    Part::Catalogue
                } else {
                    Part::Stray
                }
            }
            _ if rest.starts_with('i') => Part::Old,
            _ => Part::Foreign,
        }
    }
}

/// `s3://<bucket>/<key>`.
pub(crate) fn uri(bucket: &str, key: &str) -> String {
    format!("s3://{bucket}/{key}")
}

/// The bucket and key of an `s3://` URI.
///
/// # Errors
/// `InvalidInput` for a URI of another store.
pub(crate) fn parse_uri(uri: &str) -> Result<(&str, &str)> {
    let bad = || Error::invalid_input(format!("not an S3 location: {uri}"));
    let rest = uri.strip_prefix("s3://").ok_or_else(bad)?;
    let (bucket, key) = rest.split_once('/').ok_or_else(bad)?;
    if bucket.is_empty() || key.is_empty() {
        return Err(bad());
    }
    Ok((bucket, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_writer() {
        let w = "vm-1.42.1795729125380246188.3";
        let d = "od:0001:enfo:20231201:1200/";
        assert_eq!(data_writer(&data_key(d, w, 7)), Some(w));
        assert_eq!(lease_writer(&lease_key(d, w, 30000)), Some((w, 30000)));
        assert_eq!(data_writer(&lease_key(d, w, 30000)), None);
        assert_eq!(data_writer(&format!("{d}data/{w}.")), None);
        assert_eq!(data_writer(&format!("{d}data/x.7")), None);
        assert_eq!(lease_writer(&data_key(d, w, 7)), None);
    }

    #[test]
    fn parts_of_a_dataset_are_told_by_their_key() {
        let part = |rest| Part::of(rest, Some("ih.1.0.1"));
        assert_eq!(part("data/w.1"), Part::Store);
        assert_eq!(part("lease/w.500"), Part::Store);
        assert_eq!(part("meta"), Part::Catalogue);
        assert_eq!(part("ih.1.0.1/log/00000000000000000000"), Part::Catalogue);
        assert_eq!(part("ih.1.0.1/tail/00000000000000000007"), Part::Catalogue);
        assert_eq!(part("ih.1.0.1/control"), Part::Catalogue);
        assert_eq!(part("ih.1.0.1/notes"), Part::Stray);
        // An incarnation whose name the current one's begins.
        assert_eq!(part("ih.1.0.12/log/00000000000000000000"), Part::Old);
        assert_eq!(part("ih.1.0.12/control"), Part::Old);
        assert_eq!(part("notes.txt"), Part::Foreign);
        assert_eq!(part("metadata"), Part::Foreign);
        assert_eq!(Part::of("ih.1.0.1/log/0", None), Part::Old);
    }

    #[test]
    fn uris_round_trip() {
        let u = uri("fields", "a:b/data/w.1");
        assert_eq!(parse_uri(&u).unwrap(), ("fields", "a:b/data/w.1"));
        assert!(parse_uri("file:///x").is_err());
        assert!(parse_uri("s3://bucket").is_err());
        assert!(parse_uri("s3:///key").is_err());
    }
}
