//! The state behind an `fdb_split_key_t`: the keys of one listed element,
//! level by level, as C reads them one keyword–value pair at a time.
//!
//! A split key owns a copy of the element's keys, so it stays valid after
//! `fdb_listiterator_next` (FDB5's points into the iterator's current
//! element). Its strings live in one buffer reused from element to
//! element: filling a split key allocates nothing once the buffer is large
//! enough.

use std::ffi::c_char;

use fieldstore::{Key, ListElement};

use crate::error::CError;

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
