//! `fdb_wipe` and `fdb_purge`, and their iterators and elements.
//!
//! Both act when called (FDB5 acts as the iterator is consumed; an
//! unconsumed FDB5 iterator wipes nothing) and then hand out their report
//! line by line, in the words of `fieldstore wipe`/`purge`. With
//! `porcelain`, the lines are only the names of the files or objects
//! deleted (or, in a dry run, that would be).
//!
//! As in FDB5, the call to `next` that returns `FDB_ITERATION_COMPLETE`
//! also gives an element (empty), which the caller deletes like the others.

use std::ffi::{c_char, c_int, CString};
use std::sync::Mutex;

use fieldstore::maintenance::Item;
use fieldstore::{PurgeReport, WipeOptions, WipeReport};

use crate::error::{entry, CError, FDB_ITERATION_COMPLETE, FDB_SUCCESS};
use crate::handle::{fdb_handle_t, handle};
use crate::kind::Kind;
use crate::registry::{self, Object};
use crate::request::{fdb_request_t, request_of};
use crate::util::{lock, out};

/// Opaque C type `fdb_wipe_iterator_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_wipe_iterator_t {
    _private: [u8; 0],
}

/// Opaque C type `fdb_wipe_element_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_wipe_element_t {
    _private: [u8; 0],
}

/// Opaque C type `fdb_purge_iterator_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_purge_iterator_t {
    _private: [u8; 0],
}

/// Opaque C type `fdb_purge_element_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_purge_element_t {
    _private: [u8; 0],
}

/// The lines of a report, handed out one by one.
#[derive(Debug)]
pub struct Lines(Mutex<std::vec::IntoIter<String>>);

/// `fdb_wipe_iterator_t`.
#[derive(Debug)]
pub struct WipeIter(pub Lines);
/// `fdb_purge_iterator_t`.
#[derive(Debug)]
pub struct PurgeIter(pub Lines);
/// `fdb_wipe_element_t`: one line.
#[derive(Debug)]
pub struct WipeElement(pub CString);
/// `fdb_purge_element_t`: one line.
#[derive(Debug)]
pub struct PurgeElement(pub CString);

impl Object for WipeIter {
    const KIND: Kind = Kind::WipeIterator;
}
impl Object for PurgeIter {
    const KIND: Kind = Kind::PurgeIterator;
}
impl Object for WipeElement {
    const KIND: Kind = Kind::WipeElement;
}
impl Object for PurgeElement {
    const KIND: Kind = Kind::PurgeElement;
}

fn item_text(item: &Item) -> String {
    match item.bytes {
        Some(b) => format!("{} {} {b}", item.kind.name(), item.name),
        None => format!("{} {} -", item.kind.name(), item.name),
    }
}

fn summary(past: &str, datasets: usize, items: usize, bytes: u64, done: bool) -> String {
    let ds = if datasets == 1 { "dataset" } else { "datasets" };
    let what = if items == 1 {
        "file or object"
    } else {
        "files or objects"
    };
    if done {
        format!("{past} {datasets} {ds}: deleted {items} {what} ({bytes} bytes)")
    } else {
        format!(
            "dry run: would delete {items} {what} ({bytes} bytes) of {datasets} {ds}; nothing deleted (doit to delete)"
        )
    }
}

/// The lines of a wipe report.
pub fn wipe_lines(report: &WipeReport, porcelain: bool, unsafe_wipe_all: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut items = 0;
    let mut bytes = 0;
    for d in &report.datasets {
        let deleted: Vec<&Item> = d
            .items
            .iter()
            .chain(d.unknown.iter().filter(|_| unsafe_wipe_all))
            .collect();
        items += deleted.len();
        bytes += deleted.iter().filter_map(|i| i.bytes).sum::<u64>();
        if porcelain {
            lines.extend(deleted.iter().map(|i| i.name.clone()));
            continue;
        }
        lines.push(d.summary());
        lines.extend(d.items.iter().map(|i| format!("  delete {}", item_text(i))));
        for i in &d.unknown {
            let note = if unsafe_wipe_all {
                "not created by fieldstore: deleted too (unsafeWipeAll)"
            } else {
                "not created by fieldstore: the wipe refuses to run without unsafeWipeAll"
            };
            lines.push(format!("  {} ({note})", item_text(i)));
        }
        lines.extend(
            d.kept
                .iter()
                .map(|k| format!("  keep {} ({})", item_text(&k.item), k.reason)),
        );
    }
    if !porcelain {
        lines.push(if report.datasets.is_empty() {
            "nothing to wipe: no dataset or collocation matches the request".to_string()
        } else {
            summary("wiped", report.datasets.len(), items, bytes, report.done)
        });
    }
    lines
}

