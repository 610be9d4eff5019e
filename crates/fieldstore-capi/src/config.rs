//! Which store a handle opens: fieldstore's configuration, or FDB5's. The
//! resolution lives in the `fieldstore` crate
//! ([`fieldstore::fdb5_config`]), shared with the CLI and the Python
//! package; here it answers in the C API's error type.

use std::path::Path;

use fieldstore::{fdb5_config, Config};

use crate::error::CError;

/// The configuration `fdb_new_handle()` opens
/// ([`fdb5_config::from_environment`]).
///
/// # Errors
/// As [`fdb5_config::from_environment`].
pub fn from_environment() -> Result<Config, CError> {
    Ok(fdb5_config::from_environment()?)
}

/// FDB5's YAML (or JSON) config `text` as fieldstore's `Config`; `None`
/// for an empty one ([`fdb5_config::from_fdb5_yaml`]).
///
/// # Errors
/// As [`fdb5_config::from_fdb5_yaml`].
pub fn from_fdb5_yaml(text: &str, base: &Path, source: &str) -> Result<Option<Config>, CError> {
    Ok(fdb5_config::from_fdb5_yaml(text, base, source)?)
}

/// Refuse roots holding FDB5's own on-disk format
/// ([`fdb5_config::refuse_fdb5_roots`]).
///
/// # Errors
/// As [`fdb5_config::refuse_fdb5_roots`].
pub fn refuse_fdb5_roots(config: &Config) -> Result<(), CError> {
    Ok(fdb5_config::refuse_fdb5_roots(config)?)
}
