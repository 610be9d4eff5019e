//! List-side matching: select stored keys that a partial request names.
//!
//! A [`Selector`] canonicalises the request's values once per type the
//! keyword has in the schema, then matches keys level by level: a dataset
//! key, then collocation keys within it, then element keys. Which rule a
//! stored key belongs to is recovered from its keywords (a level key lists
//! exactly its rule's keywords, in order), so each value is compared in the
//! type its own rule gives it.
//!
//! Semantics (FDB5's list): a keyword left out of the request, or given as
//! `all`, matches anything. A keyword given in the request but absent from a
//! field's three keys excludes that field. An optional keyword requested with
//! its default value also matches fields stored without it.

use std::collections::HashSet;

use super::expand::next_combination;
use super::rule::{Matcher, Predicate, Rule};
use super::Schema;
use crate::key::{DatasetKey, Key};
use crate::request::{Item, Request, RequestError, Values};
use crate::types::{KeywordType, ValueRange};

/// The canonical values a request allows for one keyword in one type.
#[derive(Debug, Clone, Default)]
pub struct ValueSet {
    values: HashSet<String>,
    ranges: Vec<ValueRange>,
}

impl ValueSet {
    /// Whether `canonical` is allowed.
    pub fn contains(&self, canonical: &str) -> bool {
        self.values.contains(canonical) || self.ranges.iter().any(|r| r.contains(canonical))
    }
}

/// A request compiled against a schema, for matching stored keys.
#[derive(Debug, Clone)]
pub struct Selector<'s> {
    schema: &'s Schema,
    request: Request,
    /// `(keyword, type) → allowed values`; absent keywords are unconstrained.
    sets: Vec<(String, KeywordType, ValueSet)>,
}

/// The dataset rules a dataset key may belong to, having passed the request.
#[derive(Debug, Clone)]
pub struct DatasetMatch {
    rules: Vec<u32>,
}

/// The (dataset, collocation) rule pairs a collocation key may belong to.
#[derive(Debug, Clone)]
pub struct CollocationMatch {
    rules: Vec<(u32, u32)>,
}

/// Matches element keys within one collocation; compiled once per
/// collocation so that the per-entry cost is a few hash lookups.
#[derive(Debug, Clone)]
pub struct ElementFilter<'a> {
    /// One entry per candidate element rule.
    rules: Vec<ElementCheck<'a>>,
    /// Request keywords still to check at the element level, with their
    /// allowed values in the element rule's type (first candidate).
    /// The flag: an empty value also passes (optional keyword requested
    /// with its default).
    pending: Vec<(&'a str, &'a ValueSet, bool)>,
}

#[derive(Debug, Clone)]
struct ElementCheck<'a> {
    keywords: Vec<&'a str>,
    /// `(position in the element key, allowed values, default that also
    /// admits the empty value)`.
    checks: Vec<(usize, &'a ValueSet, bool)>,
    /// The request names a keyword this chain does not have.
    impossible: bool,
}

fn level_fits(rule: &Rule, key: &Key) -> bool {
    rule.predicates.len() == key.len()
        && rule.predicates.iter().zip(key.iter()).all(|(p, (k, v))| {
            p.keyword == k
                && (v.is_empty() && !p.is_required()
                    || p.accepts(v)
                    || matches!(p.matcher, Matcher::Hidden(_)))
        })
}

impl Schema {
    /// Compile `request` for matching stored keys.
    ///
    /// # Errors
    /// [`RequestError::UnknownKeyword`] for a keyword the schema does not
    /// know; [`RequestError::InvalidValue`] for a value that fits none of its
    /// keyword's types; [`RequestError::UnknownParameter`] for a parameter
    /// name the schema's table does not know (names are resolved first, see
    /// [`Schema::resolve_request`]).
    pub fn selector(&self, request: &Request) -> Result<Selector<'_>, RequestError> {
        let request = self.resolve_request(request)?;
        request.validate(self)?;
        let mut sets = Vec::new();
        for (kw, values) in request.iter() {
            let Values::Items(items) = values else {
                continue;
            };
            for &ty in self.types_of(kw) {
                let mut set = ValueSet::default();
                for item in items {
                    // A value that does not fit this type cannot match a key
                    // of this type; `validate` made sure it fits some type.
                    match item {
                        Item::Value(v) => set.values.extend(ty.canonical(v)),
                        Item::Range { from, to, by } => {
                            set.ranges.extend(ty.range(from, to, by.as_deref()))
                        }
                    }
                }
                sets.push((kw.to_string(), ty, set));
            }
        }
        Ok(Selector {
            schema: self,
            request: request.into_owned(),
            sets,
        })
    }
}

