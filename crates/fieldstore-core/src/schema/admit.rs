//! Checking a request's values in the types of the rules it can match.
//!
//! One keyword may have several types in a schema (ECMWF's: `date` is a
//! `Date`, but a `ClimateMonthly` in climatology rules and `Default` text in
//! `class=cs` rules). Checking a value against every type of its keyword
//! would let `class=od,date=20230230` through because some other rule's
//! `Default` accepts any text, although `archive` refuses that date for
//! `class=od`. So a request's values are checked against the types their
//! keywords have in the rule chains the request can still match: exactly
//! what archive would accept for a key the request names.

use super::rule::Rule;
use super::Schema;
use crate::request::{Item, Request, RequestError, Values};
use crate::types::KeywordType;

impl Schema {
    /// Check every value of `request` against the types its keyword has in
    /// the chains the request can match (see [`chain_admits`]).
    ///
    /// When no chain can match (keywords of different rules combined), the
    /// request names nothing storable and each value has already been
    /// checked against every type of its keyword by
    /// [`Request::validate`]; listing it finds nothing, which is not an
    /// error.
    ///
    /// # Errors
    /// [`RequestError::InvalidValue`] naming the keyword, the value and the
    /// first type (in schema order) that refused it.
    pub(crate) fn check_values(&self, request: &Request) -> Result<(), RequestError> {
        let chains: Vec<[&Rule; 3]> = self
            .chains()
            .map(|id| self.chain(id))
            .filter(|chain| chain_admits(chain, request))
            .collect();
        if chains.is_empty() {
            return Ok(());
        }
        for (keyword, values) in request.iter() {
            let Values::Items(items) = values else {
                continue;
            };
            let mut types: Vec<KeywordType> = Vec::new();
            for p in chains
                .iter()
                .flat_map(|chain| chain.iter().filter_map(|r| r.predicate(keyword)))
            {
                if !types.contains(&p.keyword_type) {
                    types.push(p.keyword_type);
                }
            }
            check_items(keyword, items, &types)?;
        }
        Ok(())
    }
}

/// Check each of `items` (values of `keyword`) against `types`: an item no
/// type takes is an error naming the first type (in `types` order) that
/// refused it. With no types, nothing is refused.
pub(super) fn check_items(
    keyword: &str,
    items: &[Item],
    types: &[KeywordType],
) -> Result<(), RequestError> {
    for item in items {
        let mut first_error = None;
        let fits = types.iter().any(|ty| {
            let checked = match item {
                Item::Value(v) => ty.canonical(v).map(drop),
                Item::Range { from, to, by } => ty.range(from, to, by.as_deref()).map(drop),
            };
            checked
                .map_err(|e| first_error.get_or_insert(e).clone())
                .is_ok()
        });
        if let (false, Some(source)) = (fits, first_error) {
            return Err(RequestError::InvalidValue {
                keyword: keyword.to_string(),
                source,
            });
        }
    }
    Ok(())
}

/// Whether a field of `chain` could match `request`: the chain uses every
/// keyword the request gives values for (a field lacking a requested keyword
/// is never selected), and where the chain fixes a keyword's values
/// (`class=od`, `stream=!enfo`) some value of the request passes. Ranges are
/// assumed to pass (they are not enumerated here).
fn chain_admits(chain: &[&Rule; 3], request: &Request) -> bool {
    request.iter().all(|(keyword, values)| {
        let Values::Items(items) = values else {
            return true;
        };
        let mut predicates = chain.iter().filter_map(|r| r.predicate(keyword)).peekable();
        predicates.peek().is_some() && predicates.all(|p| p.admits_any(items))
    })
}
