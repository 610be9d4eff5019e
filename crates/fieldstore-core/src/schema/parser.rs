//! Parser for FDB5's schema language.
//!
//! ```text
//! schema     := (typedecl | rule)*
//! typedecl   := IDENT ':' IDENT ';'
//! rule       := '[' item (','? item)* ']'        -- up to three nested levels
//! item       := predicate | rule
//! predicate  := KEYWORD (':' TYPE)? ( '?' VALUE? | '-' VALUE? | '=' '!'? VALUE ('/' VALUE)* )?
//! ```
//! `#` starts a comment to the end of the line; whitespace is insignificant.
//! A `-` ends a keyword but may appear inside values (`dataset=extremes-dt`).
//!
//! Unlike FDB5, a single excluded value (`key=!a`) is an exclusion, not an
//! inclusion (FDB5 report, Appendix A.4).

use std::collections::HashMap;

use super::rule::{Level, Matcher, Predicate, Rule};
use super::SchemaError;
use crate::types::KeywordType;

/// A predicate before types are resolved: its matcher's values as written.
pub(super) struct RawPredicate {
    pub keyword: String,
    pub declared_type: Option<KeywordType>,
    pub matcher: Matcher,
}

pub(super) struct RawRule {
    pub predicates: Vec<RawPredicate>,
    pub children: Vec<RawRule>,
    pub line: u32,
}

pub(super) struct Parsed {
    pub types: HashMap<String, KeywordType>,
    pub rules: Vec<RawRule>,
}

struct Parser<'a> {
    name: &'a str,
    src: &'a [u8],
    pos: usize,
    line: u32,
    col: u32,
}

const SPECIAL: &[u8] = b"/=,;:[]?#";

impl<'a> Parser<'a> {
    fn error(&self, message: impl Into<String>) -> SchemaError {
        self.error_at(self.line, self.col, message)
    }

