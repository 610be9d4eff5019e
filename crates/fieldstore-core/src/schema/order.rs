//! Request order without enumeration: where a stored key comes in the
//! expansion of a request.
//!
//! [`Schema::expand`](super::Schema::expand) yields a request's keys in
//! request order by enumerating the Cartesian product of its candidate
//! values, which costs what the request could name (`step=0/to/100000000`
//! is a hundred million keys). A [`RequestOrder`] answers the converse
//! question for one key at a time — is this stored key one the expansion
//! yields, and where? — arithmetically, so that a caller can walk what the
//! store holds instead, keep the keys the request names and sort them into
//! the order the expansion would have produced them.

use super::expand::{accepted, candidates_of, Candidates};
use super::rule::RuleId;
use super::{Schema, SplitKey};
use crate::request::{Request, Values};

/// Where a key comes in a request's expansion: keys compare in the order
/// [`Schema::expand`](super::Schema::expand) yields them (chain, then
/// each keyword of the chain in turn, the last varying fastest; values in
/// the order the request gives them, a range in its own order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestPosition(Vec<u64>);

/// Positions of keys in one request's expansion ([`Expansion::order`](super::Expansion::order)).
///
/// # Invariant
/// For every split key `k` of this schema, `position(&k)` is `Some` exactly
/// when the expansion yields `k`, and positions sort keys in the order the
/// expansion yields them (the empty value of an optional keyword compares
/// where the expansion puts it: after the default when the request leaves
/// the keyword out, after every value when it names the default).
#[derive(Debug, Clone)]
pub struct RequestOrder<'s> {
    schema: &'s Schema,
    request: Request,
    /// The chains that can yield keys, in schema order, with their lazy
    /// candidates.
    chains: Vec<(RuleId, Vec<Candidates>)>,
}

impl<'s> RequestOrder<'s> {
    /// The order of `request`'s expansion over `chains`; with `listing`,
    /// of a listing's request ([`Schema::listing_order`](super::Schema::listing_order)):
    /// keywords left out or `all` match any value at one position.
    pub(super) fn new(
        schema: &'s Schema,
        request: &Request,
        chains: &[RuleId],
        listing: bool,
    ) -> Self {
        RequestOrder {
            schema,
            request: request.clone(),
            chains: chains
                .iter()
                .filter_map(|&id| candidates_of(schema, request, id, listing).map(|c| (id, c)))
                .collect(),
        }
    }

    /// Where `key` comes in the expansion, or `None` if the expansion does
    /// not yield it. `key` must have been split by this schema (its `rule`
    /// is trusted, as a stored key's is: archive split it).
    pub fn position(&self, key: &SplitKey) -> Option<RequestPosition> {
        let chain = self.chains.iter().position(|(id, _)| *id == key.rule)?;
        let (id, dims) = &self.chains[chain];
        let mut at = Vec::with_capacity(1 + 2 * dims.len());
        at.push(chain as u64);
        for dim in dims {
            // The finest level that holds the keyword has its own value.
            let value = [key.element.key(), key.collocation.key(), key.dataset.key()]
                .into_iter()
                .find_map(|k| k.get(&dim.keyword))?;
            if dim.hidden {
                // Stored empty whatever was asked: every candidate names it,
                // and the expansion yields it at the first.
                at.extend([0, 0]);
                continue;
            }
            if !accepted(self.schema, *id, &dim.keyword, value) {
                return None;
            }
            let (part, within) = dim.position(value)?;
            at.extend([part, within]);
        }
        Some(RequestPosition(at))
    }

    /// The request cut down to the keywords of each chain that can yield
    /// keys (a chain ignores request keywords it does not use), without
    /// keywords the chain hides, each distinct request once: requests for
    /// [`Schema::selector`](super::Schema::selector) whose matches include
    /// every stored key the expansion yields (a selector lets an omitted
    /// keyword match anything, so it also matches keys that
    /// [`RequestOrder::position`] then refuses).
    pub fn chain_requests(&self) -> Vec<Request> {
        let mut out: Vec<Request> = Vec::new();
        for (_, dims) in &self.chains {
            let mut r = Request::new();
            for dim in dims.iter().filter(|d| !d.hidden) {
                if let Some(values @ Values::Items(_)) = self.request.get(&dim.keyword) {
                    r.set_spelled(&dim.keyword, values.clone());
                }
            }
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }
}
