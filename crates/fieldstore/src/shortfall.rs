//! What a request names and a retrieve or extract did not find: the
//! missing fields counted and named, so that "retrieved 2 fields" does not
//! hide a third the request asked for.
//!
//! A request names *points*: combinations of its keywords' values (as
//! [`FieldStore::retrieve_wait`] waits for them). A field found is the
//! point its key gives the request's keywords; a point no found field
//! gives is missing.

use std::collections::HashSet;

use crate::handle::FieldStore;
use crate::resolve::POINT_LOOKUP_LIMIT;
use fieldstore_core::{Key, Request, Result};

/// The points of a request that no field found gives, in request order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortfall {
    /// How many points the request names (each counted once).
    pub named: usize,
    /// The points missing, each as `keyword=value,…` in the request's
    /// keyword order; never empty.
    pub missing: Vec<String>,
}

impl Shortfall {
    /// One line for a person: "1 of the 3 fields the request names is
    /// missing, the first: step=12,param=167"; "all 3 fields …" or "the
    /// one field the request names is missing: …" when nothing was found.
    pub fn summary(&self) -> String {
        let (n, first) = (self.missing.len(), &self.missing[0]);
        match (n, self.named) {
            (1, 1) => format!("the one field the request names is missing: {first}"),
            (n, named) if n == named => {
                format!("all {n} fields the request names are missing, the first: {first}")
            }
            (n, named) => format!(
                "{n} of the {named} fields the request names {} missing, the first: {first}",
                if n == 1 { "is" } else { "are" },
            ),
        }
    }
}

/// The `(keyword, value)` pairs of a point as [`Shortfall::missing`]
/// spells it (`keyword=value,…`; values hold no `,`, a request's
/// separator).
pub fn pairs(point: &str) -> impl Iterator<Item = (&str, &str)> + '_ {
    point.split(',').filter_map(|pair| pair.split_once('='))
}

impl FieldStore {
    /// For an answer that found nothing: "the store looked in holds no
    /// dataset: `<where it is>`", when it holds none, so that a store other
    /// than the one meant (a default chosen because a variable was not
    /// set) is not taken for one without the data. The implicit default
    /// store (`./fieldstore-data`, nothing configured) says how to name
    /// another. `None` when the store holds a dataset, or answers requests
    /// itself (a server's datasets are its own to count).
    pub fn empty_store_notice(&self) -> Option<String> {
        if self.catalogue.queries().is_some() || !self.catalogue.datasets().ok()?.is_empty() {
            return None;
        }
        let implicit = self.config().roots.iter().any(|r| r.implicit);
        Some(format!(
            "the store looked in holds no dataset: {}{}",
            self.config().source,
            if implicit {
                " (the default: no --config, FIELDSTORE_CONFIG, FIELDSTORE_ROOT, nor FDB5's \
                 FDB_CONFIG, FDB5_CONFIG, FDB_CONFIG_FILE, FDB5_CONFIG_FILE or FDB_HOME is set)"
            } else {
                ""
            }
        ))
    }

    /// Whether `request` names no complete key: no chain of rules has a
    /// value for each keyword it requires (a request with `all` names what
    /// is stored, so it does not count). Such a request finds nothing;
    /// [`fieldstore_core::Schema::incomplete`] says what it lacks.
    pub fn names_no_key(&self, request: &Request) -> bool {
        !request.has_all()
            && !self
                .schema()
                .expand(request)
                .is_ok_and(|keys| keys.names_keys())
    }

