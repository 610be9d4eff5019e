//! Clause 8 (second half) and 9: damaged data is detected, never returned.

use fieldstore::{DatasetKey, ErrorKind, FieldLocation};

use super::{opened, PL, SFC};
use crate::support::{archive_payload, must, retrieve_one, Spec, Stored};
use crate::Open;

/// Clauses 8–9: three fields are flushed, then `corrupt` damages the
/// stored bytes of the middle one behind the backend's back. Retrieving it
/// is a `Corrupt` error whose message names where the damage is (the
/// location's file or object), never data; the other two fields still read
/// back exactly, and list still shows all three.
pub fn damaged_field_detected(open: Open<'_>, corrupt: &(dyn Fn(&FieldLocation) + Sync)) {
    let x = "dmg1";
    let w = opened(open, "writer");
    let fields: Vec<Stored> = [0, 6, 12]
        .iter()
        .map(|&step| archive_payload(&w, &Spec { step, ..PL }.key(x), 1, 1000, 4000))
        .collect();
    must(w.flush(), "flush");
    drop(w);
    let victim = &fields[1];
    let loc = must(opened(open, "probe").location(&victim.key), "location")
        .unwrap_or_else(|| panic!("location of the flushed {} is None", victim.key));
    corrupt(&loc);

    let reader = opened(open, "reader");
    let place = loc
        .path()
        .rsplit('/')
        .next()
        .unwrap_or(loc.path())
        .to_string();
    let result = reader
        .retrieve(&fieldstore::Request::from_key(&victim.key))
        .and_then(|r| r.read_all());
    match result {
        Ok(bytes) if bytes == victim.data => {
            panic!("the damaged field {} ({loc}) read back unchanged: the damage hook did not damage it", victim.key)
        }
        Ok(bytes) => panic!(
            "retrieve of the damaged field {} ({loc}) returned {} bytes of damaged data instead of a Corrupt error",
            victim.key,
            bytes.len()
        ),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Corrupt, "retrieve of the damaged field {}: {e}", victim.key);
            assert!(
                e.to_string().contains(&place),
                "the Corrupt error for {} does not say where the damage is ({place}): {e}",
                victim.key
            );
        }
    }
    let mut buf = Vec::new();
    match reader.store().read(&loc, &mut buf) {
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::Corrupt,
            "Store::read of the damaged {loc}: {e}"
        ),
        Ok(()) => panic!(
            "Store::read of the damaged {loc} returned {} bytes instead of a Corrupt error",
            buf.len()
        ),
    }
    for s in [&fields[0], &fields[2]] {
        let got = retrieve_one(&reader, &s.key)
            .unwrap_or_else(|| panic!("{} disappeared after its neighbour was damaged", s.key));
        assert!(
            got == s.data,
            "{} changed after its neighbour was damaged",
            s.key
        );
    }
    let listed = must(
        reader.list(
            &crate::support::request(&format!("class=od,expver={x}")),
            fieldstore::ListOptions::default(),
        ),
        "list after the damage",
    );
    assert_eq!(
        listed.len(),
        3,
        "list after one field's bytes were damaged: {listed:?}"
    );
}

/// What a retrieve of one key gave, for the damage checks.
fn retrieve_outcome(
    fs: &fieldstore::FieldStore,
    key: &fieldstore::Key,
) -> fieldstore::Result<Vec<u8>> {
    fs.retrieve(&fieldstore::Request::from_key(key))
        .and_then(|r| r.read_all())
}

/// Damage costs only what it damaged, and never gives a wrong answer in
/// silence, on every backend with a log: four flushes into one dataset
/// (steps 0, 6, 12 and 6 again with other bytes), one into another; then
/// `damage_record(dataset, 1)` flips a byte in the dataset's second record
/// after its creation (the first flush of step 6) behind the backend's
/// back. A fresh handle then
/// - reads steps 12 and 6 (the newest, flushed after the damage) exactly;
/// - reads step 0 exactly, or fails with `Corrupt` (the damaged record
///   might have replaced it) — never other bytes, never nothing;
/// - reads the other dataset exactly;
/// - reports the damage in `status` (recovered or not);
/// - archives and flushes into the damaged dataset, and reads that back.
pub fn damaged_log_record_costs_only_itself(
    open: Open<'_>,
    damage_record: crate::DamageRecord<'_>,
) {
    let (x, other) = ("dmg2", "dmg3");
    let w = opened(open, "writer");
    let step = |s: u32| Spec { step: s, ..PL }.key(x);
    let mut flushed = Vec::new();
    for (s, version) in [(0, 1), (6, 1), (12, 1), (6, 2)] {
        flushed.push(archive_payload(&w, &step(s), version, 500, 3000));
        must(w.flush(), format_args!("flush of step {s}"));
    }
    let elsewhere = archive_payload(&w, &Spec { step: 0, ..PL }.key(other), 1, 500, 3000);
    must(w.flush(), "flush of the other dataset");
    drop(w);
    let probe = opened(open, "probe");
    let datasets = must(
        probe.list(
            &crate::support::request(&format!("class=od,expver={x}")),
            fieldstore::ListOptions {
                depth: fieldstore::Level::Dataset,
                duplicates: false,
            },
        ),
        "list of the datasets",
    );
    assert_eq!(datasets.len(), 1, "datasets of expver={x}: {datasets:?}");
    let dataset = datasets[0].dataset.clone();
    drop(probe);
    damage_record(&dataset, 1);

    let r = opened(open, "reader after the damage");
    for (s, want) in [(12, &flushed[2]), (6, &flushed[3])] {
        exact(
            &r,
            want,
            &format!("step {s}, flushed after the damaged record,"),
        );
    }
    exact_or_corrupt(
        &r,
        &flushed[0],
        "step 0, flushed before the damaged record,",
    );
    exact(&r, &elsewhere, "the other dataset");
    let status = must(
        r.status(&crate::support::request(&format!("class=od,expver={x}"))),
        "status of the damaged dataset",
    );
    assert!(
        status.iter().any(|s| !s.damage.is_empty()),
        "status does not report the damaged record: {status:?}"
    );
    drop(r);

    let w = opened(open, "writer after the damage");
    let late = archive_payload(&w, &step(18), 1, 500, 3000);
    must(w.flush(), "flush after the damage");
    drop(w);
    let r = opened(open, "reader of the late flush");
    exact(&r, &late, "the field flushed after the damage");
}

