//! Requests: the MARS request subset people type.
//!
//! ```text
//! request := [verb ','] item (',' item)*
//! item    := keyword '=' values
//! values  := 'all' | value ('/' value)*      -- `a/to/b` and `a/to/b/by/c` are ranges
//! ```
//! For example `class=od,expver=0001,date=20231201/20231202,step=0/to/12/by/6`.
//! Keywords left out match anything (a partial request).
//!
//! A [`Request`] keeps the values as written; they are canonicalised with the
//! schema's types when matched ([`crate::schema::Selector`]) or expanded
//! ([`crate::schema::Schema::expand`]), because one keyword may have different types
//! in different rules. Ranges are never materialised.

mod parse;

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};

/// Why a request could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A syntax error at a character position (0-based) of the text.
    #[error("malformed request at character {position}: {message}")]
    Syntax {
        /// Where.
        position: usize,
        /// What.
        message: String,
    },
    /// A keyword given twice.
    #[error("keyword '{keyword}' appears twice in the request")]
    DuplicateKeyword {
        /// The keyword.
        keyword: String,
    },
    /// A keyword the schema does not know.
    #[error("unknown keyword '{keyword}' in request: the schema has no rule using it")]
    UnknownKeyword {
        /// The keyword.
        keyword: String,
    },
    /// A value not valid for its keyword's type.
    #[error("keyword '{keyword}' in request: {source}")]
    InvalidValue {
        /// The keyword.
        keyword: String,
        /// The type's complaint.
        source: crate::types::TypeError,
    },
    /// A parameter name the schema's parameter table does not know.
    #[error("keyword '{keyword}' in request: unknown parameter '{name}' (not a paramId, number.table or a name in the parameter table)")]
    UnknownParameter {
        /// The keyword.
        keyword: String,
        /// The name, as written.
        name: String,
    },
    /// Retrieve needs values for every keyword; `all` or a missing required
    /// keyword can only be listed.
    #[error("{0}")]
    NotEnumerable(String),
}

impl From<RequestError> for Error {
    fn from(e: RequestError) -> Self {
        Error::from_source(ErrorKind::InvalidInput, e)
    }
}

/// One item of a keyword's value list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Item {
    /// A single value, as written.
    Value(String),
    /// `from/to/to[/by/by]`, as written.
    Range {
        /// First value.
        from: String,
        /// Last value (inclusive).
        to: String,
        /// Increment, if given.
        by: Option<String>,
    },
}

/// The values requested for one keyword.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Values {
    /// `all`: any value (like leaving the keyword out, but explicit).
    All,
    /// A list of values and ranges.
    Items(Vec<Item>),
}

/// A parsed request: keywords in the order given, with their values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Request {
    entries: Vec<(String, Values)>,
}

impl Request {
    /// The empty request (matches everything).
    pub fn new() -> Self {
        Request::default()
    }

    /// Build from `(keyword, value strings)` pairs, as from a dict. Each
    /// string may itself hold `/`-separated values and ranges. One empty
    /// string as a keyword's only value names the keyword's absence: pyfdb's
    /// `combined_key()` gives an absent optional keyword so, and pyfdb's
    /// users (earthkit-data's lazy FDB source) retrieve with that key as it
    /// is. (Request text stays strict: `class=` is a syntax error.)
    ///
    /// # Errors
    /// As for parsing.
    pub fn from_pairs<K, I, V>(
        pairs: impl IntoIterator<Item = (K, I)>,
    ) -> Result<Request, RequestError>
    where
        K: AsRef<str>,
        I: IntoIterator<Item = V>,
        V: AsRef<str>,
    {
        let mut req = Request::new();
        for (k, values) in pairs {
            let joined: Vec<String> = values.into_iter().map(|v| v.as_ref().to_string()).collect();
            let parsed = if joined.len() == 1 && joined[0].is_empty() {
                Values::Items(vec![Item::Value(String::new())])
            } else {
                parse::parse_values(k.as_ref(), &joined.join("/"), 0)?
            };
            req.insert(k.as_ref(), parsed)?;
        }
        Ok(req)
    }

    /// Add a keyword. The keyword is lower-cased.
    ///
    /// # Errors
    /// [`RequestError::DuplicateKeyword`] if it is already there.
    pub fn insert(&mut self, keyword: &str, values: Values) -> Result<(), RequestError> {
        let keyword = keyword.to_ascii_lowercase();
        if self.get(&keyword).is_some() {
            return Err(RequestError::DuplicateKeyword { keyword });
        }
        self.entries.push((keyword, values));
        Ok(())
    }

    /// Set a keyword's values, replacing any given in any case, and spell
    /// it as `keyword` (a schema's spelling: `Schema::resolve_request`).
    pub(crate) fn set_spelled(&mut self, keyword: &str, values: Values) {
        match self.entry(keyword) {
            Some(i) => self.entries[i] = (keyword.to_string(), values),
            None => self.entries.push((keyword.to_string(), values)),
        }
    }

    /// Set a keyword's values, replacing any.
    pub fn set(&mut self, keyword: &str, values: Values) {
        self.set_spelled(&keyword.to_ascii_lowercase(), values);
    }

    /// Where `keyword` is, in any case: keywords are case-insensitive, as
    /// in MARS, whether inserted (lower-cased) or set in a schema's spelling.
    fn entry(&self, keyword: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|(k, _)| k.eq_ignore_ascii_case(keyword))
    }

    /// Remove a keyword (in any case).
    pub fn remove(&mut self, keyword: &str) -> Option<Values> {
        Some(self.entries.remove(self.entry(keyword)?).1)
    }

    /// The values of `keyword` (in any case), if given.
    pub fn get(&self, keyword: &str) -> Option<&Values> {
        self.entry(keyword).map(|i| &self.entries[i].1)
    }

    /// Keywords and values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Values)> + '_ {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The keywords given, in order.
    pub fn keywords(&self) -> impl Iterator<Item = &str> + '_ {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// Whether no keyword is given.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether some keyword has the value `all`.
    pub fn has_all(&self) -> bool {
        self.entries.iter().any(|(_, v)| matches!(v, Values::All))
    }

    /// A request that names exactly one key.
    pub fn from_key(key: &crate::key::Key) -> Request {
        let one = |v: &str| Values::Items(vec![Item::Value(v.to_string())]);
        let entries = key.iter().map(|(k, v)| (k.to_string(), one(v)));
        Request {
            entries: entries.collect(),
        }
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Value(v) => f.write_str(v),
            Item::Range { from, to, by: None } => write!(f, "{from}/to/{to}"),
            Item::Range {
                from,
                to,
                by: Some(by),
            } => write!(f, "{from}/to/{to}/by/{by}"),
        }
    }
}

impl fmt::Display for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Values::All => f.write_str("all"),
            Values::Items(items) => items.iter().enumerate().try_for_each(|(i, item)| {
                let sep = if i > 0 { "/" } else { "" };
                write!(f, "{sep}{item}")
            }),
        }
    }
}

/// Prints the request so that parsing the output gives the same request.
impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.entries.iter().enumerate().try_for_each(|(i, (k, v))| {
            let sep = if i > 0 { "," } else { "" };
            write!(f, "{sep}{k}={v}")
        })
    }
}

impl FromStr for Request {
    type Err = RequestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse::parse_request(s)
    }
}

#[cfg(test)]
mod tests;