    /// What `request` names that `found` (the keys a retrieve or extract
    /// of it returned) lacks; `None` if nothing is missing or it cannot be
    /// told cheaply: a request with `all` (it names what is stored), one
    /// naming more than [`POINT_LOOKUP_LIMIT`] keys, one naming no
    /// complete key ([`fieldstore_core::Schema::incomplete`] says what it
    /// lacks), or a catalogue that answers requests itself (a server's
    /// schema may split keys otherwise than this handle's).
    ///
    /// # Errors
    /// `InvalidInput` for a malformed request.
    pub fn shortfall<'k>(
        &self,
        request: &Request,
        found: impl IntoIterator<Item = &'k Key>,
    ) -> Result<Option<Shortfall>> {
        if request.has_all() || self.catalogue.queries().is_some() {
            return Ok(None);
        }
        let request = self.schema().resolve_request(request)?.into_owned();
        let expansion = self.schema().expand(&request)?;
        if expansion.size_hint_upper() > POINT_LOOKUP_LIMIT {
            return Ok(None);
        }
        let given: HashSet<String> = found
            .into_iter()
            .filter_map(|key| self.schema().split(key).ok())
            .map(|split| self.point(&request, &split))
            .collect();
        let mut named = HashSet::new();
        let mut missing = Vec::new();
        for split in expansion {
            let point = self.point(&request, &split);
            if named.insert(point.clone()) && !given.contains(&point) {
                missing.push(point);
            }
        }
        Ok((!missing.is_empty()).then_some(Shortfall {
            named: named.len(),
            missing,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use fieldstore_core::Schema;

    fn store() -> FieldStore {
        let schema: Schema = "step: Step; [ class [ type [ step, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        for key in [
            "class=od,type=fc,step=0,param=167",
            "class=od,type=fc,step=6,param=167",
        ] {
            fs.archive(&key.parse().expect("key"), b"x")
                .expect("archive");
        }
        fs.flush().expect("flush");
        fs
    }

    fn shortfall(fs: &FieldStore, request: &str) -> Option<Shortfall> {
        let request: Request = request.parse().expect("request");
        let reader = fs.retrieve(&request).expect("retrieve");
        let keys: Vec<Key> = reader.fields().iter().map(|(k, _)| k.clone()).collect();
        fs.shortfall(&request, &keys).expect("shortfall")
    }

    #[test]
    fn missing_fields_are_counted_and_named_in_request_order() {
        let fs = store();
        let got = shortfall(&fs, "class=od,type=fc,step=18/0/12/6,param=167").expect("missing");
        assert_eq!(got.named, 4);
        assert_eq!(
            got.missing,
            [
                "class=od,type=fc,step=18,param=167",
                "class=od,type=fc,step=12,param=167"
            ]
        );
        assert_eq!(
            got.summary(),
            "2 of the 4 fields the request names are missing, the first: class=od,type=fc,step=18,param=167"
        );
    }

    #[test]
    fn nothing_missing_or_nothing_named_is_none() {
        let fs = store();
        assert_eq!(shortfall(&fs, "class=od,type=fc,step=0/6,param=167"), None);
        assert_eq!(shortfall(&fs, "class=od,type=fc,step=all,param=167"), None);
        assert_eq!(shortfall(&fs, "class=od,type=fc"), None);
    }

    #[test]
    fn nothing_found_reads_as_such() {
        let fs = store();
        let one = shortfall(&fs, "class=od,type=fc,step=12,param=167").expect("missing");
        assert_eq!(
            one.summary(),
            "the one field the request names is missing: class=od,type=fc,step=12,param=167"
        );
        let two = shortfall(&fs, "class=od,type=fc,step=12/18,param=167").expect("missing");
        assert_eq!(
            two.summary(),
            "all 2 fields the request names are missing, the first: class=od,type=fc,step=12,param=167"
        );
    }

    #[test]
    fn an_empty_store_says_which_it_is() {
        let fs = store();
        assert_eq!(fs.empty_store_notice(), None);
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = FieldStore::open(Config::embedded(dir.path())).expect("open");
        assert_eq!(
            empty.empty_store_notice(),
            Some(format!(
                "the store looked in holds no dataset: embedded store at {}",
                dir.path().display()
            ))
        );
    }

    #[test]
    fn one_missing_reads_in_the_singular() {
        let fs = store();
        let got = shortfall(&fs, "class=od,type=fc,step=0/to/12/by/6,param=167").expect("missing");
        assert_eq!(
            got.summary(),
            "1 of the 3 fields the request names is missing, the first: class=od,type=fc,step=12,param=167"
        );
    }
}
