//! Which keys of a field form its Aviso identifier, and under which names.

use std::collections::BTreeMap;

use fieldstore::{Error, Key, Matcher, Result, Schema};

/// The identifier keys of one Aviso event type, each an Aviso key and the
/// fieldstore keyword that fills it.
///
/// Invariant: at least one key, Aviso names distinct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifierMap {
    event: String,
    keys: Vec<(String, String)>,
}

/// The identifier keys of the `mars` event type of Aviso's example
/// schema (`key_order` of its topic), filled by the MARS keywords of the
/// same names.
const MARS: [&str; 7] = [
    "class", "expver", "domain", "date", "time", "stream", "step",
];

impl IdentifierMap {
    /// The `mars` event type: `class, expver, domain, date, time, stream,
    /// step`, each from the keyword of the same name.
    pub fn mars() -> IdentifierMap {
        IdentifierMap {
            event: "mars".to_string(),
            keys: MARS
                .iter()
                .map(|k| ((*k).to_string(), (*k).to_string()))
                .collect(),
        }
    }

    /// An event type and its identifier keys from `spec`: comma-separated
    /// Aviso keys, each `name` (filled by the keyword `name`) or
    /// `name=keyword`. `None` gives the `mars` keys.
    ///
    /// # Errors
    /// `InvalidInput`: an empty event type, an empty spec or key, a key
    /// named twice.
    pub fn parse(event: &str, spec: Option<&str>) -> Result<IdentifierMap> {
        if event.trim().is_empty() {
            return Err(Error::invalid_input("the Aviso event type is empty"));
        }
        let mut map = IdentifierMap {
            event: event.to_string(),
            keys: Vec::new(),
        };
        let Some(spec) = spec else {
            map.keys = IdentifierMap::mars().keys;
            return Ok(map);
        };
        for part in spec.split(',') {
            let (name, keyword) = match part.split_once('=') {
                Some((n, k)) => (n.trim(), k.trim()),
                None => (part.trim(), part.trim()),
            };
            if name.is_empty() || keyword.is_empty() {
                return Err(Error::invalid_input(format!(
                    "identifier keys '{spec}': '{part}' is not `name` or `name=keyword`"
                )));
            }
            if map.keys.iter().any(|(n, _)| n == name) {
                return Err(Error::invalid_input(format!(
                    "identifier keys '{spec}': '{name}' is named twice"
                )));
            }
            map.keys.push((name.to_string(), keyword.to_string()));
        }
        Ok(map)
    }

    /// The Aviso event type.
    pub fn event(&self) -> &str {
        &self.event
    }

    /// The (Aviso key, fieldstore keyword) pairs, in order.
    pub fn keys(&self) -> &[(String, String)] {
        &self.keys
    }

    /// Whether `keyword` fills an identifier key.
    pub fn fills(&self, keyword: &str) -> bool {
        self.keys.iter().any(|(_, k)| k == keyword)
    }

    /// Check that the store's schema can fill every identifier key.
    ///
    /// # Errors
    /// `InvalidConfig` naming each Aviso key whose keyword no rule of the
    /// schema has.
    pub fn check(&self, schema: &Schema) -> Result<()> {
        let unknown: Vec<String> = self
            .keys
            .iter()
            .filter(|(_, kw)| !schema.knows(kw))
            .map(|(name, kw)| {
                if name == kw {
                    format!("'{name}'")
                } else {
                    format!("'{name}' (from keyword '{kw}')")
                }
            })
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let known: Vec<&str> = schema.keywords().collect();
        Err(Error::new(
            fieldstore::ErrorKind::InvalidConfig,
            format!(
                "the Aviso identifier of event type '{}' needs {} but no rule of the store's \
                 schema has {}: the store cannot fill {}. Map each to a keyword of the schema \
                 with --identifier NAME=KEYWORD (the schema's keywords: {})",
                self.event,
                unknown.join(", "),
                if unknown.len() == 1 { "it" } else { "them" },
                if unknown.len() == 1 { "it" } else { "them" },
                known.join(", ")
            ),
        ))
    }

    /// The identifier of the field whose full key is `key`: each key the
    /// field has a value for, an optional keyword its rule leaves empty as
    /// that rule's default (`domain?g`: absent is `g`), a keyword the field
    /// lacks left out (Aviso's schema says whether it may be).
    pub fn identifier(&self, schema: &Schema, key: &Key) -> BTreeMap<String, String> {
        let rules = schema.split(key).ok().map(|s| schema.chain(s.rule));
        let mut out = BTreeMap::new();
        for (name, kw) in &self.keys {
            let mut value = key.get(kw).unwrap_or("").to_string();
            if value.is_empty() {
                if let Some(Matcher::Optional(Some(default))) = rules
                    .iter()
                    .flatten()
                    .find_map(|r| r.predicate(kw))
                    .map(|p| &p.matcher)
                {
                    value = default.clone();
                }
            }
            if !value.is_empty() {
                out.insert(name.clone(), value);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        "[ class, expver, stream, date, time, domain?g [ type [ step, param ]]]"
            .parse()
            .expect("schema")
    }

    #[test]
    fn mars_fills_from_the_same_keywords_with_optional_defaults() {
        let map = IdentifierMap::mars();
        map.check(&schema()).expect("the schema fills mars");
        let key: Key =
            "class=od,expver=0001,stream=oper,date=20260101,time=1200,type=fc,step=6,param=167"
                .parse()
                .expect("key");
        let id = map.identifier(&schema(), &key);
        let got: Vec<String> = id.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            got,
            [
                "class=od",
                "date=20260101",
                "domain=g",
                "expver=0001",
                "step=6",
                "stream=oper",
                "time=1200"
            ]
        );
    }

    #[test]
    fn keys_the_schema_cannot_fill_are_named_at_start() {
        let map = IdentifierMap::parse("mars", Some("class,number,run=origin")).expect("parse");
        let e = map.check(&schema()).expect_err("refused");
        let text = e.to_string();
        assert!(text.contains("'number'"), "{text}");
        assert!(text.contains("'run' (from keyword 'origin')"), "{text}");
        assert!(!text.contains("'class'"), "{text}");
    }

    #[test]
    fn malformed_specs_are_refused() {
        for spec in ["", "class,,step", "class=", "class,class"] {
            assert!(
                IdentifierMap::parse("mars", Some(spec)).is_err(),
                "{spec:?} accepted"
            );
        }
        assert!(IdentifierMap::parse(" ", None).is_err());
    }
}