    /// An error at `line` and `column` (0: the whole rule).
    fn error_at(&self, line: u32, column: u32, message: impl Into<String>) -> SchemaError {
        SchemaError::Parse {
            name: self.name.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        if b == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if b & 0xC0 != 0x80 {
            // Count characters, not UTF-8 continuation bytes.
            self.col += 1;
        }
        Some(b)
    }

    fn skip_blank(&mut self) {
        while let Some(b) = self.peek() {
            if b == b'#' {
                while self.peek().is_some_and(|b| b != b'\n') {
                    self.bump();
                }
            } else if b.is_ascii_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    /// `expected <what>, found <the next character or the end of file>`.
    fn expected(&self, what: &str) -> SchemaError {
        let found = match self.peek() {
            None => "end of file".to_string(),
            Some(b) => {
                let rest = std::str::from_utf8(&self.src[self.pos..]).unwrap_or("?");
                let c = rest.chars().next().unwrap_or(b as char);
                format!("'{}'", c.escape_debug())
            }
        };
        self.error(format!("expected {what}, found {found}"))
    }

    /// Consume `b` if it comes next; whether it did.
    fn eat(&mut self, b: u8) -> bool {
        let next = self.peek() == Some(b);
        if next {
            self.bump();
        }
        next
    }

    fn expect(&mut self, want: u8) -> Result<(), SchemaError> {
        self.skip_blank();
        if self.eat(want) {
            return Ok(());
        }
        Err(self.expected(&format!("'{}'", want as char)))
    }

    /// An identifier or value: a run of characters that are not blank and not
    /// special. `stop_at_dash` ends keywords at `-`.
    fn word(&mut self, stop_at_dash: bool) -> String {
        let start = self.pos;
        let ends = |b: u8| {
            b.is_ascii_whitespace()
                || b.is_ascii_control()
                || SPECIAL.contains(&b)
                || (stop_at_dash && b == b'-')
        };
        while self.peek().is_some_and(|b| !ends(b)) {
            self.bump();
        }
        String::from_utf8_lossy(&self.src[start..self.pos]).into_owned()
    }

    fn type_name(&mut self) -> Result<KeywordType, SchemaError> {
        self.skip_blank();
        let (line, col) = (self.line, self.col);
        let name = self.word(false);
        if name.is_empty() {
            return Err(self.expected("a type name"));
        }
        KeywordType::from_name(&name)
            .ok_or_else(|| self.error_at(line, col, format!("unknown type '{name}'")))
    }

    fn keyword(&mut self) -> Result<String, SchemaError> {
        self.skip_blank();
        let (line, col) = (self.line, self.col);
        let kw = self.word(true);
        if kw.is_empty() {
            return Err(self.expected("a keyword"));
        }
        if !crate::key::is_valid_keyword(&kw) {
            return Err(self.error_at(
                line,
                col,
                format!("invalid keyword '{kw}': keywords are ASCII letters, digits, '_' and '.'"),
            ));
        }
        Ok(kw)
    }

    fn optional_value(&mut self, keyword: &str) -> Result<Option<String>, SchemaError> {
        // A default follows the modifier directly (`domain?g`, `step?0`).
        let v = self.word(false);
        if v.is_empty() {
            return Ok(None);
        }
        self.check_value(keyword, &v)?;
        Ok(Some(v))
    }

    /// Values must be storable in keys (no whitespace, no `{`, `}`, …).
    fn check_value(&self, keyword: &str, value: &str) -> Result<(), SchemaError> {
        if crate::key::is_valid_value(value) {
            return Ok(());
        }
        Err(self.error(format!(
            "invalid value '{}' for keyword '{keyword}': values may not contain whitespace, \
             control characters, '{{' or '}}'",
            value.escape_debug()
        )))
    }

    fn predicate(&mut self) -> Result<RawPredicate, SchemaError> {
        let keyword = self.keyword()?;
        let declared_type = self.eat(b':').then(|| self.type_name()).transpose()?;
        let matcher = if self.eat(b'?') {
            Matcher::Optional(self.optional_value(&keyword)?)
        } else if self.eat(b'-') {
            Matcher::Hidden(self.optional_value(&keyword)?)
        } else if !self.eat(b'=') {
            Matcher::Always
        } else {
            let exclude = self.eat(b'!');
            let mut values = Vec::new();
            loop {
                let v = self.word(false);
                if v.is_empty() {
                    return Err(self.expected(&format!("a value for keyword '{keyword}'")));
                }
                self.check_value(&keyword, &v)?;
                values.push(v);
                if !self.eat(b'/') {
                    break;
                }
            }
            if exclude {
                Matcher::NoneOf(values)
            } else {
                Matcher::OneOf(values)
            }
        };
        Ok(RawPredicate {
            keyword,
            declared_type,
            matcher,
        })
    }

    fn rule(&mut self, depth: u8) -> Result<RawRule, SchemaError> {
        self.skip_blank();
        let line = self.line;
        self.expect(b'[')?;
        let mut rule = RawRule {
            predicates: Vec::new(),
            children: Vec::new(),
            line,
        };
        loop {
            self.skip_blank();
            match self.peek() {
                None => return Err(self.error(format!("unclosed '[' opened at line {line}"))),
                Some(b']') => {
                    self.bump();
                    break;
                }
                Some(b'[') => {
                    if depth == 3 {
                        return Err(self.error(
                            "a schema has at most three levels (dataset, collocation, element)",
                        ));
                    }
                    rule.children.push(self.rule(depth + 1)?);
                }
                Some(b',') if !rule.predicates.is_empty() || !rule.children.is_empty() => {
                    self.bump();
                }
                Some(_) => {
                    if !rule.children.is_empty() {
                        return Err(self.error("predicates must come before the nested rules"));
                    }
                    rule.predicates.push(self.predicate()?);
                }
            }
        }
        if rule.predicates.is_empty() {
            return Err(self.error_at(line, 0, "a rule needs at least one keyword"));
        }
        if depth < 3 && rule.children.is_empty() {
            let level = if depth == 1 { "dataset" } else { "collocation" };
            let below = if depth == 1 { "collocation" } else { "element" };
            let message = format!("this {level} rule has no {below} rule inside it");
            return Err(self.error_at(line, 0, message));
        }
        Ok(rule)
    }

    fn schema(&mut self) -> Result<Parsed, SchemaError> {
        let mut parsed = Parsed {
            types: HashMap::new(),
            rules: Vec::new(),
        };
        loop {
            self.skip_blank();
            match self.peek() {
                None => break,
                Some(b'[') => parsed.rules.push(self.rule(1)?),
                Some(_) => {
                    let kw = self.keyword()?;
                    self.expect(b':')?;
                    let ty = self.type_name()?;
                    self.expect(b';')?;
                    parsed.types.insert(kw, ty);
                }
            }
        }
        Ok(parsed)
    }
}

pub(super) fn parse(name: &str, text: &str) -> Result<Parsed, SchemaError> {
    Parser {
        name,
        src: text.as_bytes(),
        pos: 0,
        line: 1,
        col: 1,
    }
    .schema()
}

/// Resolve types and canonicalise constraint values, level by level.
pub(super) fn resolve(
    raw: RawRule,
    level: Level,
    globals: &HashMap<String, KeywordType>,
    inherited: &HashMap<String, KeywordType>,
) -> Rule {
    let mut local = inherited.clone();
    for p in &raw.predicates {
        if let Some(t) = p.declared_type {
            local.insert(p.keyword.clone(), t);
        }
    }
    let predicates = raw
        .predicates
        .into_iter()
        .map(|p| {
            let ty = local
                .get(&p.keyword)
                .or_else(|| globals.get(&p.keyword))
                .copied()
                .unwrap_or(KeywordType::Default);
            let canon = |v: String| ty.canonical(&v).unwrap_or_else(|_| v.to_ascii_lowercase());
            let (matcher, ty) = match p.matcher {
                Matcher::OneOf(v) => (Matcher::OneOf(v.into_iter().map(canon).collect()), ty),
                Matcher::NoneOf(v) => (Matcher::NoneOf(v.into_iter().map(canon).collect()), ty),
                Matcher::Optional(d) => (Matcher::Optional(d.map(canon)), ty),
                hidden @ Matcher::Hidden(_) => (hidden, KeywordType::Ignore),
                Matcher::Always => (Matcher::Always, ty),
            };
            Predicate {
                keyword: p.keyword,
                matcher,
                keyword_type: ty,
                declared_type: p.declared_type,
            }
        })
        .collect();
    let children = match level.child() {
        Some(child) => raw
            .children
            .into_iter()
            .map(|c| resolve(c, child, globals, &local))
            .collect(),
        None => Vec::new(),
    };
    Rule {
        level,
        predicates,
        children,
        line: raw.line,
    }
}
