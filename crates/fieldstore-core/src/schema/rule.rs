//! Rules and predicates: the parsed form of a schema.

use std::fmt;

use crate::request::Item;
use crate::types::KeywordType;

/// The three levels of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Level 1: the dataset key.
    Dataset = 1,
    /// Level 2: the collocation key.
    Collocation = 2,
    /// Level 3: the element key.
    Element = 3,
}

impl Level {
    /// The level below, if any.
    pub fn child(self) -> Option<Level> {
        Level::from_depth(self as u8 + 1)
    }

    /// `1`, `2` or `3` as a level name (`dataset`, …).
    pub fn from_depth(depth: u8) -> Option<Level> {
        match depth {
            1 => Some(Level::Dataset),
            2 => Some(Level::Collocation),
            3 => Some(Level::Element),
            _ => None,
        }
    }

    /// The level's name.
    pub fn name(self) -> &'static str {
        match self {
            Level::Dataset => "dataset",
            Level::Collocation => "collocation",
            Level::Element => "element",
        }
    }
}

/// How a predicate constrains its keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    /// `key`: required, any value.
    Always,
    /// `key=a/b`: required, one of the values (canonical forms).
    OneOf(Vec<String>),
    /// `key=!a/b`: required, none of the values (canonical forms).
    NoneOf(Vec<String>),
    /// `key?` or `key?default`: may be absent. An absent keyword is stored
    /// with the empty value (as FDB5 does); a request that leaves the keyword
    /// out finds both the default and the empty value.
    Optional(Option<String>),
    /// `key-` or `key-default`: accepted and discarded; always stored empty.
    Hidden(Option<String>),
}

/// One `keyword[:Type][modifier]` item of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predicate {
    /// The keyword.
    pub keyword: String,
    /// The constraint.
    pub matcher: Matcher,
    /// The type in force for this keyword at this rule: a type written on
    /// the predicate, else one written in an enclosing rule, else the
    /// schema's global declaration, else `Default`. Hidden keywords are
    /// always `Ignore`.
    pub keyword_type: KeywordType,
    /// A type written on this predicate (`icmodel:First3`), if any.
    pub declared_type: Option<KeywordType>,
}

/// Whether two keywords, or two values, are the same: compared byte by
/// byte in line, without calling `memcmp` (they are a few bytes long, and a
/// split compares hundreds).
pub(super) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

impl Predicate {
    /// Whether `canonical` (already canonicalised with this predicate's
    /// type) satisfies the constraint. Absent keywords are handled by the
    /// caller.
    pub fn accepts(&self, canonical: &str) -> bool {
        match &self.matcher {
            Matcher::Always | Matcher::Optional(_) | Matcher::Hidden(_) => true,
            Matcher::OneOf(values) => values.iter().any(|v| same(v, canonical)),
            Matcher::NoneOf(values) => !values.iter().any(|v| same(v, canonical)),
        }
    }

    /// Whether the keyword must be present.
    pub fn is_required(&self) -> bool {
        matches!(
            self.matcher,
            Matcher::Always | Matcher::OneOf(_) | Matcher::NoneOf(_)
        )
    }

    /// Whether some of a request's `items` may pass the constraint: a value
    /// accepted once canonicalised in this predicate's type, or a range
    /// (not enumerated: assumed to hold one). Only `key=a/b` and
    /// `key=!a/b` constrain values.
    pub(super) fn admits_any(&self, items: &[Item]) -> bool {
        match self.matcher {
            Matcher::OneOf(_) | Matcher::NoneOf(_) => items.iter().any(|item| match item {
                Item::Value(v) => self
                    .keyword_type
                    .canonical(v)
                    .is_ok_and(|c| self.accepts(&c)),
                Item::Range { .. } => true,
            }),
            _ => true,
        }
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.keyword)?;
        if let Some(t) = self.declared_type {
            write!(f, ":{t}")?;
        }
        match &self.matcher {
            Matcher::Always => Ok(()),
            Matcher::OneOf(v) => write!(f, "={}", v.join("/")),
            Matcher::NoneOf(v) => write!(f, "=!{}", v.join("/")),
            Matcher::Optional(d) => write!(f, "?{}", d.as_deref().unwrap_or("")),
            Matcher::Hidden(d) => write!(f, "-{}", d.as_deref().unwrap_or("")),
        }
    }
}

/// A rule at one level, with its children at the level below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule's level.
    pub level: Level,
    /// Predicates in schema order (this is the order of the key's pairs).
    pub predicates: Vec<Predicate>,
    /// Rules one level below (empty for element rules).
    pub children: Vec<Rule>,
    /// 1-based line of the rule's `[` in the schema text.
    pub line: u32,
}

impl Rule {
    /// The predicate for `keyword` at this level.
    pub fn predicate(&self, keyword: &str) -> Option<&Predicate> {
        self.predicates.iter().find(|p| p.keyword == keyword)
    }

    /// Keywords of this level, in order.
    pub fn keywords(&self) -> impl Iterator<Item = &str> + '_ {
        self.predicates.iter().map(|p| p.keyword.as_str())
    }
}

/// Writes the rule in schema syntax, children included, on one line.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, p) in self.predicates.iter().enumerate() {
            write!(f, "{}{p}", if i == 0 { " " } else { ", " })?;
        }
        for c in &self.children {
            write!(f, " {c}")?;
        }
        f.write_str(" ]")
    }
}

/// Identifies one dataset → collocation → element chain of a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId {
    /// Index of the dataset rule.
    pub dataset: u32,
    /// Index of the collocation rule within the dataset rule.
    pub collocation: u32,
    /// Index of the element rule within the collocation rule.
    pub element: u32,
}
