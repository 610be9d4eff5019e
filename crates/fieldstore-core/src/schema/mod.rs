//! FDB5's schema language: which keywords make up the dataset, collocation
//! and element keys of a field.
//!
//! A [`Schema`] is a list of dataset rules, each with collocation rules, each
//! with element rules. [`Schema::split`] finds the first chain of rules that
//! matches a field's key (FDB5's archive semantics) and returns the three
//! sub-keys in canonical form; [`Schema::expand`] enumerates the keys a
//! request names (retrieve); [`Schema::selector`] matches stored keys against
//! a partial request (list, axes).
//!
//! # Example
//! ```
//! use fieldstore_core::{Key, Schema};
//! let schema: Schema = "param: Param; step: Step; expver: Expver; time: Time;
//!     [ class, expver, stream, date, time [ type, levtype [ step, levelist?, param ]]]"
//!     .parse()?;
//! let key: Key = "class=od,expver=1,stream=oper,date=20231201,time=12,type=fc,levtype=sfc,step=6,param=167.128".parse()?;
//! let split = schema.split(&key)?;
//! assert_eq!(split.dataset.to_string(), "class=od,expver=0001,stream=oper,date=20231201,time=1200");
//! assert_eq!(split.element.to_string(), "step=6,levelist=,param=167");
//! # Ok::<(), fieldstore_core::Error>(())
//! ```

mod admit;
mod expand;
mod incomplete;
mod names;
mod order;
mod parser;
mod rule;
mod select;
mod split;
mod validate;
mod values;

pub use expand::Expansion;
pub use incomplete::Incomplete;
pub use order::{RequestOrder, RequestPosition};
pub use rule::{Level, Matcher, Predicate, Rule, RuleId};
pub use select::{DatasetMatch, Selector, ValueSet};
pub use split::SplitKey;
pub use values::REQUESTED_VALUES_LIMIT;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};
use crate::types::{KeywordType, TypeError};

/// ECMWF's operational schema (the one FDB5's tests use), built in so that a
/// store with no configuration accepts every field ECMWF produces.
pub const ECMWF_SCHEMA: &str = include_str!("ecmwf.schema");

/// Why a schema could not be parsed, or a key did not fit it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema text is malformed.
    #[error("{name}:{line}:{column}: {message}")]
    Parse {
        /// The schema's name (its path, or `schema`).
        name: String,
        /// 1-based line.
        line: u32,
        /// 1-based column; 0 when the error concerns a whole rule.
        column: u32,
        /// What is wrong.
        message: String,
    },
    /// The schema is well-formed but unusable.
    #[error("{name}: {message}")]
    Invalid {
        /// The schema's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A key carries a keyword that no rule of the schema knows.
    #[error("unknown keyword '{keyword}': no rule of the schema uses it")]
    UnknownKeyword {
        /// The keyword.
        keyword: String,
    },
    /// A key matched a rule but carries a keyword the rule does not use.
    #[error("keyword '{keyword}' is not used by the matching rule {rule}")]
    UnusedKeyword {
        /// The keyword.
        keyword: String,
        /// The rule, described.
        rule: String,
    },
    /// A key lacks a keyword that the closest rule requires.
    #[error("missing keyword '{keyword}' required by rule {rule}")]
    MissingKeyword {
        /// The keyword.
        keyword: String,
        /// The closest rule, described.
        rule: String,
    },
    /// A value is not among those a rule allows.
    #[error("value '{value}' of keyword '{keyword}' is not allowed by rule {rule}")]
    ValueNotAllowed {
        /// The keyword.
        keyword: String,
        /// The canonical value.
        value: String,
        /// The closest rule, described.
        rule: String,
    },
    /// A value is not valid for its keyword's type.
    #[error("keyword '{keyword}': {source} (rule {rule})")]
    InvalidValue {
        /// The keyword.
        keyword: String,
        /// The closest rule, described.
        rule: String,
        /// The type's complaint.
        source: TypeError,
    },
    /// A value is longer than the index encodings store
    /// ([`MAX_VALUE_BYTES`]).
    #[error("keyword '{keyword}': a value of {bytes} bytes is too long (at most {max})", max = MAX_VALUE_BYTES)]
    ValueTooLong {
        /// The keyword.
        keyword: String,
        /// The value's length in bytes.
        bytes: usize,
    },
    /// A key names one keyword twice, in two spellings (keywords are
    /// matched ignoring case).
    #[error("keyword '{keyword}' is given twice, as '{first}' and '{second}' (keywords are matched ignoring case)")]
    KeywordTwice {
        /// The schema's spelling.
        keyword: String,
        /// The first spelling given.
        first: String,
        /// The second spelling given.
        second: String,
    },
    /// The schema has no rules at all.
    #[error("the schema has no rules")]
    NoRules,
    /// A parameter name the schema's parameter table does not know.
    #[error("keyword '{keyword}': unknown parameter '{name}' (not a paramId, number.table or a name in the parameter table)")]
    UnknownParameter {
        /// The keyword.
        keyword: String,
        /// The name, as written.
        name: String,
    },
}

