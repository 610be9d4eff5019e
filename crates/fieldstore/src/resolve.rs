//! Resolving a complete request to the fields the store holds, in request
//! order (`retrieve`, `where`).
//!
//! Two ways give the same answer:
//! - **point lookups**: enumerate the keys the request names
//!   ([`Schema::expand`](fieldstore_core::Schema::expand)) and look each up.
//!   The cost is what the request names: one hash probe per key, one reader
//!   per dataset it names.
//! - **a walk**: visit the datasets and collocations that can hold the
//!   request's fields, pruned by their axes as `list` is, keep the stored
//!   entries the request names and sort them into request order
//!   ([`RequestOrder`](fieldstore_core::RequestOrder)). The cost is what the
//!   store holds under the request's datasets and collocations; nothing is
//!   enumerated.
//!
//! Point lookups are used while the request names at most
//! [`POINT_LOOKUP_LIMIT`] keys (counted without expanding any range); a
//! larger request is walked, so `step=0/to/100000000` costs what the store
//! holds, not a hundred million lookups. Either way memory is bounded by
//! the fields found (and, walking, by the entries of one collocation).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use fieldstore_core::maintenance::locked;
use fieldstore_core::{
    DatasetKey, ErrorKind, Operation, Request, RequestPosition, Result, Schema, SplitKey,
};

use crate::dataset_schema::resplit;
use crate::handle::FieldStore;
use crate::list::{ListElement, ListOptions};
use fieldstore_core::catalogue::DatasetReader;

/// The most keys a request may name to be resolved by point lookups. At
/// about a microsecond per lookup in memory, this many cost tens of
/// milliseconds; above it, walking what is stored is cheaper for any store
/// whose matching collocations hold fewer entries than the request names.
pub const POINT_LOOKUP_LIMIT: u64 = 50_000;

impl FieldStore {
    /// The stored fields a request of explicit values names (every keyword
    /// of a rule given, no `all`), in request order, each with its newest
    /// location: what `retrieve` returns and `where` prints.
    ///
    /// Costs what the request names while it names at most
    /// [`POINT_LOOKUP_LIMIT`] keys, else what the store holds under the
    /// request's datasets and collocations (see the module documentation).
    ///
    /// # Errors
    /// `InvalidInput` for a malformed request or one with `all`; `Locked`
    /// if a dataset it names is locked against retrieve; I/O errors.
    pub fn locate(&self, request: &Request) -> Result<Vec<ListElement>> {
        if let Some(q) = self.catalogue.queries() {
            return q.inspect(request);
        }
        let expansion = self.schema.expand(request)?;
        if expansion.size_hint_upper() <= POINT_LOOKUP_LIMIT {
            self.locate_by_lookups(expansion)
        } else {
            self.locate_by_walking(&expansion)
        }
    }

    fn locate_by_lookups(
        &self,
        expansion: fieldstore_core::Expansion<'_>,
    ) -> Result<Vec<ListElement>> {
        let mut found = Vec::new();
        let mut fresh = HashSet::new();
        type Current = (
            DatasetKey,
            Option<Arc<dyn DatasetReader>>,
            Option<Arc<Schema>>,
        );
        let mut last: Option<Current> = None;
        for split in expansion {
            if last.as_ref().is_none_or(|(d, _, _)| *d != split.dataset) {
                let reader = self.reader(&split.dataset, &mut fresh)?;
                let own = match &reader {
                    Some(r) => self.own_schema(&split.dataset, r.as_ref())?,
                    None => None,
                };
                last = Some((split.dataset.clone(), reader, own));
            }
            let Some((_, Some(reader), own)) = &last else {
                continue;
            };
            if reader.locks().contains(Operation::Retrieve) {
                return Err(locked(&split.dataset, Operation::Retrieve));
            }
            // (Under a dataset's own schema every split is re-made from
            // the full key: always where archive puts it.)
            let canonical = own.is_some() || is_canonical(self.schema(), &split);
            let split = match own {
                Some(own) => resplit(own, &split)?,
                None => split,
            };
            let location = match reader.lookup(&split.collocation, &split.element) {
                // Damage that may hold anything cannot hold a key where
                // archive never puts it.
                Err(e) if e.kind() == ErrorKind::Corrupt && !canonical => None,
                r => r?,
            };
            if let Some(location) = location {
                found.push(ListElement {
                    dataset: split.dataset,
                    collocation: split.collocation,
                    element: split.element,
                    location: Some(location),
                });
            }
        }
        Ok(found)
    }

