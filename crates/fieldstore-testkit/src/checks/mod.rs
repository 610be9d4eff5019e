//! The checks, one per clause of the contract (see the crate docs).

mod concurrency;
mod damage;
mod history;
mod keys;
mod list;
mod manage;
mod replace;
mod retrieve;
mod schema;
mod visibility;
mod watch;

pub use concurrency::{
    abandoned_writer_keeps_flushed, concurrent_writers, readers_during_writes,
    shared_handle_across_threads,
};
pub use damage::{
    collocation_wipe_over_a_damaged_record, cut_after_a_damaged_header_is_damage,
    cut_after_a_damaged_record_is_damage, cut_log_is_damage, cut_then_appended_to_is_damage,
    damaged_field_detected, damaged_log_record_costs_only_itself, gap_of_two_records_is_damage,
    idle_reader_sees_a_cut_near_where_it_stopped, idle_reader_sees_past_a_removed_record,
    late_hint_then_lost_tail_is_damage, lost_tail_reaching_a_hint_is_damage,
    lost_tail_then_appended_to_is_damage, missing_log_record_is_damage,
    purge_around_a_damaged_record, spliced_log_record_is_damage,
    stale_writer_leaves_a_removed_record_a_gap, unregistered_dataset_is_listed, LOST_TAIL_RECORDS,
};
pub use history::damage_in_mid_life;
pub use keys::{bad_input_rejected, keys_are_canonicalised};
pub use list::{axes_partial_requests, list_partial_requests};
pub use manage::{
    locks_honoured, purge_replaced, stats_counts, wipe_collocations, wipe_dataset,
    wipe_refuses_fields,
};
pub use replace::{replace_is_atomic, replace_under_concurrent_reads};
pub use retrieve::{
    annotation_applies_to_its_field_only, entry_extension_carried, location_lookup,
    read_range_reads_part_of_a_field, retrieve_in_request_order, retrieve_missing_is_empty,
};
pub use schema::{datasets_keep_their_schema, OpenWithSchema, SCHEMA_NEW, SCHEMA_OLD};
pub use visibility::{archive_copies_data, flush_makes_visible, flush_publishes_only_own_writes};
pub use watch::{
    retrieve_waits_for_complete_requests, watch_follows_each_dataset, watch_reports_each_field_once,
};

use std::collections::BTreeSet;

use fieldstore::{FieldStore, Key, Level};

use crate::support::{axes, axes_of, list, list_lines, must, request, retrieve_one, Stored};
pub(crate) use crate::support::{PL, SFC};
use crate::Open;

/// Open a handle, failing the check with `who` if that fails.
#[track_caller]
fn opened(open: Open<'_>, who: &str) -> FieldStore {
    must(open(), format_args!("opening the {who} handle"))
}

/// Runs its closure when dropped, also while its thread unwinds from a
/// panic: a worker thread's end told to the threads that wait for it (a
/// reader polling until the writers are done), so that a failing worker
/// fails the check instead of leaving them waiting for ever.
struct OnExit<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnExit<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// The three level prefixes of a key: `{dataset}`, `{dataset}{collocation}`,
/// `{dataset}{collocation}{element}` as `list` prints them.
#[track_caller]
fn braced_levels(fs: &FieldStore, key: &Key) -> [String; 3] {
    let s = must(fs.schema().split(key), format_args!("splitting {key}"));
    let d = s.dataset.braced();
    let c = format!("{d}{}", s.collocation.braced());
    let e = format!("{c}{}", s.element.braced());
    [d, c, e]
}

/// Check that, through `fs`, the fields of dataset family `expver` are
/// exactly `visible` (by list at each depth, axes, retrieve and location),
/// and that each of `hidden` is not visible at any depth. `when` says at
/// which step of the check this is.
#[track_caller]
fn expect_exactly(
    fs: &FieldStore,
    expver: &str,
    visible: &[&Stored],
    hidden: &[&Stored],
    when: &str,
) {
    let req = request(&format!("class=od,expver={expver}"));
    for (depth, level) in [Level::Dataset, Level::Collocation, Level::Element]
        .into_iter()
        .enumerate()
    {
        let want: BTreeSet<String> = visible
            .iter()
            .map(|s| braced_levels(fs, &s.key)[depth].clone())
            .collect();
        let got = list_lines(fs, &req, level);
        // Every level, datasets included: a dataset is listed once
        // something was flushed into it, not when a writer created it.
        let want: Vec<String> = want.into_iter().collect();
        assert_eq!(
            got,
            want,
            "{when}: list {req} at depth {} shows the wrong entries",
            depth + 1
        );
    }
    let want_axes = axes_of(
        visible
            .iter()
            .map(|s| &s.key)
            .map(|k| {
                // Canonical values, as the store reports them.
                must(fs.schema().split(k), format_args!("splitting {k}")).full_key()
            })
            .collect::<Vec<Key>>()
            .iter(),
    );
    let got_axes = axes(fs, &req, Level::Element);
    assert_eq!(got_axes, want_axes, "{when}: axes {req} are wrong");
    for s in visible {
        match retrieve_one(fs, &s.key) {
            Some(d) => assert!(
                d == s.data,
                "{when}: retrieve {} returned {} bytes that differ from the {} archived",
                s.key,
                d.len(),
                s.data.len()
            ),
            None => panic!(
                "{when}: retrieve {} found nothing, want the flushed field",
                s.key
            ),
        }
        let loc = must(
            fs.location(&s.key),
            format_args!("{when}: location of {}", s.key),
        );
        let loc = loc.unwrap_or_else(|| {
            panic!(
                "{when}: location of {} is None, want the flushed field",
                s.key
            )
        });
        assert_eq!(
            loc.length,
            s.data.len() as u64,
            "{when}: location of {} has the wrong length",
            s.key
        );
    }
    for s in hidden {
        if let Some(d) = retrieve_one(fs, &s.key) {
            panic!(
                "{when}: retrieve {} returned {} bytes; the field must not be visible",
                s.key,
                d.len()
            );
        }
        let loc = must(
            fs.location(&s.key),
            format_args!("{when}: location of {}", s.key),
        );
        assert!(
            loc.is_none(),
            "{when}: location of {} is {loc:?}; the field must not be visible",
            s.key
        );
    }
    // Listing with duplicates never shows a hidden field either.
    let hidden_keys: BTreeSet<String> = hidden.iter().map(|s| s.canonical.clone()).collect();
    let visible_keys: BTreeSet<String> = visible.iter().map(|s| s.canonical.clone()).collect();
    for e in list(fs, &req, Level::Element, true) {
        let k = e.full_key().to_string();
        assert!(
            !hidden_keys.contains(&k) || visible_keys.contains(&k),
            "{when}: list with duplicates shows {k}, which must not be visible"
        );
    }
}
