//! Checking a request's keywords and values against a schema, before any
//! I/O. It lives with the schema: requests are below schemas in the
//! crate's layers (`lib.rs`).

use super::Schema;
use crate::request::{Request, RequestError, Values};

impl Request {
    /// Check every keyword against `schema` and every value against the
    /// types its keyword has there, so that mistakes are reported before any
    /// I/O: first against any type of the keyword, then against the types it
    /// has in the rules the request can still match (`class=od,date=20230230`
    /// is refused although a `class=cs` rule takes any text as a date;
    /// `date=20230230` alone is not, since a `class=cs` field may hold it).
    ///
    /// # Errors
    /// [`RequestError::UnknownKeyword`], or [`RequestError::InvalidValue`] when
    /// a value fits none of its keyword's types in those rules.
    pub fn validate(&self, schema: &Schema) -> Result<(), RequestError> {
        // Keywords named in another case than the schema's are its own.
        schema.spell_request(self).validate_spelled(schema)
    }

    /// [`Request::validate`] of a request whose keywords are spelled as in
    /// `schema`.
    fn validate_spelled(&self, schema: &Schema) -> Result<(), RequestError> {
        for (kw, values) in self.iter() {
            if !schema.knows(kw) {
                return Err(RequestError::UnknownKeyword {
                    keyword: kw.to_string(),
                });
            }
            let Values::Items(items) = values else {
                continue;
            };
            super::admit::check_items(kw, items, schema.types_of(kw))?;
        }
        schema.check_values(self)
    }
}