/// A wipe of collocations never says it was done while a damaged record
/// may hold them: two flushes into one dataset, collocation `SFC`'s field
/// (its only record), then `PL`'s; a reader reads both; then
/// `damage_record(dataset, 0)` damages `SFC`'s record behind the
/// backend's back, so that a fresh reader cannot learn the collocation. A
/// wipe of `SFC` then either fails `Corrupt` or removes it: after an `Ok`,
/// neither the reader from before the damage nor a fresh one answers its
/// field. `PL`'s field still reads exactly either way.
///
/// Then a wipe of `PL`, which the damaged record cannot hold: with
/// `blocks_outlive_records` (the backend's index blocks outlive the record
/// that names them, and tell what it may have named) it must succeed, and
/// elsewhere it may fail `Corrupt`. After an `Ok`, neither reader answers
/// `PL`'s field, and the reader from before the damage still reads `SFC`'s
/// exactly: a unit the damaged record points into is kept, though it may
/// also hold `PL`'s field.
pub fn collocation_wipe_over_a_damaged_record(
    open: Open<'_>,
    damage_record: crate::DamageRecord<'_>,
    blocks_outlive_records: bool,
) {
    let x = "dmgw";
    let w = opened(open, "writer");
    let sfc = archive_payload(&w, &SFC.key(x), 1, 500, 3000);
    must(w.flush(), "flush of the surface field");
    let pl = archive_payload(&w, &PL.key(x), 1, 500, 3000);
    must(w.flush(), "flush of the pressure-level field");
    let dataset = must(w.schema().split(&pl.key), "splitting a key").dataset;
    drop(w);
    let early = opened(open, "reader from before the damage");
    exact(&early, &sfc, "the surface field before the damage");
    exact(&early, &pl, "the pressure-level field before the damage");
    damage_record(&dataset, 0);

    let wipe = opened(open, "wiper").wipe(
        &SFC.collocation_request(x),
        fieldstore::WipeOptions {
            doit: true,
            unsafe_wipe_all: false,
        },
    );
    let fresh = opened(open, "reader after the wipe");
    match wipe {
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::Corrupt,
            "a wipe of the damaged record's collocation: {e}"
        ),
        Ok(report) => {
            for (who, reader) in [
                ("the reader from before the damage", &early),
                ("a fresh reader", &fresh),
            ] {
                let answer = retrieve_outcome(reader, &sfc.key);
                if let Some(bytes) = answer.ok().filter(|b| !b.is_empty()) {
                    panic!(
                        "{who} still answers the surface field ({} bytes) after a wipe of its \
                         collocation returned Ok: {report:?}",
                        bytes.len()
                    );
                }
            }
        }
    }
    exact(
        &early,
        &pl,
        "the pressure-level field, after the wipe, to the early reader",
    );
    exact(
        &fresh,
        &pl,
        "the pressure-level field, after the wipe, to a fresh reader",
    );

    let wipe = opened(open, "wiper of the intact collocation").wipe(
        &PL.collocation_request(x),
        fieldstore::WipeOptions {
            doit: true,
            unsafe_wipe_all: false,
        },
    );
    let report = match wipe {
        Err(e) if !blocks_outlive_records && e.kind() == ErrorKind::Corrupt => return,
        Err(e) => panic!(
            "a wipe of a collocation the damaged record cannot hold (its index blocks outlive \
             it: {blocks_outlive_records}): {e}"
        ),
        Ok(report) => report,
    };
    let fresh = opened(open, "reader after the second wipe");
    for (who, reader) in [
        ("the reader from before the damage", &early),
        ("a fresh reader", &fresh),
    ] {
        if let Some(bytes) = retrieve_outcome(reader, &pl.key)
            .ok()
            .filter(|b| !b.is_empty())
        {
            panic!(
                "{who} still answers the pressure-level field ({} bytes) after a wipe of its \
                 collocation returned Ok: {report:?}",
                bytes.len()
            );
        }
    }
    exact(
        &early,
        &sfc,
        "the surface field (its record damaged), after a wipe of the other collocation, to the \
         reader from before the damage",
    );
}

