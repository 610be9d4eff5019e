//! `fdb_handle_t` and the calls on it: archive, flush, list, retrieve;
//! and the library-level calls (initialise, versions).

use std::collections::HashSet;
use std::ffi::{c_char, c_int};
use std::path::Path;
use std::sync::Arc;

use fieldstore::{Config, FieldStore, Item, Key, Level, ListOptions, Request, SplitKey, Values};
use fieldstore_grib::ArchiveGrib;

use crate::error::{entry, CError, FDB_SUCCESS};
use crate::key::{fdb_key_t, KeyObj};
use crate::kind::Kind;
use crate::list::fdb_listiterator_t;
use crate::listing::ListState;
use crate::reader::{fdb_datareader_t, ReaderObj, Stream};
use crate::registry::{self, Object};
use crate::request::{fdb_request_t, request_of, retrieve_request_of};
use crate::util::{c_str, lock, out};

/// Opaque C type `fdb_handle_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_handle_t {
    _private: [u8; 0],
}

/// `fdb_handle_t`: an open store. Shared with the list iterators and data
/// readers made from it, which keep it open after `fdb_delete_handle`.
#[derive(Debug)]
pub struct HandleObj {
    /// The store.
    pub fs: Arc<FieldStore>,
}

impl Object for HandleObj {
    const KIND: Kind = Kind::Handle;
}

/// The version of fieldstore, NUL-terminated.
const VCS_VERSION: &str = concat!("fieldstore ", env!("CARGO_PKG_VERSION"), "\0");
/// [`crate::FDB5_VERSION`], NUL-terminated.
const VERSION: &str = "5.25.0\0";

/// Prepare the library: installs the fork handlers. Optional; calling it
/// again does nothing.
#[no_mangle]
pub extern "C" fn fdb_initialise() -> c_int {
    entry("fdb_initialise", || {
        registry::install_fork_handlers();
        Ok(FDB_SUCCESS)
    })
}

/// The FDB5 version this library's interface is ("5.25.0"), static.
///
/// # Safety
/// `version` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_version(version: *mut *const c_char) -> c_int {
    entry("fdb_version", || {
        // SAFETY: the caller's promise.
        *unsafe { out(version, "version") }? = VERSION.as_ptr().cast();
        Ok(FDB_SUCCESS)
    })
}

/// Which implementation this is: `fieldstore <version>`, static.
///
/// # Safety
/// `sha1` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_vcs_version(sha1: *mut *const c_char) -> c_int {
    entry("fdb_vcs_version", || {
        // SAFETY: the caller's promise.
        *unsafe { out(sha1, "sha1") }? = VCS_VERSION.as_ptr().cast();
        Ok(FDB_SUCCESS)
    })
}

fn open(config: Config) -> Result<*mut fdb_handle_t, CError> {
    crate::config::refuse_fdb5_roots(&config)?;
    // Parameter names in requests and keys (`param=2t`), resolved by
    // ecCodes' parameter database as metkit does for FDB5.
    let fs = FieldStore::open(config)?.with_param_names(fieldstore_grib::param_names());
    Ok(registry::insert(HandleObj { fs: Arc::new(fs) }).cast())
}

/// A handle on the store the environment configures
/// ([`crate::config::from_environment`]).
///
/// # Safety
/// `fdb` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_new_handle(fdb: *mut *mut fdb_handle_t) -> c_int {
    entry("fdb_new_handle", || {
        // SAFETY: the caller's promise.
        let fdb = unsafe { out(fdb, "fdb (the out-pointer)") }?;
        *fdb = open(crate::config::from_environment()?)?;
        Ok(FDB_SUCCESS)
    })
}

