//! Annotations: entries that add an extension to another entry
//! ([`FieldLocation::annotates`]), resolved the same way by every
//! catalogue.
//!
//! An annotation of key K at location L is written after the entry it
//! annotates (whoever writes it read that entry first), so it is always
//! newer than it. It applies to the newest entry of K that is not an
//! annotation if, and only if, that entry's location is L
//! ([`FieldLocation::same_field`]); then that entry is handed back with
//! the annotation's extension, where it was (its own age, so masking and
//! replacement are unchanged). An annotation never makes a field visible:
//! one whose field was replaced (another location), wiped or reclaimed
//! (no entry left) applies to nothing and is skipped. Between annotations
//! of one entry, the newest wins.
//!
//! Two places apply them: [`Pending`], for readers visiting entries newest
//! first ([`crate::catalogue::visit_newest_first`]), and
//! [`annotate_newest`], for the newest-entry map merged oldest first
//! ([`crate::engine`]). The memory catalogue applies them when it flushes.

use std::collections::HashMap;
use std::sync::Arc;

use crate::{ElementKey, FieldLocation};

/// Annotations met while visiting entries newest first, waiting for the
/// entry they annotate (an older one). Costs nothing until one is met.
#[derive(Debug, Default)]
pub struct Pending {
    held: HashMap<ElementKey, Vec<FieldLocation>>,
}

impl Pending {
    /// Hold `annotation` (an entry of `element` that
    /// [`FieldLocation::annotates`]) for an older entry at its location.
    /// Call newest first: of two for one location, the first held wins.
    pub fn hold(&mut self, element: &ElementKey, annotation: &FieldLocation) {
        self.held
            .entry(element.clone())
            .or_default()
            .push(annotation.clone());
    }

    /// `entry` (an entry of `element`, not an annotation), with the
    /// extension of the newest annotation held for its location, if any
    /// (then consumed).
    pub fn apply<'a>(
        &mut self,
        element: &ElementKey,
        entry: &'a FieldLocation,
    ) -> std::borrow::Cow<'a, FieldLocation> {
        if self.held.is_empty() {
            return std::borrow::Cow::Borrowed(entry);
        }
        let Some(held) = self.held.get_mut(element) else {
            return std::borrow::Cow::Borrowed(entry);
        };
        let Some(i) = held.iter().position(|a| a.same_field(entry)) else {
            return std::borrow::Cow::Borrowed(entry);
        };
        let annotation = held.remove(i);
        // Older annotations of the same location are superseded.
        held.retain(|a| !a.same_field(entry));
        if held.is_empty() {
            self.held.remove(element);
        }
        std::borrow::Cow::Owned(with_extension(entry, annotation.extension))
    }
}

/// `entry` with `extension` (and never an annotation itself).
fn with_extension(entry: &FieldLocation, extension: Option<Arc<[u8]>>) -> FieldLocation {
    FieldLocation {
        extension,
        annotates: false,
        ..entry.clone()
    }
}

/// Apply `annotation` (an entry of an element that
/// [`FieldLocation::annotates`]) to `newest`, the element's newest entry
/// so far merging oldest first: its extension replaces `newest`'s if
/// `newest` is at its location; otherwise nothing happens. Returns whether
/// it applied.
pub fn annotate_newest(newest: Option<&mut FieldLocation>, annotation: &FieldLocation) -> bool {
    match newest {
        Some(n) if n.same_field(annotation) => {
            n.extension.clone_from(&annotation.extension);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(s: &str) -> ElementKey {
        ElementKey(s.parse().unwrap())
    }

    #[test]
    fn applies_only_at_the_same_location_newest_first() {
        let k = el("step=1");
        let l1 = FieldLocation::new("file:///a", 0, 10);
        let l2 = FieldLocation::new("file:///a", 10, 10);
        let mut p = Pending::default();
        assert_eq!(p.apply(&k, &l1).extension, None, "nothing held");
        p.hold(&k, &l1.annotation(&b"new"[..]));
        p.hold(&k, &l1.annotation(&b"old"[..]));
        // A newer field of the key at another location: untouched.
        assert_eq!(p.apply(&k, &l2).into_owned(), l2);
        let got = p.apply(&k, &l1).into_owned();
        assert_eq!(got.extension.as_deref(), Some(&b"new"[..]));
        assert!(!got.annotates);
        // Consumed, the older one with it.
        assert_eq!(p.apply(&k, &l1).extension, None);
        assert!(p.held.is_empty());
    }

    #[test]
    fn merged_oldest_first_only_the_same_location() {
        let l1 = FieldLocation::new("file:///a", 0, 10);
        let l2 = FieldLocation::new("file:///b", 0, 10);
        let mut newest = l2.clone();
        assert!(!annotate_newest(
            Some(&mut newest),
            &l1.annotation(&b"x"[..])
        ));
        assert_eq!(newest, l2);
        assert!(!annotate_newest(None, &l1.annotation(&b"x"[..])));
        let mut newest = l1.clone();
        assert!(annotate_newest(
            Some(&mut newest),
            &l1.annotation(&b"x"[..])
        ));
        assert_eq!(newest.extension.as_deref(), Some(&b"x"[..]));
        assert!(!newest.annotates);
    }
}
