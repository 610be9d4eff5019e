//! Data management on [`FieldStore`]: wipe, purge, stats, status, control
//! and move (FDB5's `fdb-wipe`, `fdb-purge`, `fdb-stats`, `fdb-status`,
//! `fdb-lock`/`fdb-unlock`, `fdb-move`).
//!
//! The handle plans each operation from what the catalogue and the store
//! report, then acts through the backends' data-management methods
//! (`fieldstore_core::maintenance`). Wipe and purge are dry runs unless
//! told otherwise, and a dry run reports exactly what the real run would
//! delete. How each backend keeps these operations safe against concurrent
//! readers and writers and against crashes: `docs/maintenance.md`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use fieldstore_core::maintenance::{self, Claim, DamagedDataset, Item, ItemKind, Unit, UnitState};
use fieldstore_core::{
    CollocationKey, Control, DamageMayName, DatasetKey, Error, ErrorKind, Key, Level, Locks,
    Operation, Request, Result, Schema, Selector, Values,
};
use serde::Serialize;

use crate::handle::FieldStore;
use fieldstore_core::catalogue::{DatasetCondition, DatasetReader, DatasetReaderExt};

/// Settings of [`FieldStore::wipe`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WipeOptions {
    /// Delete; without it, only report what would be deleted.
    pub doit: bool,
    /// Also delete files or objects the backend did not create, which
    /// otherwise make a wipe of the whole dataset refuse to run.
    pub unsafe_wipe_all: bool,
}

/// A store unit or catalogue item that stays, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kept {
    /// What stays.
    #[serde(flatten)]
    pub item: Item,
    /// Why.
    pub reason: String,
}

impl Kept {
    /// A data unit (by its URI) that stays.
    fn data(uri: &str, bytes: Option<u64>, reason: impl Into<String>) -> Kept {
        Kept {
            item: Item::new(ItemKind::Data, unit_name(uri), bytes),
            reason: reason.into(),
        }
    }
}

/// What a wipe does (or, in a dry run, would do) to one dataset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DatasetWipe {
    /// The dataset.
    pub dataset: DatasetKey,
    /// Where it lives.
    pub place: String,
    /// `None`: the whole dataset; else the collocations wiped.
    pub collocations: Option<Vec<CollocationKey>>,
    /// The dataset was already hidden by an interrupted wipe; this one
    /// finishes it.
    pub interrupted: bool,
    /// The dataset cannot be opened (the record naming it is damaged): the
    /// wipe removes its place whole. Says what is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
    /// Entries that go (replaced ones included).
    pub fields: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files or objects deleted.
    pub items: Vec<Item>,
    /// Store units that stay (shared with other collocations, or in use).
    pub kept: Vec<Kept>,
    /// Files or objects the backend did not create (a whole-dataset wipe
    /// refuses to run unless told to delete them).
    pub unknown: Vec<Item>,
}

impl DatasetWipe {
    /// The line `fieldstore wipe` (and the C API's wipe iterator) gives
    /// this dataset: `wipe {…} (what goes) at PLACE`.
    pub fn summary(&self) -> String {
        let what = if let Some(problem) = &self.damaged {
            format!("damaged dataset, removed whole: {problem}")
        } else if self.interrupted {
            "finishing an interrupted wipe".to_string()
        } else {
            let scope = match &self.collocations {
                None => "whole dataset".to_string(),
                Some(cols) => {
                    let names: Vec<String> = cols.iter().map(|c| c.braced()).collect();
                    format!("collocations {}", names.join(" "))
                }
            };
            format!("{scope}: {} fields, {} bytes", self.fields, self.bytes)
        };
        format!("wipe {} ({what}) at {}", self.dataset.braced(), self.place)
    }
}

/// The result of [`FieldStore::wipe`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WipeReport {
    /// Whether anything was deleted (`false`: a dry run).
    pub done: bool,
    /// One entry per dataset the request names, in key order.
    pub datasets: Vec<DatasetWipe>,
}

/// What a purge does (or would do) to one dataset.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct DatasetPurge {
    /// The dataset.
    pub dataset: DatasetKey,
    /// Where it lives.
    pub place: String,
    /// Replaced (masked) entries in the dataset before the purge.
    pub duplicates: u64,
    /// Their bytes.
    pub duplicate_bytes: u64,
    /// Files or objects deleted.
    pub items: Vec<Item>,
    /// Units holding replaced fields that stay, and why.
    pub kept: Vec<Kept>,
}

/// The result of [`FieldStore::purge`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PurgeReport {
    /// Whether anything was deleted (`false`: a dry run).
    pub done: bool,
    /// One entry per dataset the request names, in key order.
    pub datasets: Vec<DatasetPurge>,
}

/// Counts of one dataset ([`FieldStore::stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DatasetStats {
    /// The dataset.
    pub dataset: DatasetKey,
    /// Collocations.
    pub collocations: u64,
    /// Fields visible (newest versions).
    pub fields: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Replaced (masked) entries still stored.
    pub duplicates: u64,
    /// Their bytes.
    pub duplicate_bytes: u64,
    /// Bytes a purge would free now: 0 when the dataset is damaged
    /// (`damage`), which purge leaves alone.
    pub reclaimable_bytes: u64,
    /// Store units (files, objects) the entries point into.
    pub units: u64,
    /// Damage found (its log, its index blocks, log records recovered),
    /// each naming the file and offset; purge leaves a damaged dataset
    /// alone. Empty when healthy.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damage: Vec<String>,
}