/// A handle on the store `system_config` (FDB5's YAML or JSON) describes;
/// empty or NULL: as `fdb_new_handle`. The user config must be YAML (or
/// empty, or NULL) and is not otherwise used.
///
/// # Safety
/// The configs are NULL or NUL-terminated strings; `fdb` is NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_new_handle_from_yaml(
    fdb: *mut *mut fdb_handle_t,
    system_config: *const c_char,
    user_config: *const c_char,
) -> c_int {
    entry("fdb_new_handle_from_yaml", || {
        // SAFETY: the caller's promises.
        let fdb = unsafe { out(fdb, "fdb (the out-pointer)") }?;
        let text = |p: *const c_char, what| -> Result<&str, CError> {
            if p.is_null() {
                Ok("")
            } else {
                // SAFETY: not NULL: a NUL-terminated string.
                unsafe { c_str(p, what) }
            }
        };
        let (system, user) = (
            text(system_config, "system_config")?,
            text(user_config, "user_config")?,
        );
        fieldstore::config::parse_yaml(user, "user_config")?;
        let config = match crate::config::from_fdb5_yaml(system, Path::new("."), "system_config")? {
            Some(c) => c,
            None => crate::config::from_environment()?,
        };
        *fdb = open(config)?;
        Ok(FDB_SUCCESS)
    })
}

/// The store of handle `fdb`, if it is used in the process that created
/// it ([`FieldStore::check_process`]): a handle inherited across `fork()`
/// holds the parent's writers, and every call through it fails in the
/// child (FDB5 aborts), reads included, so that a child learns at its
/// first call to open its own handle.
pub(crate) fn handle(fdb: *mut fdb_handle_t) -> Result<Arc<FieldStore>, CError> {
    let fs = registry::get::<HandleObj>(fdb.cast())?.fs.clone();
    fs.check_process()?;
    Ok(fs)
}

/// `data[0..length]`, which may be NULL only when `length` is 0.
///
/// A length above `isize::MAX` is refused: no object is that large (it is
/// typically a negative length cast to `size_t`), and a slice that long is
/// undefined behaviour (in debug builds, an abort of the whole process).
///
/// # Safety
/// `data` is NULL or readable for `length` bytes for `'a`.
unsafe fn bytes<'a>(data: *const c_char, length: usize) -> Result<&'a [u8], CError> {
    if isize::try_from(length).is_err() {
        return Err(CError::invalid(format!(
            "data's length {length} is larger than any object can be (at most {}): a negative length cast to size_t?",
            isize::MAX
        )));
    }
    if data.is_null() {
        if length == 0 {
            return Ok(&[]);
        }
        return Err(CError::invalid(format!("data is NULL (length {length})")));
    }
    // SAFETY: readable for `length` bytes (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) })
}

/// Archive `data[0..length]` under `key`; visible after `fdb_flush`.
///
/// # Safety
/// `data` is NULL (an error unless `length` is 0) or readable for `length`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn fdb_archive(
    fdb: *mut fdb_handle_t,
    key: *mut fdb_key_t,
    data: *const c_char,
    length: usize,
) -> c_int {
    entry("fdb_archive", || {
        let fs = handle(fdb)?;
        let key: Key = lock(&registry::get::<KeyObj>(key.cast())?.0).clone();
        // SAFETY: the caller's promise.
        let data = unsafe { bytes(data, length) }?;
        fs.archive(&key, data)?;
        Ok(FDB_SUCCESS)
    })
}

/// Archive every GRIB message of `data` under its own MARS key; with a
/// request, checked against it first (`archive_checked`).
///
/// # Safety
/// `data` is NULL (an error) or readable for `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn fdb_archive_multiple(
    fdb: *mut fdb_handle_t,
    req: *mut fdb_request_t,
    data: *const c_char,
    length: usize,
) -> c_int {
    entry("fdb_archive_multiple", || {
        let fs = handle(fdb)?;
        let request = request_of(req)?;
        if data.is_null() {
            return Err(CError::invalid("data is NULL"));
        }
        // SAFETY: the caller's promise.
        let data = unsafe { bytes(data, length) }?;
        SKIPPED.with(|s| s.borrow_mut().clear());
        let skipped = match request {
            None => fs.archive_grib(data)?.skipped_bytes,
            Some(request) => archive_checked(&fs, &request, data)?,
        };
        note_skipped("fdb_archive_multiple", &skipped);
        Ok(FDB_SUCCESS)
    })
}