/// The lines of a purge report.
pub fn purge_lines(report: &PurgeReport, porcelain: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut items = 0;
    let mut bytes = 0;
    for d in &report.datasets {
        items += d.items.len();
        bytes += d.items.iter().filter_map(|i| i.bytes).sum::<u64>();
        if porcelain {
            lines.extend(d.items.iter().map(|i| i.name.clone()));
            continue;
        }
        lines.push(format!(
            "purge {} ({} replaced fields, {} bytes) at {}",
            d.dataset.braced(),
            d.duplicates,
            d.duplicate_bytes,
            d.place
        ));
        lines.extend(d.items.iter().map(|i| format!("  delete {}", item_text(i))));
        lines.extend(
            d.kept
                .iter()
                .map(|k| format!("  keep {} ({})", item_text(&k.item), k.reason)),
        );
    }
    if !porcelain {
        lines.push(summary(
            "purged",
            report.datasets.len(),
            items,
            bytes,
            report.done,
        ));
    }
    lines
}

fn request_required(req: *mut fdb_request_t, what: &str) -> Result<fieldstore::Request, CError> {
    request_of(req)?.ok_or_else(|| {
        CError::invalid(format!(
            "req is NULL: name what to {what} (an empty request names everything)"
        ))
    })
}

/// Wipe the datasets or collocations `req` names (a dry run unless `doit`)
/// and iterate over the report.
///
/// # Safety
/// `it` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_wipe(
    fdb: *mut fdb_handle_t,
    req: *mut fdb_request_t,
    doit: bool,
    porcelain: bool,
    unsafe_wipe_all: bool,
    it: *mut *mut fdb_wipe_iterator_t,
) -> c_int {
    entry("fdb_wipe", || {
        let fs = handle(fdb)?;
        // SAFETY: the caller's promise.
        let it = unsafe { out(it, "it (the out-pointer)") }?;
        let request = request_required(req, "wipe")?;
        let report = fs.wipe(
            &request,
            WipeOptions {
                doit,
                unsafe_wipe_all,
            },
        )?;
        let lines = wipe_lines(&report, porcelain, unsafe_wipe_all);
        *it = registry::insert(WipeIter(Lines(Mutex::new(lines.into_iter())))).cast();
        Ok(FDB_SUCCESS)
    })
}

/// Remove the bytes of replaced fields under `req` (a dry run unless
/// `doit`) and iterate over the report.
///
/// # Safety
/// `it` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_purge(
    fdb: *mut fdb_handle_t,
    req: *mut fdb_request_t,
    doit: bool,
    porcelain: bool,
    it: *mut *mut fdb_purge_iterator_t,
) -> c_int {
    entry("fdb_purge", || {
        let fs = handle(fdb)?;
        // SAFETY: the caller's promise.
        let it = unsafe { out(it, "it (the out-pointer)") }?;
        let request = request_required(req, "purge")?;
        let report = fs.purge(&request, doit)?;
        let lines = purge_lines(&report, porcelain);
        *it = registry::insert(PurgeIter(Lines(Mutex::new(lines.into_iter())))).cast();
        Ok(FDB_SUCCESS)
    })
}

/// The next line of `lines` (empty at the end) and the code to return.
fn next_line(lines: &Lines) -> (CString, c_int) {
    match lock(&lines.0).next() {
        // Report lines come from keys and paths, which hold no NUL.
        Some(line) => (CString::new(line).unwrap_or_default(), FDB_SUCCESS),
        None => (CString::default(), FDB_ITERATION_COMPLETE),
    }
}

