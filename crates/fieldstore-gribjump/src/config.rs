//! What a handle opens and how it extracts: the store, named as
//! fieldstore's other interfaces name it ([`fieldstore::fdb5_config`]:
//! `FIELDSTORE_CONFIG`, `FIELDSTORE_ROOT`, FDB5's `FDB_HOME`,
//! `FDB5_CONFIG_FILE`…), and GribJump's own settings that mean something
//! here.
//!
//! GribJump's settings, from its YAML file `GRIBJUMP_CONFIG_FILE` and its
//! variables (a variable wins over the file, as eckit's resources do):
//! - `ignoreGridHash` / `GRIBJUMP_IGNORE_GRID`: a request without a grid
//!   hash is extracted instead of refused (a hash given is still checked,
//!   as GribJump does);
//! - `threads` / `GRIBJUMP_THREADS`: fields read at once
//!   ([`fieldstore_grib::ExtractOptions::parallelism`]; default 4, as
//!   fieldstore's other interfaces);
//! - `type`: `local` (or absent); `remote` (a GribJump server) is refused:
//!   this library extracts from the store itself.
//!
//! Other keys of the file (`uri`, `servermap`, …) and
//! `GRIBJUMP_IGNORE_YEARMONTH`, `GRIBJUMP_REQUEST_PARSING`,
//! `GRIBJUMP_SCAN_CORRUPTED` have no meaning here and are ignored
//! (`docs/extract.md`).

use serde_yaml_ng::Value;

use crate::error::CError;

/// GribJump's settings that apply to fieldstore's extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Extract a request that gives no grid hash.
    pub ignore_grid_hash: bool,
    /// Fields read at once.
    pub threads: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ignore_grid_hash: false,
            threads: 4,
        }
    }
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

impl Settings {
    /// The settings of the environment (see the module documentation).
    ///
    /// # Errors
    /// A `GRIBJUMP_CONFIG_FILE` that cannot be read or parsed, or that asks
    /// for a remote server; a `threads` that is not a positive number.
    pub fn from_environment() -> Result<Settings, CError> {
        let mut s = Settings::default();
        if let Some(path) = std::env::var_os("GRIBJUMP_CONFIG_FILE").filter(|p| !p.is_empty()) {
            let shown = std::path::Path::new(&path).display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| {
                CError::new(format!("cannot read $GRIBJUMP_CONFIG_FILE {shown}: {e}"))
            })?;
            s.apply_yaml(&text, &shown)?;
        }
        if let Ok(v) = std::env::var("GRIBJUMP_IGNORE_GRID") {
            s.ignore_grid_hash = truthy(&v);
        }
        if let Ok(v) = std::env::var("GRIBJUMP_THREADS") {
            s.threads = threads(v.trim(), "$GRIBJUMP_THREADS")?;
        }
        Ok(s)
    }

    /// Apply GribJump's YAML configuration `text` (from `source`).
    ///
    /// # Errors
    /// As [`Settings::from_environment`].
    pub fn apply_yaml(&mut self, text: &str, source: &str) -> Result<(), CError> {
        let doc: Value = serde_yaml_ng::from_str(text)
            .map_err(|e| CError::new(format!("GribJump configuration {source}: {e}")))?;
        let Value::Mapping(map) = doc else {
            return if doc.is_null() {
                Ok(())
            } else {
                Err(CError::new(format!(
                    "GribJump configuration {source}: expected a mapping"
                )))
            };
        };
        for (k, v) in &map {
            let Some(k) = k.as_str() else { continue };
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                _ => String::new(),
            };
            match k {
                "type" if text != "local" => {
                    return Err(CError::new(format!(
                        "GribJump configuration {source}: type {text:?} is not supported: \
                         fieldstore's libgribjump extracts from the store itself (type: local)"
                    )))
                }
                "ignoreGridHash" => self.ignore_grid_hash = truthy(&text),
                "threads" => self.threads = threads(&text, &format!("{source}: threads"))?,
                _ => {}
            }
        }
        Ok(())
    }
}

fn threads(v: &str, what: &str) -> Result<usize, CError> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(CError::new(format!(
            "{what} is {v:?}: expected a positive number of threads"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_settings_apply_and_remote_is_refused() {
        let mut s = Settings::default();
        s.apply_yaml(
            "type: local\nignoreGridHash: true\nthreads: 2\nuri: x\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            s,
            Settings {
                ignore_grid_hash: true,
                threads: 2
            }
        );
        let e = s.apply_yaml("type: remote\n", "t").unwrap_err();
        assert!(e.0.contains("type \"remote\" is not supported"), "{}", e.0);
        let e = s.apply_yaml("threads: 0\n", "t").unwrap_err();
        assert!(e.0.contains("positive number"), "{}", e.0);
        s.apply_yaml("", "t").unwrap();
    }
}