    /// Walk the datasets and collocations that can hold what the request
    /// names, once per distinct cut of the request to one chain's keywords
    /// ([`RequestOrder::chain_requests`](fieldstore_core::RequestOrder::chain_requests)),
    /// keep the newest entry of each element the expansion yields, and sort
    /// by request position.
    fn locate_by_walking(
        &self,
        expansion: &fieldstore_core::Expansion<'_>,
    ) -> Result<Vec<ListElement>> {
        let order = expansion.order();
        let mut fresh = HashSet::new();
        let mut damage = BTreeSet::new();
        let mut found: Vec<(RequestPosition, ListElement)> = Vec::new();
        // A collocation may match several chain requests (each with its own
        // element filter): a field found twice is kept once.
        let mut kept: HashSet<SplitKey> = HashSet::new();
        // Each walked dataset's own schema, when not the handle's.
        let own: std::cell::RefCell<HashMap<DatasetKey, Option<Arc<Schema>>>> = Default::default();
        let mut retrievable = |dataset: &DatasetKey, reader: &dyn DatasetReader| {
            if reader.locks().contains(Operation::Retrieve) {
                return Err(locked(dataset, Operation::Retrieve));
            }
            let schema = self.own_schema(dataset, reader)?;
            own.borrow_mut().insert(dataset.clone(), schema);
            Ok(true)
        };
        for request in order.chain_requests() {
            let selector = self.schema().selector(&request)?;
            let mut keep = |e: ListElement| {
                // Where archive puts the key decides whether (and where)
                // the request names it; a key that does not split back to
                // this place (stored under another schema) is one point
                // lookups would not find either.
                if let Ok(split) = self.schema().split(&e.full_key()) {
                    // In the dataset's own schema, if it has one.
                    let stored = match own.borrow().get(&e.dataset) {
                        Some(Some(schema)) => resplit(schema, &split).ok(),
                        _ => Some(split.clone()),
                    };
                    let here = stored.is_some_and(|s| {
                        s.dataset == e.dataset
                            && s.collocation == e.collocation
                            && s.element == e.element
                    });
                    if let Some(at) = here.then(|| order.position(&split)).flatten() {
                        if kept.insert(split) {
                            found.push((at, e));
                        }
                    }
                }
                true
            };
            let (datasets, named) = self.candidate_datasets(&selector)?;
            self.walk(
                datasets,
                named,
                &selector,
                ListOptions::default(),
                &mut fresh,
                &mut damage,
                &mut retrievable,
                None,
                &mut keep,
            )?;
        }
        // As point lookups do for the keys a damaged block may hold: an
        // answer that may miss fields is an error, naming the damage.
        if !damage.is_empty() {
            return Err(fieldstore_core::Error::corrupt(format!(
                "the request names fields in damaged places: {}",
                Vec::from_iter(damage).join("; ")
            )));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(found.into_iter().map(|(_, e)| e).collect())
    }
}

/// Whether a candidate split of a request is where archive puts its key:
/// another chain of the schema may take the same values, but only the
/// split of the key itself ever receives it.
fn is_canonical(schema: &Schema, split: &SplitKey) -> bool {
    schema.split(&split.full_key()).is_ok_and(|s| {
        s.dataset == split.dataset
            && s.collocation == split.collocation
            && s.element == split.element
    })
}