/// Purge goes around a damaged record when the backend tells what it may
/// point into, and never removes what it may: three writers flush one
/// record each (the first `PL`'s field, the second `SFC`'s, the third
/// `PL`'s again, so that the first writer's unit holds only a replaced
/// field); a reader reads the last; `damage_record(dataset, 1)` damages
/// `SFC`'s record; then `purge --doit`. With `blocks_outlive_records` it
/// must remove something (the first writer's unit), elsewhere it may
/// leave the dataset alone. Either way, the reader from before the damage
/// still reads `SFC`'s field exactly (its unit, which only the damaged
/// record names, looks unused to a fresh reader, and must stay), a fresh
/// reader answers it `Corrupt` (never nothing with success), and `PL`'s
/// newest version reads exactly.
pub fn purge_around_a_damaged_record(
    open: Open<'_>,
    damage_record: crate::DamageRecord<'_>,
    blocks_outlive_records: bool,
) {
    let x = "dmgp";
    let flush_one = |spec: Spec, version: u32| {
        let w = opened(open, "writer");
        let f = archive_payload(&w, &spec.key(x), version, 500, 3000);
        must(w.flush(), format_args!("flush of version {version}"));
        f
    };
    let replaced = flush_one(PL, 1);
    let sfc = flush_one(SFC, 1);
    let pl = flush_one(PL, 2);
    let probe = opened(open, "probe");
    let dataset = must(probe.schema().split(&pl.key), "splitting a key").dataset;
    // It reads the newest record, and so has read `SFC`'s, without opening
    // `SFC`'s unit: an open file would hide its removal.
    let early = opened(open, "reader from before the damage");
    exact(&early, &pl, "the pressure-level field before the damage");
    damage_record(&dataset, 1);

    let purger = opened(open, "purger");
    let report = must(purger.purge(&SFC.dataset_request(x), true), "purge");
    let removed: Vec<_> = report.datasets.iter().flat_map(|d| &d.items).collect();
    if blocks_outlive_records {
        assert!(
            !removed.is_empty(),
            "purge removed nothing, though the damaged record cannot point into the unit of the \
             replaced field ({} bytes): {report:?}",
            replaced.data.len()
        );
    }
    exact(
        &early,
        &sfc,
        "the surface field (its record damaged), after the purge, to the reader from before the \
         damage",
    );
    let fresh = opened(open, "reader after the purge");
    match retrieve_outcome(&fresh, &sfc.key) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "the surface field: {e}"),
        Ok(bytes) => panic!(
            "a fresh reader answered the surface field, whose only record is damaged, with \
             success ({} bytes)",
            bytes.len()
        ),
    }
    exact(
        &fresh,
        &pl,
        "the pressure-level field's newest version, after the purge",
    );
}

/// Archive `(step, version)` of expver `x` in turn through one writer,
/// one flush each (one log record each); what was flushed, and the
/// dataset's key.
fn flush_each(open: Open<'_>, x: &str, versions: &[(u32, u32)]) -> (Vec<Stored>, DatasetKey) {
    let w = opened(open, "writer");
    let first = Spec {
        step: versions[0].0,
        ..PL
    }
    .key(x);
    let dataset = must(w.schema().split(&first), "splitting the first key").dataset;
    let flushed = versions
        .iter()
        .map(|&(s, version)| {
            let f = archive_payload(&w, &Spec { step: s, ..PL }.key(x), version, 500, 3000);
            must(
                w.flush(),
                format_args!("flush of step {s} version {version}"),
            );
            f
        })
        .collect();
    (flushed, dataset)
}

/// A gap in the log is damage, never an older answer (issue 38): five
/// flushes into one dataset — step 0, step 6, step 0 again, step 6 again,
/// step 12 — then `remove_record(dataset, 2)` removes the record of the
/// second flush of step 0 behind the backend's back, leaving those after
/// it. A fresh handle then
/// - fails step 0 with `Corrupt` (the missing record held its newest
///   version: the older one must not be answered as if it were);
/// - reads steps 6 and 12 (flushed after the gap) exactly: what follows a
///   gap does not vanish;
/// - reports the damage in `status`;
/// - purges nothing of the dataset (`doit`): the missing record may
///   reference units that look unused (step 6's first version is replaced
///   and would otherwise go), and every field still reads as before;
/// - archives and flushes into the dataset, and reads that back: a write
///   after a gap does not vanish either.
pub fn missing_log_record_is_damage(open: Open<'_>, remove_record: crate::DamageRecord<'_>) {
    let x = "gap1";
    let step = |s: u32| Spec { step: s, ..PL }.key(x);
    let (flushed, _) = flush_each(open, x, &[(0, 1), (6, 1), (0, 2), (6, 2), (12, 1)]);
    let probe = opened(open, "probe");
    let request = crate::support::request(&format!("class=od,expver={x}"));
    let datasets = must(
        probe.list(
            &request,
            fieldstore::ListOptions {
                depth: fieldstore::Level::Dataset,
                duplicates: false,
            },
        ),
        "list of the datasets",
    );
    assert_eq!(datasets.len(), 1, "datasets of expver={x}: {datasets:?}");
    let dataset = datasets[0].dataset.clone();
    drop(probe);
    remove_record(&dataset, 2);

    let r = opened(open, "reader after the removal");
    let why = "the missing record held the newest";
    corrupt_not_older(&r, &flushed[2], &flushed[0], "step 0", why);
    exact(&r, &flushed[3], "step 6, flushed after the gap,");
    exact(&r, &flushed[4], "step 12, flushed after the gap,");
    reported_and_kept(&r, x, "a missing record");
    drop(r);
    let r = opened(open, "reader after the purge");
    exact(&r, &flushed[3], "step 6 after the purge");
    exact(&r, &flushed[4], "step 12 after the purge");
    drop(r);

    let w = opened(open, "writer after the removal");
    let late = archive_payload(&w, &step(18), 1, 500, 3000);
    must(w.flush(), "flush after the gap");
    drop(w);
    let r = opened(open, "reader of the late flush");
    exact(&r, &late, "the field flushed after the gap");
}

