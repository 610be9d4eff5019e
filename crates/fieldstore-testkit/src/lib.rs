//! fieldstore's conformance suite: one check per clause of the semantics
//! contract (`docs/design.md`, "The contract"), called by every backend.
//!
//! Each check is a `pub fn` that takes a factory of handles, [`Open`]: every
//! call opens a new [`FieldStore`] onto **one shared backend**, the way
//! processes open one POSIX root. Handles opened by one factory must see
//! what the others flushed. For the memory backend that is
//! [`support::memory_factory`]; for POSIX, `FieldStore::open` with a config
//! naming one temporary root ([`support::posix_config`]).
//!
//! Checks keep to their own datasets (each uses its own `expver`), so all of
//! them can run on one backend one after the other ([`run_all`]) or each on
//! a fresh backend in parallel ([`conformance_tests!`]). They use the
//! hammer schema's keys ([`support::schema`]). A check fails by panicking
//! with a message that says what was expected and what happened.
//!
//! Some checks need a hook only a backend can provide (damaging a stored
//! field); they take it as an argument and [`run_all`] runs them when
//! [`Capabilities`] provides it.
//!
//! ```no_run
//! use fieldstore_testkit::{run_all, support, Capabilities};
//! let open = support::memory_factory(support::schema());
//! run_all(&open, &Capabilities::default());
//! ```
//!
//! [`processes`] is the harness of the multi-process and SIGKILL tests:
//! workers that run [`streams`] and [`churn`] workloads, wipes and purges
//! in separate processes on any backend (named by a config file), and the
//! scenarios every backend runs with them. The worker binary
//! `fieldstore-testkit-worker` is [`processes::worker_main`]. [`ceph`]
//! starts the throwaway Ceph cluster the RADOS tests run on.

pub mod ceph;
mod checks;
pub mod churn;
pub mod fixture;
pub mod layers;
pub mod payload;
pub mod processes;
pub mod rng;
pub mod streams;
pub mod support;
pub mod tmpfs;

pub use checks::*;

use fieldstore::{FieldLocation, FieldStore, Result};

/// A factory of handles onto one shared backend.
pub type Open<'a> = &'a (dyn Fn() -> Result<FieldStore> + Sync);

/// A check that needs nothing but a factory.
pub type Check = fn(Open<'_>);

/// What a backend offers beyond the contract's operations, for the checks
/// that need it.
#[derive(Default, Clone, Copy)]
pub struct Capabilities<'a> {
    /// Damage the stored bytes of the field at a location in place (flip a
    /// byte in the middle of it), bypassing the backend. `None` if the
    /// backend's storage cannot be reached from outside (memory).
    pub corrupt: Option<&'a (dyn Fn(&FieldLocation) + Sync)>,
    /// Damage record `n` of a dataset's log after its creation (0: the
    /// first record after the one that created it) in place, bypassing the
    /// backend. `None` for a backend without a log (memory).
    pub damage_record: Option<DamageRecord<'a>>,
    /// Damage the header of record `n` (numbered as for `damage_record`)
    /// in place, its payload intact, bypassing the backend: in a log of
    /// framed records one after the other, bytes that are not a record
    /// whose header checks. `None` where records are objects of their own
    /// (a damaged slot is the same wherever its bytes are damaged) or
    /// where there is no log (memory).
    pub damage_header: Option<DamageRecord<'a>>,
    /// Remove record `n` of a dataset's log after its creation (numbered
    /// as for `damage_record`), leaving the records after it, bypassing
    /// the backend: a gap in the log. `None` where a record cannot be
    /// removed alone (a POSIX or RADOS log is one file or object).
    pub remove_record: Option<DamageRecord<'a>>,
    /// Splice record `n` (numbered as for `damage_record`) out of a log
    /// that is one file or object: its bytes removed, the records after it
    /// moved up, bypassing the backend. `None` where records are objects
    /// of their own (`remove_record` instead), where there is no log
    /// (memory), or where the medium cannot tell it (POSIX on a file system
    /// that keeps no user attributes).
    pub splice_record: Option<DamageRecord<'a>>,
    /// Cut a dataset's log just before record `n` (numbered as for
    /// `damage_record`), keeping every record before it, bypassing the
    /// backend: its last records lost, the rest a whole log, which writers
    /// then append to. `None` where the medium has no log (memory) or
    /// cannot tell such a cut (POSIX on a file system that keeps no user
    /// attributes).
    pub cut_log: Option<DamageRecord<'a>>,
    /// Remove a dataset's registration (the entry listings of datasets
    /// read: RADOS's root omap key, DAOS's root KV key, S3's
    /// `%datasets/<key>` object), bypassing the backend. `None` where
    /// listings read the namespace itself (POSIX directories, memory).
    pub unregister: Option<&'a (dyn Fn(&fieldstore::DatasetKey) + Sync)>,
    /// Whether a damaged record's index blocks outlive it (POSIX index
    /// files, RADOS omap values), so that the backend tells what the record
    /// may have named: wipes of other collocations go on. `false` where
    /// blocks ride in the record (DAOS, S3).
    pub blocks_outlive_records: bool,
}

