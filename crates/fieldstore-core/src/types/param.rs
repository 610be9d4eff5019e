//! `Param` and `ParamID`: parameters as ECMWF paramIds.

use super::{KeywordType, TypeError};

/// `167` → `167`; `167.128` → `167` (table 128 is ECMWF's default table);
/// `228.228` → `228228`; `3.0` → `3`. Other spellings (short names such as
/// `2t`) are lower-cased and kept: resolving names needs a parameter
/// database, which the schema consults before types see a value when it
/// has one ([`crate::params::ParamNames`]).
pub(crate) fn canonical_param(ty: KeywordType, value: &str) -> Result<String, TypeError> {
    let bad = |reason: &str| TypeError::new(ty, value, reason);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((number, table)) = value.split_once('.') {
        if digits(number) && digits(table) {
            let number: u64 = number
                .parse()
                .map_err(|_| bad("parameter number out of range"))?;
            let table: u64 = table
                .parse()
                .map_err(|_| bad("table number out of range"))?;
            if number == 0 || number > 999 {
                return Err(bad(
                    "parameter number must be 1..999 in the number.table form",
                ));
            }
            let id = if table == 0 || table == 128 {
                number
            } else {
                table * 1000 + number
            };
            return Ok(id.to_string());
        }
    }
    if digits(value) {
        let id: u64 = value.parse().map_err(|_| bad("paramId out of range"))?;
        return Ok(id.to_string());
    }
    if value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        return Ok(value.to_ascii_lowercase());
    }
    Err(bad(
        "expected a paramId (167), number.table (167.128), or a short name",
    ))
}
