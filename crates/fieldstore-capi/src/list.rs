//! `fdb_listiterator_t` and `fdb_split_key_t`: the results of `fdb_list`.
//!
//! A listing is computed whole by `fdb_list` (as the Rust handle's `list`
//! does) and handed out one element at a time. A split key owns a copy of
//! the element's keys, so it stays valid after `fdb_listiterator_next`
//! (FDB5's points into the iterator's current element). Its strings live
//! in one buffer reused from element to element: filling a split key
//! allocates nothing once the buffer is large enough.

use std::ffi::{c_char, c_int};

use fieldstore::{Key, Level, ListElement};

use crate::error::{entry, CError, FDB_ITERATION_COMPLETE, FDB_SUCCESS};
use crate::hot::{LISTS, SPLIT_KEYS};
use crate::util::out;

/// Opaque C type `fdb_split_key_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_split_key_t {
    _private: [u8; 0],
}

/// Opaque C type `fdb_listiterator_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_listiterator_t {
    _private: [u8; 0],
}

/// The keys of one listed element, level by level.
///
/// Invariant: `buf` holds `keyword\0value\0` for each entry, in order;
/// `entries[i]` gives the offsets of entry `i`'s keyword and value in
/// `buf` and its level (0–2). Pointers handed to C point into `buf`, which
/// is only modified by [`SplitState::fill`].
#[derive(Debug, Default)]
pub struct SplitState {
    buf: Vec<u8>,
    entries: Vec<(usize, usize, usize)>,
    next: usize,
    filled: bool,
    /// The dataset and collocation keys levels 0 and 1 were filled from,
    /// and where they end in `buf` and `entries`: the elements of one
    /// collocation share them, so the next fill keeps them and redoes the
    /// element's level only.
    prefix: Option<(
        fieldstore::DatasetKey,
        fieldstore::CollocationKey,
        usize,
        usize,
    )>,
}

impl SplitState {
    /// Take `e`'s keys: levels 1 and 2 with their empty values, level 3
    /// without (as FDB5 gives them), each level sorted by keyword (FDB5's
    /// keys are sorted maps). Iteration starts again from the first.
    /// Levels 1 and 2 are kept from the last fill when `e` shares them.
    pub fn fill(&mut self, e: &ListElement) {
        self.next = 0;
        self.filled = true;
        let from_level = match &self.prefix {
            Some((d, c, buf_len, entries_len)) if *d == e.dataset && *c == e.collocation => {
                self.buf.truncate(*buf_len);
                self.entries.truncate(*entries_len);
                2
            }
            _ => {
                self.buf.clear();
                self.entries.clear();
                self.prefix = None;
                0
            }
        };
        let levels: [(&Key, bool); 3] = [
            (e.dataset.key(), true),
            (e.collocation.key(), true),
            (e.element.key(), false),
        ];
        for (level, (key, keep_empty)) in levels.into_iter().enumerate().skip(from_level) {
            if level == 2 && from_level == 0 {
                self.prefix = Some((
                    e.dataset.clone(),
                    e.collocation.clone(),
                    self.buf.len(),
                    self.entries.len(),
                ));
            }
            let first = self.entries.len();
            for (k, v) in key.iter().filter(|(_, v)| keep_empty || !v.is_empty()) {
                let ko = self.buf.len();
                self.buf.extend_from_slice(k.as_bytes());
                self.buf.push(0);
                let vo = self.buf.len();
                self.buf.extend_from_slice(v.as_bytes());
                self.buf.push(0);
                self.entries.push((ko, vo, level));
            }
            // Sort the level by keyword, in place (no allocation): keywords
            // are unique within a key, so the NUL-terminated bytes compare
            // as the keywords do.
            let buf = &self.buf;
            self.entries[first..].sort_unstable_by(|a, b| buf[a.0..a.1].cmp(&buf[b.0..b.1]));
        }
    }

    /// Pointers to the NUL-terminated keyword and value of the next entry
    /// (into `buf`, valid until the next [`SplitState::fill`]) and its
    /// level, if any.
    pub fn next_entry(&mut self) -> Result<Option<(*const c_char, *const c_char, usize)>, CError> {
        if !self.filled {
            return Err(CError::invalid(
                "the split key is empty: fill it with fdb_listiterator_splitkey first",
            ));
        }
        let Some(&(ko, vo, level)) = self.entries.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        // In bounds: `fill` recorded offsets of bytes it pushed into `buf`.
        let base = self.buf.as_ptr().cast::<c_char>();
        Ok(Some((base.wrapping_add(ko), base.wrapping_add(vo), level)))
    }
}

