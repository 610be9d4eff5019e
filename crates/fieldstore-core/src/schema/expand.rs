//! Retrieve-side expansion: enumerate the keys a request names.

use super::rule::{Matcher, RuleId};
use super::{Schema, SplitKey};
use crate::key::Key;
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
}

impl Odometer {
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
        Some(key)
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
            let mut seen = std::collections::HashSet::new();
            values.retain(|v| seen.insert(v.clone()));
            if values.is_empty() {
                return None;
            }
            dims.push((p.keyword.clone(), values));
        }
        let pos = vec![0; dims.len()];
        Some(Odometer {
            rule: id,
            dims,
            pos,
            done: false,
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
                while let Some(key) = odo.next_key() {
                    if let Ok(split) = self.schema.split(&key) {
                        if split.rule == odo.rule {
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