/// A record spliced out of a log that is one file or object (its bytes
/// removed, the records after it moved up: the log rewritten without it
/// behind the backend's back) is damage, never an older answer: a handle
/// reads the newest step 0 and goes idle; five flushes into one dataset —
/// step 0, step 6, step 0 again, step 6 again, step 12 — then
/// `splice(dataset, 2)` splices out the second flush of step 0. After
/// [`fieldstore::engine::LOOK_AGAIN`], a fresh handle and the idle one
/// fail step 0 with `Corrupt` or (the idle one, which read it) answer its
/// newest version: never the older one. Steps 6 and 12 read back exactly
/// or fail `Corrupt` (such a log cannot tell where the lost record was:
/// its place may be the log's end, after them). `status` reports the
/// damage and purge removes nothing. A flush after the splice fails, or
/// reads back exactly or fails `Corrupt` for both handles: never "not
/// found" with success (it lands below where the idle handle stopped).
pub fn spliced_log_record_is_damage(open: Open<'_>, splice: crate::DamageRecord<'_>) {
    let x = "splc";
    let (flushed, dataset) = flush_each(open, x, &[(0, 1), (6, 1), (0, 2), (6, 2), (12, 1)]);
    let idle = opened(open, "idle reader");
    exact(&idle, &flushed[2], "step 0 before the splice");
    splice(&dataset, 2);
    std::thread::sleep(fieldstore::engine::LOOK_AGAIN + std::time::Duration::from_millis(200));

    let fresh = opened(open, "reader after the splice");
    let why = "the spliced-out record held the newest";
    corrupt_not_older(&fresh, &flushed[2], &flushed[0], "step 0", why);
    exact_or_corrupt(&idle, &flushed[2], "the idle reader's step 0");
    for r in [&fresh, &idle] {
        exact_or_corrupt(
            r,
            &flushed[3],
            "step 6, flushed after the spliced-out record,",
        );
        exact_or_corrupt(
            r,
            &flushed[4],
            "step 12, flushed after the spliced-out record,",
        );
    }
    reported_and_kept(&fresh, x, "a spliced-out record");

    let w = opened(open, "writer after the splice");
    let step = |s: u32| Spec { step: s, ..PL }.key(x);
    let late = archive_payload(&w, &step(18), 1, 500, 3000);
    if w.flush().is_ok() {
        for r in [&opened(open, "reader of the late flush"), &idle] {
            exact_or_corrupt(r, &late, "the field flushed after the splice");
        }
    }
}

/// A writer that others passed does not take a record's place removed
/// behind the backend's back below the log's end (its record there would
/// hide the loss). Two handles (on S3, like writers in two processes: they
/// share no memory of the log) flush in turn into one dataset — A step 0,
/// B step 6, A step 12 (A, stale, loses the race for its next place), B
/// step 0 again, B step 18 — then `remove_record(dataset, 3)` removes B's
/// newer step 0, and A flushes step 24. A fresh handle must fail step 0
/// with `Corrupt` (not answer A's older version as if nothing were lost)
/// and read step 24 exactly.
pub fn stale_writer_leaves_a_removed_record_a_gap(
    open: Open<'_>,
    remove_record: crate::DamageRecord<'_>,
) {
    let x = "stal";
    let step = |s: u32| Spec { step: s, ..PL }.key(x);
    let (a, b) = (opened(open, "writer a"), opened(open, "writer b"));
    let dataset = must(a.schema().split(&step(0)), "splitting the first key").dataset;
    let flush = |w: &fieldstore::FieldStore, s: u32, version: u32| {
        let f = archive_payload(w, &step(s), version, 500, 3000);
        must(
            w.flush(),
            format_args!("flush of step {s} version {version}"),
        );
        f
    };
    let older = flush(&a, 0, 1);
    flush(&b, 6, 1);
    flush(&a, 12, 1);
    let newer = flush(&b, 0, 2);
    flush(&b, 18, 1);
    remove_record(&dataset, 3);
    let late = flush(&a, 24, 1);
    drop((a, b));
    let r = opened(open, "reader after the removal");
    let why = "the removed record held the newest, and a writer must not have taken its place";
    corrupt_not_older(&r, &newer, &older, "step 0", why);
    exact(&r, &late, "step 24, flushed after the removal,");
}

