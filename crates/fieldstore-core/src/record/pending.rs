//! The entries a catalogue writer has inserted since its last flush, and
//! their grouping into index blocks ([`super::block`]) as the POSIX and
//! RADOS catalogues write them (`docs/format/posix.md`,
//! `docs/format/rados.md`). No I/O.
//!
//! [`PendingEntries::groups`] yields, collocation by collocation in order
//! of each collocation's first insert, the maximal runs of consecutive
//! entries (in insertion order) that share one element keyword list, each
//! cut into pieces of at most a given number of entries. One group is one
//! block; the backends number blocks in this order (POSIX in the FLUSH
//! record, RADOS in the blocks' omap keys), so the order is part of their
//! formats.
//!
//! Invariants:
//! - Every entry of a group has the keywords of the group's first entry,
//!   in the same order (what [`super::block::encode`] requires); no group
//!   is empty.
//! - Entries keep their insertion order within a collocation until
//!   [`PendingEntries::take`], which orders them for listing
//!   ([`crate::record::block::order_block`]); either way a later entry for the same element
//!   (same collocation, so same keyword list) is newer and comes after the
//!   earlier one, in the same group or a later one.
//! - A keyword list may begin more than one group of a collocation: when
//!   entries with another list were inserted in between, or when a run is
//!   longer than the limit. Runs are not merged.

use std::collections::HashMap;

use crate::key::{CollocationKey, ElementKey};
use crate::location::FieldLocation;

/// Entries inserted since the last flush, per collocation in first-insert
/// order.
#[derive(Debug, Clone, Default)]
pub struct PendingEntries {
    collocations: Vec<(CollocationKey, Vec<(ElementKey, FieldLocation)>)>,
    positions: HashMap<CollocationKey, usize>,
    len: usize,
}

impl PendingEntries {
    /// No entries.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add an entry after all earlier ones of its collocation.
    pub fn insert(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        location: &FieldLocation,
    ) {
        let i = match self.positions.get(collocation) {
            Some(&i) => i,
            None => {
                self.positions
                    .insert(collocation.clone(), self.collocations.len());
                self.collocations.push((collocation.clone(), Vec::new()));
                self.collocations.len() - 1
            }
        };
        let (_, entries) = &mut self.collocations[i];
        entries.push((element.clone(), location.clone()));
        self.len += 1;
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// All entries, leaving none, each collocation's put in the order its
    /// blocks are written ([`crate::record::block::order_block`]: FDB5's list
    /// order when read backwards; one key's entries keep their order).
    pub fn take(&mut self) -> PendingEntries {
        let mut all = std::mem::take(self);
        for (_, entries) in &mut all.collocations {
            crate::record::block::order_block(entries);
        }
        all
    }

    /// The groups, one per block, in block order (see the module doc):
    /// runs of one keyword list, not cut by size.
    pub fn groups(&self) -> Groups<'_> {
        self.groups_at_most(usize::MAX)
    }

    /// As [`groups`](Self::groups), with each run cut into groups of at
    /// most `max_entries` entries (0 is taken as 1), in order.
    pub fn groups_at_most(&self, max_entries: usize) -> Groups<'_> {
        Groups {
            collocations: &self.collocations,
            collocation: 0,
            start: 0,
            max: max_entries.max(1),
        }
    }
}

/// The groups of [`PendingEntries`]: a collocation and entries that share
/// one element keyword list.
#[derive(Debug, Clone)]
pub struct Groups<'a> {
    collocations: &'a [(CollocationKey, Vec<(ElementKey, FieldLocation)>)],
    /// The collocation being split, and where its next group starts.
    collocation: usize,
    start: usize,
    max: usize,
}

impl<'a> Iterator for Groups<'a> {
    type Item = (&'a CollocationKey, &'a [(ElementKey, FieldLocation)]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (collocation, entries) = self.collocations.get(self.collocation)?;
            if self.start >= entries.len() {
                self.collocation += 1;
                self.start = 0;
                continue;
            }
            let start = self.start;
            let first = &entries[start].0;
            let mut end = start + 1;
            while end < entries.len()
                && end - start < self.max
                && entries[end].0.keywords().eq(first.keywords())
            {
                end += 1;
            }
            self.start = end;
            return Some((collocation, &entries[start..end]));
        }
    }
}