/// A new, empty split key.
///
/// # Safety
/// `key` is NULL (an error) or points to writable memory for a pointer.
#[no_mangle]
pub unsafe extern "C" fn fdb_new_splitkey(key: *mut *mut fdb_split_key_t) -> c_int {
    entry("fdb_new_splitkey", || {
        // SAFETY: the caller's promise.
        let key = unsafe { out(key, "key (the out-pointer)") }?;
        *key = SPLIT_KEYS.insert(SplitState::default())?.cast();
        Ok(FDB_SUCCESS)
    })
}

/// The next keyword, value and level (0–2) of the split key;
/// `FDB_ITERATION_COMPLETE` after the last. The strings stay valid until
/// the split key is filled again or deleted.
///
/// # Safety
/// `key` and `value` are NULL (an error) or writable; `level` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_splitkey_next_metadata(
    it: *mut fdb_split_key_t,
    key: *mut *const c_char,
    value: *mut *const c_char,
    level: *mut usize,
) -> c_int {
    entry("fdb_splitkey_next_metadata", || {
        // SAFETY: the caller's promises.
        let (key, value) = unsafe { (out(key, "key")?, out(value, "value")?) };
        SPLIT_KEYS.with(it.cast(), |state| {
            match state.next_entry()? {
                None => Ok(FDB_ITERATION_COMPLETE),
                Some((k, v, l)) => {
                    // The strings are NUL-terminated in `buf` (see SplitState),
                    // which lives as long as the split key and is not modified
                    // until the next fill.
                    *key = k;
                    *value = v;
                    // SAFETY: NULL or writable (the caller's promise).
                    if let Some(level) = unsafe { level.as_mut() } {
                        *level = l;
                    }
                    Ok(FDB_SUCCESS)
                }
            }
        })
    })
}

/// Release a split key.
#[no_mangle]
pub extern "C" fn fdb_delete_splitkey(key: *mut fdb_split_key_t) -> c_int {
    entry("fdb_delete_splitkey", || {
        SPLIT_KEYS.remove(key.cast())?;
        Ok(FDB_SUCCESS)
    })
}

/// A listing being iterated.
#[derive(Debug)]
pub struct ListState {
    rest: std::vec::IntoIter<ListElement>,
    current: Option<ListElement>,
    started: bool,
    depth: Level,
    /// The current element's URI or path, NUL-terminated, for
    /// `fdb_listiterator_attrs` (reused from element to element).
    uri: Vec<u8>,
    /// The location URI `uri` was made from: fields of one data file share
    /// it, so the next element's path is usually already there.
    uri_of: Option<std::sync::Arc<str>>,
}

impl ListState {
    /// A listing of `elements`, listed down to `depth`.
    pub fn new(elements: Vec<ListElement>, depth: Level) -> ListState {
        ListState {
            rest: elements.into_iter(),
            current: None,
            started: false,
            depth,
            uri: Vec::new(),
            uri_of: None,
        }
    }

    fn current(&self) -> Result<&ListElement, CError> {
        self.current.as_ref().ok_or_else(|| {
            CError::invalid(if self.started {
                "the list iterator is at its end (fdb_listiterator_next returned FDB_ITERATION_COMPLETE)"
            } else {
                "the list iterator has no current element: call fdb_listiterator_next first"
            })
        })
    }
}

/// Move to the next element; `FDB_ITERATION_COMPLETE` after the last (and
/// at every call after that).
#[no_mangle]
pub extern "C" fn fdb_listiterator_next(it: *mut fdb_listiterator_t) -> c_int {
    entry("fdb_listiterator_next", || {
        LISTS.with(it.cast(), |state| {
            state.started = true;
            state.current = state.rest.next();
            Ok(if state.current.is_some() {
                FDB_SUCCESS
            } else {
                FDB_ITERATION_COMPLETE
            })
        })
    })
}

