//! A group of keys' axes: the values each keyword takes in it (a
//! collocation's, an index block's), what lists of axes answer and what
//! scans prune by.

use std::collections::{BTreeMap, BTreeSet};

use crate::key::Key;

/// Values present per keyword, sorted.
pub type Axes = BTreeMap<String, BTreeSet<String>>;

/// Helpers on [`Axes`].
pub trait AxesExt {
    /// Add every `keyword=value` of `key`.
    fn add_key(&mut self, key: &Key);
}

impl AxesExt for Axes {
    fn add_key(&mut self, key: &Key) {
        for (k, v) in key.iter() {
            let Some(set) = self.get_mut(k) else {
                self.insert(k.to_string(), BTreeSet::from([v.to_string()]));
                continue;
            };
            if !set.contains(v) {
                set.insert(v.to_string());
            }
        }
    }
}
