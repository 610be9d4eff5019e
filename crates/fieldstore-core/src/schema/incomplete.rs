//! What a request that names no complete key leaves out: the keywords the
//! nearest rule requires and the request does not give, so that an error
//! can say what to add instead of "give a value to every keyword of a rule".

use std::fmt;

use super::{RuleId, Schema};
use crate::request::{Request, Values};

/// The chain of rules a request comes nearest to naming complete keys of,
/// and the required keywords of it the request leaves out (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incomplete {
    /// The nearest chain.
    pub rule: RuleId,
    /// The chain in schema syntax with its line ([`Schema::describe`]).
    pub described: String,
    /// Required keywords of the chain the request leaves out, in the
    /// chain's order (dataset level first).
    pub missing: Vec<String>,
}

/// "it leaves out the keyword levelist, which the nearest rule requires:
/// [ … ] (line 372)".
impl fmt::Display for Incomplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.missing.len() == 1 { "" } else { "s" };
        let (missing, rule) = (self.missing.join(", "), &self.described);
        write!(
            f,
            "it leaves out the keyword{s} {missing}, which the nearest rule requires: {rule}"
        )
    }
}

impl Schema {
    /// The chain `request` comes nearest to naming complete keys of, with
    /// the required keywords it leaves out; `None` if some chain lacks
    /// nothing the request leaves out (the request is complete, or
    /// impossible for another reason) or no chain accepts the values the
    /// request gives.
    ///
    /// A chain is a candidate when every value-constrained keyword the
    /// request gives has a value (or a range) the chain accepts. The
    /// nearest candidate lacks the fewest required keywords; among equals,
    /// the one using most of the request's keywords, then the first in
    /// schema order. Nothing is expanded: cost is linear in the schema's
    /// size times the request's values.
    pub fn incomplete(&self, request: &Request) -> Option<Incomplete> {
        let request = self.resolve_request(request).ok()?;
        let mut best: Option<(usize, usize, RuleId, Vec<String>)> = None;
        for id in self.chains() {
            let Some(missing) = self.left_out(&request, id) else {
                continue;
            };
            if missing.is_empty() {
                return None;
            }
            let unused = request
                .keywords()
                .filter(|kw| !self.chain(id).iter().any(|r| r.predicate(kw).is_some()))
                .count();
            if best
                .as_ref()
                .is_none_or(|(m, u, _, _)| (missing.len(), unused) < (*m, *u))
            {
                best = Some((missing.len(), unused, id, missing));
            }
        }
        best.map(|(_, _, rule, missing)| Incomplete {
            rule,
            described: self.describe(rule),
            missing,
        })
    }

    /// The required keywords of chain `id` that `request` leaves out, or
    /// `None` if the request gives a keyword values none of which the
    /// chain accepts.
    fn left_out(&self, request: &Request, id: RuleId) -> Option<Vec<String>> {
        let mut missing: Vec<String> = Vec::new();
        for p in self.chain(id).iter().flat_map(|r| r.predicates.iter()) {
            match request.get(&p.keyword) {
                None if p.is_required() && !missing.contains(&p.keyword) => {
                    missing.push(p.keyword.clone());
                }
                Some(Values::Items(items)) if !p.admits_any(items) => return None,
                _ => {}
            }
        }
        Some(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> Request {
        text.parse().expect("request")
    }

    #[test]
    fn names_the_keyword_the_nearest_rule_requires() {
        let schema = Schema::ecmwf();
        let got = schema
            .incomplete(&request(
                "class=od,expver=0001,stream=oper,date=20240101,time=0000,domain=g,\
                 type=an,levtype=pl,step=0,param=130",
            ))
            .expect("incomplete");
        assert_eq!(got.missing, ["levelist"]);
        assert!(
            got.described.starts_with(
                "[ class, expver, stream=oper, date, time, domain?g [ type=an, levtype=pl/"
            ),
            "{}",
            got.described
        );
        assert!(
            got.to_string().starts_with(
                "it leaves out the keyword levelist, which the nearest rule requires: [ class"
            ),
            "{got}"
        );
    }

    #[test]
    fn several_keywords_in_chain_order() {
        let schema: Schema = "[ class [ type, levtype [ step, param ]]]"
            .parse()
            .expect("schema");
        let got = schema
            .incomplete(&request("class=od,param=167"))
            .expect("incomplete");
        assert_eq!(got.missing, ["type", "levtype", "step"]);
        assert!(got
            .to_string()
            .starts_with("it leaves out the keywords type, levtype, step,"));
    }

    #[test]
    fn complete_or_impossible_requests_are_not_incomplete() {
        let schema: Schema = "[ class=od [ type [ step, param ]]]"
            .parse()
            .expect("schema");
        assert_eq!(
            schema.incomplete(&request("class=od,type=fc,step=0,param=167")),
            None
        );
        assert_eq!(
            schema.incomplete(&request("class=rd,type=fc,param=167")),
            None,
            "no rule takes class=rd"
        );
    }

    #[test]
    fn the_rule_lacking_fewest_wins() {
        let schema: Schema =
            "[ class [ type [ step, number, param ]]] [ class [ type [ step, param ]]]"
                .parse()
                .expect("schema");
        let got = schema
            .incomplete(&request("class=od,param=167"))
            .expect("incomplete");
        assert_eq!(got.missing, ["type", "step"]);
        assert_eq!(got.rule.dataset, 1);
    }
}