thread_local! {
    /// The byte ranges (start, end, start, end…) the calling thread's last
    /// `fdb_archive_multiple` skipped as not GRIB.
    static SKIPPED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Bytes that are not GRIB were skipped: one warning on stderr (where FDB5
/// logs its warnings), and the ranges kept for
/// [`fieldstore_skipped_bytes`].
fn note_skipped(function: &str, skipped: &fieldstore_grib::SkippedBytes) {
    if skipped.is_empty() {
        return;
    }
    SKIPPED.with(|s| {
        let mut s = s.borrow_mut();
        for r in skipped.ranges() {
            s.extend([r.start, r.end]);
        }
    });
    use std::io::Write as _;
    // A failing stderr is no reason to fail the archive.
    let _ = writeln!(
        std::io::stderr(),
        "fieldstore: warning: {function}: {skipped}"
    );
}

/// fieldstore extension: the byte ranges of its data that the calling
/// thread's last `fdb_archive_multiple` skipped as not GRIB (a record
/// header, padding, junk between messages), as `*count` pairs of
/// `(start, end)` (end exclusive) at `*ranges`; `*count` is 0 when it
/// skipped none. Valid until the thread's next `fdb_archive_multiple`.
///
/// # Safety
/// `ranges` and `count` are NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fieldstore_skipped_bytes(
    ranges: *mut *const u64,
    count: *mut usize,
) -> c_int {
    entry("fieldstore_skipped_bytes", || {
        // SAFETY: the caller's promise.
        let ranges = unsafe { out(ranges, "ranges") }?;
        // SAFETY: the caller's promise.
        let count = unsafe { out(count, "count") }?;
        SKIPPED.with(|s| {
            let s = s.borrow();
            *ranges = s.as_ptr();
            *count = s.len() / 2;
        });
        Ok(FDB_SUCCESS)
    })
}

/// The most fields a request given to `fdb_archive_multiple` may name for
/// the check that every one of them is in the data.
const CUBE_LIMIT: u64 = 10_000_000;

/// Archive the GRIB messages of `data` if every one is a field `request`
/// names and every field it names is there (FDB5's hypercube check: over
/// the request's keywords, each combination of their values must be
/// present). Nothing is archived otherwise.
fn archive_checked(
    fs: &FieldStore,
    request: &Request,
    data: &[u8],
) -> Result<fieldstore_grib::SkippedBytes, CError> {
    let schema = fs.schema();
    let selector = schema.selector(request)?;
    let mut ready: Vec<(SplitKey, &[u8])> = Vec::new();
    let mut fields = fieldstore_grib::fields(data);
    for field in fields.by_ref() {
        let field = field?;
        let split = schema.split(&field.key).map_err(|e| {
            CError::invalid(format!(
                "GRIB message {} at byte offset {}: {e}",
                field.index, field.offset
            ))
        })?;
        let matches = selector
            .match_dataset(split.dataset.key())
            .and_then(|d| selector.match_collocation(&d, split.collocation.key()))
            .is_some_and(|c| selector.element_filter(&c).matches(split.element.key()));
        if !matches {
            return Err(CError::invalid(format!(
                "GRIB message {} at byte offset {} is not one the request names: its key is {}, the request {request}",
                field.index,
                field.offset,
                split.braced()
            )));
        }
        ready.push((split, field.bytes));
    }
    if ready.is_empty() {
        return Err(CError::invalid("the data holds no GRIB message"));
    }
    // Every combination of the request's values must be present.
    let mut dims: Vec<(&str, Vec<String>)> = Vec::new();
    let mut cube: u64 = 1;
    for (kw, values) in request.iter() {
        let Values::Items(items) = values else {
            continue;
        };
        let types = schema.types_of(kw);
        let mut set: Vec<String> = Vec::new();
        for item in items {
            let expanded: Vec<String> = types
                .iter()
                .find_map(|ty| match item {
                    Item::Value(v) => ty.canonical(v).ok().map(|c| vec![c]),
                    Item::Range { from, to, by } => ty
                        .range(from, to, by.as_deref())
                        .ok()
                        .filter(|r| r.len() <= CUBE_LIMIT)
                        .map(|r| r.iter().collect()),
                })
                .unwrap_or_default();
            for v in expanded {
                if !set.contains(&v) {
                    set.push(v);
                }
            }
        }
        cube = cube.saturating_mul(set.len() as u64);
        dims.push((kw, set));
    }
    if cube <= CUBE_LIMIT {
        let mut present: HashSet<Vec<&str>> = HashSet::new();
        for (split, _) in &ready {
            let key = split.full_key();
            let combo: Vec<&str> = dims
                .iter()
                .map(|(kw, set)| {
                    key.get(kw)
                        .and_then(|v| set.iter().find(|s| *s == v))
                        .map_or("", String::as_str)
                })
                .collect();
            present.insert(combo);
        }
        let missing = cube.saturating_sub(present.len() as u64);
        if missing > 0 {
            return Err(CError::invalid(format!(
                "the request {request} names {cube} fields, {missing} of which are not in the data ({} GRIB messages); nothing archived",
                ready.len()
            )));
        }
    }
    for (i, (split, bytes)) in ready.iter().enumerate() {
        fs.archive_split(split, bytes)
            .map_err(|e| e.context(format!("archiving GRIB message {i}")))?;
    }
    Ok(fields.skipped().clone())
}

/// List what `req` names (NULL: everything) down to `depth` (outside 1–3:
/// 3). `duplicates == true` leaves replaced fields out (FDB5's quirk: the
/// flag means *deduplicate*).
///
/// # Safety
/// `it` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_list(
    fdb: *mut fdb_handle_t,
    req: *const fdb_request_t,
    it: *mut *mut fdb_listiterator_t,
    duplicates: bool,
    depth: c_int,
) -> c_int {
    entry("fdb_list", || {
        let fs = handle(fdb)?;
        // SAFETY: the caller's promise.
        let it = unsafe { out(it, "it (the out-pointer)") }?;
        let request = request_of(req)?.unwrap_or_default();
        let depth = u8::try_from(depth)
            .ok()
            .and_then(Level::from_depth)
            .unwrap_or(Level::Element);
        let options = ListOptions {
            depth,
            duplicates: !duplicates,
        };
        let elements = fs.list(&request, options)?;
        *it = registry::LISTS
            .insert(ListState::new(elements, depth))?
            .cast();
        Ok(FDB_SUCCESS)
    })
}

