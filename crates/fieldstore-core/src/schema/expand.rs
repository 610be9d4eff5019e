//! Retrieve-side expansion: enumerate the keys a request names.

use super::order::RequestOrder;
use super::rule::{Matcher, RuleId};
use super::{Schema, SplitKey};
use crate::key::{CollocationKey, DatasetKey, ElementKey, Key};
use crate::request::{Item, Request, RequestError, Values};
use crate::types::ValueRange;

/// The split keys a request names, lazily, in request order: chains in
/// schema order; within a chain, keywords in the chain's order, the last
/// varying fastest; values in the order the request gives them.
///
/// Each key is yielded only by the chain that [`Schema::split`] would pick
/// for it, so a key is never yielded twice and always matches where archive
/// would have put it.
pub struct Expansion<'s> {
    schema: &'s Schema,
    request: Request,
    chains: Vec<RuleId>,
    next_chain: usize,
    current: Option<Odometer>,
}

/// The Cartesian product of one chain's candidate values.
struct Odometer {
    rule: RuleId,
    dims: Vec<(String, Vec<String>)>,
    pos: Vec<usize>,
    done: bool,
    /// An earlier chain might also match some of these keys, so each must
    /// go through [`Schema::split`]; otherwise keys are built directly.
    check_rivals: bool,
}

impl Odometer {
    /// The current combination as a key (absent optional keywords left
    /// out), then advance.
    fn next_key(&mut self) -> Option<Key> {
        if self.done {
            return None;
        }
        let mut key = Key::new();
        for ((kw, values), &i) in self.dims.iter().zip(&self.pos) {
            if !values[i].is_empty() {
                key.push_unchecked(kw.clone(), values[i].clone());
            }
        }
        self.advance();
        Some(key)
    }

    /// The current combination as a split key, built without re-matching
    /// the schema (sound when no earlier chain can claim it), then advance.
    fn next_split(&mut self, schema: &Schema) -> Option<Option<SplitKey>> {
        if self.done {
            return None;
        }
        let [d, c, e] = schema.chain(self.rule);
        let mut levels = [Key::new(), Key::new(), Key::new()];
        let mut ok = true;
        for (level, rule) in levels.iter_mut().zip([d, c, e]) {
            for p in &rule.predicates {
                let raw = self
                    .dims
                    .iter()
                    .zip(&self.pos)
                    .find(|((k, _), _)| *k == p.keyword)
                    .map_or("", |((_, v), &i)| v[i].as_str());
                let value = match (&p.matcher, raw) {
                    (Matcher::Hidden(_), _) | (_, "") => String::new(),
                    _ => match p.keyword_type.canonical(raw) {
                        Ok(v) if p.accepts(&v) => v,
                        _ => {
                            ok = false;
                            String::new()
                        }
                    },
                };
                level.push_unchecked(p.keyword.clone(), value);
            }
        }
        self.advance();
        if !ok {
            return Some(None);
        }
        let [dataset, collocation, element] = levels;
        Some(Some(SplitKey {
            dataset: DatasetKey(dataset),
            collocation: CollocationKey(collocation),
            element: ElementKey(element),
            rule: self.rule,
        }))
    }

    fn advance(&mut self) {
        let dims = &self.dims;
        if !next_combination(&mut self.pos, |d| dims[d].1.len()) {
            self.done = true;
        }
    }
}

/// Advance `pos` to the next combination of values, the last dimension
/// fastest (`len(d)`: how many values dimension `d` has); `false` once
/// every combination was visited (`pos` is back at all zeros).
pub(super) fn next_combination(pos: &mut [usize], len: impl Fn(usize) -> usize) -> bool {
    for d in (0..pos.len()).rev() {
        pos[d] += 1;
        if pos[d] < len(d) {
            return true;
        }
        pos[d] = 0;
    }
    false
}

