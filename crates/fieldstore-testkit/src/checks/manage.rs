//! Data management: wipe, purge, stats, status and control (locks), on
//! every backend.

use fieldstore::maintenance::{locked, wiped_while_writing};
use fieldstore::{Control, ErrorKind, FieldStore, Level, Locks, Operation, Request, WipeOptions};

use super::{expect_exactly, opened, PL, SFC};
use crate::payload;
use crate::support::{archive_payload, list, must, request, retrieve_one, Spec, Stored};
use crate::Open;

fn dataset_of(fs: &FieldStore, s: &Stored) -> fieldstore::DatasetKey {
    must(
        fs.schema().split(&s.key),
        format_args!("splitting {}", s.key),
    )
    .dataset
}

const DOIT: WipeOptions = WipeOptions {
    doit: true,
    unsafe_wipe_all: false,
};

/// Every entry that `list` with duplicates shows can be read, and holds the
/// version of its key it claims: maintenance never leaves an entry pointing
/// at bytes that are gone.
#[track_caller]
fn every_listed_entry_reads(fs: &FieldStore, x: &str, when: &str) {
    let mut buf = Vec::new();
    for e in list(
        fs,
        &request(&format!("class=od,expver={x}")),
        Level::Element,
        true,
    ) {
        let loc = e.location.clone().expect("element entries have a location");
        let key = e.full_key().to_string();
        must(
            fs.store().read(&loc, &mut buf),
            format_args!("{when}: reading {loc} of {key}, listed with duplicates"),
        );
        if let Err(err) = payload::verify(&buf, &key) {
            panic!("{when}: {loc} of {key}: {err}");
        }
    }
}

/// Wipe of whole datasets: a dry run deletes nothing and says what would
/// go; the real run hides the dataset from every reader (list at every
/// depth, axes, retrieve, location; replaced versions too), including
/// readers that had it open, and leaves other datasets alone. A writer that
/// was writing to it gets a clear error from its next flush and then
/// creates it anew; a second wipe finds nothing.
pub fn wipe_dataset(open: Open<'_>) {
    let x = "wpd1";
    let w = opened(open, "writer");
    let r = opened(open, "reader");
    let other_day = Spec {
        date: 20231202,
        ..PL
    };
    let a1 = archive_payload(&w, &PL.key(x), 1, 100, 3000);
    let a2 = archive_payload(&w, &SFC.key(x), 1, 100, 3000);
    let b = archive_payload(&w, &other_day.key(x), 1, 100, 3000);
    must(w.flush(), "flush");
    let a1v2 = archive_payload(&w, &PL.key(x), 2, 100, 3000);
    must(w.flush(), "flush of a replacement");
    expect_exactly(&r, x, &[&a1v2, &a2, &b], &[], "before the wipe");

    let req = PL.dataset_request(x);
    let dry = must(w.wipe(&req, WipeOptions::default()), "wipe (dry run)");
    assert!(!dry.done, "a dry run says it did nothing");
    assert_eq!(dry.datasets.len(), 1, "one dataset named: {dry:?}");
    let d = &dry.datasets[0];
    assert_eq!(d.dataset, dataset_of(&w, &a1), "the dataset named");
    assert_eq!(d.collocations, None, "the whole dataset goes: {d:?}");
    assert_eq!(
        (d.fields, d.bytes),
        (3, (a1.data.len() + a1v2.data.len() + a2.data.len()) as u64),
        "a dry run counts every entry that would go, replaced ones included"
    );
    assert!(!d.items.is_empty(), "a dry run lists what would go: {d:?}");
    assert!(d.unknown.is_empty(), "nothing unknown: {:?}", d.unknown);
    expect_exactly(&r, x, &[&a1v2, &a2, &b], &[], "after a dry run");

    let done = must(w.wipe(&req, DOIT), "wipe");
    assert!(done.done);
    assert_eq!(done.datasets.len(), 1, "{done:?}");
    expect_exactly(
        &r,
        x,
        &[&b],
        &[&a1v2, &a2],
        "after the wipe (reader opened before)",
    );
    let late = opened(open, "late reader");
    expect_exactly(
        &late,
        x,
        &[&b],
        &[&a1v2, &a2],
        "after the wipe (new reader)",
    );
    let again = must(w.wipe(&req, DOIT), "second wipe");
    assert!(
        again.datasets.is_empty(),
        "a second wipe finds nothing to do: {again:?}"
    );

    // The writer had the dataset open: its next flush says what happened,
    // stores nothing, and its next archive creates the dataset anew.
    let lost = archive_payload(&w, &SFC.key(x), 3, 100, 3000);
    let e = w
        .flush()
        .expect_err("a flush into a dataset wiped under the writer must fail");
    let want = wiped_while_writing(&dataset_of(&w, &lost));
    assert_eq!(e.kind(), want.kind(), "{e}");
    assert!(
        e.to_string().ends_with(&want.to_string()),
        "the flush error: {e}"
    );
    expect_exactly(&r, x, &[&b], &[&lost], "after the failed flush");
    let anew = archive_payload(&w, &SFC.key(x), 4, 100, 3000);
    must(w.flush(), "flush into the dataset created anew");
    expect_exactly(&r, x, &[&anew, &b], &[&a1v2], "after creating it anew");
}

