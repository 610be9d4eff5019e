//! What a listing yields, one element per dataset, collocation or field.

use crate::key::{CollocationKey, DatasetKey, ElementKey, Key};
use crate::location::FieldLocation;

/// One result of `list`: the keys down to the requested depth, and at the
/// element level the field's location.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ListElement {
    /// Level 1.
    pub dataset: DatasetKey,
    /// Level 2 (empty when listing datasets).
    pub collocation: CollocationKey,
    /// Level 3 (empty above the element level).
    pub element: ElementKey,
    /// Where the bytes are (element level only).
    pub location: Option<FieldLocation>,
}

impl ListElement {
    /// The key of all levels joined, without empty values.
    pub fn full_key(&self) -> Key {
        Key::join_present([&self.dataset.0, &self.collocation.0, &self.element.0])
    }

    /// `fdb-list`'s line: `{dataset}{collocation}{element}`, as deep as listed.
    pub fn braced(&self) -> String {
        let mut s = self.dataset.braced();
        if !self.collocation.is_empty() {
            s.push_str(&self.collocation.braced());
        }
        if !self.element.is_empty() {
            s.push_str(&self.element.braced());
        }
        s
    }
}
