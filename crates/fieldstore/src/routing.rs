//! Routing between sub-stores: FDB5's `type: select`.
//!
//! ```yaml
//! type: select
//! schema: ./schema              # every lane splits keys with it
//! fdbs:
//! - select: class=od            # keyword=regex,… on the dataset key
//!   excludes: [expver=x.*]      # optional: keys matching any are not taken
//!   type: local
//!   engine: toc
//!   spaces: [{roots: [{path: ./od}]}]
//! - select: class=rd|ea
//!   engine: rados
//!   rados: {pool: fdb}
//! ```
//!
//! A new dataset goes to the first lane whose selection takes its key; a
//! key no lane takes is refused before anything is written. Reading
//! operations (list, axes, retrieve, stats, status, wipe, …) see the
//! datasets of every lane; a dataset held by several lanes is the first
//! lane's, in configuration order, as FDB5's de-duplicated listing keeps
//! the first lane's entries. Lanes may be of any backend.
//!
//! Unlike FDB5, which matches a selection against each field's key,
//! fieldstore routes whole datasets: a selection may name only first-level
//! (dataset) keywords of the schema, so that no dataset is split across
//! lanes, and the configuration says so if not.

use fieldstore_core::{DatasetKey, Error, ErrorKind, Result, Schema};

/// One `keyword=regex,…` of a `select` or an `excludes` entry.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// As written.
    pub text: String,
    pairs: Vec<(String, regex::Regex)>,
}

impl Matcher {
    /// Parse `keyword=regex,…` (empty: takes every key).
    ///
    /// # Errors
    /// A message (the caller adds where): a pair without `=`, an empty
    /// keyword, a regex that does not compile.
    pub fn parse(text: &str) -> std::result::Result<Matcher, String> {
        let mut pairs = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("'{pair}' is not keyword=regex"))?;
            let k = k.trim();
            if k.is_empty() {
                return Err(format!("'{pair}' has no keyword"));
            }
            let re = regex::Regex::new(v.trim()).map_err(|e| {
                format!("the regex of '{k}', '{}', does not compile: {e}", v.trim())
            })?;
            pairs.push((k.to_string(), re));
        }
        Ok(Matcher {
            text: text.to_string(),
            pairs,
        })
    }

    /// Its keywords.
    pub fn keywords(&self) -> impl Iterator<Item = &str> {
        self.pairs.iter().map(|(k, _)| k.as_str())
    }

    /// Whether every keyword is in `key` with a value its regex finds (a
    /// missing or empty value does not match, as FDB5 archives).
    pub fn matches(&self, key: &DatasetKey) -> bool {
        self.pairs
            .iter()
            .all(|(k, re)| key.get(k).is_some_and(|v| !v.is_empty() && re.is_match(v)))
    }
}

/// A lane of a `select` configuration.
#[derive(Debug, Clone)]
pub struct Lane<C> {
    /// Where it is in the configuration (`fdbs[1]`), for messages.
    pub at: String,
    /// Its `select`.
    pub select: Matcher,
    /// Its `excludes`.
    pub excludes: Vec<Matcher>,
    /// The sub-store's configuration: its schema is its own (`schema:` in
    /// the sub-store, the same first level as the parent's) or the parent's.
    pub config: C,
    /// Whether the sub-store names a schema of its own: its new datasets
    /// are then created with it; else with the handle's (whatever schema
    /// the handle was given after the configuration was read).
    pub own_schema: bool,
}

impl<C> Lane<C> {
    /// Whether a new dataset `key` goes to this lane (its selection
    /// matches and no exclusion does).
    pub fn takes(&self, key: &DatasetKey) -> bool {
        self.select.matches(key) && !self.excludes.iter().any(|e| e.matches(key))
    }
}

/// The lane a new dataset goes to: the first that takes it.
///
/// # Errors
/// `InvalidConfig` naming every lane's selection when none takes it.
pub fn lane_for<'l, C>(lanes: &'l [Lane<C>], key: &DatasetKey) -> Result<(usize, &'l Lane<C>)> {
    lanes
        .iter()
        .enumerate()
        .find(|(_, l)| l.takes(key))
        .ok_or_else(|| {
            let tried: Vec<String> = lanes
                .iter()
                .map(|l| {
                    let mut s = format!("{}.select '{}'", l.at, l.select.text);
                    for (i, e) in l.excludes.iter().enumerate() {
                        s.push_str(&format!(" (excludes[{i}] '{}')", e.text));
                    }
                    s
                })
                .collect();
            Error::new(
                ErrorKind::InvalidConfig,
                format!(
                    "no sub-store of the select configuration takes dataset {}: {}",
                    key.braced(),
                    tried.join(", ")
                ),
            )
        })
}

/// Check that `matcher` names only dataset keywords of `schema`.
///
/// # Errors
/// A message naming the first keyword that is not one.
pub fn check_dataset_keywords(
    matcher: &Matcher,
    schema: &Schema,
) -> std::result::Result<(), String> {
    for kw in matcher.keywords() {
        let at_level_1 = schema.rules().iter().any(|r| r.keywords().any(|k| k == kw));
        if !at_level_1 {
            return Err(format!(
                "'{kw}' is not a first-level (dataset) keyword of the schema: fieldstore routes whole datasets"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_match_dataset_keys_as_fdb5_archives() {
        let k: DatasetKey = "class=od,expver=0001,stream=oper".parse().unwrap();
        let m = |t: &str| Matcher::parse(t).unwrap();
        assert!(m("class=od").matches(&k));
        assert!(m("class=od|rd,expver=^0").matches(&k));
        assert!(!m("class=rd").matches(&k));
        // A keyword the key lacks does not match.
        assert!(!m("class=od,domain=g").matches(&k));
        assert!(m("").matches(&k));
        assert_eq!(
            Matcher::parse("class").unwrap_err(),
            "'class' is not keyword=regex"
        );
        assert!(Matcher::parse("class=(")
            .unwrap_err()
            .contains("does not compile"));
    }
}