/// The longest value a key may carry, in bytes: index blocks store element
/// values with a 16-bit length (docs/format/), so `split` refuses longer
/// ones before anything is archived.
pub const MAX_VALUE_BYTES: usize = u16::MAX as usize;

impl From<SchemaError> for Error {
    fn from(e: SchemaError) -> Self {
        let kind = match e {
            SchemaError::Parse { .. } | SchemaError::Invalid { .. } | SchemaError::NoRules => {
                ErrorKind::InvalidConfig
            }
            _ => ErrorKind::InvalidInput,
        };
        Error::from_source(kind, e)
    }
}

/// A parsed schema. Cheap to share behind an `Arc`; immutable, but for the
/// chain the last split took, which the next split tries first
/// (`split.rs`: it never changes an answer).
#[derive(Debug, Clone)]
pub struct Schema {
    name: String,
    text: String,
    rules: Vec<Rule>,
    /// Every type each keyword has somewhere in the schema.
    keyword_types: BTreeMap<String, Vec<KeywordType>>,
    /// Resolves parameter names in requests and keys (`names.rs`).
    param_names: Option<std::sync::Arc<dyn crate::params::ParamNames>>,
    /// The schema's top-level type declarations (`date: Date;`), which
    /// FDB5 sends as its schema's type registry (`fieldstore serve`).
    declared: BTreeMap<String, KeywordType>,
    /// Each keyword's spelling in the schema, by its lower-case form:
    /// keys and requests name keywords in any case and get the schema's
    /// spelling (`names.rs`). Two keywords differing only in case are
    /// refused at parse time, so the map is unambiguous. A `BTreeMap`: a
    /// hash table's interior pointers make valgrind call a static schema's
    /// strings "possibly lost" (the C API's tests run under valgrind).
    spellings: BTreeMap<String, String>,
    /// The chain the last split took, and what decided the rules tried
    /// before it (`split.rs`): a writer's next key most often takes it too.
    last_chain: split::LastChain,
}

/// The keywords of a schema by their lower-case form (see
/// `Schema::spellings`).
///
/// # Errors
/// [`SchemaError::Invalid`] for two keywords that differ only in case: FDB5
/// would keep them apart (its keywords are case-sensitive), fieldstore takes
/// keywords in any case, so it could not tell them apart.
fn spellings(
    name: &str,
    keyword_types: &BTreeMap<String, Vec<KeywordType>>,
) -> Result<BTreeMap<String, String>, SchemaError> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for keyword in keyword_types.keys() {
        let lower = keyword.to_ascii_lowercase();
        if let Some(other) = out.insert(lower, keyword.clone()) {
            return Err(SchemaError::Invalid {
                name: name.to_string(),
                message: format!(
                    "keywords '{other}' and '{keyword}' differ only in case: keys and requests \
                     name keywords in any case, so they would be one"
                ),
            });
        }
    }
    Ok(out)
}