/// Wipe of collocations: a request naming collocation keywords deletes
/// those collocations whole (replaced versions too) and nothing else; the
/// collocation can be archived into again afterwards.
pub fn wipe_collocations(open: Open<'_>) {
    let x = "wpc1";
    let w = opened(open, "writer");
    let r = opened(open, "reader");
    let pl0 = archive_payload(&w, &PL.key(x), 1, 100, 3000);
    let pl6 = archive_payload(&w, &Spec { step: 6, ..PL }.key(x), 1, 100, 3000);
    let sfc0 = archive_payload(&w, &SFC.key(x), 1, 100, 3000);
    must(w.flush(), "flush");
    let sfc0v2 = archive_payload(&w, &SFC.key(x), 2, 100, 3000);
    let pl0v2 = archive_payload(&w, &PL.key(x), 2, 100, 3000);
    must(w.flush(), "flush of replacements");
    drop(w);
    expect_exactly(&r, x, &[&pl0v2, &pl6, &sfc0v2], &[], "before the wipe");

    let req = SFC.collocation_request(x);
    let w = opened(open, "wiper");
    let dry = must(w.wipe(&req, WipeOptions::default()), "wipe (dry run)");
    assert_eq!(dry.datasets.len(), 1, "{dry:?}");
    let cols = dry.datasets[0]
        .collocations
        .clone()
        .expect("a collocation wipe names its collocations");
    let names: Vec<String> = cols.iter().map(|c| c.braced()).collect();
    assert_eq!(names, ["{type=cf,levtype=sfc}"], "the collocations named");
    assert_eq!(
        (dry.datasets[0].fields, dry.datasets[0].bytes),
        (2, (sfc0.data.len() + sfc0v2.data.len()) as u64),
        "the entries that would go"
    );
    expect_exactly(&r, x, &[&pl0v2, &pl6, &sfc0v2], &[], "after a dry run");

    must(w.wipe(&req, DOIT), "wipe");
    expect_exactly(&r, x, &[&pl0v2, &pl6], &[&sfc0v2], "after the wipe");
    let full: Vec<String> = list(
        &r,
        &request(&format!("class=od,expver={x}")),
        Level::Element,
        true,
    )
    .iter()
    .map(|e| e.full_key().to_string())
    .collect();
    assert_eq!(
        (
            full.len(),
            full.iter().filter(|k| **k == pl0.canonical).count()
        ),
        (3, 2),
        "list with duplicates keeps the other collocation's versions: {full:?}"
    );
    every_listed_entry_reads(&r, x, "after the wipe");
    let again = archive_payload(&w, &SFC.key(x), 3, 100, 3000);
    must(w.flush(), "flush into the wiped collocation");
    expect_exactly(
        &r,
        x,
        &[&pl0v2, &pl6, &again],
        &[],
        "after archiving into it again",
    );
}