impl Schema {
    /// Enumerate the keys `request` names, for retrieve.
    ///
    /// Chains whose required keywords the request leaves out are skipped
    /// (they name no complete key); optional keywords left out take their
    /// default and the empty value; request keywords a chain does not use
    /// are ignored for that chain (FDB5's retrieve semantics).
    ///
    /// # Errors
    /// [`RequestError::NotEnumerable`] if a keyword is `all` (use list);
    /// as [`Schema::selector`] for unknown keywords, invalid values and
    /// unknown parameter names.
    pub fn expand(&self, request: &Request) -> Result<Expansion<'_>, RequestError> {
        let request = self.resolve_request(request)?;
        request.validate(self)?;
        if let Some((kw, _)) = request.iter().find(|(_, v)| matches!(v, Values::All)) {
            return Err(RequestError::NotEnumerable(format!(
                "keyword '{kw}' is 'all': retrieve needs explicit values; list the request instead"
            )));
        }
        Ok(Expansion {
            schema: self,
            request: request.into_owned(),
            chains: self.chains().collect(),
            next_chain: 0,
            current: None,
        })
    }

    /// Where listed keys come in the order `request` gives its values, for
    /// sorting what a listing of it found (listings come in key order;
    /// `extract` answers in request order, as `retrieve` does). Keywords the
    /// request leaves out or gives `all` do not order: keys that differ
    /// only there keep the listing's order (sort stably).
    ///
    /// # Errors
    /// As [`Schema::selector`] for unknown keywords, invalid values and
    /// unknown parameter names.
    pub fn listing_order(&self, request: &Request) -> Result<RequestOrder<'_>, RequestError> {
        let request = self.resolve_request(request)?;
        request.validate(self)?;
        let chains: Vec<RuleId> = self.chains().collect();
        Ok(RequestOrder::new(self, &request, &chains, true))
    }
}

impl Expansion<'_> {
    /// One chain's candidate values, materialised, or `None` if the request
    /// leaves out a required keyword of the chain or a keyword has no
    /// candidate. Only called for chains whose [`Expansion::size_hint_upper`]
    /// share the caller accepted: a range is expanded here.
    fn odometer(&self, id: RuleId) -> Option<Odometer> {
        let lazy = candidates(self.schema, &self.request, id)?;
        let mut dims: Vec<(String, Vec<String>)> = Vec::with_capacity(lazy.len());
        for dim in lazy {
            let mut seen = std::collections::HashSet::new();
            let values: Vec<String> = dim
                .values()
                .filter(|v| accepted(self.schema, id, &dim.keyword, v))
                .filter(|v| seen.insert(v.clone()))
                .collect();
            if values.is_empty() {
                return None;
            }
            dims.push((dim.keyword, values));
        }
        let earlier = self.chains.iter().position(|c| *c == id).unwrap_or(0);
        let check_rivals = self.chains[..earlier]
            .iter()
            .any(|&j| self.may_claim(j, &dims));
        Some(Odometer {
            rule: id,
            pos: vec![0; dims.len()],
            dims,
            done: false,
            check_rivals,
        })
    }

    /// Whether chain `j` could match a key made of `dims`' keywords and
    /// values (a conservative answer: `true` when unsure).
    fn may_claim(&self, j: RuleId, dims: &[(String, Vec<String>)]) -> bool {
        self.schema
            .chain(j)
            .iter()
            .flat_map(|r| r.predicates.iter())
            .all(|q| {
                let Some((_, values)) = dims.iter().find(|(k, _)| *k == q.keyword) else {
                    return !q.is_required();
                };
                match q.matcher {
                    Matcher::OneOf(_) | Matcher::NoneOf(_) => values.iter().any(|v| {
                        !v.is_empty() && q.keyword_type.canonical(v).is_ok_and(|c| q.accepts(&c))
                    }),
                    _ => true,
                }
            })
    }

    /// An upper bound on the number of keys still to come from the current
    /// chain plus all later chains (before the split check filters them),
    /// saturating. Computed without expanding any range: a request for
    /// `step=0/to/100000000` costs as much as one for `step=0`.
    pub fn size_hint_upper(&self) -> u64 {
        let current = self.current.as_ref().map_or(0, |o| {
            o.dims
                .iter()
                .fold(1u64, |n, (_, v)| n.saturating_mul(v.len() as u64))
        });
        self.chains[self.next_chain..]
            .iter()
            .filter_map(|&id| candidates(self.schema, &self.request, id))
            .map(|dims| {
                dims.iter()
                    .fold(1u64, |n, d| n.saturating_mul(d.upper_len()))
            })
            .fold(current, u64::saturating_add)
    }

    /// Whether some chain can name complete keys: it has every keyword it
    /// requires, and each keyword has a candidate the chain accepts (a range
    /// is assumed to have one). Ranges are not expanded. `false` means the
    /// request is partial (or impossible): list it instead.
    pub fn names_keys(&self) -> bool {
        self.chains
            .iter()
            .any(|&id| candidates(self.schema, &self.request, id).is_some())
    }

    /// Where stored keys come in this expansion, without enumerating it
    /// ([`RequestOrder`]).
    pub fn order(&self) -> RequestOrder<'_> {
        RequestOrder::new(self.schema, &self.request, &self.chains, false)
    }
}

