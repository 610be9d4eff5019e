//! The walk that `list` (collocation and element levels) and the walking
//! resolution of large requests (`resolve.rs`) share: the datasets a
//! selector admits; their collocations, pruned by their axes; and, at the
//! element level, their entries, pruned by each index block's axes — in the
//! order FDB5 lists the same history (measured with FDB5 5.25 by
//! `list_order_agrees_with_fdb5`): datasets by fingerprint (FDB5 sorts
//! database directories by name), collocations in the reverse of FDB5's
//! dictionary order (a writer writes a flush's indexes in that order, and
//! the newest index is read first), entries index block by index block,
//! newest first, each in key order
//! ([`visit_newest_first`](fieldstore_core::catalogue::visit_newest_first)). Damage met on the way is collected, not fatal: the
//! caller reports it once everything readable was visited.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use fieldstore_core::schema::DatasetMatch;
use fieldstore_core::{DatasetKey, ElementKey, ErrorKind, FieldLocation, Level, Result, Selector};

use crate::dataset_schema::own_selector;
use crate::handle::FieldStore;
use crate::list::{ListElement, ListOptions, PINNED_DATASETS_LIMIT};
use fieldstore_core::catalogue::DatasetReader;

/// What a walk that looks again (`watch`'s looks) keeps per dataset
/// between walks, all of them with one selector (one request, one
/// handle): how far each dataset's log was looked at, and whether the
/// selector admits the dataset's key — a fact of the key and the request,
/// computed once (matching every dataset the catalogue lists was 28 % of a
/// publisher's CPU, bench/aviso).
#[derive(Debug, Default)]
pub(crate) struct Marks {
    positions: HashMap<DatasetKey, u64>,
    matches: HashMap<DatasetKey, Option<DatasetMatch>>,
}

impl FieldStore {
    /// The datasets a walk over `selector` looks at, in the walk's order
    /// (by fingerprint), and whether they were enumerated from the request
    /// (`true`: each may not exist; open it to know) rather than listed.
    ///
    /// The rule: a request that gives every dataset keyword explicit values,
    /// naming at most [`PINNED_DATASETS_LIMIT`] dataset keys
    /// ([`Selector::pinned_datasets`]: built as archive builds them), has
    /// exactly those looked at, each opened directly as `retrieve` opens
    /// one; any other request lists every dataset of the catalogue and
    /// matches each. Opening directly costs what the request names, not
    /// what the store holds (a RADOS root's omap pages, an S3 registry
    /// listing, a POSIX root scan on every list, axes or watch look), and
    /// finds a dataset whose registration was lost (a RADOS root entry
    /// removed) as `retrieve` does.
    pub(crate) fn candidate_datasets(
        &self,
        selector: &Selector<'_>,
    ) -> Result<(Vec<DatasetKey>, bool)> {
        if let Some(keys) = selector.pinned_datasets(PINNED_DATASETS_LIMIT) {
            return Ok((keys, true));
        }
        let mut datasets = self.catalogue().datasets()?;
        datasets.sort_by(|a, b| a.cmp_fingerprint(b));
        Ok((datasets, false))
    }

    /// The reader of `dataset`, named by a request rather than listed, if
    /// the dataset exists. The handle's reader, unless it shows nothing: a
    /// dataset wiped since the handle opened it shows nothing to its
    /// reader, which cannot tell it from one whose collocations were all
    /// wiped, so a fresh open decides (`None`: gone, and the handle forgets
    /// its reader). That keeps a named dataset wiped by another process out
    /// of dataset-level listings and axes, as listing keeps it, and lets a
    /// watch see the wipe.
    ///
    /// A dataset that cannot be opened for damage (`Corrupt`: a damaged
    /// INIT record, which listing leaves out and reports among the damaged
    /// datasets) is stepped over and noted in `damage`, in the words of
    /// that report (`dataset <place>: <problem>`).
    pub(crate) fn named_reader(
        &self,
        dataset: &DatasetKey,
        fresh: &mut HashSet<DatasetKey>,
        damage: &mut BTreeSet<String>,
    ) -> Result<Option<Arc<dyn DatasetReader>>> {
        let damaged = |e: fieldstore_core::Error, damage: &mut BTreeSet<String>| {
            if e.kind() != ErrorKind::Corrupt {
                return Err(e);
            }
            let place = self.catalogue().describe(dataset);
            damage.insert(format!("dataset {place}: {e}"));
            Ok(None)
        };
        let reader = match self.reader(dataset, fresh) {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(None),
            Err(e) => return damaged(e, damage),
        };
        let mut empty = true;
        reader.visit_collocations(&mut |_, _| empty = false)?;
        if !empty {
            return Ok(Some(reader));
        }
        self.forget_reader(dataset);
        fresh.remove(dataset);
        self.reader(dataset, fresh).or_else(|e| damaged(e, damage))
    }

    /// The reader of a dataset [`FieldStore::candidate_datasets`] gave:
    /// through [`FieldStore::named_reader`] if it was `named` by the
    /// request (it may not exist), else the handle's.
    pub(crate) fn candidate_reader(
        &self,
        dataset: &DatasetKey,
        named: bool,
        fresh: &mut HashSet<DatasetKey>,
        damage: &mut BTreeSet<String>,
    ) -> Result<Option<Arc<dyn DatasetReader>>> {
        if named {
            self.named_reader(dataset, fresh, damage)
        } else {
            self.reader(dataset, fresh)
        }
    }

