//! Archive-side matching: split a field's key into its three level keys.

use std::sync::Mutex;

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
        Key::join_present([&self.dataset.0, &self.collocation.0, &self.element.0])
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
    /// The predicates of the rule that matched: the index of the one that
    /// failed.
    matched: usize,
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
struct Fields<'k, 's> {
    pairs: Vec<(&'k str, &'k str)>,
    /// Per pair, its canonical forms so far, by type.
    canonical: Vec<Vec<(KeywordType, Result<String, TypeError>)>>,
    /// Which pairs the rules looked at so far (bit `i`: pair `i`), and
    /// which keywords they looked for and did not find: what decided every
    /// rule tried.
    looked: u64,
    missing: Vec<&'s str>,
    /// `looked` and the length of `missing` when the last element rule
    /// was tried (see [`LastChain`]).
    before_element: (u64, usize),
}

impl<'k, 's> Fields<'k, 's> {
    fn new(key: &'k Key) -> Fields<'k, 's> {
        let pairs: Vec<_> = key.iter().collect();
        let canonical = vec![Vec::new(); pairs.len()];
        Fields {
            pairs,
            canonical,
            looked: 0,
            missing: Vec::new(),
            before_element: (0, 0),
        }
    }

    /// The canonical form of `keyword`'s value as `ty`, if the key has it.
    fn canonical(
        &mut self,
        keyword: &'s str,
        ty: KeywordType,
    ) -> Option<&Result<String, TypeError>> {
        let Some(i) = self.pairs.iter().position(|(kw, _)| same(kw, keyword)) else {
            self.missing.push(keyword);
            return None;
        };
        self.looked |= 1u64.checked_shl(i as u32).unwrap_or(0);
        let forms = &mut self.canonical[i];
        let at = forms.iter().position(|(t, _)| *t == ty).unwrap_or_else(|| {
            forms.push((ty, ty.canonical(self.pairs[i].1)));
            forms.len() - 1
        });
        Some(&forms[at].1)
    }

    /// An element rule is tried next.
    fn mark_element(&mut self) {
        self.before_element = (self.looked, self.missing.len());
    }
}

/// The chain of rules the last split took, and what decided every rule
/// tried before its element rule: the keywords they looked at, with their
/// values, and those they looked for and did not find. A key that agrees
/// on all of those fails every one of those rules as that key did, so its
/// first chain that matches is that chain, if it matches: tried first, it
/// gives the same split as trying every rule in order, for the cost of one
/// chain. A writer's keys differ from one field to the next in element
/// keywords (`step`, `param`, `levelist`), which rules before the element
/// rule rarely look at: one split of an ensemble key by ECMWF's schema
/// tries about 30 dataset rules otherwise.
///
/// Shared by the threads that split with one schema; one that finds it
/// held splits the whole way instead of waiting.
#[derive(Debug, Default)]
pub(super) struct LastChain {
    chain: Mutex<Option<Chain>>,
    /// Splits it answered (tests: that it is taken at all).
    #[cfg(test)]
    pub(super) taken: std::sync::atomic::AtomicU64,
}

/// See [`LastChain`].
#[derive(Debug)]
struct Chain {
    id: RuleId,
    /// Keywords and the values they had (`None`: absent).
    decided_by: Vec<(String, Option<String>)>,
}

impl Clone for LastChain {
    /// A schema's copy learns its own.
    fn clone(&self) -> LastChain {
        LastChain::default()
    }
}

impl Chain {
    /// The chain `id`, decided by what `fields` had looked at before its
    /// element rule; `None` for a key of more than 64 pairs.
    fn of(id: RuleId, fields: &Fields<'_, '_>) -> Option<Chain> {
        if fields.pairs.len() > 64 {
            return None;
        }
        let (looked, missing) = fields.before_element;
        let present = fields
            .pairs
            .iter()
            .enumerate()
            .filter(|(i, _)| looked & (1 << i) != 0)
            .map(|(_, (kw, v))| (kw.to_string(), Some(v.to_string())));
        let mut decided_by: Vec<(String, Option<String>)> = present.collect();
        // Rules look for the same absent keywords again and again: each
        // once here, so that the check every split makes stays short.
        for kw in &fields.missing[..missing] {
            if !decided_by.iter().any(|(k, _)| same(k, kw)) {
                decided_by.push((kw.to_string(), None));
            }
        }
        Some(Chain { id, decided_by })
    }

    /// Whether `fields` agree with what decided this chain.
    fn decides(&self, fields: &Fields<'_, '_>) -> bool {
        self.decided_by.iter().all(|(kw, value)| {
            let found = fields.pairs.iter().find(|(k, _)| same(k, kw));
            found.map(|(_, v)| *v) == value.as_deref()
        })
    }
}

