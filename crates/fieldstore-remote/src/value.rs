//! eckit's `Value`, the dynamic value FDB5 uses for the configuration
//! negotiated at startup.
//!
//! On the wire a value is an object whose class names its content:
//! `NumberContent` (a `long long`), `StringContent`, `BoolContent`,
//! `DoubleContent`, `NilContent`, `ListContent` (a `long` count, then the
//! values) and `MapContent` / `OrderedMapContent` (for each pair a `true`,
//! the key, the value, in key order; then `false`; an ordered map then
//! repeats its keys in insertion order).

use crate::stream::{DecodeError, Reader, Writer};

/// Deepest nesting decoded: a peer cannot make the decoder recurse without
/// bound.
pub const MAX_DEPTH: usize = 16;

/// A value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Nothing.
    Nil,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Number(i64),
    /// A real.
    Double(f64),
    /// Text.
    String(String),
    /// A list.
    List(Vec<Value>),
    /// A map, in insertion order (encoded as an ordered map).
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The value at string key `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(k, Value::String(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The integers of a list, or of a single number.
    pub fn as_numbers(&self) -> Option<Vec<i64>> {
        match self {
            Value::Number(n) => Some(vec![*n]),
            Value::List(items) => items
                .iter()
                .map(|v| match v {
                    Value::Number(n) => Some(*n),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    fn sort_key(&self) -> String {
        match self {
            Value::String(s) => s.clone(),
            other => format!("{other:?}"),
        }
    }

    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Value::Nil => {
                w.start_object("NilContent");
            }
            Value::Bool(b) => {
                w.start_object("BoolContent").bool(*b);
            }
            Value::Number(n) => {
                w.start_object("NumberContent").long_long(*n);
            }
            Value::Double(d) => {
                w.start_object("DoubleContent").double(*d);
            }
            Value::String(s) => {
                w.start_object("StringContent").string(s);
            }
            Value::List(items) => {
                w.start_object("ListContent")
                    .long(i32::try_from(items.len()).unwrap_or(i32::MAX));
                for v in items {
                    v.encode(w);
                }
            }
            Value::Map(pairs) => {
                w.start_object("OrderedMapContent");
                let mut sorted: Vec<&(Value, Value)> = pairs.iter().collect();
                sorted.sort_by_key(|(k, _)| k.sort_key());
                for (k, v) in sorted {
                    w.bool(true);
                    k.encode(w);
                    v.encode(w);
                }
                w.bool(false);
                for (k, _) in pairs {
                    k.encode(w);
                }
            }
        }
        w.end_object();
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`] for anything but a value of the classes above,
    /// nested at most [`MAX_DEPTH`] deep.
    pub fn decode(r: &mut Reader<'_>) -> Result<Value, DecodeError> {
        Value::decode_at(r, 0)
    }

    fn decode_at(r: &mut Reader<'_>, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(r.invalid(format!("value nested deeper than {MAX_DEPTH}")));
        }
        let class = r.start_object()?;
        let v = match class.as_str() {
            "NilContent" => Value::Nil,
            "BoolContent" => Value::Bool(r.bool()?),
            "NumberContent" => Value::Number(r.long_long()?),
            "DoubleContent" => Value::Double(r.double()?),
            "StringContent" => Value::String(r.string()?),
            "ListContent" => {
                let n = r.long()?;
                let n = usize::try_from(n).map_err(|_| r.invalid("negative list length"))?;
                if n > r.remaining() {
                    return Err(r.invalid(format!("a list of {n} values does not fit")));
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(Value::decode_at(r, depth + 1)?);
                }
                Value::List(items)
            }
            "MapContent" | "OrderedMapContent" => {
                let mut pairs = Vec::new();
                while r.bool()? {
                    let k = Value::decode_at(r, depth + 1)?;
                    let v = Value::decode_at(r, depth + 1)?;
                    pairs.push((k, v));
                }
                if class == "OrderedMapContent" {
                    // The keys again, in insertion order.
                    let mut ordered = Vec::with_capacity(pairs.len());
                    for _ in 0..pairs.len() {
                        let k = Value::decode_at(r, depth + 1)?;
                        let at = pairs
                            .iter()
                            .position(|(pk, _)| *pk == k)
                            .ok_or_else(|| r.invalid("ordered map names a key it does not hold"))?;
                        ordered.push(pairs.swap_remove(at));
                    }
                    pairs = ordered;
                }
                Value::Map(pairs)
            }
            other => return Err(r.invalid(format!("unknown value class {other}"))),
        };
        r.end_object()?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Nil),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Number),
            "[a-z]{0,8}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 20, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::List),
                prop::collection::btree_map("[a-z]{1,6}", inner, 0..4).prop_map(|m| {
                    // Insertion order differs from key order.
                    Value::Map(
                        m.into_iter()
                            .rev()
                            .map(|(k, v)| (Value::String(k), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn values_round_trip(v in value()) {
            let mut w = Writer::new();
            v.encode(&mut w);
            let b = w.into_bytes();
            let mut r = Reader::new(&b);
            prop_assert_eq!(Value::decode(&mut r).unwrap(), v);
            r.finish().unwrap();
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut v = Value::Nil;
        for _ in 0..40 {
            v = Value::List(vec![v]);
        }
        let mut w = Writer::new();
        v.encode(&mut w);
        let b = w.into_bytes();
        assert!(Value::decode(&mut Reader::new(&b)).is_err());
    }
}
