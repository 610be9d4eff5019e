//! Keys beyond MARS: a schema's keywords that ecCodes' `mars` namespace
//! does not give, read from each message by their ecCodes names.
//!
//! MARS keys do not tell other centres' fields apart: in NCEP's GFS dozens
//! of fields share one MARS key (`levtype=unknown`, `param=0`). A schema
//! that names ecCodes keys (`centre`, `discipline`, `parameterCategory`,
//! `parameterNumber`, `typeOfLevel`, `topLevel`, `stepType`…) keys fields
//! by the GRIB's own identity instead (`docs/schemas/foreign.schema`).
//! A keyword is read this way when ECMWF's schema does not know it, so a
//! store with ECMWF's schema (or one of its subsets) reads nothing more.

use std::ffi::CString;
use std::sync::OnceLock;

use fieldstore_core::{KeywordType, Schema};

/// The keywords of a schema to read from a message beyond its MARS key.
#[derive(Debug, Clone, Default)]
pub struct IdentityKeys {
    keys: Vec<IdentityKey>,
}

#[derive(Debug, Clone)]
pub(crate) struct IdentityKey {
    /// The ecCodes key (the schema's keyword, as spelled there).
    pub(crate) name: CString,
    /// The keyword as keys hold it.
    pub(crate) keyword: String,
    /// Read as a real number (the schema types it `Double`): ecCodes'
    /// text of `topLevel` is its integer part (0 for a 0.1 m soil layer).
    pub(crate) real: bool,
}

impl IdentityKeys {
    /// The keywords of `schema` that ECMWF's schema does not know, each
    /// read as its declared type asks.
    pub fn of(schema: &Schema) -> IdentityKeys {
        static MARS: OnceLock<Schema> = OnceLock::new();
        let mars = MARS.get_or_init(Schema::ecmwf);
        let keys = schema
            .keywords()
            .filter(|k| !mars.knows(k))
            .filter_map(|k| {
                let name = CString::new(k).ok()?;
                Some(IdentityKey {
                    name,
                    keyword: k.to_string(),
                    real: schema.types_of(k).contains(&KeywordType::Double),
                })
            })
            .collect();
        IdentityKeys { keys }
    }

    /// Whether there is nothing to read beyond the MARS key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &IdentityKey> {
        self.keys.iter()
    }
}

/// A real number as a key's value: nine significant digits, so that
/// ecCodes' `0.32999999999999996` (a scaled GRIB2 level) reads `0.33`.
pub(crate) fn real_value(v: f64) -> String {
    let rounded: f64 = format!("{v:.8e}").parse().unwrap_or(v);
    format!("{rounded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecmwf_schema_reads_nothing_beyond_mars() {
        assert!(IdentityKeys::of(&Schema::ecmwf()).is_empty());
    }

    #[test]
    fn reals_are_rounded_to_nine_digits() {
        assert_eq!(real_value(0.329_999_999_999_999_96), "0.33");
        assert_eq!(real_value(1.0), "1");
        assert_eq!(real_value(1013.25), "1013.25");
    }
}