/// One keyword's candidate values in one chain, kept lazy: request values
/// canonicalised in the type of the finest level that uses the keyword, and
/// ranges unexpanded. Values the chain's predicates do not accept are left
/// out, but a range's values are only checked ([`accepted`]) as they are
/// expanded or looked up; duplicates are not removed (the first part
/// holding a value gives its place).
#[derive(Debug, Clone)]
pub(super) struct Candidates {
    pub(super) keyword: String,
    pub(super) parts: Vec<Part>,
    /// The finest level hides the keyword: its stored value is always empty.
    pub(super) hidden: bool,
    /// For [`Candidates::position`] over many parts: each value's first
    /// part, and the parts that are not single values (made at the first
    /// lookup).
    pub(super) index: std::sync::OnceLock<PartIndex>,
}

/// [`Candidates::index`].
#[derive(Debug, Clone)]
pub(super) struct PartIndex {
    first: std::collections::HashMap<String, usize>,
    others: Vec<usize>,
}

/// Parts at or below which [`Candidates::position`] searches them in
/// order (a step list of a thousand values looked up for each of a
/// thousand listed fields was a million comparisons).
const SCANNED: usize = 16;

/// One item of [`Candidates`], in request order.
#[derive(Debug, Clone)]
pub(super) enum Part {
    /// One canonical value; the empty value stands for an absent optional
    /// keyword.
    Value(String),
    /// A range, never expanded here.
    Range(ValueRange),
    /// Any value: the keyword a request for a listing leaves out or gives
    /// `all` ([`Schema::listing_order`]); never enumerated.
    Any,
}

impl Candidates {
    /// Number of candidates, duplicates and refused values included.
    fn upper_len(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Value(_) => 1,
                Part::Range(r) => r.len(),
                Part::Any => u64::MAX,
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The candidates in order (ranges expanded lazily).
    fn values(&self) -> impl Iterator<Item = String> + '_ {
        self.parts
            .iter()
            .flat_map(|p| -> Box<dyn Iterator<Item = String> + '_> {
                match p {
                    Part::Value(v) => Box::new(std::iter::once(v.clone())),
                    Part::Range(r) => Box::new(r.iter()),
                    Part::Any => Box::new(std::iter::empty()),
                }
            })
    }

    /// Where `canonical` comes among the candidates: (part, place within
    /// the part), for the first part that holds it.
    pub(super) fn position(&self, canonical: &str) -> Option<(u64, u64)> {
        let at = |i: usize| match &self.parts[i] {
            Part::Value(v) => (v == canonical).then_some((i as u64, 0)),
            Part::Range(r) => r.position(canonical).map(|at| (i as u64, at)),
            Part::Any => Some((i as u64, 0)),
        };
        if self.parts.len() <= SCANNED {
            return (0..self.parts.len()).find_map(at);
        }
        let index = self.index.get_or_init(|| {
            let mut first = std::collections::HashMap::new();
            let mut others = Vec::new();
            for (i, p) in self.parts.iter().enumerate() {
                match p {
                    Part::Value(v) => {
                        first.entry(v.clone()).or_insert(i);
                    }
                    _ => others.push(i),
                }
            }
            PartIndex { first, others }
        });
        // The first part holding it: a range or `Any` before its first
        // value part, else that value part.
        let value = index.first.get(canonical).copied();
        index
            .others
            .iter()
            .take_while(|&&i| value.is_none_or(|v| i < v))
            .find_map(|&i| at(i))
            .or_else(|| value.map(|v| (v as u64, 0)))
    }
}

/// The candidate values per keyword of one chain, in the chain's keyword
/// order, or `None` if the request leaves out a required keyword of the
/// chain (or gives it `all`) or a keyword has no candidate the chain accepts.
fn candidates(schema: &Schema, request: &Request, id: RuleId) -> Option<Vec<Candidates>> {
    candidates_of(schema, request, id, false)
}

