//! Archive-side matching: split a field's key into its three level keys.

use super::rule::{same, Matcher, Rule, RuleId};
use super::{Schema, SchemaError};
use crate::key::{CollocationKey, DatasetKey, ElementKey, Key, KeyText};
use crate::types::{KeywordType, TypeError};

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

/// How far a rule got before it failed, and why. Only the failure of the
/// rule that got furthest becomes an error: the value it names is looked up
/// again then, rather than copied at every rule that fails.
struct Failure {
    matched: usize,
    predicate: usize,
    kind: FailureKind,
}

enum FailureKind {
    Missing,
    NotAllowed,
    Invalid,
}

/// A key's pairs as one split reads them: parsed once, and each value's
/// canonical form made once per type it is read as. A split tries the
/// schema's rules in order (ECMWF's schema: about 30 dataset rules before
/// an ensemble's), each asking for the same few keywords: looking each up
/// in the key's text and canonicalising it again per rule was half of a
/// split's time (an ensemble key: 4.9 µs before, 2.5 after;
/// `benches/split.rs`).
struct Fields<'k> {
    pairs: Vec<(&'k str, &'k str)>,
    /// Per pair, its canonical forms so far, by type.
    canonical: Vec<Vec<(KeywordType, Result<String, TypeError>)>>,
}

impl<'k> Fields<'k> {
    fn new(key: &'k Key) -> Fields<'k> {
        let pairs: Vec<_> = key.iter().collect();
        let canonical = vec![Vec::new(); pairs.len()];
        Fields { pairs, canonical }
    }

    /// The canonical form of `keyword`'s value as `ty`, if the key has it.
    fn canonical(&mut self, keyword: &str, ty: KeywordType) -> Option<&Result<String, TypeError>> {
        let i = self.pairs.iter().position(|(kw, _)| same(kw, keyword))?;
        let forms = &mut self.canonical[i];
        let at = match forms.iter().position(|(t, _)| *t == ty) {
            Some(at) => at,
            None => {
                forms.push((ty, ty.canonical(self.pairs[i].1)));
                forms.len() - 1
            }
        };
        Some(&forms[at].1)
    }
}

/// Match one level's predicates against `key`, producing the level key.
fn match_level(rule: &Rule, key: &mut Fields<'_>, out: &mut KeyText) -> Result<Key, Failure> {
    out.clear();
    for (i, p) in rule.predicates.iter().enumerate() {
        if let Matcher::Hidden(_) = p.matcher {
            out.push_unchecked(&p.keyword, "");
            continue;
        }
        let value = match (key.canonical(&p.keyword, p.keyword_type), &p.matcher) {
            (None, Matcher::Optional(_)) => "",
            (None, _) => {
                return Err(Failure {
                    matched: i,
                    predicate: i,
                    kind: FailureKind::Missing,
                })
            }
            (Some(Err(_)), _) => {
                return Err(Failure {
                    matched: i,
                    predicate: i,
                    kind: FailureKind::Invalid,
                })
            }
            (Some(Ok(canonical)), _) => {
                if !p.accepts(canonical) {
                    return Err(Failure {
                        matched: i,
                        predicate: i,
                        kind: FailureKind::NotAllowed,
                    });
                }
                canonical.as_str()
            }
        };
        out.push_unchecked(&p.keyword, value);
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
    pub fn split(&self, key: &Key) -> Result<SplitKey, SchemaError> {
        if self.rules.is_empty() {
            return Err(SchemaError::NoRules);
        }
        let key = self.resolve_key(key)?;
        let mut fields = Fields::new(&key);
        // A keyword no rule uses is the first error; looked for only when
        // the split fails (a chain that matched uses every keyword, so
        // each is known): a schema lookup per keyword was a tenth of a
        // split.
        let unknown = |fields: &Fields<'_>| {
            let (kw, _) = fields.pairs.iter().find(|(kw, _)| !self.knows(kw))?;
            Some(SchemaError::UnknownKeyword {
                keyword: kw.to_string(),
            })
        };
        if let Some(&(kw, v)) = fields
            .pairs
            .iter()
            .find(|(_, v)| v.len() > super::MAX_VALUE_BYTES)
        {
            return Err(unknown(&fields).unwrap_or(SchemaError::ValueTooLong {
                keyword: kw.to_string(),
                bytes: v.len(),
            }));
        }
        self.match_chain(&mut fields)
            .map_err(|e| unknown(&fields).unwrap_or(e))
    }

    /// The first chain of rules that matches `fields` (see [`Schema::split`]).
    fn match_chain<'s>(&'s self, fields: &mut Fields<'_>) -> Result<SplitKey, SchemaError> {
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
            let dk = match match_level(d, fields, &mut text) {
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
                let ck = match match_level(c, fields, &mut text) {
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
                    let ek = match match_level(e, fields, &mut text) {
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
                    let used = |kw: &str| {
                        [d, c, e]
                            .iter()
                            .any(|r| r.predicates.iter().any(|p| same(&p.keyword, kw)))
                    };
                    if let Some(&(kw, _)) = fields.pairs.iter().find(|(kw, _)| !used(kw)) {
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
        let p = &rule.predicates[f.predicate];
        let keyword = p.keyword.clone();
        let rule = self.describe(id);
        let canonical = fields.canonical(&p.keyword, p.keyword_type).cloned();
        Err(match (f.kind, canonical) {
            (FailureKind::NotAllowed, Some(Ok(value))) => SchemaError::ValueNotAllowed {
                keyword,
                value,
                rule,
            },
            (FailureKind::Invalid, Some(Err(source))) => SchemaError::InvalidValue {
                keyword,
                rule,
                source,
            },
            // Missing (a value that failed was memoised, so it is found).
            _ => SchemaError::MissingKeyword { keyword, rule },
        })
    }
}
