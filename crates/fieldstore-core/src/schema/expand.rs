//! Retrieve-side expansion: enumerate the keys a request names.

use super::rule::{Matcher, RuleId};
use super::{Schema, SplitKey};
use crate::key::{CollocationKey, DatasetKey, ElementKey, Key};
use crate::request::{Item, Request, RequestError, Values};

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
        // Advance, last dimension fastest.
        let mut d = self.dims.len();
        loop {
            if d == 0 {
                self.done = true;
                break;
            }
            d -= 1;
            self.pos[d] += 1;
            if self.pos[d] < self.dims[d].1.len() {
                break;
            }
            self.pos[d] = 0;
        }
    }
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
    /// as [`Schema::selector`] for unknown keywords and invalid values.
    pub fn expand(&self, request: &Request) -> Result<Expansion<'_>, RequestError> {
        request.validate(self)?;
        if let Some((kw, _)) = request.iter().find(|(_, v)| matches!(v, Values::All)) {
            return Err(RequestError::NotEnumerable(format!(
                "keyword '{kw}' is 'all': retrieve needs explicit values; list the request instead"
            )));
        }
        Ok(Expansion {
            schema: self,
            request: request.clone(),
            chains: self.chains().collect(),
            next_chain: 0,
            current: None,
        })
    }
}

impl Expansion<'_> {
    /// The candidate values per keyword of one chain, or `None` if the
    /// request leaves out a required keyword of the chain.
    fn odometer(&self, id: RuleId) -> Option<Odometer> {
        let chain = self.schema.chain(id);
        let mut dims: Vec<(String, Vec<String>)> = Vec::new();
        // The finest level that uses a keyword decides its type.
        let preds: Vec<_> = chain.iter().flat_map(|r| r.predicates.iter()).collect();
        for (i, p) in preds.iter().enumerate() {
            if dims.iter().any(|(k, _)| *k == p.keyword) {
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
            let mut values: Vec<String> = Vec::new();
            match self.request.get(&p.keyword) {
                Some(Values::Items(items)) => {
                    for item in items {
                        match item {
                            Item::Value(v) => {
                                if let Ok(c) = finest.keyword_type.canonical(v) {
                                    values.push(c);
                                }
                            }
                            Item::Range { from, to, by } => {
                                if let Ok(r) = finest.keyword_type.range(from, to, by.as_deref()) {
                                    values.extend(r.iter());
                                }
                            }
                        }
                    }
                    if let Matcher::Optional(Some(d)) = &finest.matcher {
                        if values.contains(d) {
                            values.push(String::new());
                        }
                    }
                }
                Some(Values::All) => return None,
                None if required => return None,
                None => {
                    if let Matcher::Optional(Some(d)) = &finest.matcher {
                        values.push(d.clone());
                    }
                    values.push(String::new());
                }
            }
            // Keep values every occurrence of the keyword in the chain accepts.
            let occurrences: Vec<_> = preds.iter().filter(|q| q.keyword == p.keyword).collect();
            values.retain(|v| {
                v.is_empty()
                    || occurrences.iter().all(|q| {
                        matches!(q.matcher, Matcher::Hidden(_))
                            || q.keyword_type.canonical(v).is_ok_and(|c| q.accepts(&c))
                    })
            });
            let mut seen = std::collections::HashSet::new();
            values.retain(|v| seen.insert(v.clone()));
            if values.is_empty() {
                return None;
            }
            dims.push((p.keyword.clone(), values));
        }
        let pos = vec![0; dims.len()];
        let earlier = self.chains.iter().position(|c| *c == id).unwrap_or(0);
        let check_rivals = self.chains[..earlier]
            .iter()
            .any(|&j| self.may_claim(j, &dims));
        Some(Odometer {
            rule: id,
            dims,
            pos,
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
    /// chain plus all later chains (before the split check filters them).
    pub fn size_hint_upper(&self) -> u64 {
        self.chains[self.next_chain..]
            .iter()
            .filter_map(|&id| self.odometer(id))
            .map(|o| o.dims.iter().map(|(_, v)| v.len() as u64).product::<u64>())
            .sum()
    }
}

impl Iterator for Expansion<'_> {
    type Item = SplitKey;

    fn next(&mut self) -> Option<SplitKey> {
        loop {
            if let Some(odo) = &mut self.current {
                if odo.check_rivals {
                    while let Some(key) = odo.next_key() {
                        if let Ok(split) = self.schema.split(&key) {
                            if split.rule == odo.rule {
                                return Some(split);
                            }
                        }
                    }
                } else {
                    while let Some(split) = odo.next_split(self.schema) {
                        if let Some(split) = split {
                            return Some(split);
                        }
                    }
                }
                self.current = None;
            }
            let id = *self.chains.get(self.next_chain)?;
            self.next_chain += 1;
            self.current = self.odometer(id);
        }
    }
}
