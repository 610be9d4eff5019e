//! `Integer` and `Double`.

use super::{KeywordType, TypeError};

pub(crate) fn parse_integer(ty: KeywordType, value: &str) -> Result<i64, TypeError> {
    value
        .parse::<i64>()
        .map_err(|_| TypeError::new(ty, value, "expected an integer"))
}

pub(crate) fn canonical_integer(value: &str) -> Result<String, TypeError> {
    parse_integer(KeywordType::Integer, value).map(|n| n.to_string())
}

pub(crate) fn parse_double(value: &str) -> Result<f64, TypeError> {
    let bad = || TypeError::new(KeywordType::Double, value, "expected a finite number");
    // Rust accepts "inf", "nan" and "infinity": a key never holds those.
    if !value
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
    {
        return Err(bad());
    }
    let x = value.parse::<f64>().ok().filter(|x| x.is_finite());
    x.ok_or_else(bad)
}

/// Integral values print as integers, others in Rust's shortest round-trip
/// form (`0.50` → `0.5`, `1e-3` → `0.001`).
pub(crate) fn format_double(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e15 {
        // `+ 0.0` folds -0.0 into 0.
        format!("{}", (x + 0.0) as i64)
    } else {
        format!("{x}")
    }
}

pub(crate) fn canonical_double(value: &str) -> Result<String, TypeError> {
    parse_double(value).map(format_double)
}