impl std::iter::FusedIterator for Groups<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> CollocationKey {
        s.parse().unwrap()
    }

    fn e(s: &str) -> ElementKey {
        s.parse().unwrap()
    }

    /// The `n`th field written: offsets tell entries apart.
    fn l(n: u64) -> FieldLocation {
        FieldLocation::new("file:///ds/w.data", n, 1)
    }

    /// Each group as its collocation and the offsets of its entries.
    fn shape(p: &PendingEntries, max: usize) -> Vec<(String, Vec<u64>)> {
        p.groups_at_most(max)
            .map(|(c, es)| (c.to_string(), es.iter().map(|(_, l)| l.offset).collect()))
            .collect()
    }

    #[test]
    fn empty_has_no_groups() {
        let p = PendingEntries::new();
        assert!(p.is_empty());
        assert_eq!(p.len(), 0);
        assert_eq!(p.groups().count(), 0);
    }

    #[test]
    fn collocations_in_first_insert_order_entries_in_insert_order() {
        let mut p = PendingEntries::new();
        let (b, a) = (c("type=b"), c("type=a"));
        p.insert(&b, &e("step=0"), &l(0));
        p.insert(&a, &e("step=0"), &l(1));
        p.insert(&b, &e("step=6"), &l(2));
        p.insert(&a, &e("step=6"), &l(3));
        p.insert(&b, &e("step=12"), &l(4));
        assert_eq!(p.len(), 5);
        assert!(!p.is_empty());
        // Not sorted: `type=b` was inserted first.
        assert_eq!(
            shape(&p, usize::MAX),
            [
                ("type=b".into(), vec![0, 2, 4]),
                ("type=a".into(), vec![1, 3])
            ]
        );
    }

    #[test]
    fn groups_are_runs_of_one_keyword_list() {
        let mut p = PendingEntries::new();
        let x = c("type=x");
        p.insert(&x, &e("step=0,param=t"), &l(0));
        p.insert(&x, &e("step=6,param=t"), &l(1));
        p.insert(&x, &e("step=0,levelist=1,param=t"), &l(2));
        // Same keywords in another order: another list.
        p.insert(&x, &e("param=t,step=0"), &l(3));
        // Back to the first list: a new group, not merged into the first.
        p.insert(&x, &e("step=12,param=t"), &l(4));
        p.insert(&x, &e("step=18,param=t"), &l(5));
        assert_eq!(
            shape(&p, usize::MAX),
            [
                ("type=x".into(), vec![0, 1]),
                ("type=x".into(), vec![2]),
                ("type=x".into(), vec![3]),
                ("type=x".into(), vec![4, 5]),
            ]
        );
        for (_, es) in p.groups() {
            let first: Vec<&str> = es[0].0.keywords().collect();
            assert!(es
                .iter()
                .all(|(k, _)| k.keywords().eq(first.iter().copied())));
        }
    }

    #[test]
    fn newer_entries_for_an_element_stay_after_older_ones() {
        let mut p = PendingEntries::new();
        let x = c("type=x");
        p.insert(&x, &e("step=0"), &l(0));
        p.insert(&x, &e("step=6"), &l(1));
        p.insert(&x, &e("step=0"), &l(2));
        p.insert(&x, &e("levelist=1"), &l(3));
        p.insert(&x, &e("step=0"), &l(4));
        for max in [1, 2, usize::MAX] {
            let order: Vec<u64> = p
                .groups_at_most(max)
                .flat_map(|(_, es)| es)
                .filter(|(k, _)| *k == e("step=0"))
                .map(|(_, l)| l.offset)
                .collect();
            assert_eq!(order, [0, 2, 4], "max {max}");
        }
        assert_eq!(
            shape(&p, usize::MAX),
            [
                ("type=x".into(), vec![0, 1, 2]),
                ("type=x".into(), vec![3]),
                ("type=x".into(), vec![4]),
            ]
        );
    }

    #[test]
    fn a_limit_cuts_runs_in_order() {
        let mut p = PendingEntries::new();
        let (x, y) = (c("type=x"), c("type=y"));
        for n in 0..5 {
            p.insert(&x, &e(&format!("step={n}")), &l(n));
        }
        p.insert(&y, &e("step=0"), &l(5));
        p.insert(&x, &e("levelist=1"), &l(6));
        assert_eq!(
            shape(&p, 2),
            [
                ("type=x".into(), vec![0, 1]),
                ("type=x".into(), vec![2, 3]),
                ("type=x".into(), vec![4]),
                ("type=x".into(), vec![6]),
                ("type=y".into(), vec![5]),
            ]
        );
        assert_eq!(shape(&p, 0), shape(&p, 1));
        assert_eq!(p.groups_at_most(1).count(), 7);
        assert_eq!(p.groups().count(), 3);
    }

    /// The grouping the POSIX and RADOS writers did before this module (a
    /// map to first-insert positions, then runs cut at `max`), against
    /// which the block order of their formats was fixed.
    fn reference(
        inserts: &[(CollocationKey, ElementKey, FieldLocation)],
        max: usize,
    ) -> Vec<(CollocationKey, Vec<(ElementKey, FieldLocation)>)> {
        let mut pending: Vec<(CollocationKey, Vec<(ElementKey, FieldLocation)>)> = Vec::new();
        let mut positions: HashMap<CollocationKey, usize> = HashMap::new();
        for (c, e, l) in inserts {
            let i = *positions.entry(c.clone()).or_insert_with(|| {
                pending.push((c.clone(), Vec::new()));
                pending.len() - 1
            });
            pending[i].1.push((e.clone(), l.clone()));
        }
        let mut out = Vec::new();
        for (c, entries) in &pending {
            let mut start = 0;
            while start < entries.len() {
                let first = &entries[start].0;
                let mut end = start + 1;
                while end < entries.len()
                    && end - start < max
                    && entries[end].0.keywords().eq(first.keywords())
                {
                    end += 1;
                }
                out.push((c.clone(), entries[start..end].to_vec()));
                start = end;
            }
        }
        out
    }

    #[test]
    fn groups_as_the_writers_grouped_before() {
        let cs = [c("type=x"), c("type=y"), c("type=z")];
        let lists = ["step", "step,param", "levelist,param"];
        // A fixed pseudo-random sequence (an LCG): reproducible.
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        for round in 0..50 {
            let mut p = PendingEntries::new();
            let mut inserts = Vec::new();
            for n in 0..next(40) {
                let coll = &cs[next(3) as usize];
                let kws = lists[next(3) as usize];
                let key: String = kws
                    .split(',')
                    .map(|k| format!("{k}={}", next(3)))
                    .collect::<Vec<_>>()
                    .join(",");
                let (el, loc) = (e(&key), l(n));
                p.insert(coll, &el, &loc);
                inserts.push((coll.clone(), el, loc));
            }
            assert_eq!(p.len(), inserts.len());
            for max in [1, 2, 3, 4096] {
                let got: Vec<_> = p
                    .groups_at_most(max)
                    .map(|(c, es)| (c.clone(), es.to_vec()))
                    .collect();
                assert_eq!(got, reference(&inserts, max), "round {round}, max {max}");
            }
            let got: Vec<_> = p.groups().map(|(c, es)| (c.clone(), es.to_vec())).collect();
            assert_eq!(got, reference(&inserts, usize::MAX), "round {round}");
        }
    }

    #[test]
    fn take_leaves_it_empty() {
        let mut p = PendingEntries::new();
        let x = c("type=x");
        p.insert(&x, &e("step=0"), &l(0));
        p.insert(&c("type=y"), &e("step=0"), &l(1));
        let taken = p.take();
        assert!(p.is_empty());
        assert_eq!(p.groups().count(), 0);
        assert_eq!(taken.len(), 2);
        assert_eq!(taken.groups().count(), 2);
        // Positions went with the entries: a collocation seen before the
        // take is new again.
        p.insert(&c("type=y"), &e("step=6"), &l(2));
        p.insert(&x, &e("step=6"), &l(3));
        assert_eq!(
            shape(&p, usize::MAX),
            [("type=y".into(), vec![2]), ("type=x".into(), vec![3])]
        );
    }
}