/// Wipe refuses requests that do not name whole datasets or collocations,
/// with an explanation, and deletes nothing.
pub fn wipe_refuses_fields(open: Open<'_>) {
    let x = "wpr1";
    let w = opened(open, "writer");
    let s = archive_payload(&w, &PL.key(x), 1, 100, 3000);
    must(w.flush(), "flush");
    let e = w
        .wipe(&request(&format!("class=od,expver={x},step=0")), DOIT)
        .expect_err("a wipe naming fields must be refused");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(
        e.to_string(),
        "wipe deletes whole datasets or whole collocations, but keyword 'step' names fields within a \
         collocation ([ class, expver, stream, date, time [ type, levtype [ step, number?, levelist?, \
         param ]]] (line 25)): remove it from the request"
    );
    let e = w
        .wipe(&Request::new(), DOIT)
        .expect_err("an empty wipe request must be refused");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(
        e.to_string(),
        "wipe needs a request naming what to delete: an empty request would name every dataset"
    );
    let e = w
        .purge(&request(&format!("class=od,expver={x},type=pf")), false)
        .expect_err("a purge naming collocations must be refused");
    assert_eq!(
        e.to_string(),
        "purge works on whole datasets, but keyword 'type' is below the dataset level: remove it \
         from the request"
    );
    expect_exactly(&w, x, &[&s], &[], "after the refusals");
}

/// Purge reclaims replaced fields: a dry run reports them and deletes
/// nothing; the real run leaves every newest version readable and every
/// entry still listed (with duplicates) readable; replaced versions whose
/// storage holds nothing newer, written by writers that are gone, are no
/// longer listed; a second purge finds nothing more to reclaim there.
pub fn purge_replaced(open: Open<'_>) {
    let x = "prg1";
    let r = opened(open, "reader");
    // One writer per version, each gone afterwards: every backend can
    // reclaim a version nothing newer shares storage with.
    let k1v1 = {
        let w = opened(open, "first writer");
        let s = archive_payload(&w, &PL.key(x), 1, 100, 3000);
        must(w.flush(), "flush");
        s
    };
    let k2 = {
        let w = opened(open, "second writer");
        let s = archive_payload(&w, &SFC.key(x), 1, 100, 3000);
        must(w.flush(), "flush");
        s
    };
    let k1v2 = {
        let w = opened(open, "third writer");
        let s = archive_payload(&w, &PL.key(x), 2, 100, 3000);
        must(w.flush(), "flush");
        s
    };
    // A live writer replaces one of its own fields: its storage may have
    // to stay (it still appends to it), but nothing must break.
    let live = opened(open, "live writer");
    let k3v1 = archive_payload(&live, &Spec { step: 6, ..PL }.key(x), 1, 100, 3000);
    must(live.flush(), "flush");
    let k3v2 = archive_payload(&live, &Spec { step: 6, ..PL }.key(x), 2, 100, 3000);
    must(live.flush(), "flush");

    let req = PL.dataset_request(x);
    let dry = must(r.purge(&req, false), "purge (dry run)");
    assert!(!dry.done);
    assert_eq!(dry.datasets.len(), 1, "{dry:?}");
    let d = &dry.datasets[0];
    assert_eq!(d.duplicates, 2, "replaced entries: {d:?}");
    assert_eq!(
        d.duplicate_bytes,
        (k1v1.data.len() + k3v1.data.len()) as u64,
        "{d:?}"
    );
    assert!(
        !d.items.is_empty(),
        "the first version's storage can go: {d:?}"
    );
    let before = list(
        &r,
        &request(&format!("class=od,expver={x}")),
        Level::Element,
        true,
    )
    .len();
    assert_eq!(before, 5, "a dry run deletes nothing");

    let done = must(r.purge(&req, true), "purge");
    assert!(done.done);
    expect_exactly(&r, x, &[&k1v2, &k2, &k3v2], &[], "after the purge");
    every_listed_entry_reads(&r, x, "after the purge");
    let full: Vec<String> = list(
        &r,
        &request(&format!("class=od,expver={x}")),
        Level::Element,
        true,
    )
    .iter()
    .map(|e| e.full_key().to_string())
    .collect();
    assert_eq!(
        full.iter().filter(|k| **k == k1v1.canonical).count(),
        1,
        "the reclaimed version is no longer listed: {full:?}"
    );
    let fresh = opened(open, "fresh reader");
    every_listed_entry_reads(&fresh, x, "after the purge (new reader)");
    let again = must(r.purge(&req, false), "second purge (dry run)");
    assert!(
        again
            .datasets
            .iter()
            .all(|d| d.items.is_empty() && d.duplicates <= 1),
        "only the live writer's replaced field may remain: {again:?}"
    );
    // The live writer goes on.
    let k3v3 = archive_payload(&live, &Spec { step: 6, ..PL }.key(x), 3, 100, 3000);
    must(live.flush(), "flush after the purge");
    expect_exactly(
        &r,
        x,
        &[&k1v2, &k2, &k3v3],
        &[],
        "after the live writer's next flush",
    );
    every_listed_entry_reads(&r, x, "after the live writer's next flush");
}

