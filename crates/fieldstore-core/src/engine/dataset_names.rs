//! A medium's namespace of datasets, as the engine reads it: names cut to a
//! length a medium takes ([`cut_long_name`]), the checks of a dataset key
//! read back from where a medium stored it ([`stored_key`],
//! [`check_held`]), and the search of a namespace for datasets no
//! registration names ([`NotDatasets::sift`], what
//! [`super::slot_catalogue::SlotMedium::unregistered`] does), with the names
//! it found not to be datasets remembered for a while.
//!
//! A bucket or pool may be shared with other data: without that memory,
//! every listing of datasets would look into each foreign name again (S3:
//! a GET of a `meta` that is not there, ~1 ms; 1,100 such prefixes cost
//! 1.1 s a listing on SeaweedFS). A name is looked at again once its entry
//! is older than the time to live, so a dataset created under a name found
//! empty (its data written before its `meta`) is found by a later search.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};
use crate::key::DatasetKey;

/// Keep `name` (a key's values joined, as a medium names what it stores of
/// the key) at most `max` bytes: a longer one is cut to `max - 20` bytes,
/// at a character boundary, and ends in `~` and the CRC-32C of the key's
/// canonical form (`canonical`), so that cut names of different keys stay
/// apart. `max` is at least 20.
pub fn cut_long_name(name: &mut String, max: usize, canonical: impl FnOnce() -> String) {
    if name.len() <= max {
        return;
    }
    let mut cut = max - 20;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    name.truncate(cut);
    let crc = crc32c::crc32c(canonical().as_bytes());
    name.push_str(&format!("~{crc:08x}"));
}

/// A dataset key a medium stored as text (a registration), read back.
/// `place` names where it was stored, asked only for an error.
///
/// # Errors
/// `Corrupt`, naming `place`, if `text` is not a dataset key.
pub fn stored_key(text: &str, place: &dyn Fn() -> String) -> Result<DatasetKey> {
    text.parse()
        .map(DatasetKey)
        .map_err(|e| Error::corrupt(format!("{}: {text:?} is not a dataset key: {e}", place())))
}

/// Check that the dataset `place` holds (`held`, read from it) is the one
/// looked for: the names a medium derives from keys may collide. `place`
/// is asked only for an error (the check runs at every open).
///
/// # Errors
/// `InvalidInput`, naming both keys and `place`, if they differ.
pub fn check_held(
    place: &dyn Fn() -> String,
    held: &DatasetKey,
    wanted: &DatasetKey,
) -> Result<()> {
    if held == wanted {
        return Ok(());
    }
    let (place, held, wanted) = (place(), held.braced(), wanted.braced());
    Err(Error::invalid_input(format!(
        "{place} holds dataset {held}, not {wanted} (their names collide)"
    )))
}

/// Names found not to hold a dataset, and when.
#[derive(Debug)]
pub struct NotDatasets {
    ttl: Duration,
    seen: Mutex<HashMap<String, Instant>>,
}

impl NotDatasets {
    /// How long a name found not to be a dataset is not looked at again.
    pub const TTL: Duration = Duration::from_secs(60);

    /// An empty set whose entries live [`NotDatasets::TTL`].
    pub fn new() -> NotDatasets {
        NotDatasets::with_ttl(NotDatasets::TTL)
    }