    /// Visit what `selector` admits in `datasets` (in that order: those
    /// [`FieldStore::candidate_datasets`] gives, or those `watch`'s waiter
    /// saw change) down to `options.depth` (collocation or element level):
    /// a dataset only when `admit` says so (it may also fail: a lock); one
    /// that does not exist is skipped. `named`: the datasets come from the
    /// request, not the catalogue ([`FieldStore::named_reader`]). `visit`
    /// returns `false` to stop; the walk then returns `Ok(false)`.
    ///
    /// With `since`, a dataset's entries are those its reader learnt of
    /// after the position `since` holds for it (none: all), and `since`
    /// gets each walked dataset's position, for the next walk
    /// ([`DatasetReader::scan_since`]; `watch`'s looks), and keeps whether
    /// `selector` admits each dataset: `since` must only ever be given
    /// with one selector.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn walk(
        &self,
        datasets: impl IntoIterator<Item = DatasetKey>,
        named: bool,
        selector: &Selector<'_>,
        options: ListOptions,
        fresh: &mut HashSet<DatasetKey>,
        damage: &mut BTreeSet<String>,
        admit: &mut dyn FnMut(&DatasetKey, &dyn DatasetReader) -> Result<bool>,
        mut since: Option<&mut Marks>,
        visit: &mut dyn FnMut(ListElement) -> bool,
    ) -> Result<bool> {
        for dataset in datasets {
            let dm = match since.as_deref_mut() {
                Some(marks) => marks
                    .matches
                    .entry(dataset.clone())
                    .or_insert_with(|| selector.match_dataset(&dataset))
                    .clone(),
                None => selector.match_dataset(&dataset),
            };
            let Some(dm) = dm else {
                continue;
            };
            let Some(reader) = self.candidate_reader(&dataset, named, fresh, damage)? else {
                continue;
            };
            if !admit(&dataset, reader.as_ref())? {
                continue;
            }
            // Below level 1, the dataset's own schema matches.
            let own = self.own_schema(&dataset, reader.as_ref())?;
            let request = selector.request();
            let Some((selector, dm)) = own_selector(&own, request, selector, &dataset, dm)? else {
                continue;
            };
            damage.extend(reader.condition(None).damage);
            // Before the scans: entries learnt of while scanning are after
            // it, and the next walk sees them.
            let from = match since.as_deref_mut() {
                Some(marks) => {
                    let now = reader.log_position();
                    let before = marks.positions.insert(dataset.clone(), now);
                    // Not moved since the last walk (and positions kept):
                    // nothing new to scan. A watch's look then costs what
                    // changed, not the datasets it names (cloning each
                    // one's collocations and axes was 24 % of a publisher
                    // following 100 datasets, bench/aviso).
                    if now != 0 && before == Some(now) {
                        continue;
                    }
                    Some(before.unwrap_or(0))
                }
                None => None,
            };
            // The collocations the selector and their axes admit, their
            // axes read in place (not copied: a look costs what is new).
            let mut collocations = Vec::new();
            reader.visit_collocations(&mut |key, axes| {
                let Some(cm) = selector.match_collocation(&dm, key) else {
                    return;
                };
                let filter = selector.element_filter(&cm);
                if !filter.is_impossible() && filter.admits_axes(axes) {
                    collocations.push((key.clone(), filter));
                }
            })?;
            if from.is_none() {
                // FDB5's order for listings; `watch` (with `since`) keeps
                // the reader's, which it reverses into flush order.
                collocations.sort_by(|a, b| b.0.cmp_as_dict(&a.0));
            }
            for (key, filter) in collocations {
                if options.depth == Level::Collocation {
                    let e = ListElement {
                        dataset: dataset.clone(),
                        collocation: key.clone(),
                        element: Default::default(),
                        location: None,
                    };
                    if !visit(e) {
                        return Ok(false);
                    }
                    continue;
                }
                // Keys already visited (newest first: a later one is masked);
                // a clone of a key is a reference count.
                // foldhash, not SipHash: the keys come from the store, and
                // hashing each entry's key was ~15 % of a listing.
                let mut seen: HashSet<ElementKey, foldhash::fast::RandomState> = HashSet::default();
                let mut stop = false;
                // Skip index blocks whose own axes exclude the request.
                let admits = |axes: &fieldstore_core::catalogue::Axes| filter.admits_axes(axes);
                let mut each = |element: &ElementKey, location: &FieldLocation| {
                    if !filter.matches(element) {
                        return true;
                    }
                    if !options.duplicates && !seen.insert(element.clone()) {
                        return true;
                    }
                    let e = ListElement {
                        dataset: dataset.clone(),
                        collocation: key.clone(),
                        element: element.clone(),
                        location: Some(location.clone()),
                    };
                    stop = !visit(e);
                    !stop
                };
                reader.scan_since(&key, from.unwrap_or(0), &admits, &mut each)?;
                damage.extend(reader.condition(Some(&key)).damage);
                if stop {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
