//! `ParamNames`: MARS parameter names (`2t`, `msl`) resolved to paramIds.
//!
//! People write parameters as short names (`t`, `2t`), paramIds (`167`) or
//! `number.table` (`167.128`). The numeric spellings are the type's job
//! ([`crate::types::KeywordType::Param`]: `167.128` → `167`, `3.228` → `228003`);
//! names need a parameter database, which the core, doing no I/O and
//! linking nothing, does not have. A [`ParamNames`] is that database, given
//! to a schema ([`crate::schema::Schema::with_param_names`]) by the crates that
//! have one (the CLI, the Python package and the C API install ecCodes'
//! through `fieldstore_grib::param_names`).
//!
//! With a table, every request and key the schema sees has its names
//! replaced by paramIds before anything else happens, so `param=2t` and
//! `param=167` name one field everywhere, and a name the table does not
//! know is an error naming it. Without one, a name is kept lower-cased, as
//! written: it matches only a key archived with the same name.

use std::fmt::Debug;

/// A parameter database: short name → paramId.
///
/// # Contract
/// - `param_id` is a pure function of `name` for the life of the table
///   (the schema may ask it any number of times, from any thread);
/// - `name` is given lower-cased and contains an ASCII letter (numeric
///   spellings never reach the table);
/// - `None` means the table knows no such name; the caller reports it.
pub trait ParamNames: Send + Sync + Debug {
    /// The paramId `name` stands for (`2t` → 167), or `None`.
    fn param_id(&self, name: &str) -> Option<u64>;
}

/// Whether `value` of a parameter keyword is a name the table resolves
/// (it holds a letter), rather than a numeric spelling the type handles.
pub(crate) fn is_name(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_alphabetic())
}