    /// An empty set whose entries live `ttl`.
    pub fn with_ttl(ttl: Duration) -> NotDatasets {
        NotDatasets {
            ttl,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `name` was found not to be a dataset less than the time to
    /// live ago.
    pub fn recent(&self, name: &str) -> bool {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(name).is_some_and(|t| t.elapsed() < self.ttl)
    }

    /// Remember that `name` is not a dataset (now); entries past their
    /// time to live are dropped, so the set holds what one time to live of
    /// searches found.
    pub fn add(&self, name: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let ttl = self.ttl;
        seen.retain(|_, t| t.elapsed() < ttl);
        seen.insert(name.to_string(), Instant::now());
    }

    /// The datasets among a namespace's `names` that no registration names
    /// (`registered`; `name_of` gives a key's name): each other name not
    /// found recently not to be a dataset is looked into with `open`, which
    /// gives the dataset it holds (its key and incarnation; `None`:
    /// nothing). A name holding nothing, a dataset whose key has another
    /// name, or a record that does not decode (`Corrupt`: reported by what
    /// opens that dataset by its key, not by every listing) is remembered
    /// as not a dataset; a name gone while looked at (`NotFound`) is not.
    ///
    /// # Errors
    /// Any other error of `open`.
    pub fn sift<D>(
        &self,
        names: impl IntoIterator<Item = String>,
        registered: &[DatasetKey],
        name_of: impl Fn(&DatasetKey) -> String,
        mut open: impl FnMut(&str) -> Result<Option<(DatasetKey, D)>>,
    ) -> Result<Vec<(DatasetKey, D)>> {
        let known: BTreeSet<String> = registered.iter().map(&name_of).collect();
        let mut found = Vec::new();
        for name in names {
            if known.contains(&name) || self.recent(&name) {
                continue;
            }
            match open(&name) {
                Ok(Some((key, d))) if name_of(&key) == name => found.push((key, d)),
                Ok(_) => self.add(&name),
                Err(e) if e.kind() == ErrorKind::Corrupt => self.add(&name),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(found)
    }
}

impl Default for NotDatasets {
    fn default() -> NotDatasets {
        NotDatasets::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names up to `max` bytes stay as they are; a longer one keeps its
    /// first `max - 20` bytes less a character cut in two, then `~` and
    /// the canonical form's CRC-32C in 8 hex digits (the names media
    /// already hold: the same bytes as before this was shared).
    #[test]
    fn long_names_are_cut_at_a_character_and_end_in_the_keys_crc() {
        let mut short = "x".repeat(200);
        cut_long_name(&mut short, 200, || unreachable!());
        assert_eq!(short, "x".repeat(200));
        // 179 ASCII bytes, then a 2-byte character across byte 180.
        let mut long = format!("{}é{}", "a".repeat(179), "b".repeat(100));
        cut_long_name(&mut long, 200, || "class=od".to_string());
        let crc = crc32c::crc32c(b"class=od");
        assert_eq!(long, format!("{}~{crc:08x}", "a".repeat(179)));
        assert_eq!(long.len(), 188);
    }

    #[test]
    fn a_name_is_remembered_for_its_time_to_live() {
        let n = NotDatasets::with_ttl(Duration::from_millis(50));
        assert!(!n.recent("a"));
        n.add("a");
        assert!(n.recent("a"));
        assert!(!n.recent("b"));
        std::thread::sleep(Duration::from_millis(60));
        assert!(!n.recent("a"), "past its time to live");
        n.add("b");
        assert_eq!(
            n.seen.lock().unwrap().len(),
            1,
            "the expired entry is dropped"
        );
    }

    #[test]
    fn a_sift_finds_datasets_and_remembers_what_is_not_one() {
        let key = |s: &str| DatasetKey(s.parse().unwrap());
        let name_of = |k: &DatasetKey| k.key().get("a").unwrap_or("").to_string();
        let n = NotDatasets::new();
        let names = ["known", "new", "empty", "moved", "damaged", "gone"].map(String::from);
        let mut opened = Vec::new();
        let found = n
            .sift(names.clone(), &[key("a=known")], name_of, |name| {
                opened.push(name.to_string());
                match name {
                    "new" => Ok(Some((key("a=new"), 7))),
                    "moved" => Ok(Some((key("a=elsewhere"), 8))),
                    "damaged" => Err(Error::corrupt("damaged meta")),
                    "gone" => Err(Error::new(ErrorKind::NotFound, "destroyed")),
                    _ => Ok(None),
                }
            })
            .unwrap();
        assert_eq!(found, [(key("a=new"), 7)]);
        assert_eq!(opened, ["new", "empty", "moved", "damaged", "gone"]);
        for (name, remembered) in [("empty", true), ("moved", true), ("damaged", true)] {
            assert_eq!(n.recent(name), remembered, "{name}");
        }
        assert!(!n.recent("gone") && !n.recent("new"));
        // Looked at again: only what was not remembered.
        let mut again = Vec::new();
        n.sift(
            names,
            &[],
            name_of,
            |name| -> Result<Option<(DatasetKey, u8)>> {
                again.push(name.to_string());
                Ok(None)
            },
        )
        .unwrap();
        assert_eq!(again, ["known", "new", "gone"]);
        let e = n
            .sift(
                ["x".to_string()],
                &[],
                name_of,
                |_| -> Result<Option<(DatasetKey, u8)>> {
                    Err(Error::new(ErrorKind::Unavailable, "down"))
                },
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable);
    }

    #[test]
    fn keys_read_back_are_checked() {
        let k: DatasetKey = DatasetKey("class=od,expver=0001".parse().unwrap());
        assert_eq!(
            stored_key("class=od,expver=0001", &|| "registry".into()).unwrap(),
            k
        );
        let e = stored_key("class", &|| "s3://b/%datasets/class".into()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(e.to_string().contains("s3://b/%datasets/class"), "{e}");
        check_held(&|| "here".into(), &k, &k).unwrap();
        let other = DatasetKey("class=rd,expver=0001".parse().unwrap());
        let e = check_held(&|| "DAOS container x".into(), &other, &k).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        let text = e.to_string();
        assert!(
            text.contains(
                "DAOS container x holds dataset {class=rd,expver=0001}, not {class=od,expver=0001}"
            ),
            "{text}"
        );
    }
}