/// Find the fields `req` names, in request order, and point `dr` at their
/// bytes (replacing what it held).
#[no_mangle]
pub extern "C" fn fdb_retrieve(
    fdb: *mut fdb_handle_t,
    req: *mut fdb_request_t,
    dr: *mut fdb_datareader_t,
) -> c_int {
    entry("fdb_retrieve", || {
        let fs = handle(fdb)?;
        let request = retrieve_request_of(req)?.ok_or_else(|| {
            CError::invalid("req is NULL: name the fields to retrieve (fdb_list lists everything)")
        })?;
        let reader = registry::get::<ReaderObj>(dr.cast())?;
        let found = fs.retrieve(&request)?;
        let fields = found.fields().iter().map(|(_, l)| l.clone()).collect();
        *lock(&reader.0) = Some(Stream::new(fs, fields));
        Ok(FDB_SUCCESS)
    })
}

/// Make everything archived through this handle durable and visible.
#[no_mangle]
pub extern "C" fn fdb_flush(fdb: *mut fdb_handle_t) -> c_int {
    entry("fdb_flush", || {
        handle(fdb)?.flush()?;
        Ok(FDB_SUCCESS)
    })
}

/// Flush what is pending, then release the handle (also when the flush
/// fails, which is reported). Iterators and readers made from it keep
/// working. In a process forked from the one that created it, the handle
/// is released without flushing or touching its files, and the call fails
/// saying so.
#[no_mangle]
pub extern "C" fn fdb_delete_handle(fdb: *mut fdb_handle_t) -> c_int {
    entry("fdb_delete_handle", || {
        let h = registry::remove::<HandleObj>(fdb.cast())?;
        h.fs.check_process().map_err(|e| {
            e.context(
                "released in this process without flushing (the parent's writers are untouched)",
            )
        })?;
        if h.fs.dirty() {
            h.fs.flush()?;
        }
        Ok(FDB_SUCCESS)
    })
}