impl<'s> Selector<'s> {
    /// The request this selector was built from.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The schema.
    pub fn schema(&self) -> &'s Schema {
        self.schema
    }

    /// The allowed values of `keyword` in type `ty`, or `None` if the request
    /// does not constrain it.
    pub fn values(&self, keyword: &str, ty: KeywordType) -> Option<&ValueSet> {
        self.sets
            .iter()
            .find(|(k, t, _)| k == keyword && *t == ty)
            .map(|(_, _, s)| s)
    }

    fn predicate_admits(&self, p: &Predicate, value: &str) -> bool {
        match self.values(&p.keyword, p.keyword_type) {
            None => true,
            Some(set) => {
                set.contains(value)
                    || (value.is_empty()
                        && matches!(&p.matcher, Matcher::Optional(Some(d)) if set.contains(d)))
            }
        }
    }

    fn level_admits(&self, rule: &Rule, key: &Key) -> bool {
        rule.predicates
            .iter()
            .zip(key.values())
            .all(|(p, v)| self.predicate_admits(p, v))
    }

    /// Whether a stored dataset key passes the request.
    pub fn match_dataset(&self, key: &Key) -> Option<DatasetMatch> {
        let rules: Vec<u32> = (0..self.schema.rules.len() as u32)
            .filter(|&d| {
                let rule = &self.schema.rules[d as usize];
                level_fits(rule, key) && self.level_admits(rule, key)
            })
            .collect();
        (!rules.is_empty()).then_some(DatasetMatch { rules })
    }

    /// The dataset keys this request can match, enumerated instead of
    /// listed, when the request pins its datasets: `None` (list every
    /// dataset and [`Selector::match_dataset`] each) unless, for every
    /// dataset rule that some stored key could match, every keyword of the
    /// rule is given explicit values (a hidden keyword is always stored
    /// empty) and the keys they make are at most `limit`.
    ///
    /// Each key is built as archive builds it ([`Schema::split`]): the
    /// rule's keywords in order, each value canonicalised in the rule's
    /// type (`expver=1` is `0001`, `date=2023-12-01` is `20231201`), an
    /// absent optional keyword empty. A value that does not canonicalise
    /// in a rule's type is left out, as the selector leaves it out: no
    /// stored key of that type can hold it. Every key returned passes
    /// [`Selector::match_dataset`], and every stored dataset key that
    /// passes it is among them, so opening each (a missing one is no
    /// dataset) finds what listing would. In `cmp_fingerprint` order (the
    /// walk's), ties by key.
    pub fn pinned_datasets(&self, limit: usize) -> Option<Vec<DatasetKey>> {
        let mut keys: Vec<DatasetKey> = Vec::new();
        let mut seen = HashSet::new();
        // Keys built so far, over every rule (at most `limit`).
        let mut built = 0usize;
        for rule in &self.schema.rules {
            // Each keyword's candidate values; `open`: one takes values
            // the request does not enumerate (unless another keyword
            // rules the whole rule out).
            let mut dims: Vec<(&str, Vec<String>)> = Vec::new();
            let mut open = false;
            let mut impossible = false;
            for p in &rule.predicates {
                let mut values: Vec<String> =
                    match (&p.matcher, self.values(&p.keyword, p.keyword_type)) {
                        (Matcher::Hidden(_), _) => vec![String::new()],
                        (_, Some(set))
                            if set
                                .ranges
                                .iter()
                                .try_fold(0u64, |n, r| n.checked_add(r.len()))
                                .is_some_and(|n| n <= limit as u64) =>
                        {
                            let mut v: Vec<String> = set.values.iter().cloned().collect();
                            v.extend(set.ranges.iter().flat_map(|r| r.iter()));
                            if !p.is_required() {
                                v.push(String::new());
                            }
                            v
                        }
                        _ => {
                            open = true;
                            continue;
                        }
                    };
                // What `level_fits` and `level_admits` require of a stored value.
                values.retain(|v| {
                    (if v.is_empty() {
                        !p.is_required()
                    } else {
                        p.accepts(v)
                    }) && self.predicate_admits(p, v)
                });
                values.sort();
                values.dedup();
                if values.is_empty() {
                    impossible = true;
                    break;
                }
                dims.push((&p.keyword, values));
            }
            if impossible {
                continue;
            }
            if open {
                return None;
            }
            let n = dims
                .iter()
                .try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()))?;
            built = built.checked_add(n).filter(|&b| b <= limit)?;
            let mut pos = vec![0usize; dims.len()];
            for _ in 0..n {
                let key = Key::from_pairs(
                    dims.iter()
                        .zip(&pos)
                        .map(|((k, v), &i)| (*k, v[i].as_str())),
                )
                .ok()?;
                if self.match_dataset(&key).is_some() && seen.insert(key.clone()) {
                    keys.push(DatasetKey(key));
                }
                next_combination(&mut pos, |d| dims[d].1.len());
            }
        }
        keys.sort_by(|a, b| a.cmp_fingerprint(b).then_with(|| a.cmp(b)));
        Some(keys)
    }

    /// Whether a stored collocation key, in a dataset that matched, passes.
    pub fn match_collocation(&self, dataset: &DatasetMatch, key: &Key) -> Option<CollocationMatch> {
        let mut rules = Vec::new();
        for &d in &dataset.rules {
            for (c, rule) in self.schema.rules[d as usize].children.iter().enumerate() {
                if level_fits(rule, key) && self.level_admits(rule, key) {
                    rules.push((d, c as u32));
                }
            }
        }
        (!rules.is_empty()).then_some(CollocationMatch { rules })
    }

    /// A filter for the element keys of a collocation that matched.
    pub fn element_filter(&self, collocation: &CollocationMatch) -> ElementFilter<'_> {
        let mut rules = Vec::new();
        let mut pending = Vec::new();
        for &(d, c) in &collocation.rules {
            let dr = &self.schema.rules[d as usize];
            let cr = &dr.children[c as usize];
            for er in &cr.children {
                let mut checks = Vec::new();
                for (i, p) in er.predicates.iter().enumerate() {
                    if let Some(set) = self.values(&p.keyword, p.keyword_type) {
                        let default_admits_empty =
                            matches!(&p.matcher, Matcher::Optional(Some(dv)) if set.contains(dv));
                        checks.push((i, set, default_admits_empty));
                        if pending.iter().all(|(k, _, _)| *k != p.keyword) {
                            pending.push((p.keyword.as_str(), set, default_admits_empty));
                        }
                    }
                }
                let in_chain = |kw: &str| [dr, cr, er].iter().any(|r| r.predicate(kw).is_some());
                let impossible = self.request.keywords().any(|kw| !in_chain(kw));
                rules.push(ElementCheck {
                    keywords: er.keywords().collect(),
                    checks,
                    impossible,
                });
            }
        }
        ElementFilter { rules, pending }
    }
}

