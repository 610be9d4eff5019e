//! `Readahead`: keeps a store told which fields a reader reads next.

use fieldstore_core::FieldLocation;

use fieldstore_core::store::Store;

/// How far ahead of the field being read the store is told what comes next:
/// enough to keep a few reads in flight, little enough not to crowd the
/// page cache. (Scattered 1 MiB fields read no faster with 4 MiB, nor with
/// 8, 16 or 64: docs/experiments/2026-11-reads.md, "Scattered reads".)
pub const PREFETCH_BYTES: u64 = 32 << 20;
/// At most this many fields per batch hinted.
const PREFETCH_FIELDS: usize = 256;

/// Where a reader of a list of fields stands with its [`Store::prefetch`]
/// hints.
///
/// # Invariants
/// Fields `0..hinted` were hinted, each once, in order; a reader that goes
/// forward one field at a time has between [`PREFETCH_BYTES`] / 2 and
/// [`PREFETCH_BYTES`] (plus one field) hinted ahead of it. A reader that
/// seeks is hinted from where it lands once it passes the last batch's
/// start. Hints never change what is read: only when.
#[derive(Debug, Clone, Default)]
pub struct Readahead {
    /// Fields before this index were passed to [`Store::prefetch`].
    hinted: usize,
    /// When the reader reaches this index, the next batch is hinted.
    rehint_at: usize,
}

impl Readahead {
    /// Nothing hinted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Call before reading field `next` of `count` fields (`location(i)`
    /// is field `i`'s): hints the next batch, half of [`PREFETCH_BYTES`],
    /// when the reader reached the start of the last one.
    pub fn before_read<'a>(
        &mut self,
        store: &dyn Store,
        next: usize,
        count: usize,
        location: impl Fn(usize) -> &'a FieldLocation,
    ) {
        while next >= self.rehint_at && self.hinted < count {
            let from = self.hinted.max(next);
            let mut to = from;
            let mut bytes = 0;
            while to < count
                && to - from < PREFETCH_FIELDS
                && (to == from || bytes < PREFETCH_BYTES / 2)
            {
                bytes += location(to).length;
                to += 1;
            }
            let batch: Vec<FieldLocation> = (from..to).map(|i| location(i).clone()).collect();
            store.prefetch(&batch);
            self.hinted = to;
            self.rehint_at = from;
        }
    }

    /// The field at `next` left the list (it no longer exists): the fields
    /// after it moved down by one.
    pub fn removed(&mut self, next: usize) {
        self.hinted = self.hinted.saturating_sub(1).max(next);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use fieldstore_core::{DatasetKey, Error, Result};

    use super::*;
    use fieldstore_core::store::StoreWriter;

    /// Records the offsets hinted (field `i` is at offset `i`).
    #[derive(Debug, Default)]
    struct Hints(Mutex<Vec<u64>>);

    impl Store for Hints {
        fn writer(&self, _: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
            Err(Error::internal("read-only"))
        }
        fn read(&self, _: &FieldLocation, _: &mut Vec<u8>) -> Result<()> {
            Err(Error::internal("not read here"))
        }
        fn read_into(&self, _: &FieldLocation, _: &mut [u8]) -> Result<()> {
            Err(Error::internal("not read here"))
        }
        fn read_range(&self, _: &FieldLocation, _: u64, _: &mut [u8]) -> Result<()> {
            Err(Error::internal("not read here"))
        }
        fn maintenance(&self) -> Option<&dyn fieldstore_core::StoreMaintenance> {
            None
        }
        fn prefetch(&self, locations: &[FieldLocation]) {
            self.0
                .lock()
                .unwrap()
                .extend(locations.iter().map(|l| l.offset));
        }
        fn scheme(&self) -> &'static str {
            "test"
        }
    }

    #[test]
    fn a_seeking_reader_gets_each_field_hinted_at_most_once_and_before_it_reads_it() {
        let fields: Vec<FieldLocation> = (0..300u64)
            .map(|i| FieldLocation::new("test://f", i, 1 << 20))
            .collect();
        let store = Hints::default();
        let mut ra = Readahead::new();
        // Forward, back (what was hinted is not hinted again), far forward
        // (hints start where the reader landed), to the end.
        let mut furthest = 0;
        for i in (0..40).chain(5..12).chain(200..300) {
            ra.before_read(&store, i, fields.len(), |j| &fields[j]);
            furthest = furthest.max(i as u64);
            let hinted = store.0.lock().unwrap();
            assert!(
                hinted.contains(&(i as u64)),
                "field {i} read before it was hinted"
            );
            let ahead = hinted.iter().filter(|&&h| h > furthest).count() as u64;
            assert!(
                ahead << 20 <= PREFETCH_BYTES,
                "{ahead} MiB hinted ahead of field {furthest}, the furthest read"
            );
        }
        let hinted = store.0.lock().unwrap().clone();
        let mut sorted = hinted.clone();
        sorted.sort_unstable();
        assert_eq!(hinted, sorted, "hints out of order");
        sorted.dedup();
        assert_eq!(hinted.len(), sorted.len(), "a field hinted twice");
        assert!(
            !hinted
                .iter()
                .any(|&h| (40 + (PREFETCH_BYTES >> 20)..200).contains(&h)),
            "fields the reader skipped were hinted: {hinted:?}"
        );
    }
}