/// The next line of a wipe report as a new element; at the end,
/// `FDB_ITERATION_COMPLETE` and an empty element.
///
/// # Safety
/// `element` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_wipe_iterator_next(
    it: *mut fdb_wipe_iterator_t,
    element: *mut *mut fdb_wipe_element_t,
) -> c_int {
    entry("fdb_wipe_iterator_next", || {
        let w = registry::get::<WipeIter>(it.cast())?;
        // SAFETY: the caller's promise.
        let element = unsafe { out(element, "element (the out-pointer)") }?;
        let (line, code) = next_line(&w.0);
        *element = registry::insert(WipeElement(line)).cast();
        Ok(code)
    })
}

/// The next line of a purge report (as [`fdb_wipe_iterator_next`]).
///
/// # Safety
/// `element` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_purge_iterator_next(
    it: *mut fdb_purge_iterator_t,
    element: *mut *mut fdb_purge_element_t,
) -> c_int {
    entry("fdb_purge_iterator_next", || {
        let p = registry::get::<PurgeIter>(it.cast())?;
        // SAFETY: the caller's promise.
        let element = unsafe { out(element, "element (the out-pointer)") }?;
        let (line, code) = next_line(&p.0);
        *element = registry::insert(PurgeElement(line)).cast();
        Ok(code)
    })
}

/// A wipe element's line; valid until the element is deleted.
///
/// # Safety
/// `str` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_wipe_element_string(
    element: *mut fdb_wipe_element_t,
    str: *mut *const c_char,
) -> c_int {
    entry("fdb_wipe_element_string", || {
        let e = registry::get::<WipeElement>(element.cast())?;
        // SAFETY: the caller's promise.
        let str = unsafe { out(str, "str") }?;
        // The string lives in the element, which the registry keeps alive
        // until `fdb_delete_wipe_element` (its bytes never move: a
        // `CString` is a heap allocation that is never modified).
        *str = e.0.as_ptr();
        Ok(FDB_SUCCESS)
    })
}

/// A purge element's line; valid until the element is deleted.
///
/// # Safety
/// `str` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_purge_element_string(
    element: *mut fdb_purge_element_t,
    str: *mut *const c_char,
) -> c_int {
    entry("fdb_purge_element_string", || {
        let e = registry::get::<PurgeElement>(element.cast())?;
        // SAFETY: the caller's promise.
        let str = unsafe { out(str, "str") }?;
        // As in `fdb_wipe_element_string`.
        *str = e.0.as_ptr();
        Ok(FDB_SUCCESS)
    })
}

/// Release a wipe element.
#[no_mangle]
pub extern "C" fn fdb_delete_wipe_element(element: *mut fdb_wipe_element_t) -> c_int {
    entry("fdb_delete_wipe_element", || {
        registry::remove::<WipeElement>(element.cast())?;
        Ok(FDB_SUCCESS)
    })
}

/// Release a purge element.
#[no_mangle]
pub extern "C" fn fdb_delete_purge_element(element: *mut fdb_purge_element_t) -> c_int {
    entry("fdb_delete_purge_element", || {
        registry::remove::<PurgeElement>(element.cast())?;
        Ok(FDB_SUCCESS)
    })
}

/// Release a wipe iterator.
#[no_mangle]
pub extern "C" fn fdb_delete_wipe_iterator(it: *mut fdb_wipe_iterator_t) -> c_int {
    entry("fdb_delete_wipe_iterator", || {
        registry::remove::<WipeIter>(it.cast())?;
        Ok(FDB_SUCCESS)
    })
}

/// Release a purge iterator.
#[no_mangle]
pub extern "C" fn fdb_delete_purge_iterator(it: *mut fdb_purge_iterator_t) -> c_int {
    entry("fdb_delete_purge_iterator", || {
        registry::remove::<PurgeIter>(it.cast())?;
        Ok(FDB_SUCCESS)
    })
}
