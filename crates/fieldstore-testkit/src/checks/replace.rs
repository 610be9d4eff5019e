//! Clause 4: replacement is atomic; visible data is immutable.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Barrier;

use fieldstore::{FieldStore, Level};

use super::{opened, OnExit, PL};
use crate::payload;
use crate::support::{archive_payload, list, must, request, retrieve, Spec, Stored};
use crate::Open;

/// Versions of one key seen through list with duplicates, newest first,
/// each verified by reading its location.
#[track_caller]
fn versions_listed(fs: &FieldStore, x: &str, canonical: &str) -> Vec<u32> {
    let req = request(&format!("class=od,expver={x}"));
    let mut buf = Vec::new();
    list(fs, &req, Level::Element, true)
        .into_iter()
        .filter(|e| e.full_key().to_string() == canonical)
        .map(|e| {
            let loc = e.location.expect("element-level entries have a location");
            must(
                fs.store().read(&loc, &mut buf),
                format_args!("reading {loc} of {canonical}"),
            );
            payload::verify(&buf, canonical)
                .unwrap_or_else(|err| panic!("list with duplicates: {loc}: {err}"))
        })
        .collect()
}

/// The version retrieve returns for `s`'s key (verified), or `None`.
#[track_caller]
fn version_retrieved(fs: &FieldStore, s: &Stored) -> Option<u32> {
    crate::support::retrieve_one(fs, &s.key).map(|d| {
        payload::verify(&d, &s.canonical).unwrap_or_else(|e| panic!("retrieve {}: {e}", s.key))
    })
}

/// Clause 4: archiving a key again replaces the field atomically. Readers
/// see the old field until the new one is flushed, then the new one
/// (different length, never a mix); list without duplicates shows one
/// entry, with duplicates every flushed version newest first, each still
/// readable; a replacement from another handle wins once flushed; of two
/// archives of one key before one flush, the later wins; neighbouring keys
/// are untouched.
pub fn replace_is_atomic(open: Open<'_>) {
    let x = "rep1";
    let w = opened(open, "writer");
    let w2 = opened(open, "second writer");
    let r = opened(open, "reader");
    let key = PL.key(x);
    let neighbour = archive_payload(&w, &Spec { step: 6, ..PL }.key(x), 1, 100, 2000);
    let v1 = archive_payload(&w, &key, 1, 100, 2000);
    must(w.flush(), "flush of version 1");
    let c = v1.canonical.clone();
    assert_eq!(
        version_retrieved(&r, &v1),
        Some(1),
        "after flushing version 1"
    );

    let v2 = archive_payload(&w, &key, 2, 2100, 4000);
    assert_eq!(
        version_retrieved(&r, &v1),
        Some(1),
        "version 2 archived, not flushed: readers must still see version 1"
    );
    assert_eq!(
        versions_listed(&r, x, &c),
        [1],
        "version 2 archived, not flushed: list with duplicates"
    );
    let loc = must(r.location(&key), "location").expect("version 1 is visible");
    assert_eq!(
        loc.length,
        v1.data.len() as u64,
        "version 2 archived, not flushed: location must still be version 1's"
    );

    must(w.flush(), "flush of version 2");
    assert_eq!(
        version_retrieved(&r, &v2),
        Some(2),
        "after flushing version 2"
    );
    let dedup: Vec<_> = list(
        &r,
        &request(&format!("class=od,expver={x}")),
        Level::Element,
        false,
    )
    .into_iter()
    .filter(|e| e.full_key().to_string() == c)
    .collect();
    assert_eq!(
        dedup.len(),
        1,
        "list without duplicates after a replacement: {dedup:?}"
    );
    assert_eq!(
        dedup[0].location.as_ref().map(|l| l.length),
        Some(v2.data.len() as u64),
        "list without duplicates must show the newest version"
    );
    assert_eq!(
        versions_listed(&r, x, &c),
        [2, 1],
        "list with duplicates: newest first"
    );

    let _v3 = archive_payload(&w2, &key, 3, 50, 99);
    assert_eq!(
        version_retrieved(&r, &v2),
        Some(2),
        "version 3 archived by another handle, not flushed"
    );
    must(w2.flush(), "flush of version 3 (second writer)");
    assert_eq!(
        version_retrieved(&r, &v2),
        Some(3),
        "after the second writer flushed version 3"
    );
    assert_eq!(
        versions_listed(&r, x, &c),
        [3, 2, 1],
        "list with duplicates after a replacement from another handle"
    );

    let _v4 = archive_payload(&w, &key, 4, 100, 2000);
    let v5 = archive_payload(&w, &key, 5, 100, 2000);
    must(w.flush(), "flush of versions 4 and 5");
    assert_eq!(
        version_retrieved(&r, &v5),
        Some(5),
        "two archives of one key before one flush: the later wins"
    );
    let listed = versions_listed(&r, x, &c);
    assert_eq!(
        listed.first(),
        Some(&5),
        "list with duplicates must start with the newest version: {listed:?}"
    );
    assert!(
        listed.windows(2).all(|p| p[0] > p[1]) && listed.ends_with(&[3, 2, 1]),
        "list with duplicates must list every flushed version newest first (version 4 may be masked within its flush): {listed:?}"
    );
    let fresh = opened(open, "fresh reader");
    assert_eq!(
        version_retrieved(&fresh, &v5),
        Some(5),
        "a handle opened after the replacements"
    );
    assert_eq!(
        version_retrieved(&fresh, &neighbour),
        Some(1),
        "the neighbouring field"
    );
}