/// Where a dataset lives and what it is locked against
/// ([`FieldStore::status`]).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct DatasetStatus {
    /// The dataset.
    pub dataset: DatasetKey,
    /// Where it lives (a directory, a container).
    pub place: String,
    /// The operations it is locked against.
    #[serde(serialize_with = "ser_locks")]
    pub locks: Locks,
    /// An interrupted wipe left it hidden; `wipe --doit` finishes it.
    pub interrupted: bool,
    /// Damage found in it, each naming the file and offset (its log as a
    /// reader reads it; for a dataset that cannot be opened at all, the
    /// record naming it). Empty when healthy.
    pub damage: Vec<String>,
}

fn ser_locks<S: serde::Serializer>(l: &Locks, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(l.iter().map(Operation::name))
}

/// A dataset moved by [`FieldStore::move_datasets`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moved {
    /// The dataset.
    pub dataset: DatasetKey,
    /// Where it was.
    pub from: String,
    /// Where it is now.
    pub to: String,
}

/// How entries use one store unit.
#[derive(Debug, Default, Clone, Copy)]
struct UnitUse {
    live: u64,
    dead: u64,
    bytes: u64,
    dead_bytes: u64,
}

/// Every entry of some collocations of one dataset, newest first.
#[derive(Debug, Default)]
struct Census {
    fields: u64,
    bytes: u64,
    duplicates: u64,
    duplicate_bytes: u64,
    units: BTreeMap<String, UnitUse>,
}

impl Census {
    fn take(reader: &dyn DatasetReader, collocations: &[CollocationKey]) -> Result<Census> {
        let mut c = Census::default();
        for col in collocations {
            let mut seen = HashSet::new();
            reader.scan(col, &mut |element, location| {
                let u = c.units.entry(location.uri.to_string()).or_default();
                u.bytes += location.length;
                if seen.insert(element.clone()) {
                    c.fields += 1;
                    c.bytes += location.length;
                    u.live += 1;
                } else {
                    c.duplicates += 1;
                    c.duplicate_bytes += location.length;
                    u.dead += 1;
                    u.dead_bytes += location.length;
                }
                true
            })?;
        }
        Ok(c)
    }

    /// Every collocation of the dataset `reader` reads.
    fn of_dataset(reader: &dyn DatasetReader) -> Result<Census> {
        let cols: Vec<CollocationKey> = reader.collocations()?.into_iter().map(|c| c.key).collect();
        Census::take(reader, &cols)
    }
}

