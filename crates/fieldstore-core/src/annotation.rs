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

use crate::key::ElementKey;
use crate::location::FieldLocation;

/// One held annotation: its key and location.
type Held<'a> = (&'a ElementKey, &'a FieldLocation);

/// Annotations met while visiting entries newest first, waiting for the
/// entry they annotate (an older one). Costs nothing until one is met;
/// then holds references (no copies), found by the location's offset and
/// length (hashed cheaply), the key and URI compared only there. A
/// listing after every field was annotated holds one annotation per
/// field: no allocation each, a few tens of nanoseconds each.
#[derive(Debug, Default)]
pub struct Pending<'a> {
    /// The newest annotation held per (offset, length).
    first: HashMap<(u64, u64), Held<'a>, BuildOffsetHasher>,
    /// Others at an (offset, length) already held (another data file,
    /// another key, an older annotation of the same field): rare.
    more: Vec<Held<'a>>,
}

impl<'a> Pending<'a> {
    /// Hold `annotation` (an entry of `element` that
    /// [`FieldLocation::annotates`]) for an older entry at its location.
    /// Call newest first: of two for one location, the first held wins.
    pub fn hold(&mut self, element: &'a ElementKey, annotation: &'a FieldLocation) {
        match self.first.entry((annotation.offset, annotation.length)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert((element, annotation));
            }
            std::collections::hash_map::Entry::Occupied(_) => self.more.push((element, annotation)),
        }
    }

    /// `entry` (an entry of `element`, not an annotation), with the
    /// extension of the newest annotation held for it (same key, same
    /// location), if any (then consumed, with any older one for it).
    pub fn apply<'e>(
        &mut self,
        element: &ElementKey,
        entry: &'e FieldLocation,
    ) -> std::borrow::Cow<'e, FieldLocation> {
        if self.first.is_empty() {
            return std::borrow::Cow::Borrowed(entry);
        }
        let at = (entry.offset, entry.length);
        let mine = |(k, a): &Held<'_>| *k == element && a.same_field(entry);
        let found = match self.first.get(&at) {
            None => return std::borrow::Cow::Borrowed(entry),
            Some(h) if mine(h) => self.first.remove(&at),
            Some(_) => self.more.iter().position(mine).map(|i| self.more[i]),
        };
        let Some((_, annotation)) = found else {
            return std::borrow::Cow::Borrowed(entry);
        };
        if !self.more.is_empty() {
            self.more.retain(|h| !mine(h));
            // Another one at this (offset, length) takes the place freed.
            if !self.first.contains_key(&at) {
                if let Some(i) = self
                    .more
                    .iter()
                    .position(|(_, a)| (a.offset, a.length) == at)
                {
                    self.first.insert(at, self.more.remove(i));
                }
            }
        }
        std::borrow::Cow::Owned(with_extension(entry, annotation.extension.clone()))
    }
}

/// Hashes (offset, length) pairs: a multiply and a rotate, enough for
/// offsets of fields (distinct, spread) and no attacker to fear (a reader's
/// own index).
pub type BuildOffsetHasher = std::hash::BuildHasherDefault<OffsetHasher>;

/// See [`BuildOffsetHasher`].
#[derive(Debug, Default, Clone, Copy)]
pub struct OffsetHasher(u64);

impl std::hash::Hasher for OffsetHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(29) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
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
        let (new, old) = (l1.annotation(&b"new"[..]), l1.annotation(&b"old"[..]));
        let other_key = el("step=2");
        let mut p = Pending::default();
        assert_eq!(p.apply(&k, &l1).extension, None, "nothing held");
        p.hold(&k, &new);
        p.hold(&k, &old);
        // Another key at the same location (impossible, but): untouched.
        p.hold(&other_key, &new);
        assert_eq!(p.apply(&el("step=3"), &l1).into_owned(), l1);
        // A newer field of the key at another location: untouched.
        assert_eq!(p.apply(&k, &l2).into_owned(), l2);
        let got = p.apply(&k, &l1).into_owned();
        assert_eq!(got.extension.as_deref(), Some(&b"new"[..]));
        assert!(!got.annotates);
        // Consumed, the older one with it.
        assert_eq!(p.apply(&k, &l1).extension, None);
        assert_eq!(
            p.apply(&other_key, &l1).extension.as_deref(),
            Some(&b"new"[..])
        );
        assert!(p.first.is_empty() && p.more.is_empty());
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