/// A hook that damages record `n` of a dataset's log
/// ([`Capabilities::damage_record`]).
pub type DamageRecord<'a> = &'a (dyn Fn(&fieldstore::DatasetKey, usize) + Sync);

impl std::fmt::Debug for Capabilities<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capabilities")
            .field("corrupt", &self.corrupt.is_some())
            .field("damage_record", &self.damage_record.is_some())
            .field("damage_header", &self.damage_header.is_some())
            .field("remove_record", &self.remove_record.is_some())
            .field("splice_record", &self.splice_record.is_some())
            .field("cut_log", &self.cut_log.is_some())
            .field("unregister", &self.unregister.is_some())
            .field("blocks_outlive_records", &self.blocks_outlive_records)
            .finish()
    }
}

/// Every check that needs nothing but a factory, by name, in the order
/// [`run_all`] runs them.
pub const CHECKS: &[(&str, Check)] = &[
    ("flush_makes_visible", flush_makes_visible),
    ("archive_copies_data", archive_copies_data),
    (
        "flush_publishes_only_own_writes",
        flush_publishes_only_own_writes,
    ),
    ("retrieve_missing_is_empty", retrieve_missing_is_empty),
    ("retrieve_in_request_order", retrieve_in_request_order),
    ("location_lookup", location_lookup),
    ("entry_extension_carried", entry_extension_carried),
    (
        "annotation_applies_to_its_field_only",
        annotation_applies_to_its_field_only,
    ),
    (
        "read_range_reads_part_of_a_field",
        read_range_reads_part_of_a_field,
    ),
    ("keys_are_canonicalised", keys_are_canonicalised),
    ("bad_input_rejected", bad_input_rejected),
    ("replace_is_atomic", replace_is_atomic),
    (
        "replace_under_concurrent_reads",
        replace_under_concurrent_reads,
    ),
    ("list_partial_requests", list_partial_requests),
    ("axes_partial_requests", axes_partial_requests),
    ("shared_handle_across_threads", shared_handle_across_threads),
    ("concurrent_writers", concurrent_writers),
    ("readers_during_writes", readers_during_writes),
    (
        "abandoned_writer_keeps_flushed",
        abandoned_writer_keeps_flushed,
    ),
    ("wipe_dataset", wipe_dataset),
    ("wipe_collocations", wipe_collocations),
    ("wipe_refuses_fields", wipe_refuses_fields),
    ("purge_replaced", purge_replaced),
    ("stats_counts", stats_counts),
    ("locks_honoured", locks_honoured),
    (
        "watch_reports_each_field_once",
        watch_reports_each_field_once,
    ),
    ("watch_follows_each_dataset", watch_follows_each_dataset),
    (
        "retrieve_waits_for_complete_requests",
        retrieve_waits_for_complete_requests,
    ),
];