/// Stats count fields, bytes, replaced fields and what purge would free,
/// per dataset; after a purge nothing reclaimable is left where the
/// writers are gone.
pub fn stats_counts(open: Open<'_>) {
    let x = "sts1";
    let mut v1 = Vec::new();
    {
        let w = opened(open, "first writer");
        for step in [0, 6, 12] {
            v1.push(archive_payload(
                &w,
                &Spec { step, ..PL }.key(x),
                1,
                100,
                3000,
            ));
        }
        v1.push(archive_payload(&w, &SFC.key(x), 1, 100, 3000));
        must(w.flush(), "flush");
    }
    let mut v2 = Vec::new();
    {
        let w = opened(open, "second writer");
        for step in [0, 6, 12] {
            v2.push(archive_payload(
                &w,
                &Spec { step, ..PL }.key(x),
                2,
                100,
                3000,
            ));
        }
        must(w.flush(), "flush");
    }
    let r = opened(open, "reader");
    let stats = must(r.stats(&request(&format!("class=od,expver={x}"))), "stats");
    assert_eq!(stats.len(), 1, "{stats:?}");
    let s = &stats[0];
    let bytes: u64 = v2.iter().chain(&v1[3..]).map(|s| s.data.len() as u64).sum();
    let dup: u64 = v1[..3].iter().map(|s| s.data.len() as u64).sum();
    assert_eq!(
        (
            s.collocations,
            s.fields,
            s.bytes,
            s.duplicates,
            s.duplicate_bytes
        ),
        (2, 4, bytes, 3, dup),
        "{s:?}"
    );
    // The first writer's storage also holds a newest field (SFC), unless
    // the backend stores one unit per field.
    assert!(
        s.reclaimable_bytes == 0 || s.reclaimable_bytes >= dup,
        "reclaimable bytes: {s:?}"
    );
    must(r.purge(&PL.dataset_request(x), true), "purge");
    let after = must(
        r.stats(&request(&format!("class=od,expver={x}"))),
        "stats after purge",
    );
    assert_eq!(after[0].fields, 4, "{after:?}");
    assert_eq!(after[0].bytes, bytes, "{after:?}");
    assert_eq!(after[0].reclaimable_bytes, 0, "after a purge: {after:?}");
}