/// [`candidates`]; `listing`: a keyword the request leaves out or gives
/// `all` takes any value ([`Part::Any`]) instead of ruling the chain out
/// or taking its default, as a listing's selector does.
pub(super) fn candidates_of(
    schema: &Schema,
    request: &Request,
    id: RuleId,
    listing: bool,
) -> Option<Vec<Candidates>> {
    let chain = schema.chain(id);
    let mut dims: Vec<Candidates> = Vec::new();
    // The finest level that uses a keyword decides its type.
    let preds: Vec<_> = chain.iter().flat_map(|r| r.predicates.iter()).collect();
    for (i, p) in preds.iter().enumerate() {
        if dims.iter().any(|d| d.keyword == p.keyword) {
            continue;
        }
        let finest = preds[i..]
            .iter()
            .rev()
            .find(|q| q.keyword == p.keyword)
            .copied()
            .unwrap_or(p);
        let required = preds
            .iter()
            .any(|q| q.keyword == p.keyword && q.is_required());
        let mut parts: Vec<Part> = Vec::new();
        match request.get(&p.keyword) {
            Some(Values::Items(items)) => {
                let ty = finest.keyword_type;
                parts.extend(items.iter().filter_map(|item| match item {
                    Item::Value(v) => ty.canonical(v).ok().map(Part::Value),
                    Item::Range { from, to, by } => {
                        ty.range(from, to, by.as_deref()).ok().map(Part::Range)
                    }
                }));
                if let Matcher::Optional(Some(d)) = &finest.matcher {
                    let named = parts.iter().any(|part| match part {
                        Part::Value(v) => v == d,
                        Part::Range(r) => r.contains(d),
                        Part::Any => false,
                    });
                    if named {
                        parts.push(Part::Value(String::new()));
                    }
                }
            }
            Some(Values::All) | None if listing => parts.push(Part::Any),
            Some(Values::All) => return None,
            None if required => return None,
            None => {
                if let Matcher::Optional(Some(d)) = &finest.matcher {
                    parts.push(Part::Value(d.clone()));
                }
                parts.push(Part::Value(String::new()));
            }
        }
        // Values the chain refuses are dropped now (ranges only when
        // expanded), so that bounds are tight for chains the request rules out.
        parts.retain(|part| match part {
            Part::Value(v) => accepted(schema, id, &p.keyword, v),
            Part::Range(_) | Part::Any => true,
        });
        if parts.is_empty() {
            return None;
        }
        dims.push(Candidates {
            keyword: p.keyword.clone(),
            parts,
            hidden: matches!(finest.matcher, Matcher::Hidden(_)),
            index: std::sync::OnceLock::new(),
        });
    }
    Some(dims)
}

/// Whether every occurrence of `keyword` in chain `id` accepts the
/// candidate `value` (the empty value, an absent optional keyword, always
/// passes).
pub(super) fn accepted(schema: &Schema, id: RuleId, keyword: &str, value: &str) -> bool {
    value.is_empty()
        || schema
            .chain(id)
            .iter()
            .flat_map(|r| r.predicates.iter())
            .filter(|q| q.keyword == keyword)
            .all(|q| {
                matches!(q.matcher, Matcher::Hidden(_))
                    || q.keyword_type.canonical(value).is_ok_and(|c| q.accepts(&c))
            })
}

impl Iterator for Expansion<'_> {
    type Item = SplitKey;

    fn next(&mut self) -> Option<SplitKey> {
        loop {
            if let Some(odo) = &mut self.current {
                let (rule, schema) = (odo.rule, self.schema);
                let found = if odo.check_rivals {
                    std::iter::from_fn(|| odo.next_key())
                        .find_map(|key| schema.split(&key).ok().filter(|s| s.rule == rule))
                } else {
                    std::iter::from_fn(|| odo.next_split(schema))
                        .flatten()
                        .next()
                };
                if found.is_some() {
                    return found;
                }
                self.current = None;
            }
            let id = *self.chains.get(self.next_chain)?;
            self.next_chain += 1;
            self.current = self.odometer(id);
        }
    }
}

#[cfg(test)]
mod position_tests {
    use super::*;
    use crate::types::KeywordType;

    /// Over many parts, the index gives the place the scan in order gives:
    /// the first part holding a value, a range or `Any` before a repeated
    /// value included.
    #[test]
    fn indexed_positions_are_the_scans() {
        let mut parts: Vec<Part> = (0..30).map(|i| Part::Value((i * 3).to_string())).collect();
        parts.insert(
            5,
            Part::Range(KeywordType::Integer.range("40", "50", None).unwrap()),
        );
        parts.push(Part::Value("3".into()));
        parts.push(Part::Value("1000".into()));
        let scanned = |c: &Candidates, v: &str| {
            c.parts.iter().enumerate().find_map(|(i, p)| match p {
                Part::Value(x) => (x == v).then_some((i as u64, 0)),
                Part::Range(r) => r.position(v).map(|at| (i as u64, at)),
                Part::Any => Some((i as u64, 0)),
            })
        };
        let mut c = Candidates {
            keyword: "step".into(),
            parts,
            hidden: false,
            index: std::sync::OnceLock::new(),
        };
        for round in 0..2 {
            for v in (0..120)
                .map(|i| i.to_string())
                .chain(["1000".to_string(), "x".to_string()])
            {
                assert_eq!(c.position(&v), scanned(&c, &v), "{v}");
            }
            c.parts.insert(20, Part::Any);
            c.index = std::sync::OnceLock::new();
            let _ = round;
        }
    }
}
