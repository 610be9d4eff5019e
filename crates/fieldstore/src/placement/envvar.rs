//! The `envvar` handler: the root is named by an environment variable
//! (`$FDB_FILESPACEHANDLER_ENVVARNAME`, by default `STHOST`), as FDB5's
//! `EnvVarFileSpaceHandler`.

use fieldstore_core::{DatasetKey, Error, ErrorKind, Result};

use super::{root_named, RootHandler};
use crate::root::Root;

/// Places a new dataset in the root an environment variable names.
#[derive(Debug, Clone)]
pub struct EnvVar {
    /// The variable read at each placement.
    pub variable: String,
}

impl EnvVar {
    /// The handler reading the variable `FDB_FILESPACEHANDLER_ENVVARNAME`
    /// names, else `STHOST`.
    pub fn from_env() -> EnvVar {
        let variable = std::env::var("FDB_FILESPACEHANDLER_ENVVARNAME")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "STHOST".to_string());
        EnvVar { variable }
    }
}

impl RootHandler for EnvVar {
    fn name(&self) -> &str {
        "envvar"
    }

    /// The variable must name an existing directory (as in FDB5) that is
    /// one of the space's roots (unlike FDB5, which would create the
    /// dataset wherever it points, out of every reader's sight).
    fn choose(&self, _key: &DatasetKey, roots: &[Root]) -> Result<usize> {
        let var = &self.variable;
        let value = std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidConfig,
                    format!("the envvar handler reads ${var}, which is not set"),
                )
            })?;
        let path = std::path::PathBuf::from(&value);
        if !path.is_dir() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("${var} is {}, which is not a directory", path.display()),
            ));
        }
        root_named(roots, &path).ok_or_else(|| {
            let all: Vec<String> = roots.iter().map(|r| r.path.display().to_string()).collect();
            Error::new(
                ErrorKind::InvalidConfig,
                format!(
                    "${var} is {}, which is not one of the space's roots ({})",
                    path.display(),
                    all.join(", ")
                ),
            )
        })
    }
}