impl Schema {
    /// The schema's spelling of `keyword`, given in any case (`None` if no
    /// rule uses it).
    pub fn spelling(&self, keyword: &str) -> Option<&str> {
        if let Some((k, _)) = self.keyword_types.get_key_value(keyword) {
            return Some(k);
        }
        self.spellings
            .get(&keyword.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// Parse `text`; `name` (a path) is used in error messages.
    ///
    /// # Errors
    /// [`SchemaError::Parse`] with line and column, or
    /// [`SchemaError::Invalid`] for a keyword used twice in one rule.
    pub fn parse(name: &str, text: &str) -> Result<Schema, SchemaError> {
        let parsed = parser::parse(name, text)?;
        let empty = HashMap::new();
        let rules: Vec<Rule> = parsed
            .rules
            .into_iter()
            .map(|r| parser::resolve(r, Level::Dataset, &parsed.types, &empty))
            .collect();
        let mut keyword_types: BTreeMap<String, Vec<KeywordType>> = BTreeMap::new();
        for d in &rules {
            for c in &d.children {
                for e in &c.children {
                    for rule in [d, c, e] {
                        // One keyword may appear at several levels with
                        // different types (`hdate: Year` … `hdate: Date`),
                        // but only once within a level.
                        let mut seen = Vec::new();
                        for p in &rule.predicates {
                            if seen.contains(&p.keyword.as_str()) {
                                return Err(SchemaError::Invalid {
                                    name: name.to_string(),
                                    message: format!(
                                        "keyword '{}' appears twice in the rule at line {}",
                                        p.keyword, rule.line
                                    ),
                                });
                            }
                            seen.push(p.keyword.as_str());
                            let types = keyword_types.entry(p.keyword.clone()).or_default();
                            if !types.contains(&p.keyword_type) {
                                types.push(p.keyword_type);
                            }
                        }
                    }
                }
            }
        }
        let spellings = spellings(name, &keyword_types)?;
        Ok(Schema {
            name: name.to_string(),
            text: text.to_string(),
            rules,
            keyword_types,
            declared: parsed.types.into_iter().collect(),
            param_names: None,
            spellings,
            last_chain: split::LastChain::default(),
        })
    }

    /// ECMWF's operational schema ([`ECMWF_SCHEMA`]).
    pub fn ecmwf() -> Schema {
        // The built-in text is tested to parse.
        Schema::parse("<built-in ECMWF schema>", ECMWF_SCHEMA)
            .unwrap_or_else(|e| panic!("built-in schema: {e}"))
    }

    /// The name given at parse time.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema's text as parsed (stored with each dataset so that old
    /// datasets keep their layout when the schema changes).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The dataset rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether any rule uses `keyword`.
    pub fn knows(&self, keyword: &str) -> bool {
        self.keyword_types.contains_key(keyword)
    }

    /// The top-level type declarations (`keyword: Type;`), by keyword.
    pub fn declared_types(&self) -> &BTreeMap<String, KeywordType> {
        &self.declared
    }

    /// All keywords any rule uses, sorted.
    pub fn keywords(&self) -> impl Iterator<Item = &str> + '_ {
        self.keyword_types.keys().map(String::as_str)
    }

    /// The types `keyword` has anywhere in the schema.
    pub fn types_of(&self, keyword: &str) -> &[KeywordType] {
        self.keyword_types.get(keyword).map_or(&[], Vec::as_slice)
    }

    /// The rules of a chain.
    ///
    /// # Panics
    /// If `id` does not come from this schema.
    pub fn chain(&self, id: RuleId) -> [&Rule; 3] {
        let d = &self.rules[id.dataset as usize];
        let c = &d.children[id.collocation as usize];
        let e = &c.children[id.element as usize];
        [d, c, e]
    }

    /// Every chain of rules, in schema order.
    pub fn chains(&self) -> impl Iterator<Item = RuleId> + '_ {
        self.rules.iter().enumerate().flat_map(|(di, d)| {
            d.children.iter().enumerate().flat_map(move |(ci, c)| {
                (0..c.children.len()).map(move |ei| RuleId {
                    dataset: di as u32,
                    collocation: ci as u32,
                    element: ei as u32,
                })
            })
        })
    }

    /// A chain in schema syntax with its line: `[ class, … [ type … [ step … ] ] ] (line 12)`.
    pub fn describe(&self, id: RuleId) -> String {
        let [d, c, e] = self.chain(id);
        let preds = |r: &Rule| {
            r.predicates
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (line, d, c, e) = (e.line, preds(d), preds(c), preds(e));
        format!("[ {d} [ {c} [ {e} ]]] (line {line})")
    }
}

impl FromStr for Schema {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Schema::parse("schema", s).map_err(Error::from)
    }
}

/// Prints the types and rules, one rule per line, in schema syntax.
impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.rules {
            writeln!(f, "{r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