/// Where the current element's bytes are: the path (the URI for object
/// stores), offset and length. Only elements listed at depth 3 have one.
/// The string stays valid until the next call on the iterator.
///
/// # Safety
/// `uri`, `off` and `len` are NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_listiterator_attrs(
    it: *mut fdb_listiterator_t,
    uri: *mut *const c_char,
    off: *mut usize,
    len: *mut usize,
) -> c_int {
    entry("fdb_listiterator_attrs", || {
        // SAFETY: the caller's promises.
        let (uri, off, len) = unsafe { (out(uri, "uri")?, out(off, "off")?, out(len, "len")?) };
        LISTS.with(it.cast(), |state| {
            // The path goes into the iterator's buffer, reused from element to
            // element; it stays valid until the next call on the iterator.
            let mut buf = std::mem::take(&mut state.uri);
            let mut made_from = state.uri_of.take();
            let found = (|| {
                let e = state.current()?;
                let Some(location) = &e.location else {
                    return Err(CError::invalid(format!(
                    "the element {} has no location: elements listed at depth {} are {}; only fields (depth 3) have one",
                    e.braced(),
                    state.depth as u8,
                    if state.depth == Level::Dataset { "datasets" } else { "collocations" },
                )));
                };
                let too_big = |what: &str| {
                    CError::invalid(format!("the {what} of {location} overflows size_t"))
                };
                let o = usize::try_from(location.offset).map_err(|_| too_big("offset"))?;
                let l = usize::try_from(location.length).map_err(|_| too_big("length"))?;
                if made_from
                    .as_ref()
                    .is_some_and(|u| std::sync::Arc::ptr_eq(u, &location.uri))
                {
                    return Ok((o, l));
                }
                let name = if location.scheme() == "file" {
                    location.path()
                } else {
                    &location.uri
                };
                if name.contains('\0') {
                    return Err(CError::invalid(format!(
                        "the location {location} holds a NUL byte"
                    )));
                }
                buf.clear();
                buf.extend_from_slice(name.as_bytes());
                buf.push(0);
                made_from = Some(location.uri.clone());
                Ok((o, l))
            })();
            state.uri = buf;
            state.uri_of = if found.is_ok() { made_from } else { None };
            let (o, l) = found?;
            *off = o;
            *len = l;
            *uri = state.uri.as_ptr().cast();
            Ok(FDB_SUCCESS)
        })
    })
}

/// Fill `key` with the current element's keys (see [`SplitState::fill`]).
#[no_mangle]
pub extern "C" fn fdb_listiterator_splitkey(
    it: *mut fdb_listiterator_t,
    key: *mut fdb_split_key_t,
) -> c_int {
    entry("fdb_listiterator_splitkey", || {
        LISTS.with(it.cast(), |state| {
            SPLIT_KEYS.with(key.cast(), |sk| {
                sk.fill(state.current()?);
                Ok(FDB_SUCCESS)
            })
        })
    })
}

/// Release a list iterator.
#[no_mangle]
pub extern "C" fn fdb_delete_listiterator(it: *mut fdb_listiterator_t) -> c_int {
    entry("fdb_delete_listiterator", || {
        LISTS.remove(it.cast())?;
        Ok(FDB_SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn element(dataset: &str, collocation: &str, element: &str) -> ListElement {
        ListElement {
            dataset: dataset.parse().unwrap(),
            collocation: collocation.parse().unwrap(),
            element: element.parse().unwrap(),
            location: None,
        }
    }

    fn drain(s: &mut SplitState) -> Vec<(String, String, usize)> {
        let mut out = Vec::new();
        while let Some((k, v, l)) = s.next_entry().unwrap() {
            // SAFETY: NUL-terminated strings in `s.buf`, unchanged until the
            // next fill.
            let (k, v) = unsafe { (CStr::from_ptr(k), CStr::from_ptr(v)) };
            out.push((k.to_str().unwrap().into(), v.to_str().unwrap().into(), l));
        }
        out
    }

    /// A split key filled from element to element gives each element's own
    /// keys, whether the next element shares its dataset and collocation
    /// (levels kept) or not (all redone): each level sorted, empty values
    /// kept above level 3 only.
    #[test]
    fn refills_give_each_elements_own_keys() {
        let elements = [
            element(
                "class=od,expver=0001",
                "type=fc,levtype=pl",
                "step=0,param=130",
            ),
            element(
                "class=od,expver=0001",
                "type=fc,levtype=pl",
                "step=6,param=,levelist=500",
            ),
            element(
                "class=od,expver=0001",
                "type=an,levtype=",
                "step=0,param=130",
            ),
            element(
                "class=rd,expver=0001",
                "type=an,levtype=",
                "step=0,param=131",
            ),
            element(
                "class=od,expver=0001",
                "type=fc,levtype=pl",
                "step=0,param=130",
            ),
        ];
        let mut s = SplitState::default();
        for e in &elements {
            s.fill(e);
            let mut expected = Vec::new();
            for (level, key) in [e.dataset.key(), e.collocation.key(), e.element.key()]
                .into_iter()
                .enumerate()
            {
                let mut pairs: Vec<(String, String, usize)> = key
                    .iter()
                    .filter(|(_, v)| level < 2 || !v.is_empty())
                    .map(|(k, v)| (k.to_string(), v.to_string(), level))
                    .collect();
                pairs.sort();
                expected.extend(pairs);
            }
            assert_eq!(drain(&mut s), expected, "{}", e.braced());
        }
    }
}
