//! A schema as FDB5 serialises it (the reply to `Schema`): the client
//! splits keys with it, so it must be FDB5's own structure.
//!
//! `Schema` object: the type registry (a `size_t` count, then keyword and
//! type name strings), the schema's path, the number of dataset rules, the
//! rules. A rule: its own type registry, its line (`size_t`), the number
//! of predicates and the predicates, then its children: a dataset rule a
//! count and its collocation rules; a collocation rule the count 1 and its
//! one element rule (FDB5 5.25 gives each collocation rule exactly one
//! element rule, repeating the collocation rule for each); an element rule
//! the count 0. A predicate is a `Predicate` object holding its keyword and
//! a matcher object: `MatchAlways` (nothing), `MatchValue` (one value),
//! `MatchAny` and `ExcludeAll` (a count and values), `MatchOptional` and
//! `MatchHidden` (a count and the default values, one empty string when
//! there is no default).

use crate::stream::{DecodeError, Reader, Writer};

/// Deepest rule nesting: dataset, collocation, element.
const LEVELS: usize = 3;

/// How a predicate matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    /// Any value, required.
    Always,
    /// Exactly this value.
    Value(String),
    /// One of these values.
    Any(Vec<String>),
    /// None of these values.
    Exclude(Vec<String>),
    /// Optional, with these defaults.
    Optional(Vec<String>),
    /// Accepted and ignored, with these defaults.
    Hidden(Vec<String>),
}

/// One predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predicate {
    /// The keyword.
    pub keyword: String,
    /// The matcher.
    pub matcher: Matcher,
}

/// One rule and its children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Types declared in this rule (keyword, type name).
    pub types: Vec<(String, String)>,
    /// Line in the schema file.
    pub line: u32,
    /// Predicates, in order.
    pub predicates: Vec<Predicate>,
    /// Rules one level below.
    pub children: Vec<Rule>,
}

/// A whole schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// Global type declarations (keyword, type name).
    pub types: Vec<(String, String)>,
    /// The schema's path (informative).
    pub path: String,
    /// Dataset rules.
    pub rules: Vec<Rule>,
}

fn encode_types(w: &mut Writer, types: &[(String, String)]) {
    w.count(types.len());
    for (k, t) in types {
        w.string(k).string(t);
    }
}

fn decode_types(r: &mut Reader<'_>) -> Result<Vec<(String, String)>, DecodeError> {
    let n = r.count(10)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push((r.string()?, r.string()?));
    }
    Ok(out)
}

fn encode_values(w: &mut Writer, values: &[String]) {
    w.count(values.len());
    for v in values {
        w.string(v);
    }
}

fn decode_values(r: &mut Reader<'_>) -> Result<Vec<String>, DecodeError> {
    let n = r.count(5)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(r.string()?);
    }
    Ok(out)
}

impl Predicate {
    fn encode(&self, w: &mut Writer) {
        w.start_object("Predicate").string(&self.keyword);
        match &self.matcher {
            Matcher::Always => {
                w.start_object("MatchAlways");
            }
            Matcher::Value(v) => {
                w.start_object("MatchValue").string(v);
            }
            Matcher::Any(v) => {
                w.start_object("MatchAny");
                encode_values(w, v);
            }
            Matcher::Exclude(v) => {
                w.start_object("ExcludeAll");
                encode_values(w, v);
            }
            Matcher::Optional(v) => {
                w.start_object("MatchOptional");
                encode_values(w, v);
            }
            Matcher::Hidden(v) => {
                w.start_object("MatchHidden");
                encode_values(w, v);
            }
        }
        w.end_object().end_object();
    }

    fn decode(r: &mut Reader<'_>) -> Result<Predicate, DecodeError> {
        r.start_object_of("Predicate")?;
        let keyword = r.string()?;
        let class = r.start_object()?;
        let matcher = match class.as_str() {
            "MatchAlways" => Matcher::Always,
            "MatchValue" => Matcher::Value(r.string()?),
            "MatchAny" => Matcher::Any(decode_values(r)?),
            "ExcludeAll" => Matcher::Exclude(decode_values(r)?),
            "MatchOptional" => Matcher::Optional(decode_values(r)?),
            "MatchHidden" => Matcher::Hidden(decode_values(r)?),
            other => return Err(r.invalid(format!("unknown matcher {other}"))),
        };
        r.end_object()?;
        r.end_object()?;
        Ok(Predicate { keyword, matcher })
    }
}

impl Rule {
    /// Encode as given: the caller shapes the tree as FDB5 expects it
    /// (one element rule per collocation rule, types in keyword order).
    fn encode(&self, w: &mut Writer) {
        encode_types(w, &self.types);
        w.ulong(self.line);
        w.count(self.predicates.len());
        for p in &self.predicates {
            p.encode(w);
        }
        w.count(self.children.len());
        for c in &self.children {
            c.encode(w);
        }
    }

    fn decode(r: &mut Reader<'_>, level: usize) -> Result<Rule, DecodeError> {
        if level >= LEVELS {
            return Err(r.invalid("rules nested deeper than three levels"));
        }
        let types = decode_types(r)?;
        let line = r.ulong()?;
        let n = r.count(10)?;
        let mut predicates = Vec::with_capacity(n);
        for _ in 0..n {
            predicates.push(Predicate::decode(r)?);
        }
        let m = r.count(8)?;
        if level == LEVELS - 1 && m != 0 {
            return Err(r.invalid("an element rule with children"));
        }
        let mut children = Vec::with_capacity(m);
        for _ in 0..m {
            children.push(Rule::decode(r, level + 1)?);
        }
        Ok(Rule {
            types,
            line,
            predicates,
            children,
        })
    }
}

impl Schema {
    /// Encode, as the `Schema` object, exactly as given: FDB5 5.25's
    /// client expects each collocation rule to hold one element rule and
    /// type registries in keyword order, which the caller arranges.
    pub fn encode(&self, w: &mut Writer) {
        w.start_object("Schema");
        encode_types(w, &self.types);
        w.string(&self.path);
        w.count(self.rules.len());
        for r in &self.rules {
            r.encode(w);
        }
        w.end_object();
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<Schema, DecodeError> {
        r.start_object_of("Schema")?;
        let types = decode_types(r)?;
        let path = r.string()?;
        let n = r.count(10)?;
        let mut rules = Vec::with_capacity(n);
        for _ in 0..n {
            rules.push(Rule::decode(r, 0)?);
        }
        r.end_object()?;
        Ok(Schema { types, path, rules })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(line: u32, kw: &str, m: Matcher, children: Vec<Rule>) -> Rule {
        Rule {
            types: vec![],
            line,
            predicates: vec![Predicate {
                keyword: kw.into(),
                matcher: m,
            }],
            children,
        }
    }

    #[test]
    fn schemas_round_trip_as_given() {
        let s = Schema {
            types: vec![("date".into(), "Date".into())],
            path: "/s".into(),
            rules: vec![rule(
                1,
                "class",
                Matcher::Any(vec!["od".into(), "rd".into()]),
                vec![rule(
                    2,
                    "type",
                    Matcher::Optional(vec![String::new()]),
                    vec![
                        rule(3, "step", Matcher::Always, vec![]),
                        rule(4, "param", Matcher::Value("1".into()), vec![]),
                    ],
                )],
            )],
        };
        let mut w = Writer::new();
        s.encode(&mut w);
        let b = w.into_bytes();
        let mut r = Reader::new(&b);
        assert_eq!(Schema::decode(&mut r).unwrap(), s);
        r.finish().unwrap();
    }
}
