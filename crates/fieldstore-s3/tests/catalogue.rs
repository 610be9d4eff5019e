//! The S3 catalogue (`engine: s3`) on a real S3 server (SeaweedFS, started
//! by `common`, or radosgw through `FIELDSTORE_S3_ENDPOINT`): the whole
//! conformance suite with the S3 store, the mixed pairs (S3 catalogue with
//! the POSIX file store), damage behind the catalogue's back (a flipped
//! byte in a log object, a removed log object), and racing writers'
//! slots.

mod common;

use common::Raw;
use fieldstore::FieldStore;
use fieldstore_testkit::support::{self, must, Spec, PL};
use fieldstore_testkit::Open;

fn with_s3_catalogue(check: &dyn Fn(Open<'_>)) {
    let Some(s) = common::server() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = s.config_of("s3", "s3", &common::bucket("cat"), dir.path());
    let open = move || FieldStore::open(config.clone());
    check(&open);
}

fieldstore_testkit::conformance_tests!(with_s3_catalogue);

/// A store with the S3 catalogue and store in a bucket of its own, and
/// that bucket's objects.
fn fresh(what: &str) -> Option<(impl Fn() -> fieldstore::Result<FieldStore> + Sync, Raw)> {
    let s = common::server()?;
    let bucket = common::bucket(what);
    let dir = tempfile::tempdir().expect("a temporary directory").keep();
    let config = s.config_of("s3", "s3", &bucket, &dir);
    Some((move || FieldStore::open(config.clone()), Raw::new(&bucket)))
}

/// Flip a byte in the middle of log object `n` of dataset `d`.
fn flip_slot(raw: &Raw, d: &fieldstore::DatasetKey, n: usize) {
    let key = raw.slot(d, n);
    let mut bytes = raw.get(&key);
    let at = bytes.len() / 2;
    bytes[at] ^= 0x08;
    raw.put(&key, &bytes);
}

/// A flipped byte in one log object costs only the keys it may hold.
#[test]
fn damaged_log_record_costs_only_itself() {
    let Some((open, raw)) = fresh("dmglog") else {
        return;
    };
    fieldstore_testkit::damaged_log_record_costs_only_itself(&open, &|d, n| flip_slot(&raw, d, n));
}

/// A wipe of collocations never says it was done while a damaged log
/// object may hold them (its index blocks ride in it, so a wipe of any
/// collocation is refused until the damage is wiped with the dataset).
#[test]
fn collocation_wipe_over_a_damaged_record() {
    let Some((open, raw)) = fresh("dmgwipe") else {
        return;
    };
    fieldstore_testkit::collocation_wipe_over_a_damaged_record(
        &open,
        &|d, n| flip_slot(&raw, d, n),
        false,
    );
}

/// A purge leaves a dataset with a damaged log object alone (its index
/// blocks ride in it, so what it points into is unknown).
#[test]
fn purge_around_a_damaged_record() {
    let Some((open, raw)) = fresh("dmgpurge") else {
        return;
    };
    fieldstore_testkit::purge_around_a_damaged_record(&open, &|d, n| flip_slot(&raw, d, n), false);
}

/// A removed log object (a later one exists) is damage: lookups it may
/// answer fail, what follows stays visible, purge refuses the dataset.
#[test]
fn missing_log_record_is_damage() {
    let Some((open, raw)) = fresh("gaplog") else {
        return;
    };
    fieldstore_testkit::missing_log_record_is_damage(&open, &|d, n| raw.delete(&raw.slot(d, n)));
}

/// A writer that lost a race to another handle does not take a log object
/// removed below the log's end.
#[test]
fn stale_writer_leaves_a_removed_record_a_gap() {
    let Some((open, raw)) = fresh("stale") else {
        return;
    };
    fieldstore_testkit::stale_writer_leaves_a_removed_record_a_gap(&open, &|d, n| {
        raw.delete(&raw.slot(d, n))
    });
}

/// Two removed log objects in a row: the same (S3 lists past any gap).
#[test]
fn gap_of_two_records_is_damage() {
    let Some((open, raw)) = fresh("gap2log") else {
        return;
    };
    fieldstore_testkit::gap_of_two_records_is_damage(&open, &|d, n| raw.delete(&raw.slot(d, n)));
}

/// A log object removed right where an idle reader stopped: it reads past
/// it once `LOOK_AGAIN` has passed.
#[test]
fn idle_reader_sees_past_a_removed_record() {
    let Some((open, raw)) = fresh("idlegap") else {
        return;
    };
    fieldstore_testkit::idle_reader_sees_past_a_removed_record(&open, &|d, n| {
        raw.delete(&raw.slot(d, n))
    });
}

/// The newest log objects removed, the tail hint's slot among them.
#[test]
fn lost_tail_reaching_a_hint_is_damage() {
    let Some((open, raw)) = fresh("tail") else {
        return;
    };
    fieldstore_testkit::lost_tail_reaching_a_hint_is_damage(&open, &|d, n| raw.delete_tail(d, n));
}

/// The same, and then a writer flushes once more: it starts past the tail
/// hint, so it does not fill the removed objects and hide the loss.
#[test]
fn lost_tail_then_appended_to_is_damage() {
    let Some((open, raw)) = fresh("tail2") else {
        return;
    };
    fieldstore_testkit::lost_tail_then_appended_to_is_damage(&open, &|d, n| raw.delete_tail(d, n));
}

/// A damaged slot, then a lost tail after it: still a lost tail.
#[test]
fn cut_after_a_damaged_record_is_damage() {
    let Some((open, raw)) = fresh("cutdmg") else {
        return;
    };
    fieldstore_testkit::cut_after_a_damaged_record_is_damage(
        &open,
        &|d, n| flip_slot(&raw, d, n),
        &|d, n| raw.delete_tail(d, n),
    );
}

/// The newest two log objects removed, the one the tail hint names among
/// them (it names the last slot published): a reader that never saw the
/// log tells the lost tail by it.
#[test]
fn cut_log_is_damage() {
    let Some((open, raw)) = fresh("cut") else {
        return;
    };
    fieldstore_testkit::cut_log_is_damage(&open, &|d, n| raw.delete_tail(d, n));
}

/// The same, and then writers that never saw the log flush: they start
/// past the tail hint, so they do not fill the removed objects and hide
/// the loss.
#[test]
fn cut_then_appended_to_is_damage() {
    let Some((open, raw)) = fresh("cut2") else {
        return;
    };
    fieldstore_testkit::cut_then_appended_to_is_damage(&open, &|d, n| raw.delete_tail(d, n));
}

/// The newest log objects removed at or past where an idle reader
/// stopped (a lost tail it sees once `LOOK_AGAIN` has passed), or below it
/// before a flush.
#[test]
fn idle_reader_sees_a_cut_near_where_it_stopped() {
    let Some((open, raw)) = fresh("cut3") else {
        return;
    };
    fieldstore_testkit::idle_reader_sees_a_cut_near_where_it_stopped(&open, &|d, n| {
        raw.delete_tail(d, n)
    });
}

/// Random histories with one log object damaged, removed or cut off in
/// mid-life (the testkit's `damage_in_mid_life`).
#[test]
fn damage_in_mid_life() {
    let Some((open, raw)) = fresh("hist") else {
        return;
    };
    let damage = |d: &fieldstore::DatasetKey, n: usize| flip_slot(&raw, d, n);
    let remove = |d: &fieldstore::DatasetKey, n: usize| raw.delete(&raw.slot(d, n));
    let cut = |d: &fieldstore::DatasetKey, n: usize| raw.delete_tail(d, n);
    fieldstore_testkit::damage_in_mid_life(
        &open,
        &fieldstore_testkit::Capabilities {
            damage_record: Some(&damage),
            remove_record: Some(&remove),
            cut_log: Some(&cut),
            ..fieldstore_testkit::Capabilities::default()
        },
    );
}

/// A dataset whose registry object (`%datasets/<key>`) was removed is
/// still listed: a listing of datasets also lists the bucket's top-level
/// prefixes.
#[test]
fn unregistered_dataset_is_listed() {
    let Some((open, raw)) = fresh("unreg") else {
        return;
    };
    fieldstore_testkit::unregistered_dataset_is_listed(&open, &|d| {
        let key = format!("%datasets/{d}");
        assert!(raw.keys().contains(&key), "no registry object {key}");
        raw.delete(&key);
    });
}

/// Racing writers' tail hints stored out of order (the last stored names
/// an earlier slot), then the newest log object removed: still damage.
#[test]
fn late_hint_then_lost_tail_is_damage() {
    use fieldstore_core::engine::slot_catalogue::SlotMedium;
    let Some(s) = common::server() else { return };
    let bucket = common::bucket("latehint");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = s.config_of("s3", "s3", &bucket, dir.path());
    let open = move || FieldStore::open(config.clone());
    let raw = Raw::new(&bucket);
    let medium = must(
        fieldstore_s3::S3Medium::open(&s.s3_config(&bucket)),
        "the S3 medium",
    );
    let late_hint = |d: &fieldstore::DatasetKey, n: usize| {
        let meta = must(SlotMedium::open(&medium, d), "meta").expect("the dataset exists");
        let log = must(medium.slots(&meta), "the slot log");
        must(log.set_hint(n as u64), "a late hint");
    };
    fieldstore_testkit::late_hint_then_lost_tail_is_damage(&open, &late_hint, &|d, n| {
        raw.delete_tail(d, n)
    });
}

/// Prefixes of a bucket shared with other data: a listing of datasets
/// looks into each once (a GET of a `meta` that is not there), not at
/// every listing, and lists only the datasets.
#[test]
fn foreign_prefixes_are_looked_at_once() {
    let Some((open, raw)) = fresh("foreign") else {
        return;
    };
    // Opening creates the bucket.
    let w = must(open(), "open");
    const FOREIGN: u64 = 20;
    for i in 0..FOREIGN {
        raw.put(&format!("not-ours-{i:02}/object"), b"x");
    }
    let stored = support::archive_payload(&w, &Spec { step: 0, ..PL }.key("frgn"), 1, 100, 200);
    must(w.flush(), "flush");
    let r = must(open(), "open");
    let request = support::request("class=od");
    let mut costs = Vec::new();
    for _ in 0..2 {
        let before = fieldstore_s3::requests_sent();
        let listed = support::list(&r, &request, fieldstore::Level::Element, false);
        costs.push(fieldstore_s3::requests_sent() - before);
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(
            listed[0].full_key(),
            support::key(&support::canonical(&r, &stored.key))
        );
    }
    assert!(
        costs[0] >= costs[1] + FOREIGN,
        "the first listing looks into the {FOREIGN} foreign prefixes, the second does not: {costs:?} requests"
    );
}

/// The S3 catalogue with the POSIX file store, and the POSIX catalogue
/// with the S3 store: the conformance checks that need no damage hooks.
#[test]
fn s3_catalogue_with_file_store() {
    let Some(s) = common::server() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = s.config_of("s3", "file", &common::bucket("mixed"), dir.path());
    let open = move || FieldStore::open(config.clone());
    fieldstore_testkit::run_all(&open, &fieldstore_testkit::Capabilities::default());
}

/// Writers racing into one dataset take every slot once, in one order:
/// all their fields are visible, and the log has no gap.
#[test]
fn racing_writers_fill_slots_without_gaps() {
    let Some((open, raw)) = fresh("race") else {
        return;
    };
    let (writers, flushes) = (6u32, 8u32);
    std::thread::scope(|s| {
        for w in 0..writers {
            let open = &open;
            s.spawn(move || {
                let fs = must(open(), "open");
                for f in 0..flushes {
                    let key = Spec {
                        step: f,
                        number: Some(w + 1),
                        ..PL
                    }
                    .key("race");
                    must(fs.archive(&key, format!("w{w}f{f}").as_bytes()), "archive");
                    must(fs.flush(), "flush");
                }
            });
        }
    });
    let fs = must(open(), "open");
    for w in 0..writers {
        for f in 0..flushes {
            let key = Spec {
                step: f,
                number: Some(w + 1),
                ..PL
            }
            .key("race");
            let got = support::retrieve_one(&fs, &key).expect("every flushed field");
            assert_eq!(got, format!("w{w}f{f}").as_bytes());
        }
    }
    let mut slots: Vec<u64> = raw
        .keys()
        .iter()
        .filter_map(|k| k.split("/log/").nth(1)?.parse().ok())
        .collect();
    slots.sort_unstable();
    let want: Vec<u64> = (0..u64::from(writers * flushes)).collect();
    assert_eq!(slots, want, "one slot per flush, none skipped");
}

/// Two log objects removed together (the second-newest version of one
/// field and another field's only flush, with a later flush after them):
/// S3 lists its slots, so the gap is found whatever its length. The field
/// the gap may have replaced fails `Corrupt` (never its older version with
/// success); what follows the gap stays visible.
#[test]
fn a_gap_of_two_log_objects_is_damage() {
    let Some((open, raw)) = fresh("gap2") else {
        return;
    };
    let w = must(open(), "open");
    let key = |s: u32| Spec { step: s, ..PL }.key("gap2");
    for (s, bytes) in [(0, "a-v1"), (0, "a-v2"), (6, "b"), (12, "c")] {
        must(w.archive(&key(s), bytes.as_bytes()), "archive");
        must(w.flush(), "flush");
    }
    let dataset = must(w.schema().split(&key(0)), "the dataset").dataset;
    raw.delete(&raw.slot(&dataset, 1));
    raw.delete(&raw.slot(&dataset, 2));
    let r = must(open(), "open after the damage");
    let e = r
        .retrieve(&fieldstore::Request::from_key(&key(0)))
        .and_then(|d| d.read_all())
        .expect_err("a field the gap may have replaced");
    assert_eq!(e.kind(), fieldstore::ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("2 log slots missing"), "{e}");
    assert_eq!(
        support::retrieve_one(&r, &key(12)).as_deref(),
        Some(&b"c"[..]),
        "the flush after the gap"
    );
}

/// A log object that holds only the start of its record is an insert in
/// flight while it is the last: readers stop before it, and see it once it
/// is whole. With a later log object after it, it is a torn insert (its
/// writer died in it, unacknowledged): stepped over and reported, as POSIX
/// steps over a torn append; what follows stays visible.
#[test]
fn an_incomplete_log_object_is_in_flight_or_torn() {
    let Some((open, raw)) = fresh("torn") else {
        return;
    };
    let w = must(open(), "open");
    let key = |s: u32| Spec { step: s, ..PL }.key("torn");
    for s in [0, 6] {
        must(w.archive(&key(s), format!("s{s}").as_bytes()), "archive");
        must(w.flush(), "flush");
    }
    let dataset = must(w.schema().split(&key(0)), "the dataset").dataset;
    let last = raw.slot(&dataset, 1);
    let whole = raw.get(&last);
    raw.put(&last, &whole[..10]);
    let r = must(open(), "open");
    assert_eq!(
        support::retrieve_one(&r, &key(0)).as_deref(),
        Some(&b"s0"[..])
    );
    assert_eq!(
        support::retrieve_one(&r, &key(6)),
        None,
        "in flight: not yet"
    );
    raw.put(&last, &whole);
    assert_eq!(
        support::retrieve_one(&r, &key(6)).as_deref(),
        Some(&b"s6"[..]),
        "the same reader, once the insert is whole"
    );
    raw.put(&last, &whole[..10]);
    let w2 = must(open(), "open");
    must(w2.archive(&key(12), b"s12"), "archive");
    must(w2.flush(), "flush");
    let r = must(open(), "open");
    assert_eq!(
        support::retrieve_one(&r, &key(12)).as_deref(),
        Some(&b"s12"[..])
    );
    assert_eq!(
        support::retrieve_one(&r, &key(6)),
        None,
        "torn: stepped over"
    );
    assert_eq!(
        support::retrieve_one(&r, &key(0)).as_deref(),
        Some(&b"s0"[..])
    );
    let request: fieldstore::Request = "class=od,expver=torn".parse().expect("a request");
    let status = must(r.status(&request), "status");
    assert!(format!("{status:?}").contains("torn insert"), "{status:?}");
}

/// What a reader's refresh costs in requests (on the reader's thread):
/// nothing new is one listing of two keys (is the last slot read still
/// there, is there one after it), so `watch` polling an idle dataset costs
/// one request a round (and the looks past its end once a second,
/// `LOOK_AGAIN`); a new flush costs that listing, its slot, and the two
/// looks past it that tell the end from a gap.
#[test]
fn an_idle_refresh_costs_one_request() {
    let Some((open, _raw)) = fresh("idle") else {
        return;
    };
    let key = |s: u32| Spec { step: s, ..PL }.key("idle");
    let w = must(open(), "open");
    must(w.archive(&key(0), b"s0"), "archive");
    must(w.flush(), "flush");
    let r = must(open(), "open");
    // Caught up: the dataset's reader exists and has read slot 0, and
    // looked past its end.
    let looked = std::time::Instant::now();
    assert_eq!(
        support::retrieve_one(&r, &key(0)).as_deref(),
        Some(&b"s0"[..])
    );
    let cost = |what: &str| {
        let before = fieldstore_s3::requests_sent();
        assert_eq!(support::retrieve_one(&r, &key(99)), None, "{what}");
        fieldstore_s3::requests_sent() - before
    };
    let idle: Vec<u64> = (0..3).map(|_| cost("idle")).collect();
    let idle_within = looked.elapsed();
    must(w.archive(&key(6), b"s6"), "archive");
    must(w.flush(), "flush");
    let after_flush = cost("after a flush");
    println!("refresh: idle {idle:?} (within {idle_within:?}), after one flush {after_flush}");
    if idle_within < fieldstore::engine::LOOK_AGAIN {
        assert_eq!(idle, [1, 1, 1], "an idle refresh: one listing");
    } else {
        // A machine too slow to keep within it: one of them looked again
        // (the listing, the next slot, the looks past it).
        assert!(idle.iter().all(|&c| c <= 4), "idle refreshes: {idle:?}");
    }
    assert!(after_flush <= 4, "after one flush: {after_flush} requests");
    assert_eq!(
        support::retrieve_one(&r, &key(6)).as_deref(),
        Some(&b"s6"[..])
    );
}

/// Tail hints do not pile up, one per flush: a writer prunes those of
/// smaller slots every 16th slot. What remains still tells a cold reader a
/// lost tail.
#[test]
fn tail_hints_are_pruned_and_still_tell_a_lost_tail() {
    let Some((open, raw)) = fresh("prune") else {
        return;
    };
    let key = |s: u32| Spec { step: s, ..PL }.key("prun");
    let w = must(open(), "open");
    for s in 0..40 {
        must(w.archive(&key(s), format!("s{s}").as_bytes()), "archive");
        must(w.flush(), "flush");
    }
    let hints = raw.keys().iter().filter(|k| k.contains("/tail/")).count();
    // Slots 0–39: the hints of 0–31 pruned at slots 16 and 32.
    assert_eq!(hints, 8, "hint objects after 40 flushes");
    let dataset = must(w.schema().split(&key(0)), "the dataset").dataset;
    raw.delete_tail(&dataset, 36);
    let r = must(open(), "open");
    for s in 0..40 {
        let got = r
            .retrieve(&fieldstore::Request::from_key(&key(s)))
            .and_then(|h| h.read_all());
        // The lost tail may hold a newer version of any step before it.
        match got {
            Ok(b) if s < 36 => assert_eq!(b, format!("s{s}").as_bytes(), "step {s}"),
            Err(e) => assert_eq!(e.kind(), fieldstore::ErrorKind::Corrupt, "step {s}: {e}"),
            Ok(b) => panic!("step {s}, in a removed slot, read {b:?} with success"),
        }
    }
}
