//! What `list` yields, and how many datasets a request may name to have
//! them opened one by one.

use fieldstore_core::Level;

/// Per-call settings of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOptions {
    /// Stop at the dataset, collocation or element level.
    pub depth: Level,
    /// Include masked (replaced) entries, newest first.
    pub duplicates: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            depth: Level::Element,
            duplicates: false,
        }
    }
}

pub use fieldstore_core::ListElement;

/// The most dataset keys a request may name to have them opened one by
/// one instead of listing the catalogue (`FieldStore::candidate_datasets`).
/// Each costs one open (RADOS: two reads; S3: a GET; POSIX: an `open`),
/// the open a listed dataset that matches costs anyway: only keys that
/// name no dataset cost extra, whatever the store holds — and a watch
/// pays it at every look (RADOS: at least every 50 ms). Measured on a
/// one-node memstore Ceph (release build): 64 absent keys cost 12.5 ms,
/// about what listing a root of 2,000–3,000 datasets costs (2,000: 6.4
/// ms; 10,000: 52 ms), while 256 absent keys cost 91 ms. A request naming
/// a few runs of a few streams over a few weeks stays under it; more
/// lists, as before.
pub(crate) const PINNED_DATASETS_LIMIT: usize = 64;