/// A record removed right where an idle reader stopped does not hide the
/// records after it from that reader for good: a handle reads step 0
/// (version 1, record 0) and goes idle at the log's end; another flushes
/// step 0 again (record 1) and step 6 (record 2); `remove_record(dataset,
/// 1)` removes record 1. Once [`fieldstore::engine::LOOK_AGAIN`]
/// has passed, the idle handle fails step 0 with `Corrupt` (never its
/// older version with success) and reads step 6 exactly. (Before, it took
/// the missing record for the end of the log: step 0's older version with
/// success, and step 6 never, until the handle was reopened.)
pub fn idle_reader_sees_past_a_removed_record(
    open: Open<'_>,
    remove_record: crate::DamageRecord<'_>,
) {
    let (r, first, later) =
        damaged_near_where_an_idle_reader_stopped(open, "idle", remove_record, 1);
    let why = "the record removed where the reader stopped held the newest";
    corrupt_not_older(&r, &later[0], &first[0], "step 0", why);
    exact(&r, &later[1], "step 6, flushed after the removed record,");
}

/// A handle that read step 0 (version 1, record 0) of expver `x` and went
/// idle at the log's end; step 0 again (record 1) and step 6 (record 2)
/// flushed by another; then `damage(dataset, at)` (1: where the reader
/// stopped; 2: past it), and [`fieldstore::engine::LOOK_AGAIN`] waited
/// out. The handle, what it read, and the two later flushes.
fn damaged_near_where_an_idle_reader_stopped(
    open: Open<'_>,
    x: &str,
    damage: crate::DamageRecord<'_>,
    at: usize,
) -> (fieldstore::FieldStore, Vec<Stored>, Vec<Stored>) {
    let (first, dataset) = flush_each(open, x, &[(0, 1)]);
    let r = opened(open, "reader");
    exact(&r, &first[0], "step 0, version 1");
    let (later, _) = flush_each(open, x, &[(0, 2), (6, 1)]);
    damage(&dataset, at);
    std::thread::sleep(fieldstore::engine::LOOK_AGAIN + std::time::Duration::from_millis(200));
    (r, first, later)
}

/// A gap of two records in a row is damage too, where the medium cannot
/// list its slots and must be told past the gap (DAOS: by what this
/// process saw, or its tail hint): six flushes — step 0, step 6, step 0
/// again, step 6 again, step 12, step 18 — then records 2 and 3 (the
/// newest versions of steps 0 and 6) removed. A fresh handle fails steps 0
/// and 6 with `Corrupt` (never their older versions with success), reads
/// steps 12 and 18 exactly, reports the damage, and purge removes nothing.
pub fn gap_of_two_records_is_damage(open: Open<'_>, remove_record: crate::DamageRecord<'_>) {
    let x = "gap2";
    let (flushed, dataset) =
        flush_each(open, x, &[(0, 1), (6, 1), (0, 2), (6, 2), (12, 1), (18, 1)]);
    remove_record(&dataset, 2);
    remove_record(&dataset, 3);

    let r = opened(open, "reader after the removal");
    let why = "a missing record held the newest";
    for (newest, older, s) in [(2, 0, 0), (3, 1, 6)] {
        corrupt_not_older(
            &r,
            &flushed[newest],
            &flushed[older],
            &format!("step {s}"),
            why,
        );
    }
    for (i, s) in [(4, 12), (5, 18)] {
        exact(
            &r,
            &flushed[i],
            &format!("step {s}, flushed after the gap,"),
        );
    }
    reported_and_kept(&r, x, "two missing records");
}

/// A log cut at a record boundary is damage, never an older answer
/// (issue 38): four flushes into one dataset — steps 0, 6, 12, then step 0
/// again — then `cut(dataset, 3)` cuts the log just before the last
/// record, leaving a whole log of the first three. A fresh handle fails
/// step 0 with `Corrupt` (never its older version with success), reads
/// steps 6 and 12 exactly or fails them `Corrupt` (the lost record's place
/// is the log's end, after them), reports the damage, and purge removes
/// nothing.
pub fn cut_log_is_damage(open: Open<'_>, cut: crate::DamageRecord<'_>) {
    let x = "cut1";
    let (flushed, dataset) = flush_each(open, x, &[(0, 1), (6, 1), (12, 1), (0, 2)]);
    cut(&dataset, 3);

    let r = opened(open, "reader after the cut");
    corrupt_not_older(
        &r,
        &flushed[3],
        &flushed[0],
        "step 0",
        "the cut went unseen",
    );
    exact_or_corrupt(&r, &flushed[1], "step 6");
    exact_or_corrupt(&r, &flushed[2], "step 12");
    reported_and_kept(&r, x, "a cut log");
}

/// A cut after a damaged record is still seen: four flushes — step 6,
/// step 0, step 12, then step 0 again — then `damage(dataset, 0)` damages
/// the first and `cut(dataset, 3)` cuts off the last. A fresh handle, which
/// reads step 0's older version after the damaged record, fails step 0
/// with `Corrupt`, never that version with success. (Before, a RADOS
/// reader stopped comparing its segment's record count after any damaged
/// region, so the cut behind it went unseen: found by
/// `damage_in_mid_life`.)
pub fn cut_after_a_damaged_record_is_damage(
    open: Open<'_>,
    damage: crate::DamageRecord<'_>,
    cut: crate::DamageRecord<'_>,
) {
    cut_after_damage(open, "cut7", damage, cut);
}

/// [`cut_after_a_damaged_record_is_damage`] with the first record's
/// header damaged (`damage_header`), its payload intact. (Before, a RADOS
/// reader could not count such bytes as a record, stopped comparing its
/// segment's record count, and answered step 0's older version with
/// success.)
pub fn cut_after_a_damaged_header_is_damage(
    open: Open<'_>,
    damage_header: crate::DamageRecord<'_>,
    cut: crate::DamageRecord<'_>,
) {
    cut_after_damage(open, "cut8", damage_header, cut);
}

