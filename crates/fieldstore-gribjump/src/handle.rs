//! `gribjump_handle_t` and the library-level calls (initialise, versions).

use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex};

use fieldstore::FieldStore;

use crate::config::Settings;
use crate::error::{entry, CError};
use crate::registry::{self, Kind, Object};
use crate::util::out;

/// Opaque C type `gribjump_handle_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct gribjump_handle_t {
    _private: [u8; 0],
}

/// `gribjump_handle_t`: an open store (shared with the process's other
/// handles on the same configuration) and GribJump's settings, both read
/// from the environment when the handle is made.
#[derive(Debug)]
pub struct HandleObj {
    /// The store.
    pub fs: Arc<FieldStore>,
    /// GribJump's settings ([`crate::config`]).
    pub settings: Settings,
}

impl Object for HandleObj {
    const KIND: Kind = Kind::Handle;
}

/// The GribJump version whose interface this library implements: what
/// pygribjump compares with its own (0.13.1).
pub const GRIBJUMP_VERSION: &str = "0.13.1";
const VERSION_C: &str = "0.13.1\0";
const SHA1_C: &str = concat!("fieldstore ", env!("CARGO_PKG_VERSION"), "\0");

/// Stores opened in this process, by what names them
/// ([`store_identity`]), shared by the handles made on them.
///
/// Polytope makes a new handle for every request; opening the store each
/// time would read its catalogue afresh for each (milliseconds, more than
/// the extraction of a small request). GribJump keeps its engine for the
/// process likewise. A shared store sees what other processes archive (its
/// readers refresh at each listing). One opened by another process (this
/// one forked from it) is not shared: the child opens its own.
static OPENED: Mutex<Vec<(String, Arc<FieldStore>)>> = Mutex::new(Vec::new());

/// Configurations kept open at most (the oldest is dropped first).
const KEPT_OPEN: usize = 8;

/// The shared stores' lock, for the fork handlers.
pub(crate) fn opened_lock() -> &'static Mutex<Vec<(String, Arc<FieldStore>)>> {
    &OPENED
}

/// The variables that name the store ([`fieldstore::fdb5_config`]), with
/// the size and modification time of the files they name: what the
/// configuration is made from, so that an unchanged one is not parsed
/// again.
fn store_identity() -> String {
    const VARS: [&str; 8] = [
        "FIELDSTORE_CONFIG",
        "FIELDSTORE_ROOT",
        "FDB_CONFIG",
        "FDB5_CONFIG",
        "FDB_CONFIG_FILE",
        "FDB5_CONFIG_FILE",
        "FDB_HOME",
        "FDB5_HOME",
    ];
    let stamp = |path: &std::path::Path| {
        std::fs::metadata(path)
            .map(|m| format!("{}@{:?}", m.len(), m.modified().ok()))
            .unwrap_or_default()
    };
    let mut id = String::new();
    for var in VARS {
        let Some(value) = std::env::var_os(var) else {
            continue;
        };
        let path = std::path::Path::new(&value);
        let files = if var.ends_with("_HOME") {
            vec![
                path.join("etc/fdb/config.yaml"),
                path.join("etc/fdb/config.json"),
            ]
        } else if var.ends_with("CONFIG_FILE") || var == "FIELDSTORE_CONFIG" {
            vec![path.to_path_buf()]
        } else {
            Vec::new()
        };
        id.push_str(&format!("{var}={value:?};"));
        for f in files {
            id.push_str(&stamp(&f));
            id.push(';');
        }
    }
    id
}

fn open() -> Result<HandleObj, CError> {
    let settings = Settings::from_environment()?;
    let id = store_identity();
    let mut opened = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    opened.retain(|(_, fs)| fs.check_process().is_ok());
    if let Some((_, fs)) = opened.iter().find(|(k, _)| *k == id) {
        return Ok(HandleObj {
            fs: fs.clone(),
            settings,
        });
    }
    let config = fieldstore::fdb5_config::from_environment()?;
    fieldstore::fdb5_config::refuse_fdb5_roots(&config)?;
    // Parameter names in requests (`param=2t`), resolved by ecCodes'
    // parameter database as metkit does for GribJump.
    let fs = Arc::new(FieldStore::open(config)?.with_param_names(fieldstore_grib::param_names()));
    if opened.len() >= KEPT_OPEN {
        opened.remove(0);
    }
    opened.push((id, fs.clone()));
    Ok(HandleObj { fs, settings })
}

/// A handle on the store the environment names (see [`crate::config`]).
///
/// # Safety
/// `gj` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn gribjump_new_handle(gj: *mut *mut gribjump_handle_t) -> c_int {
    entry("gribjump_new_handle", || {
        // SAFETY: the caller's promise.
        let gj = unsafe { out(gj, "gj (the out-pointer)") }?;
        *gj = registry::insert(open()?).cast();
        Ok(())
    })
}

/// Delete a handle; iterators made from it keep their results.
#[no_mangle]
pub extern "C" fn gribjump_delete_handle(gj: *mut gribjump_handle_t) -> c_int {
    entry("gribjump_delete_handle", || {
        registry::remove::<HandleObj>(gj as *const c_void)?;
        Ok(())
    })
}

/// Prepare the library (installs the fork handlers); optional, repeatable.
#[no_mangle]
pub extern "C" fn gribjump_initialise() -> c_int {
    entry("gribjump_initialise", || {
        registry::install_fork_handlers();
        Ok(())
    })
}

/// [`GRIBJUMP_VERSION`], static.
#[no_mangle]
pub extern "C" fn gribjump_version() -> *const c_char {
    VERSION_C.as_ptr().cast()
}

/// As [`gribjump_version`] (GribJump exports both).
#[no_mangle]
pub extern "C" fn gribjump_version_str() -> *const c_char {
    VERSION_C.as_ptr().cast()
}

/// The version as a number, `major * 10000 + minor * 100 + patch` (1301).
#[no_mangle]
pub extern "C" fn gribjump_version_int() -> c_int {
    1301
}

/// Which implementation this is: `fieldstore <version>`, static.
#[no_mangle]
pub extern "C" fn gribjump_git_sha1() -> *const c_char {
    SHA1_C.as_ptr().cast()
}

/// How many objects made through this library are not yet deleted (a
/// fieldstore extension, for leak checks).
#[no_mangle]
pub extern "C" fn fieldstore_gribjump_live_objects() -> usize {
    std::panic::catch_unwind(registry::live).unwrap_or(0)
}
