//! The state behind an `fdb_listiterator_t`: a listing computed whole by
//! `fdb_list` (as the Rust handle's `list` does), handed out one element at
//! a time.

use std::ffi::c_char;

use fieldstore::{Level, ListElement};

use crate::error::CError;

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

    /// The current element.
    ///
    /// # Errors
    /// `InvalidInput` before the first [`ListState::advance`] and after the
    /// last element.
    pub fn current(&self) -> Result<&ListElement, CError> {
        self.current.as_ref().ok_or_else(|| {
            CError::invalid(if self.started {
                "the list iterator is at its end (fdb_listiterator_next returned FDB_ITERATION_COMPLETE)"
            } else {
                "the list iterator has no current element: call fdb_listiterator_next first"
            })
        })
    }

    /// Move to the next element; whether there is one (never again after
    /// the last).
    pub fn advance(&mut self) -> bool {
        self.started = true;
        self.current = self.rest.next();
        self.current.is_some()
    }

    /// Where the current element's bytes are: its path (the URI for object
    /// stores), NUL-terminated, offset and length. The path points into the
    /// iterator's buffer, valid until the next call on the iterator.
    ///
    /// # Errors
    /// `InvalidInput` when there is no current element or it has no
    /// location (listed above depth 3), when its offset or length overflow
    /// `size_t`, and when its path holds a NUL byte.
    pub fn attrs(&mut self) -> Result<(*const c_char, usize, usize), CError> {
        // The path goes into the iterator's buffer, reused from element to
        // element; it stays valid until the next call on the iterator.
        let mut buf = std::mem::take(&mut self.uri);
        let mut made_from = self.uri_of.take();
        let found = (|| {
            let e = self.current()?;
            let Some(location) = &e.location else {
                return Err(CError::invalid(format!(
                "the element {} has no location: elements listed at depth {} are {}; only fields (depth 3) have one",
                e.braced(),
                self.depth as u8,
                if self.depth == Level::Dataset { "datasets" } else { "collocations" },
            )));
            };
            let too_big =
                |what: &str| CError::invalid(format!("the {what} of {location} overflows size_t"));
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
        self.uri = buf;
        self.uri_of = if found.is_ok() { made_from } else { None };
        let (o, l) = found?;
        Ok((self.uri.as_ptr().cast(), o, l))
    }
}