/// Run every check on the backend `open` opens, one after the other, and
/// the hook-based checks that `caps` allows.
pub fn run_all(open: Open<'_>, caps: &Capabilities<'_>) {
    for (name, check) in CHECKS {
        println!("conformance check {name}");
        check(open);
    }
    if let Some(corrupt) = caps.corrupt {
        println!("conformance check damaged_field_detected");
        damaged_field_detected(open, corrupt);
    }
    if let Some(damage) = caps.damage_record {
        println!("conformance check damaged_log_record_costs_only_itself");
        damaged_log_record_costs_only_itself(open, damage);
        println!("conformance check collocation_wipe_over_a_damaged_record");
        collocation_wipe_over_a_damaged_record(open, damage, caps.blocks_outlive_records);
        println!("conformance check purge_around_a_damaged_record");
        purge_around_a_damaged_record(open, damage, caps.blocks_outlive_records);
    }
    if let Some(remove) = caps.remove_record {
        println!("conformance check missing_log_record_is_damage");
        missing_log_record_is_damage(open, remove);
        println!("conformance check gap_of_two_records_is_damage");
        gap_of_two_records_is_damage(open, remove);
        println!("conformance check stale_writer_leaves_a_removed_record_a_gap");
        stale_writer_leaves_a_removed_record_a_gap(open, remove);
        println!("conformance check idle_reader_sees_past_a_removed_record");
        idle_reader_sees_past_a_removed_record(open, remove);
    }
    if let Some(splice) = caps.splice_record {
        println!("conformance check spliced_log_record_is_damage");
        spliced_log_record_is_damage(open, splice);
    }
    if let Some(cut) = caps.cut_log {
        println!("conformance check cut_log_is_damage");
        cut_log_is_damage(open, cut);
        println!("conformance check cut_then_appended_to_is_damage");
        cut_then_appended_to_is_damage(open, cut);
        println!("conformance check idle_reader_sees_a_cut_near_where_it_stopped");
        idle_reader_sees_a_cut_near_where_it_stopped(open, cut);
    }
    if let (Some(damage), Some(cut)) = (caps.damage_record, caps.cut_log) {
        println!("conformance check cut_after_a_damaged_record_is_damage");
        cut_after_a_damaged_record_is_damage(open, damage, cut);
    }
    if let (Some(damage), Some(cut)) = (caps.damage_header, caps.cut_log) {
        println!("conformance check cut_after_a_damaged_header_is_damage");
        cut_after_a_damaged_header_is_damage(open, damage, cut);
    }
    if let Some(unregister) = caps.unregister {
        println!("conformance check unregistered_dataset_is_listed");
        unregistered_dataset_is_listed(open, unregister);
    }
    println!("conformance check damage_in_mid_life");
    damage_in_mid_life(open, caps);
}

/// One `#[test]` per check of [`CHECKS`], each on a fresh backend.
///
/// `$with` is a function `fn(check: &dyn Fn(Open<'_>))` that makes a fresh
/// backend, calls `check` with a factory onto it, and cleans up:
///
/// ```ignore
/// fn with_memory(check: &dyn Fn(fieldstore_testkit::Open<'_>)) {
///     check(&fieldstore_testkit::support::memory_factory(fieldstore_testkit::support::schema()));
/// }
/// fieldstore_testkit::conformance_tests!(with_memory);
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($with:path) => {
        $crate::conformance_tests!(@each $with;
            flush_makes_visible,
            archive_copies_data,
            flush_publishes_only_own_writes,
            retrieve_missing_is_empty,
            retrieve_in_request_order,
            location_lookup,
            entry_extension_carried,
            annotation_applies_to_its_field_only,
            read_range_reads_part_of_a_field,
            keys_are_canonicalised,
            bad_input_rejected,
            replace_is_atomic,
            replace_under_concurrent_reads,
            list_partial_requests,
            axes_partial_requests,
            shared_handle_across_threads,
            concurrent_writers,
            readers_during_writes,
            abandoned_writer_keeps_flushed,
            wipe_dataset,
            wipe_collocations,
            wipe_refuses_fields,
            purge_replaced,
            stats_counts,
            locks_honoured,
            watch_reports_each_field_once,
            watch_follows_each_dataset,
            retrieve_waits_for_complete_requests,
        );
    };
    (@each $with:path; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $with(&|open: $crate::Open<'_>| $crate::$name(open));
            }
        )*

        #[test]
        fn conformance_tests_cover_every_check() {
            let generated = [$(stringify!($name)),*];
            let listed: Vec<&str> = $crate::CHECKS.iter().map(|(n, _)| *n).collect();
            assert_eq!(generated.as_slice(), listed.as_slice(), "conformance_tests! and CHECKS disagree");
        }
    };
}