/// Locks set by control are honoured by every operation of every handle,
/// with a `Locked` error naming the dataset and the operation; status
/// reports them; unlocking restores each operation.
pub fn locks_honoured(open: Open<'_>) {
    let x = "lck1";
    let w = opened(open, "writer");
    let r = opened(open, "reader");
    let a = archive_payload(&w, &PL.key(x), 1, 100, 3000);
    let other = Spec {
        date: 20231202,
        ..PL
    };
    let b = archive_payload(&w, &other.key(x), 1, 100, 3000);
    must(w.flush(), "flush");
    let d = dataset_of(&w, &a);
    let req = PL.dataset_request(x);
    let family = request(&format!("class=od,expver={x}"));
    let control = |action, op: Operation| {
        must(
            w.control(&req, action, Locks::NONE.with(op)),
            format_args!("control {action:?} {op}"),
        )
    };

    let status = must(r.status(&req), "status");
    assert_eq!(status.len(), 1, "{status:?}");
    assert_eq!(status[0].locks, Locks::NONE);
    assert_eq!(status[0].place, r.catalogue().describe(&d));

    // Retrieve.
    let set = control(Control::Lock, Operation::Retrieve);
    assert_eq!(set[0].locks.to_string(), "retrieve", "{set:?}");
    let e = r
        .retrieve(&Request::from_key(&a.key))
        .expect_err("retrieve of a retrieve-locked dataset must fail");
    assert_eq!(e.kind(), ErrorKind::Locked);
    assert_eq!(e.to_string(), locked(&d, Operation::Retrieve).to_string());
    assert_eq!(
        e.to_string(),
        "dataset {class=od,expver=lck1,stream=enfo,date=20231201,time=1200} is locked against \
         retrieve (unlock it to allow retrieve)"
    );
    let e = r.location(&a.key).expect_err("location is a retrieve");
    assert_eq!(e.kind(), ErrorKind::Locked);
    assert_eq!(
        list(&r, &family, Level::Element, false).len(),
        2,
        "list is not locked"
    );
    let status = must(r.status(&req), "status");
    assert_eq!(status[0].locks.to_string(), "retrieve");
    control(Control::Unlock, Operation::Retrieve);
    assert_eq!(retrieve_one(&r, &a.key).as_deref(), Some(&a.data[..]));

    // List: hidden from listings, an error when named exactly.
    control(Control::Lock, Operation::List);
    for depth in [Level::Dataset, Level::Collocation, Level::Element] {
        let shown = list(&r, &family, depth, false);
        assert_eq!(
            shown.len(),
            1,
            "list at {depth:?} shows only the other dataset: {shown:?}"
        );
        assert_eq!(shown[0].dataset, dataset_of(&r, &b));
        let e = r
            .list(
                &req,
                fieldstore::ListOptions {
                    depth,
                    duplicates: false,
                },
            )
            .expect_err("listing the list-locked dataset by name must fail");
        assert_eq!(e.to_string(), locked(&d, Operation::List).to_string());
    }
    let axes = must(r.axes(&family, Level::Dataset), "axes");
    assert_eq!(
        axes.get("date")
            .map(|v| v.iter().cloned().collect::<Vec<_>>()),
        Some(vec!["20231202".to_string()]),
        "axes leave the list-locked dataset out"
    );
    assert_eq!(
        retrieve_one(&r, &a.key).as_deref(),
        Some(&a.data[..]),
        "retrieve is not locked"
    );
    control(Control::Unlock, Operation::List);
    assert_eq!(list(&r, &family, Level::Dataset, false).len(), 2);

    // Archive: a writer that has the dataset open, and a new one.
    control(Control::Lock, Operation::Archive);
    let v2 = archive_payload(&w, &PL.key(x), 2, 100, 3000);
    let e = w
        .flush()
        .expect_err("a flush into an archive-locked dataset must fail");
    assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
    assert!(
        e.to_string()
            .ends_with(&locked(&d, Operation::Archive).to_string()),
        "{e}"
    );
    let w2 = opened(open, "new writer");
    let e = w2
        .archive(&Spec { step: 6, ..PL }.key(x), b"x")
        .and_then(|()| w2.flush())
        .expect_err("archiving into an archive-locked dataset must fail");
    assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
    w2.discard().expect("discard");
    // Version 1 is still the one retrieved (version 2 was refused).
    let _ = v2;
    expect_exactly(&r, x, &[&a, &b], &[], "after the refused archives");
    control(Control::Unlock, Operation::Archive);
    let v3 = archive_payload(&w, &PL.key(x), 3, 100, 3000);
    must(w.flush(), "flush after unlocking archive");
    expect_exactly(&r, x, &[&v3, &b], &[], "after unlocking archive");

    // Wipe (and purge, which deletes too).
    control(Control::Lock, Operation::Wipe);
    let e = w
        .wipe(&req, DOIT)
        .expect_err("wiping a wipe-locked dataset must fail");
    assert_eq!(e.to_string(), locked(&d, Operation::Wipe).to_string());
    let e = w
        .purge(&req, true)
        .expect_err("purge of a wipe-locked dataset");
    assert_eq!(e.kind(), ErrorKind::Locked);
    expect_exactly(&r, x, &[&v3, &b], &[], "after the refused wipe");
    let all = must(
        w.control(&req, Control::Unlock, Locks::ALL),
        "unlock everything",
    );
    assert_eq!(all[0].locks, Locks::NONE);
    let status = must(r.status(&family), "status");
    assert_eq!(status.len(), 2, "{status:?}");
    assert!(status.iter().all(|s| s.locks.is_empty()), "{status:?}");
}
