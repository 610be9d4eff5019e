//! The record types of every backend's catalogue, numbered once.
//!
//! A backend uses the types its log and values need (POSIX: INIT, FLUSH,
//! WIPE, RECLAIM, CONTROL, BLOCK; RADOS adds SEAL and WIPED; DAOS writes
//! INIT as its `meta` value and adds INDIRECT and DATASET), but a number
//! means one thing everywhere, so one decoder and one set of tools read
//! them all. A number never changes meaning: a new type takes a new
//! number; a reader skips (or reports) a type it does not know.
//!
//! Before this numbering, RADOS and DAOS numbered their own types (their
//! record format version 1); their framings map those numbers on reading
//! ([`super::Older`]), so stores written then read unchanged.

/// A dataset's creation: its key and schema (DAOS: the `meta` value).
pub const INIT: u16 = 1;
/// One writer's flush: the index blocks (or entries) it made visible.
pub const FLUSH: u16 = 2;
/// Collocations wiped, and the store units left to remove.
pub const WIPE: u16 = 3;
/// Store units removed by a purge or a wipe.
pub const RECLAIM: u16 = 4;
/// The operations the dataset is locked against, from here on.
pub const CONTROL: u16 = 5;
/// A log segment is full: the log continues in the next one (RADOS).
pub const SEAL: u16 = 6;
/// The whole dataset is wiped: nothing before it is visible (RADOS).
pub const WIPED: u16 = 7;
/// A log slot pointing at a flush too large to inline (DAOS).
pub const INDIRECT: u16 = 8;
/// A dataset's entry in the root (DAOS root KV value).
pub const DATASET: u16 = 9;
/// An index block: entries of one collocation (POSIX index files, RADOS
/// omap values).
pub const BLOCK: u16 = 10;
/// What a record of an older version whose type has no number here reads
/// as: a type no reader knows.
pub const UNKNOWN: u16 = u16::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_means_one_thing() {
        let all = [
            INIT, FLUSH, WIPE, RECLAIM, CONTROL, SEAL, WIPED, INDIRECT, DATASET, BLOCK, UNKNOWN,
        ];
        let mut seen = std::collections::HashSet::new();
        assert!(all.iter().all(|k| seen.insert(*k)), "{all:?}");
        // Pinned: stored bytes carry these numbers.
        assert_eq!(
            all,
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 65535],
            "record type numbers are part of every format"
        );
    }
}