/// Everything wrong that `reader` met in its dataset, whose `condition`
/// (of the whole dataset) the caller asked for: damage of its log, of the
/// index blocks it has read (callers read them all first, with a
/// [`Census`]), and log records it recovered whole.
fn damage_met(reader: &dyn DatasetReader, condition: &DatasetCondition) -> Result<Vec<String>> {
    let mut out = condition.damage.clone();
    for c in reader.collocations()? {
        for d in reader.condition(Some(&c.key)).damage {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out.extend(condition.recovered.iter().cloned());
    Ok(out)
}

/// What purge may not remove in a dataset though no newest field needs it,
/// given its `condition` and the `damage` met ([`damage_met`]): the units damaged
/// log records may point into, when the backend tells them
/// ([`DamageMayName::Only`]); `None` when purge must leave the whole dataset
/// alone, since a unit that looks unused may be pointed into: a damaged
/// index block (its entries are unknown), log damage whose reach the
/// backend cannot tell, or a record recovered whole (removing an index
/// file it names would make it unrecoverable).
fn damage_keeps(condition: &DatasetCondition, damage: &[String]) -> Option<BTreeSet<String>> {
    if damage.is_empty() {
        return Some(BTreeSet::new());
    }
    let DamageMayName::Only { units, .. } = condition.may_name.as_ref() else {
        return None;
    };
    let only_the_log = damage.iter().all(|d| condition.damage.contains(d));
    (only_the_log && condition.recovered.is_empty()).then(|| units.clone())
}

/// The levels at which `keyword` appears anywhere in `schema`, with a chain
/// using it at the element level.
fn levels(schema: &Schema, keyword: &str) -> (BTreeSet<Level>, Option<String>) {
    let mut out = BTreeSet::new();
    let mut element_rule = None;
    for id in schema.chains() {
        let [d, c, e] = schema.chain(id);
        if d.predicate(keyword).is_some() {
            out.insert(Level::Dataset);
        }
        if c.predicate(keyword).is_some() {
            out.insert(Level::Collocation);
        }
        if e.predicate(keyword).is_some() {
            out.insert(Level::Element);
            element_rule.get_or_insert_with(|| schema.describe(id));
        }
    }
    (out, element_rule)
}

/// Keywords of `request` that constrain something (`all` does not).
fn constraining(request: &Request) -> impl Iterator<Item = &str> + '_ {
    request
        .iter()
        .filter(|(_, v)| !matches!(v, Values::All))
        .map(|(k, _)| k)
}

/// Refuse a request for a dataset-level operation (purge, stats, status,
/// control, move) that names keywords below the dataset level.
fn dataset_request(schema: &Schema, request: &Request, what: &str) -> Result<()> {
    for kw in constraining(request) {
        if !levels(schema, kw).0.contains(&Level::Dataset) {
            return Err(Error::invalid_input(format!(
                "{what} works on whole datasets, but keyword '{kw}' is below the dataset level: \
                 remove it from the request"
            )));
        }
    }
    Ok(())
}

/// What a wipe will do to one dataset, before acting.
struct WipePlan {
    report: DatasetWipe,
    /// Whole dataset: every unit its entries point into.
    units: Vec<String>,
    /// Collocations: units only they point into, to remove.
    remove: Vec<String>,
}

impl FieldStore {
    /// Damaged datasets (the catalogue cannot read the record naming them)
    /// that `selector` may name: the key their place's name spells under a
    /// dataset rule of the schema, when it matches; those whose name does
    /// not tell their values, only when the request names no dataset
    /// keyword.
    pub(crate) fn damaged_datasets(
        &self,
        selector: &Selector<'_>,
    ) -> Result<Vec<(Option<DatasetKey>, DamagedDataset)>> {
        let mut out = Vec::new();
        let damaged = match self.catalogue.damaged_datasets() {
            Some(d) => d.damaged()?,
            // The backend cannot tell: a damaged dataset fails when opened.
            None => Vec::new(),
        };
        for d in damaged {
            let key = d.values.as_ref().and_then(|values| {
                self.schema.chains().find_map(|id| {
                    let [rule, _, _] = self.schema.chain(id);
                    if rule.keywords().count() != values.len() {
                        return None;
                    }
                    let key = Key::from_pairs(rule.keywords().zip(values.iter())).ok()?;
                    selector.match_dataset(&key).map(|_| DatasetKey(key))
                })
            });
            if key.is_some()
                || (d.values.is_none() && constraining(selector.request()).next().is_none())
            {
                out.push((key, d));
            }
        }
        Ok(out)
    }

    /// Datasets of the catalogue (and hidden by interrupted wipes, with
    /// `interrupted`) that `selector` matches, in key order; the flag says
    /// whether the dataset is one an interrupted wipe hid.
    fn matching_datasets(
        &self,
        selector: &Selector<'_>,
        interrupted: bool,
    ) -> Result<Vec<(DatasetKey, bool)>> {
        // Interrupted wipes first: a catalogue that finds unregistered
        // datasets there registers them again (RADOS), and they are listed.
        let interrupted = match self.catalogue.maintenance() {
            Some(m) if interrupted => m.interrupted_wipes()?,
            _ => Vec::new(),
        };
        let mut all: BTreeMap<DatasetKey, bool> = self
            .catalogue
            .datasets()?
            .into_iter()
            .map(|d| (d, false))
            .collect();
        for d in interrupted {
            all.entry(d).or_insert(true);
        }
        Ok(all
            .into_iter()
            .filter(|(d, _)| selector.match_dataset(d).is_some())
            .collect())
    }

    fn check_not_locked(&self, dataset: &DatasetKey, op: Operation) -> Result<()> {
        if self.catalogue_locks(dataset)?.contains(op) {
            return Err(maintenance::locked(dataset, op));
        }
        Ok(())
    }

    /// A fresh reader of `dataset` (not the handle's cached one).
    fn fresh_reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        self.forget_reader(dataset);
        self.catalogue.reader(dataset)
    }

    /// Delete whole datasets, or whole collocations within datasets, that
    /// `request` names. Without `options.doit` nothing is deleted and the
    /// report says exactly what would be.
    ///
    /// A request keyword that is not part of a dataset's key selects
    /// collocations by their key; a keyword below the collocation level is
    /// refused (wipe never deletes some of a collocation's fields; purge
    /// reclaims replaced ones). A whole-dataset wipe refuses to run when the
    /// dataset holds files or objects the backend did not create, unless
    /// `options.unsafe_wipe_all`.
    ///
    /// Readers see a wiped dataset or collocation whole or not at all; a
    /// wipe interrupted by a crash is finished by the next wipe of the same
    /// request.
    ///
    /// # Errors
    /// `InvalidInput` (an empty request, a keyword below the collocation
    /// level, unknown files without `unsafe_wipe_all`); `Locked` if a
    /// dataset is locked against wipe; `Corrupt` for a wipe of collocations
    /// of a dataset whose log is damaged (the damaged records may hold
    /// them; a whole-dataset wipe still runs). Nothing is deleted then.
    /// `Unsupported` by backends without wipe; I/O errors.
    pub fn wipe(&self, request: &Request, options: WipeOptions) -> Result<WipeReport> {
        if constraining(request).next().is_none() {
            return Err(Error::invalid_input(
                "wipe needs a request naming what to delete: an empty request would name every dataset",
            ));
        }
        let selector = self.schema.selector(request)?;
        let matched = self.matching_datasets(&selector, true)?;
        for kw in constraining(request) {
            let (lv, rule) = levels(&self.schema, kw);
            if lv.iter().all(|l| *l == Level::Element) {
                // Name the rule of a dataset the request matches, if any.
                let rule = matched
                    .iter()
                    .find_map(|(d, _)| {
                        self.schema.chains().find(|id| {
                            let [dr, _, er] = self.schema.chain(*id);
                            dr.keywords().eq(d.keywords())
                                && dr
                                    .predicates
                                    .iter()
                                    .zip(d.values())
                                    .all(|(p, v)| v.is_empty() || p.accepts(v))
                                && er.predicate(kw).is_some()
                        })
                    })
                    .map(|id| self.schema.describe(id))
                    .or(rule)
                    .unwrap_or_default();
                return Err(Error::invalid_input(format!(
                    "wipe deletes whole datasets or whole collocations, but keyword '{kw}' names fields \
                     within a collocation ({rule}): remove it from the request"
                )));
            }
        }
        let mut plans = Vec::new();
        for (key, d) in self.damaged_datasets(&selector)? {
            plans.push(WipePlan {
                report: DatasetWipe {
                    dataset: key.unwrap_or_default(),
                    place: d.place.clone(),
                    damaged: Some(d.problem),
                    items: vec![Item::new(
                        ItemKind::Catalogue,
                        format!("{}/", d.place),
                        None,
                    )],
                    ..Default::default()
                },
                units: Vec::new(),
                remove: Vec::new(),
            });
        }
        for (dataset, interrupted) in matched {
            if !interrupted {
                self.check_not_locked(&dataset, Operation::Wipe)?;
            }
            if let Some(p) = self.plan_wipe(&selector, request, &dataset, interrupted)? {
                plans.push(p);
            }
        }
        if options.doit && !options.unsafe_wipe_all {
            let unknown: Vec<&str> = plans
                .iter()
                .flat_map(|p| p.report.unknown.iter().map(|i| i.name.as_str()))
                .collect();
            if !unknown.is_empty() {
                return Err(Error::invalid_input(format!(
                    "refusing to wipe: the dataset holds files or objects fieldstore did not create: {}; \
                     move them away, or wipe with unsafe_wipe_all (--unsafe-wipe-all) to delete them too",
                    unknown.join(", ")
                )));
            }
        }
        if options.doit {
            for plan in &mut plans {
                self.do_wipe(plan, options)?;
            }
        }
        Ok(WipeReport {
            done: options.doit,
            datasets: plans.into_iter().map(|p| p.report).collect(),
        })
    }

    fn plan_wipe(
        &self,
        selector: &Selector<'_>,
        request: &Request,
        dataset: &DatasetKey,
        interrupted: bool,
    ) -> Result<Option<WipePlan>> {
        let place = self.catalogue.describe(dataset);
        let below: Vec<&str> = constraining(request)
            .filter(|kw| !dataset.contains(kw))
            .collect();
        let reader = if interrupted {
            None
        } else {
            self.fresh_reader(dataset)?
        };
        let all_cols: Vec<CollocationKey> = match &reader {
            Some(r) => r.collocations()?.into_iter().map(|c| c.key).collect(),
            None => Vec::new(),
        };
        if below.is_empty() || interrupted {
            // The whole dataset.
            let census = match &reader {
                Some(r) => Census::take(r.as_ref(), &all_cols)?,
                None => Census::default(),
            };
            let units: Vec<String> = census.units.keys().cloned().collect();
            let mut items = self.catalogue_maintenance("wipe")?.inventory(dataset)?;
            let mut seen: HashSet<String> = items.iter().map(|i| i.name.clone()).collect();
            for i in self.store_maintenance("wipe")?.inventory(dataset, &units)? {
                if seen.insert(i.name.clone()) {
                    items.push(i);
                }
            }
            let (unknown, items): (Vec<Item>, Vec<Item>) =
                items.into_iter().partition(|i| i.kind == ItemKind::Unknown);
            return Ok(Some(WipePlan {
                report: DatasetWipe {
                    dataset: dataset.clone(),
                    place,
                    interrupted,
                    fields: census.fields + census.duplicates,
                    bytes: census.bytes + census.duplicate_bytes,
                    items,
                    unknown,
                    ..Default::default()
                },
                units,
                remove: Vec::new(),
            }));
        }
        let Some(reader) = reader else {
            return Ok(None);
        };
        // Collocations are matched by the dataset's own schema.
        let own = self.own_schema(dataset, reader.as_ref())?;
        let schema: &Schema = own.as_deref().unwrap_or(&self.schema);
        let own_selector = own.as_ref().map(|s| s.selector(request)).transpose()?;
        let selector = own_selector.as_ref().unwrap_or(selector);
        let Some(dm) = selector.match_dataset(dataset) else {
            return Ok(None);
        };
        // A log record this reader could not read may name collocations
        // (and units) it never learnt: a wipe of those would miss them, say
        // it was done, and leave readers that read the record before the
        // damage answering what it held; and a unit it points into must
        // stay. (A wipe of the whole dataset above needs no such knowledge.)
        let condition = reader.condition(None);
        let refuse = |what: String| {
            Error::new(
                ErrorKind::Corrupt,
                format!(
                    "refusing to wipe collocations of {}: its log is damaged ({}), and the damaged \
                     records may hold {what}; `status` reports the damage, and a wipe of the \
                     whole dataset removes it",
                    dataset.braced(),
                    condition.damage.join("; ")
                ),
            )
        };
        let damaged_units = match condition.may_name.as_ref() {
            DamageMayName::Nothing => BTreeSet::new(),
            DamageMayName::Anything => return Err(refuse("what the request names".into())),
            DamageMayName::Only {
                collocations,
                units,
            } => {
                let named: Vec<String> = collocations
                    .iter()
                    .filter(|c| selector.match_collocation(&dm, c).is_some())
                    .map(|c| c.braced())
                    .collect();
                if !named.is_empty() {
                    return Err(refuse(format!("collocation {}", named.join(", "))));
                }
                units.clone()
            }
        };
        let mut targets = Vec::new();
        for col in &all_cols {
            if selector.match_collocation(&dm, col).is_none() {
                continue;
            }
            let rest: Vec<&str> = below
                .iter()
                .copied()
                .filter(|kw| !col.contains(kw))
                .collect();
            if rest.is_empty() {
                targets.push(col.clone());
                continue;
            }
            // A keyword this collocation lacks: either it names fields
            // within it (refused), or it belongs to other rules (the
            // collocation is not named).
            let element_level = schema.chains().any(|id| {
                let [d, c, e] = schema.chain(id);
                d.keywords().eq(dataset.keywords())
                    && c.keywords().eq(col.keywords())
                    && rest.iter().any(|kw| e.predicate(kw).is_some())
            });
            if element_level {
                let kw = rest
                    .iter()
                    .find(|kw| {
                        schema.chains().any(|id| {
                            let [_, c, e] = schema.chain(id);
                            c.keywords().eq(col.keywords()) && e.predicate(kw).is_some()
                        })
                    })
                    .copied()
                    .unwrap_or(rest[0]);
                return Err(Error::invalid_input(format!(
                    "wipe deletes whole datasets or whole collocations, but keyword '{kw}' names fields \
                     within collocation {}{}: remove it from the request",
                    dataset.braced(),
                    col.braced()
                )));
            }
        }
        let pending = condition.pending_units.clone();
        if targets.is_empty() && pending.is_empty() {
            return Ok(None);
        }
        let inside = Census::take(reader.as_ref(), &targets)?;
        let others: Vec<CollocationKey> = all_cols
            .iter()
            .filter(|c| !targets.contains(c))
            .cloned()
            .collect();
        let outside = Census::take(reader.as_ref(), &others)?;
        let mut items = Vec::new();
        let mut kept = Vec::new();
        let candidates: BTreeSet<String> = inside.units.keys().cloned().chain(pending).collect();
        let mut asked = Vec::new();
        for uri in candidates {
            let bytes_in = inside.units.get(&uri).map(|u| u.bytes);
            if outside.units.contains_key(&uri) {
                kept.push(Kept::data(
                    &uri,
                    None,
                    "also holds fields of collocations that stay; purge reclaims it once \
                     nothing visible points into it",
                ));
            } else if damaged_units.contains(&uri) {
                kept.push(Kept::data(
                    &uri,
                    None,
                    "a damaged record of the log may point into it; a wipe of the whole \
                     dataset removes it",
                ));
            } else {
                asked.push((uri, bytes_in));
            }
        }
        let remove = self.sort_units(
            asked,
            "a live writer still appends to it; a later wipe or purge removes it",
            &mut items,
            &mut kept,
        );
        if targets.is_empty() && remove.is_empty() {
            return Ok(None);
        }
        // The catalogue's own files that only these collocations (or the
        // removed units) needed.
        items.extend(
            self.catalogue_maintenance("wipe")?
                .reclaim(dataset, &remove, &targets, true)?,
        );
        Ok(Some(WipePlan {
            report: DatasetWipe {
                dataset: dataset.clone(),
                place,
                collocations: Some(targets),
                fields: inside.fields + inside.duplicates,
                bytes: inside.bytes + inside.duplicate_bytes,
                items,
                kept,
                ..Default::default()
            },
            units: Vec::new(),
            remove,
        }))
    }

    /// Sort `units` (URIs and fallback sizes) by their state: idle ones go
    /// to `items` and, with missing ones, are returned, to be removed;
    /// those in use go to `kept`, for the reason `in_use`.
    fn sort_units(
        &self,
        units: Vec<(String, Option<u64>)>,
        in_use: &str,
        items: &mut Vec<Item>,
        kept: &mut Vec<Kept>,
    ) -> Vec<String> {
        let mut remove = Vec::new();
        let states = self.unit_states(&units);
        for ((uri, _), state) in units.into_iter().zip(states) {
            match state {
                (UnitState::InUse, bytes) => kept.push(Kept::data(&uri, bytes, in_use)),
                (UnitState::Missing, _) => remove.push(uri),
                (UnitState::Idle, bytes) => {
                    items.push(Item::new(ItemKind::Data, unit_name(&uri), bytes));
                    remove.push(uri);
                }
            }
        }
        remove
    }

    /// Units' states and sizes (the store's, else their fallback), asked
    /// all at once ([`StoreMaintenance::inspect_all`](crate::StoreMaintenance::inspect_all)):
    /// dead writers cost one wait in total, not one each. A unit the store
    /// cannot inspect counts as in use.
    fn unit_states(&self, units: &[(String, Option<u64>)]) -> Vec<(UnitState, Option<u64>)> {
        let uris: Vec<String> = units.iter().map(|(u, _)| u.clone()).collect();
        let inspected = match self.store_maintenance("purge") {
            Ok(m) => m.inspect_all(&uris),
            Err(_) => return units.iter().map(|(_, f)| (UnitState::InUse, *f)).collect(),
        };
        units
            .iter()
            .zip(inspected)
            .map(|((_, fallback), r)| match r {
                Ok(u) => (u.state, u.bytes.or(*fallback)),
                Err(_) => (UnitState::InUse, *fallback),
            })
            .collect()
    }

    fn do_wipe(&self, plan: &mut WipePlan, options: WipeOptions) -> Result<()> {
        let dataset = plan.report.dataset.clone();
        if plan.report.damaged.is_some() {
            return match self.catalogue.damaged_datasets() {
                Some(d) => d.wipe_damaged(&plan.report.place),
                None => Err(maintenance::unsupported(
                    "wiping a damaged dataset",
                    &plan.report.place,
                )),
            };
        }
        self.forget_reader(&dataset);
        match &plan.report.collocations {
            None => {
                let units = plan.units.clone();
                let store = self.store_maintenance("wipe")?;
                self.catalogue_maintenance("wipe")?
                    .wipe(&dataset, options.unsafe_wipe_all, &mut || {
                        store.wipe(&dataset, &units)
                    })
                    .map_err(|e| e.context(format!("wiping {}", dataset.braced())))?;
            }
            Some(cols) => {
                let cols = &cols.clone();
                if !cols.is_empty() {
                    self.catalogue_maintenance("wipe")?
                        .wipe_collocations(&dataset, cols, &plan.remove)
                        .map_err(|e| e.context(format!("wiping {}", dataset.braced())))?;
                }
                let report = &mut plan.report;
                let removed =
                    self.remove_units(&dataset, &plan.remove, &mut report.items, &mut report.kept)?;
                let items = self
                    .catalogue_maintenance("wipe")?
                    .reclaim(&dataset, &removed, cols, false)?;
                // What the catalogue removed, instead of what it planned to.
                plan.report
                    .items
                    .retain(|i| !matches!(i.kind, ItemKind::Index | ItemKind::Catalogue));
                plan.report.items.extend(items);
            }
        }
        self.forget_reader(&dataset);
        Ok(())
    }

    /// Remove those of `units` that nothing newest points into, from the
    /// store; returns those removed (or already gone). Units found in use
    /// move from `items` to `kept`.
    ///
    /// **Claim, then read, then remove**: every unit is first held
    /// ([`claim`](crate::store::StoreMaintenance::claim): its writer, if
    /// any, is gone, so no flush can point into it any more), then the
    /// catalogue is read afresh, and only units that reading shows no
    /// newest entry in are removed. A plan made from an earlier reading may have missed a
    /// writer's last flush (it flushed and exited between that reading and
    /// the claim); this reading cannot.
    fn remove_units(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        items: &mut Vec<Item>,
        kept: &mut Vec<Kept>,
    ) -> Result<Vec<String>> {
        crate::failpoint::hit("maintenance.before_claim");
        let mut removed = Vec::new();
        let mut held = Vec::new();
        for uri in units {
            match self.store_maintenance("purge")?.claim(uri)? {
                Claim::Missing => removed.push(uri.clone()),
                Claim::InUse => keep(
                    items,
                    kept,
                    uri,
                    "a live writer still appends to it; a later wipe or purge removes it",
                ),
                Claim::Held(h) => held.push((uri, h)),
            }
        }
        if held.is_empty() {
            return Ok(removed);
        }
        let census = match self.fresh_reader(dataset)? {
            Some(r) => Census::of_dataset(r.as_ref())?,
            None => Census::default(),
        };
        for (uri, h) in held {
            if census.units.get(uri).is_some_and(|u| u.live > 0) {
                keep(
                    items,
                    kept,
                    uri,
                    "a field flushed while this ran points into it; it stays",
                );
                continue;
            }
            h.remove()?;
            removed.push(uri.clone());
        }
        Ok(removed)
    }

    /// Reclaim the space of replaced (masked) fields in the datasets
    /// `request` names: store units that no newest field points into (and
    /// that no live writer appends to) are removed, then the catalogue
    /// forgets the entries in them. Without `doit`, only report.
    ///
    /// Readers of the newest versions are never affected: only units
    /// holding nothing but replaced fields are removed. A reader that looked
    /// a field up before it was replaced and reads it after the purge gets
    /// the newer version (retrieve looks the field up again).
    ///
    /// # Errors
    /// `InvalidInput` for keywords below the dataset level; `Locked` if a
    /// dataset is locked against wipe; `Unsupported`; I/O errors.
    pub fn purge(&self, request: &Request, doit: bool) -> Result<PurgeReport> {
        dataset_request(&self.schema, request, "purge")?;
        let selector = self.schema.selector(request)?;
        let mut out = Vec::new();
        for (dataset, _) in self.matching_datasets(&selector, false)? {
            self.check_not_locked(&dataset, Operation::Wipe)?;
            let Some(reader) = self.fresh_reader(&dataset)? else {
                continue;
            };
            // Every block is read first: damage of an index block is known
            // only once it is read.
            // (A torn append is no damage: nothing visible was lost.)
            let census = Census::of_dataset(reader.as_ref())?;
            let condition = reader.condition(None);
            let damage = damage_met(reader.as_ref(), &condition)?;
            let Some(damaged_units) = damage_keeps(&condition, &damage) else {
                // Units a skipped record pointed into would look unused:
                // a damaged dataset is left as it is (wipe removes it).
                out.push(DatasetPurge {
                    place: self.catalogue.describe(&dataset),
                    dataset,
                    kept: damage
                        .into_iter()
                        .map(|d| Kept {
                            item: Item::new(ItemKind::Catalogue, "log", None),
                            reason: format!("damaged, not purged: {d}"),
                        })
                        .collect(),
                    ..Default::default()
                });
                continue;
            };
            crate::failpoint::hit("purge.after_census");
            let referenced: HashSet<String> =
                census.units.keys().chain(&damaged_units).cloned().collect();
            let mut candidates: BTreeMap<String, Option<u64>> = BTreeMap::new();
            let mut kept = Vec::new();
            for (uri, u) in &census.units {
                if u.dead == 0 {
                    continue;
                }
                if damaged_units.contains(uri) {
                    let reason = "a damaged record of the log may point into it";
                    kept.push(Kept::data(uri, Some(u.dead_bytes), reason));
                } else if u.live > 0 {
                    let reason = format!(
                        "{} replaced fields share it with {} newest ones",
                        u.dead, u.live
                    );
                    kept.push(Kept::data(uri, Some(u.dead_bytes), reason));
                } else {
                    candidates.insert(uri.clone(), Some(u.dead_bytes));
                }
            }
            for uri in condition.pending_units {
                if census.units.get(&uri).is_none_or(|u| u.live == 0)
                    && !damaged_units.contains(&uri)
                {
                    candidates.entry(uri).or_insert(None);
                }
            }
            for o in self.orphans(&dataset, &referenced)? {
                candidates.entry(o.uri).or_insert(o.bytes);
            }
            let mut items = Vec::new();
            let remove = self.sort_units(
                candidates.into_iter().collect(),
                "a live writer still appends to it",
                &mut items,
                &mut kept,
            );
            let mut report = DatasetPurge {
                dataset: dataset.clone(),
                place: self.catalogue.describe(&dataset),
                duplicates: census.duplicates,
                duplicate_bytes: census.duplicate_bytes,
                items,
                kept,
            };
            let removed = if doit {
                self.remove_units(&dataset, &remove, &mut report.items, &mut report.kept)?
            } else {
                remove
            };
            if !removed.is_empty() {
                let m = self.catalogue_maintenance("purge")?;
                report
                    .items
                    .extend(m.reclaim(&dataset, &removed, &[], !doit)?);
            }
            if doit {
                self.forget_reader(&dataset);
            }
            out.push(report);
        }
        Ok(PurgeReport {
            done: doit,
            datasets: out,
        })
    }

    /// Counts per dataset: collocations, fields, bytes, replaced fields and
    /// the bytes a purge would free. Works on every backend (sizes come from
    /// the index where the store cannot tell them cheaply).
    ///
    /// # Errors
    /// `InvalidInput` for keywords below the dataset level; `Locked` if a
    /// dataset is locked against list; I/O errors.
    pub fn stats(&self, request: &Request) -> Result<Vec<DatasetStats>> {
        dataset_request(&self.schema, request, "stats")?;
        let selector = self.schema.selector(request)?;
        let mut out = Vec::new();
        for (dataset, _) in self.matching_datasets(&selector, false)? {
            let Some(reader) = self.fresh_reader(&dataset)? else {
                continue;
            };
            if !self.listable(request, &dataset, reader.locks())? {
                continue;
            }
            let cols: Vec<CollocationKey> =
                reader.collocations()?.into_iter().map(|c| c.key).collect();
            let census = Census::take(reader.as_ref(), &cols)?;
            let condition = reader.condition(None);
            let damage = damage_met(reader.as_ref(), &condition)?;
            let reclaimable = match damage_keeps(&condition, &damage) {
                Some(kept) => self.reclaimable(&dataset, &census, &kept)?,
                None => 0,
            };
            out.push(DatasetStats {
                dataset,
                collocations: cols.len() as u64,
                fields: census.fields,
                bytes: census.bytes,
                duplicates: census.duplicates,
                duplicate_bytes: census.duplicate_bytes,
                reclaimable_bytes: reclaimable,
                units: census.units.len() as u64,
                damage,
            });
        }
        Ok(out)
    }

    /// The bytes a purge of `dataset` would free now (its census taken),
    /// `kept` units left alone (what damage may point into).
    fn reclaimable(
        &self,
        dataset: &DatasetKey,
        census: &Census,
        kept: &BTreeSet<String>,
    ) -> Result<u64> {
        let unused: Vec<(String, Option<u64>)> = census
            .units
            .iter()
            .filter(|(uri, u)| u.live == 0 && !kept.contains(*uri))
            .map(|(uri, u)| (uri.clone(), Some(u.dead_bytes)))
            .collect();
        let idle: u64 = self
            .unit_states(&unused)
            .into_iter()
            .filter_map(|(state, bytes)| bytes.filter(|_| state == UnitState::Idle))
            .sum();
        let referenced: HashSet<String> = census.units.keys().chain(kept).cloned().collect();
        let orphans = self.orphans(dataset, &referenced)?;
        Ok(idle + orphans.iter().filter_map(|o| o.bytes).sum::<u64>())
    }

    /// Where each dataset `request` names lives, and its locks; datasets an
    /// interrupted wipe hid are included (flagged).
    ///
    /// # Errors
    /// `InvalidInput` for keywords below the dataset level; I/O errors.
    pub fn status(&self, request: &Request) -> Result<Vec<DatasetStatus>> {
        dataset_request(&self.schema, request, "status")?;
        let selector = self.schema.selector(request)?;
        let mut out = Vec::new();
        for (dataset, interrupted) in self.matching_datasets(&selector, true)? {
            let (locks, damage) = if interrupted {
                (Locks::NONE, Vec::new())
            } else {
                let damage = match self.fresh_reader(&dataset) {
                    Ok(Some(r)) => {
                        // Index blocks are read too: their damage counts.
                        Census::of_dataset(r.as_ref())?;
                        let condition = r.condition(None);
                        let mut damage = damage_met(r.as_ref(), &condition)?;
                        damage.extend(condition.torn);
                        damage
                    }
                    Ok(None) => Vec::new(),
                    Err(e) if e.kind() == ErrorKind::Corrupt => vec![e.to_string()],
                    Err(e) => return Err(e),
                };
                (self.catalogue_locks(&dataset)?, damage)
            };
            out.push(DatasetStatus {
                place: self.catalogue.describe(&dataset),
                dataset,
                locks,
                interrupted,
                damage,
            });
        }
        let unfinished = self.catalogue.mover().map(|m| m.unfinished()).transpose()?;
        for (dataset, what) in unfinished.unwrap_or_default() {
            if let Some(s) = out.iter_mut().find(|s| s.dataset == dataset) {
                s.damage.push(what);
            }
        }
        for (key, d) in self.damaged_datasets(&selector)? {
            out.push(DatasetStatus {
                dataset: key.unwrap_or_default(),
                place: d.place,
                damage: vec![d.problem],
                ..Default::default()
            });
        }
        Ok(out)
    }

    /// Lock or unlock `operations` on every dataset `request` names, for
    /// every process. Returns each dataset's locks afterwards.
    ///
    /// # Errors
    /// `InvalidInput` for keywords below the dataset level; `Unsupported`;
    /// I/O errors.
    pub fn control(
        &self,
        request: &Request,
        action: Control,
        operations: Locks,
    ) -> Result<Vec<DatasetStatus>> {
        dataset_request(&self.schema, request, "control")?;
        let selector = self.schema.selector(request)?;
        let mut out = Vec::new();
        for (dataset, _) in self.matching_datasets(&selector, false)? {
            let locks = self
                .catalogue_maintenance("control")?
                .control(&dataset, action, operations)?;
            self.forget_reader(&dataset);
            out.push(DatasetStatus {
                place: self.catalogue.describe(&dataset),
                dataset,
                locks,
                ..Default::default()
            });
        }
        Ok(out)
    }

    /// Move every dataset `request` names to `root` (another root of the
    /// POSIX backend), atomically for readers: they see each dataset in its
    /// old place or in its new one, whole.
    ///
    /// # Errors
    /// `InvalidInput` for keywords below the dataset level or a root that is
    /// not configured; `Locked` if a dataset is locked against wipe;
    /// `Unsupported` by backends other than POSIX; I/O errors.
    pub fn move_datasets(&self, request: &Request, root: &std::path::Path) -> Result<Vec<Moved>> {
        dataset_request(&self.schema, request, "move")?;
        let selector = self.schema.selector(request)?;
        let matched = self.matching_datasets(&selector, false)?;
        for (dataset, _) in &matched {
            self.check_not_locked(dataset, Operation::Wipe)?;
        }
        let mut out = Vec::new();
        for (dataset, _) in matched {
            let from = self.catalogue.describe(&dataset);
            let to = self
                .catalogue
                .mover()
                .ok_or_else(|| maintenance::unsupported("move", &from))?
                .move_dataset(&dataset, root)?;
            self.forget_reader(&dataset);
            out.push(Moved { dataset, from, to });
        }
        Ok(out)
    }

    /// The units of `dataset` killed writers left. A store that cannot
    /// enumerate them (`Unsupported`: DAOS today) has them
    /// removed only by a wipe of the dataset (`docs/maintenance.md`).
    fn orphans(&self, dataset: &DatasetKey, referenced: &HashSet<String>) -> Result<Vec<Unit>> {
        match self
            .store_maintenance("purge")?
            .orphans(dataset, referenced)
        {
            Err(e) if e.kind() == ErrorKind::Unsupported => Ok(Vec::new()),
            r => r,
        }
    }
}

/// Move `uri` from `items` to `kept`, with the reason.
fn keep(items: &mut Vec<Item>, kept: &mut Vec<Kept>, uri: &str, reason: &str) {
    let name = unit_name(uri);
    if let Some(i) = items.iter().position(|i| i.name == name) {
        let item = items.remove(i);
        kept.push(Kept {
            item,
            reason: reason.into(),
        });
    }
}

/// How a report names a data unit: a file by its path, as the POSIX
/// backend names index and data files it lists itself (so that one
/// report never mixes `file://` URIs and paths); other units by their URI
/// (`daos://`, `rados://`).
fn unit_name(uri: &str) -> String {
    uri.strip_prefix("file://").unwrap_or(uri).to_string()
}