/// Clause 4 under contention: one writer replaces four keys with versions
/// 1..=24, flushing each version, while two readers poll with retrieve and
/// list. Every field read is whole (self-verifying payloads of varying
/// lengths), a reader never sees a version older than one it saw before or
/// older than what the writer had flushed when the poll began, list shows
/// one entry per key, and list with duplicates shows versions newest first.
pub fn replace_under_concurrent_reads(open: Open<'_>) {
    const VERSIONS: u32 = 24;
    const READERS: usize = 2;
    let x = "rep2";
    let keys: Vec<_> = [0, 6, 12, 18]
        .iter()
        .map(|&step| Spec { step, ..PL }.key(x))
        .collect();
    let probe = opened(open, "setup");
    let canon: Vec<String> = keys
        .iter()
        .map(|k| crate::support::canonical(&probe, k))
        .collect();
    drop(probe);
    let flushed = AtomicU32::new(0);
    let done = AtomicBool::new(false);
    let writer_failed = AtomicBool::new(false);
    let start = Barrier::new(READERS + 1);
    let req = request(&format!(
        "class=od,expver={x},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=0/6/12/18,number=1,levelist=500,param=130"
    ));
    let list_req = request(&format!("class=od,expver={x}"));
    // Handles are opened before the threads start (a thread that failed to
    // open one would leave the others waiting at the barrier), and the
    // writer is done also when it fails (the readers poll until it is).
    let w = opened(open, "writer");
    let readers: Vec<_> = (0..READERS).map(|_| opened(open, "reader")).collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            let _end = OnExit(|| {
                if std::thread::panicking() {
                    writer_failed.store(true, Ordering::Release);
                }
                done.store(true, Ordering::Release);
            });
            start.wait();
            for v in 1..=VERSIONS {
                for k in &keys {
                    archive_payload(&w, k, v, 40, 3000);
                }
                must(w.flush(), format_args!("flush of version {v}"));
                flushed.store(v, Ordering::Release);
            }
        });
        for (reader, fs) in readers.into_iter().enumerate() {
            let (start, flushed, done, writer_failed, keys, canon, req, list_req) = (
                &start,
                &flushed,
                &done,
                &writer_failed,
                &keys,
                &canon,
                &req,
                &list_req,
            );
            s.spawn(move || {
                let mut last = vec![0u32; keys.len()];
                let mut buf = Vec::new();
                start.wait();
                for poll in 0.. {
                    let finished = done.load(Ordering::Acquire);
                    let floor = flushed.load(Ordering::Acquire);
                    let ctx = format!("reader {reader}, poll {poll} (writer had flushed version {floor})");
                    let got = retrieve(&fs, req);
                    if floor > 0 {
                        assert_eq!(got.len(), keys.len(), "{ctx}: retrieve {req} found {} of the {} keys", got.len(), keys.len());
                    }
                    for (k, d) in &got {
                        let i = canon.iter().position(|c| c == k).unwrap_or_else(|| panic!("{ctx}: retrieve yields {k}, which is not requested"));
                        let v = payload::verify(d, k).unwrap_or_else(|e| panic!("{ctx}: retrieve: {e}"));
                        assert!(v >= floor, "{ctx}: {k} is version {v}, older than the flushed {floor}");
                        assert!(v >= last[i], "{ctx}: {k} went back from version {} to {v}", last[i]);
                        last[i] = v;
                    }
                    let listed = list(&fs, list_req, Level::Element, poll % 4 == 3);
                    let mut per_key: Vec<Vec<u32>> = vec![Vec::new(); keys.len()];
                    for e in &listed {
                        let k = e.full_key().to_string();
                        let i = canon.iter().position(|c| *c == k).unwrap_or_else(|| panic!("{ctx}: list shows {k}, which nobody wrote"));
                        let loc = e.location.as_ref().expect("element-level entries have a location");
                        must(fs.store().read(loc, &mut buf), format_args!("{ctx}: reading {loc}"));
                        let v = payload::verify(&buf, &k).unwrap_or_else(|err| panic!("{ctx}: list: {err}"));
                        per_key[i].push(v);
                    }
                    for (i, vs) in per_key.iter().enumerate() {
                        if poll % 4 == 3 {
                            assert!(vs.windows(2).all(|p| p[0] > p[1]), "{ctx}: list with duplicates of {}: versions not newest first: {vs:?}", canon[i]);
                        } else {
                            assert!(vs.len() <= 1, "{ctx}: list without duplicates shows {} {} times", canon[i], vs.len());
                        }
                        if floor > 0 {
                            let newest = vs.first().copied().unwrap_or(0);
                            assert!(newest >= floor, "{ctx}: list shows {} at version {newest}, older than the flushed {floor}", canon[i]);
                        }
                    }
                    if finished && writer_failed.load(Ordering::Acquire) {
                        break; // The writer's panic fails the check.
                    }
                    if finished {
                        assert!(last.iter().all(|&v| v == VERSIONS), "{ctx}: after the writer finished, versions seen {last:?}, want {VERSIONS}");
                        break;
                    }
                }
            });
        }
    });
}