/// Match one level's predicates against `key`, producing the level key.
fn match_level<'s>(
    rule: &'s Rule,
    key: &mut Fields<'_, 's>,
    out: &mut KeyText,
) -> Result<Key, Failure> {
    out.clear();
    for (i, p) in rule.predicates.iter().enumerate() {
        if let Matcher::Hidden(_) = p.matcher {
            out.push_unchecked(&p.keyword, "");
            continue;
        }
        let fail = |kind| Err(Failure { matched: i, kind });
        let value = match (key.canonical(&p.keyword, p.keyword_type), &p.matcher) {
            (None, Matcher::Optional(_)) => "",
            (Some(Ok(canonical)), _) if p.accepts(canonical) => canonical.as_str(),
            (None, _) => return fail(FailureKind::Missing),
            (Some(Err(_)), _) => return fail(FailureKind::Invalid),
            (Some(Ok(_)), _) => return fail(FailureKind::NotAllowed),
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
        let unknown = |fields: &Fields<'_, '_>| {
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
        let split = self.last_chain_split(&mut fields).unwrap_or_else(|| {
            let split = self.match_chain(&mut fields);
            if let (Ok(s), Ok(mut last)) = (&split, self.last_chain.chain.try_lock()) {
                *last = Chain::of(s.rule, &fields);
            }
            split
        });
        split.map_err(|e| unknown(&fields).unwrap_or(e))
    }

    /// The split by the chain the last split took, if `fields` agree with
    /// what decided it and it matches ([`LastChain`]); `None` to try every
    /// rule.
    fn last_chain_split<'s>(
        &'s self,
        fields: &mut Fields<'_, 's>,
    ) -> Option<Result<SplitKey, SchemaError>> {
        let id = {
            let last = self.last_chain.chain.try_lock().ok()?;
            let chain = last.as_ref()?;
            chain.decides(fields).then_some(chain.id)?
        };
        let [d, c, e] = self.chain(id);
        let mut text = KeyText::default();
        let dk = match_level(d, fields, &mut text).ok()?;
        let ck = match_level(c, fields, &mut text).ok()?;
        let ek = match_level(e, fields, &mut text).ok()?;
        #[cfg(test)]
        self.last_chain
            .taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(self.chain_split(fields, id, [d, c, e], [dk, ck, ek]))
    }

    /// The split of `fields` by the chain `id`, which matched giving the
    /// level keys `keys`, unless the chain leaves one of its keywords
    /// unused.
    fn chain_split(
        &self,
        fields: &Fields<'_, '_>,
        id: RuleId,
        rules: [&Rule; 3],
        keys: [Key; 3],
    ) -> Result<SplitKey, SchemaError> {
        let used = |kw: &str| {
            rules
                .iter()
                .any(|r| r.predicates.iter().any(|p| same(&p.keyword, kw)))
        };
        if let Some(&(kw, _)) = fields.pairs.iter().find(|(kw, _)| !used(kw)) {
            return Err(SchemaError::UnusedKeyword {
                keyword: kw.to_string(),
                rule: self.describe(id),
            });
        }
        let [dk, ck, ek] = keys;
        Ok(SplitKey {
            dataset: DatasetKey(dk),
            collocation: CollocationKey(ck),
            element: ElementKey(ek),
            rule: id,
        })
    }

    /// The first chain of rules that matches `fields` (see [`Schema::split`]).
    fn match_chain<'s>(&'s self, fields: &mut Fields<'_, 's>) -> Result<SplitKey, SchemaError> {
        // One text for every level's key, allocated once per split.
        let mut text = KeyText::default();
        let mut best: Option<(usize, RuleId, &Rule, Failure)> = None;
        // A level's key, or `None` after keeping the failure if it got
        // furthest (`before`: the predicates of the levels above).
        let mut tried = |r: Result<Key, Failure>, before: usize, id: RuleId, rule: &'s Rule| {
            r.map_err(|f| {
                let score = before + f.matched;
                if best.as_ref().is_none_or(|(s, ..)| score > *s) {
                    best = Some((score, id, rule, f));
                }
            })
            .ok()
        };
        for (di, d) in self.rules.iter().enumerate() {
            let id = RuleId {
                dataset: di as u32,
                collocation: 0,
                element: 0,
            };
            let Some(dk) = tried(match_level(d, fields, &mut text), 0, id, d) else {
                continue;
            };
            for (ci, c) in d.children.iter().enumerate() {
                let id = RuleId {
                    collocation: ci as u32,
                    ..id
                };
                let above = d.predicates.len();
                let Some(ck) = tried(match_level(c, fields, &mut text), above, id, c) else {
                    continue;
                };
                let above = above + c.predicates.len();
                for (ei, e) in c.children.iter().enumerate() {
                    let id = RuleId {
                        element: ei as u32,
                        ..id
                    };
                    fields.mark_element();
                    let Some(ek) = tried(match_level(e, fields, &mut text), above, id, e) else {
                        continue;
                    };
                    return self.chain_split(fields, id, [d, c, e], [dk, ck, ek]);
                }
            }
        }
        // `best` is set: there is at least one rule, and every rule failed.
        let Some((_, id, rule, f)) = best else {
            return Err(SchemaError::NoRules);
        };
        let p = &rule.predicates[f.matched];
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
