//! The values a request names explicitly, in the form stored keys take.
//!
//! An array view of a request (the Python package's xarray and Zarr views)
//! gives each multi-valued keyword a dimension. Its coordinate must hold
//! every value the request names, stored or not — a step not yet flushed is
//! a row of NaN, not a missing row — so the view needs the request's values
//! spelled as stored keys spell them (`time=12` → `1200`, `param=2t` →
//! `167`, `step=0/to/12/by/6` → `0`, `6`, `12`).

use super::Schema;
use crate::request::{Item, Request, RequestError, Values};

/// At most this many values per keyword (a range such as
/// `step=0/to/6000000` names more than any array has rows).
pub const REQUESTED_VALUES_LIMIT: u64 = 100_000;

impl Schema {
    /// Per keyword the request gives explicit values for (not `all`), those
    /// values canonicalised by the first of the keyword's types that takes
    /// them all, ranges enumerated, duplicates left out, in request order;
    /// parameter names resolved through the schema's table.
    ///
    /// # Errors
    /// As [`Request::validate`]; an unknown parameter name; `NotEnumerable`
    /// naming a keyword with more than [`REQUESTED_VALUES_LIMIT`] values.
    pub fn requested_values(
        &self,
        request: &Request,
    ) -> Result<Vec<(String, Vec<String>)>, RequestError> {
        let request = self.resolve_request(request)?;
        request.validate(self)?;
        let mut out = Vec::new();
        for (keyword, values) in request.iter() {
            let Values::Items(items) = values else {
                continue;
            };
            let mut last = None;
            for &ty in self.types_of(keyword) {
                match enumerate(keyword, ty, items) {
                    Ok(values) => {
                        out.push((keyword.to_string(), values));
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            if let Some(e) = last {
                return Err(e);
            }
        }
        Ok(out)
    }
}

/// `items` in type `ty`, enumerated.
fn enumerate(
    keyword: &str,
    ty: crate::types::KeywordType,
    items: &[Item],
) -> Result<Vec<String>, RequestError> {
    let invalid = |source| RequestError::InvalidValue {
        keyword: keyword.to_string(),
        source,
    };
    let too_many = || {
        RequestError::NotEnumerable(format!(
            "keyword '{keyword}' names more than {REQUESTED_VALUES_LIMIT} values: \
             too many for a dimension of an array"
        ))
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut push = |v: String, out: &mut Vec<String>| -> Result<(), RequestError> {
        if seen.insert(v.clone()) {
            if out.len() as u64 >= REQUESTED_VALUES_LIMIT {
                return Err(too_many());
            }
            out.push(v);
        }
        Ok(())
    };
    for item in items {
        match item {
            Item::Value(v) => push(ty.canonical(v).map_err(invalid)?, &mut out)?,
            Item::Range { from, to, by } => {
                let range = ty.range(from, to, by.as_deref()).map_err(invalid)?;
                if range.len() > REQUESTED_VALUES_LIMIT {
                    return Err(too_many());
                }
                for v in range.iter() {
                    push(v, &mut out)?;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_spelled_as_stored_keys_spell_them() {
        let schema = Schema::ecmwf();
        let request: Request =
            "class=od,date=20231201/20231202,time=12/0,step=0/to/12/by/6/6,levelist=all,param=130.128"
                .parse()
                .unwrap();
        let got = schema.requested_values(&request).unwrap();
        let get = |k: &str| got.iter().find(|(kw, _)| kw == k).map(|(_, v)| v.clone());
        assert_eq!(get("time").unwrap(), ["1200", "0000"]);
        assert_eq!(get("step").unwrap(), ["0", "6", "12"]);
        assert_eq!(get("param").unwrap(), ["130"]);
        assert_eq!(get("date").unwrap(), ["20231201", "20231202"]);
        assert_eq!(get("levelist"), None, "'all' names no values");
    }

    #[test]
    fn huge_ranges_and_bad_values_are_refused_by_name() {
        let schema = Schema::ecmwf();
        let huge: Request = "class=od,step=0/to/6000000".parse().unwrap();
        let e = schema.requested_values(&huge).unwrap_err();
        assert!(e.to_string().contains("'step'"), "{e}");
        let bad: Request = "class=od,time=2561".parse().unwrap();
        assert!(schema.requested_values(&bad).is_err());
    }
}