/// The cut-after-damage checks, in datasets of expver `x`.
fn cut_after_damage(
    open: Open<'_>,
    x: &str,
    damage: crate::DamageRecord<'_>,
    cut: crate::DamageRecord<'_>,
) {
    let (flushed, dataset) = flush_each(open, x, &[(6, 1), (0, 1), (12, 1), (0, 2)]);
    damage(&dataset, 0);
    cut(&dataset, 3);
    let r = opened(open, "reader after the damage and the cut");
    let why = "the cut after the damaged record went unseen";
    corrupt_not_older(&r, &flushed[3], &flushed[1], "step 0", why);
    exact_or_corrupt(&r, &flushed[2], "step 12");
}

/// A log cut back to where an idle reader stopped is damage to that
/// reader too, not the end of the log: a handle reads step 0 (version 1,
/// record 0) and goes idle at the log's end; another flushes step 0 again
/// (record 1) and step 6 (record 2); `cut(dataset, 1)` cuts both off. Once
/// [`fieldstore::engine::LOOK_AGAIN`] has passed, the idle handle fails
/// step 0 and step 6 with `Corrupt`: never step 0's older version, or step
/// 6 not found, with success. (Before, an idle reader checked the log's
/// end only at its first refresh and when it read something new.)
///
/// The same with the cut one record further (`cut(dataset, 2)`: step 6
/// only): the handle, reading record 1 at its next call, reads step 0's
/// newer version or fails it `Corrupt`, and fails step 6 `Corrupt`, never
/// not found with success. (Before, an S3 reader that read something new
/// and then found the end did not read the tail hint that tells a lost
/// tail: found by `damage_in_mid_life` in CI.)
///
/// And cut below where the reader stopped (`cut(dataset, 0)` after steps 0
/// and 6, both read), then step 0 flushed again: the reader, asked at
/// once, reads the new version or fails `Corrupt` (or the flush fails
/// `Corrupt`, refusing a cut log): never the older version with success.
/// (Before, a RADOS reader read on from where it stopped, past the new
/// record appended below it, until its next look a second later.) A
/// surface field, asked for (not there) after the cut and flushed with
/// step 0, reads exactly or fails `Corrupt` too, never not found with
/// success: what a reader learnt of its damage must not go stale when
/// blocks come whose records it never reads.
pub fn idle_reader_sees_a_cut_near_where_it_stopped(open: Open<'_>, cut: crate::DamageRecord<'_>) {
    let (r, first, later) = damaged_near_where_an_idle_reader_stopped(open, "cut3", cut, 1);
    let why = "the cut went unseen by the idle reader";
    corrupt_not_older(&r, &later[0], &first[0], "step 0", why);
    cut_off(&r, &later[1], "step 6");

    let (r, _, later) = damaged_near_where_an_idle_reader_stopped(open, "cut5", cut, 2);
    exact_or_corrupt(&r, &later[0], "step 0, before the cut,");
    cut_off(&r, &later[1], "step 6 (past where the reader stopped)");

    let (first, dataset) = flush_each(open, "cut6", &[(0, 1), (6, 1)]);
    let r = opened(open, "reader");
    exact(&r, &first[0], "step 0, version 1");
    cut(&dataset, 0);
    std::thread::sleep(fieldstore::engine::LOOK_AGAIN + std::time::Duration::from_millis(200));
    exact_or_corrupt(&r, &first[1], "step 6, read before the cut,");
    let surface = Spec { step: 0, ..SFC }.key("cut6");
    if let Ok(bytes) = retrieve_outcome(&r, &surface) {
        assert!(bytes.is_empty(), "a surface field never flushed read back");
    }
    let w = opened(open, "writer after the cut");
    let newer = archive_payload(&w, &first[0].key, 2, 500, 3000);
    let surface = archive_payload(&w, &surface, 1, 500, 3000);
    if let Err(e) = w.flush() {
        assert_eq!(e.kind(), ErrorKind::Corrupt, "a flush after the cut: {e}");
        return;
    }
    match retrieve_outcome(&r, &newer.key) {
        Ok(bytes) if bytes == first[0].data => panic!(
            "step 0, flushed again after a cut below where the reader stopped, answered its older \
             version with success"
        ),
        Ok(bytes) => assert!(
            bytes == newer.data,
            "step 0, flushed after the cut, read back other bytes"
        ),
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::Corrupt,
            "step 0, flushed after the cut: {e}"
        ),
    }
    // The reader had asked for the surface collocation before it was
    // flushed: what it learnt then must not hide the flush now.
    match retrieve_outcome(&r, &surface.key) {
        Ok(bytes) => assert!(
            bytes == surface.data,
            "a surface field flushed after a cut below where the reader stopped, which had asked \
             for it before, read back {} bytes with success",
            bytes.len()
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "the surface field: {e}"),
    }
}

/// `field`, cut off the log, fails `Corrupt` from `r`: never not found or
/// read back with success.
fn cut_off(r: &fieldstore::FieldStore, field: &Stored, what: &str) {
    match retrieve_outcome(r, &field.key) {
        Ok(bytes) => panic!(
            "{what}, cut off, read back {} bytes with success",
            bytes.len()
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}"),
    }
}

