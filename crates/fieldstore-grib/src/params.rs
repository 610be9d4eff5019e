//! ecCodes' parameter database as the schema's [`ParamNames`] table: what
//! the CLI, the Python package and the C API install so that requests and
//! keys may name parameters as MARS does (`2t`, `msl`), or as ecCodes'
//! `cfVarName` (`t2m`: what cfgrib and the array views call variables).

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use fieldstore_core::ParamNames;

/// Short names resolved by [`crate::param_id`] (ecCodes), or else ecCodes
/// cfVarNames by [`crate::param_id_of_cf_var_name`], each asked once
/// per process and remembered (a lookup costs two sample handles, tens of
/// microseconds; a request names a parameter many times).
#[derive(Debug, Default)]
pub struct EcCodesParamNames {
    /// Answers so far, unknown names included. A `BTreeMap`, whose nodes
    /// leak checkers see as reachable from the static that holds it.
    known: Mutex<BTreeMap<String, Option<u64>>>,
}

impl ParamNames for EcCodesParamNames {
    fn param_id(&self, name: &str) -> Option<u64> {
        let lock = || self.known.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = lock().get(name) {
            return *known;
        }
        // A short name first (MARS's own), then an ecCodes cfVarName, the
        // name the array views show (`t2m` for `2t`).
        let id = crate::param_id(name)
            .or_else(|| crate::param_id_of_cf_var_name(name))
            .and_then(|id| u64::try_from(id).ok());
        lock().insert(name.to_string(), id);
        id
    }
}

/// The process's one ecCodes parameter table (shared, so that every handle
/// shares its answers).
pub fn param_names() -> Arc<dyn ParamNames> {
    static TABLE: LazyLock<Arc<EcCodesParamNames>> = LazyLock::new(Default::default);
    TABLE.clone()
}