impl ElementFilter<'_> {
    /// Whether a stored element key passes the request.
    pub fn matches(&self, key: &Key) -> bool {
        let check = match self.rules.as_slice() {
            [only] => Some(only),
            many => many.iter().find(|r| {
                r.keywords.len() == key.len() && r.keywords.iter().copied().eq(key.keywords())
            }),
        };
        let Some(check) = check.filter(|c| !c.impossible) else {
            return false;
        };
        check.checks.iter().all(|&(i, set, default_admits_empty)| {
            let v = key.values().nth(i);
            v.is_some_and(|v| set.contains(v) || (v.is_empty() && default_admits_empty))
        })
    }

    /// Whether no element key can pass (the request names a keyword none of
    /// the candidate chains has): the collocation can be skipped whole.
    pub fn is_impossible(&self) -> bool {
        self.rules.iter().all(|r| r.impossible)
    }

    /// Request constraints on element-level keywords, for pruning a
    /// collocation by its axes before reading its entries.
    pub fn constraints(&self) -> impl Iterator<Item = (&str, &ValueSet)> + '_ {
        self.pending.iter().map(|&(k, s, _)| (k, s))
    }

    /// Whether a group of entries (a collocation, an index block) whose
    /// values per element keyword are `axes` can hold a matching element.
    /// A constrained keyword missing from `axes` refuses: no entry there
    /// has it, so none can match.
    pub fn admits_axes(&self, axes: &crate::axes::Axes) -> bool {
        self.pending.iter().all(|&(kw, set, empty_ok)| {
            axes.get(kw).is_some_and(|values| {
                values
                    .iter()
                    .any(|v| set.contains(v) || (empty_ok && v.is_empty()))
            })
        })
    }
}