/// As [`cut_log_is_damage`], and then writers flush three times more:
/// four flushes — steps 0, 6, 12, then step 0 again — then `cut(dataset,
/// 2)` cuts the last two records, and three writers, one after another,
/// flush steps 18, 24 and 30 (together they reach past where the log
/// ended before the cut). Each such flush either succeeds or fails
/// `Corrupt`, refusing to append to a cut log (POSIX). A fresh handle still
/// fails step 0 with `Corrupt`, never its older version with success;
/// reads step 6 and the late steps that were acknowledged exactly or fails
/// them `Corrupt`; reports the damage; and purge removes nothing.
pub fn cut_then_appended_to_is_damage(open: Open<'_>, cut: crate::DamageRecord<'_>) {
    let x = "cut2";
    let (flushed, dataset) = flush_each(open, x, &[(0, 1), (6, 1), (12, 1), (0, 2)]);
    cut(&dataset, 2);
    let mut late = Vec::new();
    for step in [18, 24, 30] {
        let w = opened(open, "writer after the cut");
        let field = archive_payload(&w, &Spec { step, ..PL }.key(x), 1, 500, 3000);
        match w.flush() {
            Ok(()) => late.push((step, field)),
            Err(e) => assert_eq!(
                e.kind(),
                ErrorKind::Corrupt,
                "a flush after the cut failed, and not for the cut: {e}"
            ),
        }
    }

    let r = opened(open, "reader");
    let why = "the flushes after the cut hid it";
    corrupt_not_older(&r, &flushed[3], &flushed[0], "step 0", why);
    exact_or_corrupt(&r, &flushed[1], "step 6");
    for (step, field) in &late {
        exact_or_corrupt(&r, field, &format!("step {step}"));
    }
    reported_and_kept(&r, x, "a cut log appended to");
}

/// The records a lost-tail check writes ([`lost_tail_reaching_a_hint_is_damage`]).
pub const LOST_TAIL_RECORDS: usize = 21;

/// A lost tail is damage where the medium keeps a hint of its log's end
/// (DAOS and S3 rewrite one after every record): 21 flushes — steps 0 to 19,
/// then step 0 again — then `remove_tail(dataset, 16)` removes records 16
/// to 20 (the hinted one included). A fresh handle fails step 0 with
/// `Corrupt` (never its older version with success), fails the steps
/// whose only record is gone, reports the damage, and purge removes
/// nothing.
pub fn lost_tail_reaching_a_hint_is_damage(open: Open<'_>, remove_tail: crate::DamageRecord<'_>) {
    let x = "tail";
    let flushed = lose_the_tail(open, x, remove_tail);
    let r = opened(open, "reader after the removal");
    for (i, what) in [
        (20, "step 0, newest in the lost tail"),
        (16, "step 16"),
        (19, "step 19"),
    ] {
        let why = "the lost tail went unseen";
        corrupt_not_older(&r, &flushed[i], &flushed[0], what, why);
    }
    reported_and_kept(&r, x, "a lost tail");
}

/// As [`lost_tail_reaching_a_hint_is_damage`], and then a writer that did
/// not see the log flushes once more (step 30): it must not fill the
/// removed slots below the hint, which would hide the loss. Step 0 (its
/// newest version in the lost tail) still fails `Corrupt`, never its older
/// version with success; the damage is reported; purge removes nothing.
pub fn lost_tail_then_appended_to_is_damage(open: Open<'_>, remove_tail: crate::DamageRecord<'_>) {
    let x = "tai2";
    let flushed = lose_the_tail(open, x, remove_tail);
    let w = opened(open, "writer after the removal");
    let late = archive_payload(&w, &Spec { step: 30, ..PL }.key(x), 1, 500, 3000);
    must(w.flush(), "flush after the removal");
    drop(w);

    let r = opened(open, "reader");
    let why = "the flush after the lost tail hid it";
    corrupt_not_older(&r, &flushed[20], &flushed[0], "step 0", why);
    exact_or_corrupt(&r, &late, "step 30");
    reported_and_kept(&r, x, "a lost tail appended to");
}

/// A lost tail is damage even where racing writers stored the medium's
/// tail hint out of order: three flushes — step 0, step 6, step 0 again —
/// then `late_hint(dataset, 1)` stores record 1 as the hint after record
/// 2's was stored (what a writer that published record 1 does when its
/// hint write reaches the medium last), and `remove_tail(dataset, 2)`
/// removes record 2. A fresh handle fails step 0 with `Corrupt` (never its
/// older version with success), reads step 6 exactly or fails it
/// `Corrupt`, reports the damage, and purge removes nothing.
pub fn late_hint_then_lost_tail_is_damage(
    open: Open<'_>,
    late_hint: crate::DamageRecord<'_>,
    remove_tail: crate::DamageRecord<'_>,
) {
    let x = "late";
    let (flushed, dataset) = flush_each(open, x, &[(0, 1), (6, 1), (0, 2)]);
    late_hint(&dataset, 1);
    remove_tail(&dataset, 2);
    let r = opened(open, "reader after the removal");
    let why = "the hint stored last named an earlier record, and the lost tail went unseen";
    corrupt_not_older(&r, &flushed[2], &flushed[0], "step 0", why);
    exact_or_corrupt(&r, &flushed[1], "step 6");
    reported_and_kept(&r, x, "a lost tail behind a late hint");
}

