//! Archive-side matching: split a field's key into its three level keys.

use super::rule::{Matcher, Rule, RuleId};
use super::{Schema, SchemaError};
use crate::key::{CollocationKey, DatasetKey, ElementKey, Key, KeyText};

/// A field's key split by a schema into its three levels, in canonical form.
///
/// Every key split by the same chain of rules has the same keywords in the
/// same order; absent optional keywords have the empty value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SplitKey {
    /// Level 1.
    pub dataset: DatasetKey,
    /// Level 2.
    pub collocation: CollocationKey,
    /// Level 3.
    pub element: ElementKey,
    /// The chain of rules that matched.
    pub rule: RuleId,
}

impl SplitKey {
    /// The full key (the three levels joined), without empty values.
    pub fn full_key(&self) -> Key {
        Key::join_present([
            self.dataset.key(),
            self.collocation.key(),
            self.element.key(),
        ])
    }

    /// `fdb-list`'s form: `{dataset}{collocation}{element}`.
    pub fn braced(&self) -> String {
        format!(
            "{}{}{}",
            self.dataset.braced(),
            self.collocation.braced(),
            self.element.braced()
        )
    }
}

/// How far a rule got before it failed, and why.
struct Failure {
    matched: usize,
    predicate: usize,
    kind: FailureKind,
}

enum FailureKind {
    Missing,
    NotAllowed(String),
    Invalid(crate::types::TypeError),
}

/// Match one level's predicates against `key`, producing the level key.
fn match_level(rule: &Rule, key: &Key, out: &mut KeyText) -> Result<Key, Failure> {
    out.clear();
    for (i, p) in rule.predicates.iter().enumerate() {
        let value = match (key.get(&p.keyword), &p.matcher) {
            (_, Matcher::Hidden(_)) => String::new(),
            (None, Matcher::Optional(_)) => String::new(),
            (None, _) => {
                return Err(Failure {
                    matched: i,
                    predicate: i,
                    kind: FailureKind::Missing,
                })
            }
            (Some(v), _) => {
                let canonical = p.keyword_type.canonical(v).map_err(|e| Failure {
                    matched: i,
                    predicate: i,
                    kind: FailureKind::Invalid(e),
                })?;
                if !p.accepts(&canonical) {
                    return Err(Failure {
                        matched: i,
                        predicate: i,
                        kind: FailureKind::NotAllowed(canonical),
                    });
                }
                canonical
            }
        };
        out.push_unchecked(&p.keyword, &value);
    }
    Ok(out.finish())
}

impl Schema {
    /// Split a field's key by the first chain of rules that matches it
    /// (FDB5's archive semantics), canonicalising every value with its type.
    ///
    /// # Errors
    /// - [`SchemaError::UnknownKeyword`] for a keyword no rule uses;
    /// - [`SchemaError::UnusedKeyword`] when the first matching chain does not
    ///   use one of the key's keywords (there is no fall-through to later
    ///   rules, as in FDB5);
    /// - otherwise, when no chain matches, the failure of the chain that got
    ///   furthest: [`SchemaError::MissingKeyword`],
    ///   [`SchemaError::ValueNotAllowed`] or [`SchemaError::InvalidValue`],
    ///   naming the keyword and the rule;
    /// - [`SchemaError::UnknownParameter`] for a parameter name the schema's
    ///   table does not know (names are resolved first, see
    ///   [`Schema::resolve_key`]).
    pub fn split<'s>(&'s self, key: &Key) -> Result<SplitKey, SchemaError> {
        if self.rules.is_empty() {
            return Err(SchemaError::NoRules);
        }
        let key = self.resolve_key(key)?;
        let key: &Key = &key;
        if let Some(kw) = key.keywords().find(|kw| !self.knows(kw)) {
            return Err(SchemaError::UnknownKeyword {
                keyword: kw.to_string(),
            });
        }
        if let Some((kw, v)) = key.iter().find(|(_, v)| v.len() > super::MAX_VALUE_BYTES) {
            return Err(SchemaError::ValueTooLong {
                keyword: kw.to_string(),
                bytes: v.len(),
            });
        }
        // One text for every level's key, allocated once per split.
        let mut text = KeyText::default();
        let mut best: Option<(usize, RuleId, &Rule, Failure)> = None;
        let mut consider = |score: usize, id: RuleId, rule: &'s Rule, f: Failure| {
            if best.as_ref().is_none_or(|(s, ..)| score > *s) {
                best = Some((score, id, rule, f));
            }
        };
        for (di, d) in self.rules.iter().enumerate() {
            let id = RuleId {
                dataset: di as u32,
                collocation: 0,
                element: 0,
            };
            let dk = match match_level(d, key, &mut text) {
                Ok(k) => k,
                Err(f) => {
                    consider(f.matched, id, d, f);
                    continue;
                }
            };
            for (ci, c) in d.children.iter().enumerate() {
                let id = RuleId {
                    collocation: ci as u32,
                    ..id
                };
                let ck = match match_level(c, key, &mut text) {
                    Ok(k) => k,
                    Err(f) => {
                        consider(d.predicates.len() + f.matched, id, c, f);
                        continue;
                    }
                };
                for (ei, e) in c.children.iter().enumerate() {
                    let id = RuleId {
                        element: ei as u32,
                        ..id
                    };
                    let ek = match match_level(e, key, &mut text) {
                        Ok(k) => k,
                        Err(f) => {
                            consider(
                                d.predicates.len() + c.predicates.len() + f.matched,
                                id,
                                e,
                                f,
                            );
                            continue;
                        }
                    };
                    let used = |kw: &str| [d, c, e].iter().any(|r| r.predicate(kw).is_some());
                    if let Some(kw) = key.keywords().find(|kw| !used(kw)) {
                        return Err(SchemaError::UnusedKeyword {
                            keyword: kw.to_string(),
                            rule: self.describe(id),
                        });
                    }
                    return Ok(SplitKey {
                        dataset: DatasetKey(dk),
                        collocation: CollocationKey(ck),
                        element: ElementKey(ek),
                        rule: id,
                    });
                }
            }
        }
        // `best` is set: there is at least one rule, and every rule failed.
        let Some((_, id, rule, f)) = best else {
            return Err(SchemaError::NoRules);
        };
        let keyword = rule.predicates[f.predicate].keyword.clone();
        let rule = self.describe(id);
        Err(match f.kind {
            FailureKind::Missing => SchemaError::MissingKeyword { keyword, rule },
            FailureKind::NotAllowed(value) => SchemaError::ValueNotAllowed {
                keyword,
                value,
                rule,
            },
            FailureKind::Invalid(source) => SchemaError::InvalidValue {
                keyword,
                rule,
                source,
            },
        })
    }
}
