//! What `list` yields.

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