/// [`LOST_TAIL_RECORDS`] flushes into dataset `x` — steps 0 to 19, then
/// step 0 again — then `remove_tail(dataset, 16)`: what was flushed.
fn lose_the_tail(open: Open<'_>, x: &str, remove_tail: crate::DamageRecord<'_>) -> Vec<Stored> {
    let mut versions: Vec<(u32, u32)> = (0..20).map(|s| (s, 1)).collect();
    versions.push((0, 2));
    let (flushed, dataset) = flush_each(open, x, &versions);
    assert_eq!(flushed.len(), LOST_TAIL_RECORDS);
    remove_tail(&dataset, 16);
    flushed
}

/// `want`'s key fails `Corrupt`: its record was lost, so neither `older`
/// (its version before: `why` names what hid the loss) nor any other bytes
/// may come back.
fn corrupt_not_older(
    r: &fieldstore::FieldStore,
    want: &Stored,
    older: &Stored,
    what: &str,
    why: &str,
) {
    match retrieve_outcome(r, &want.key) {
        Ok(bytes) if bytes == older.data => {
            panic!("{what} answered an older version with success: {why}")
        }
        Ok(bytes) => panic!("{what} read back {} bytes from a lost record", bytes.len()),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}"),
    }
}

/// `want` reads back exactly (`what` names it).
fn exact(r: &fieldstore::FieldStore, want: &Stored, what: &str) {
    match retrieve_outcome(r, &want.key) {
        Ok(bytes) => assert!(bytes == want.data, "{what} read back other bytes"),
        Err(e) => panic!("{what} failed: {e}"),
    }
}

/// `want` reads back exactly, or fails `Corrupt` (damage before or after
/// it may change its answer): never other bytes.
fn exact_or_corrupt(r: &fieldstore::FieldStore, want: &Stored, what: &str) {
    match retrieve_outcome(r, &want.key) {
        Ok(bytes) => assert!(bytes == want.data, "{what} read back other bytes"),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}"),
    }
}

/// `status` of expver `x` reports damage (`what`), and `purge --doit`
/// removes nothing of its datasets: in the checks that call this every
/// unit holds a newest field or one the lost records may name, and a unit
/// the damage may point into looks unused to the reader (purge leaves the
/// dataset alone, or keeps the units the damage may name,
/// [`purge_around_a_damaged_record`]).
fn reported_and_kept(r: &fieldstore::FieldStore, x: &str, what: &str) {
    let request = &crate::support::request(&format!("class=od,expver={x}"));
    let status = must(r.status(request), format_args!("status with {what}"));
    assert!(
        status.iter().any(|s| !s.damage.is_empty()),
        "status does not report {what}: {status:?}"
    );
    let report = must(r.purge(request, true), format_args!("purge with {what}"));
    assert!(
        report.datasets.iter().all(|d| d.items.is_empty()),
        "purge removed units of a dataset with {what}: {report:?}"
    );
}

/// A dataset whose registration (the entry listings of datasets read) was
/// removed behind the backend's back is still listed (issue 38: "removing
/// its root entry hides it from `list` while `retrieve` still works").
/// Three flushes into one dataset, then `unregister(dataset)`. A fresh
/// handle's listing with the dataset's keywords left open finds all three
/// fields, at every depth, and each reads back exactly; a second fresh
/// handle does too (the first may have registered it again, which is
/// allowed, but need not have); and a wipe through such a listing removes
/// it.
pub fn unregistered_dataset_is_listed(open: Open<'_>, unregister: &(dyn Fn(&DatasetKey) + Sync)) {
    let x = "ureg";
    let (flushed, dataset) = flush_each(open, x, &[(0, 1), (6, 1), (12, 1)]);
    unregister(&dataset);
    let request = crate::support::request(&format!("class=od,expver={x}"));
    let probe = opened(open, "probe");
    let mut want: Vec<String> = (flushed.iter())
        .map(|f| crate::support::canonical(&probe, &f.key))
        .collect();
    want.sort();
    for handle in ["first reader", "second reader"] {
        let r = opened(open, handle);
        for depth in [
            fieldstore::Level::Dataset,
            fieldstore::Level::Collocation,
            fieldstore::Level::Element,
        ] {
            let listed = crate::support::list(&r, &request, depth, false);
            assert!(
                listed.iter().any(|e| e.dataset == dataset),
                "{handle}: a listing at depth {depth:?} left out {dataset}, whose registration was removed: {listed:?}"
            );
        }
        let mut keys: Vec<String> =
            crate::support::list(&r, &request, fieldstore::Level::Element, false)
                .iter()
                .map(|e| e.full_key().to_string())
                .collect();
        keys.sort();
        assert_eq!(
            keys, want,
            "{handle}: the listed fields of the unregistered dataset"
        );
        for (i, f) in flushed.iter().enumerate() {
            exact(
                &r,
                f,
                &format!("{handle}: field {i} of the unregistered dataset"),
            );
        }
    }
    let w = opened(open, "wiper");
    must(
        w.wipe(
            &request,
            fieldstore::WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        ),
        "wipe of the unregistered dataset",
    );
    let left = crate::support::list(
        &opened(open, "after the wipe"),
        &request,
        fieldstore::Level::Element,
        false,
    );
    assert!(
        left.is_empty(),
        "{dataset} still listed after its wipe: {left:?}"
    );
}
