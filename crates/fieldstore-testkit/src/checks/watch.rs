//! Waiting for data: `watch` reports every field a request names once, as
//! soon as a flush makes it visible (never before `retrieve` finds it), a
//! key archived again as a replacement, and ends when told; `retrieve_wait`
//! waits for a complete request.

use std::collections::BTreeMap;
use std::time::Duration;

use fieldstore::{ErrorKind, Request, Since, WatchOptions, WipeOptions};

use super::{opened, PL, SFC};
use crate::support::{archive_payload, canonical, must, request, retrieve_one, Spec, Stored};
use crate::Open;

fn request_of(expver: &str) -> Request {
    request(&format!("class=od,expver={expver}"))
}

/// A watcher in its own thread reports, in order: the field flushed before
/// the watch, then each flush's fields as the writer flushes them, then a
/// replacement (a look that finds flushes of both collocations reports
/// them collocation by collocation). Every field once (the replacement
/// again, flagged); each
/// already retrievable, with the bytes its location holds, when reported;
/// a collocation's fields in flush order. A watch `since: Now` skips what
/// was there; one with a count or a timeout ends; one whose dataset is
/// wiped ends with `NotFound`.
pub fn watch_reports_each_field_once(open: Open<'_>) {
    let x = "wat1";
    let writer = opened(open, "writer");
    let before = archive_payload(&writer, &PL.key(x), 1, 50, 3000);
    must(writer.flush(), "the first flush");
    let steps = 6u32;
    let mut expected: Vec<Stored> = vec![before.clone()];
    let watcher = opened(open, "watcher");
    let later = opened(open, "a watcher since now");
    let total = 1 + 2 * steps as usize + 1;
    let (events, since_now) = std::thread::scope(|scope| {
        let watch = must(
            watcher.watch(
                &request_of(x),
                WatchOptions {
                    count: Some(total),
                    timeout: Some(Duration::from_secs(60)),
                    ..WatchOptions::default()
                },
            ),
            "watch",
        );
        let now = must(
            later.watch(
                &request_of(x),
                WatchOptions {
                    since: Since::Now,
                    count: Some(total - 1),
                    timeout: Some(Duration::from_secs(60)),
                    ..WatchOptions::default()
                },
            ),
            "watch since now",
        );
        let reader = &watcher;
        let later = &later;
        let first = scope.spawn(move || {
            let mut got = Vec::new();
            for e in watch {
                let e = must(e, "a watch event");
                // Visible to retrieve when reported, with these bytes.
                let key = e.element.full_key();
                let bytes = retrieve_one(reader, &key);
                assert!(
                    bytes.is_some(),
                    "{key} was reported before retrieve could find it"
                );
                got.push((canonical(reader, &key), e.replaced, bytes));
            }
            got
        });
        let second = scope.spawn(move || {
            now.map(|e| canonical(later, &must(e, "a watch event").element.full_key()))
                .collect::<Vec<_>>()
        });
        for step in 1..=steps {
            let pl = Spec {
                step: step * 6,
                ..PL
            };
            let sfc = Spec {
                step: step * 6,
                ..SFC
            };
            expected.push(archive_payload(&writer, &pl.key(x), 1, 50, 3000));
            expected.push(archive_payload(&writer, &sfc.key(x), 1, 50, 3000));
            must(writer.flush(), "a step's flush");
        }
        // The first field again, other bytes: a replacement.
        let replacement = archive_payload(&writer, &PL.key(x), 2, 50, 3000);
        must(writer.flush(), "the replacement's flush");
        expected.push(replacement);
        (
            first.join().expect("the watcher thread"),
            second.join().expect("the second watcher thread"),
        )
    });
    assert_eq!(
        events.len(),
        total,
        "every field once, the replacement again: {:?}",
        events.iter().map(|(k, r, _)| (k, r)).collect::<Vec<_>>()
    );
    assert_eq!(events[0].0, before.canonical, "what was there comes first");
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (key, replaced, _) in &events {
        *count.entry(key.as_str()).or_default() += 1;
        assert_eq!(
            *replaced,
            *key == before.canonical && count[key.as_str()] == 2
        );
    }
    for s in &expected {
        assert!(
            count.contains_key(s.canonical.as_str()),
            "{} never reported",
            s.canonical
        );
    }
    assert_eq!(count[before.canonical.as_str()], 2);
    // Last of its collocation: a look that finds flushes of both
    // collocations reports them collocation by collocation.
    let last = events
        .iter()
        .rev()
        .find(|(k, _, _)| k.contains("levtype=pl"))
        .expect("events");
    assert!(
        last.1,
        "the replacement is reported as one, after its collocation's fields"
    );
    assert_eq!(
        last.2.as_deref(),
        Some(expected.last().unwrap().data.as_slice())
    );
    // One collocation's fields in flush order.
    let pl_steps: Vec<&str> = events
        .iter()
        .filter(|(k, r, _)| k.contains("levtype=pl") && !r)
        .map(|(k, _, _)| k.as_str())
        .collect();
    let mut sorted = pl_steps.clone();
    sorted.sort_by_key(|k| {
        k.split(',')
            .find_map(|kv| kv.strip_prefix("step="))
            .and_then(|s| s.parse::<u32>().ok())
    });
    assert_eq!(pl_steps, sorted, "flush order within a collocation");
    assert_eq!(since_now.len(), total - 1);
    assert_eq!(
        since_now.iter().filter(|k| **k == before.canonical).count(),
        1,
        "since now: what was there is not reported (only its replacement)"
    );

    // A timeout ends a watch with nothing new.
    let idle = must(
        watcher.watch(
            &request(&format!("class=od,expver={x},date=20240101")),
            WatchOptions {
                timeout: Some(Duration::from_millis(200)),
                ..WatchOptions::default()
            },
        ),
        "an idle watch",
    );
    assert_eq!(idle.count(), 0);

    // A wiped dataset ends the watch with an error, not a hang.
    let wiping = opened(open, "wiper");
    let wiped = std::thread::scope(|scope| {
        let watch = must(
            watcher.watch(
                &request_of(x),
                WatchOptions {
                    timeout: Some(Duration::from_secs(60)),
                    ..WatchOptions::default()
                },
            ),
            "watch of what is wiped",
        );
        let t = scope.spawn(move || watch.filter_map(|e| e.err()).next());
        std::thread::sleep(Duration::from_millis(50));
        must(
            wiping.wipe(
                &request_of(x),
                WipeOptions {
                    doit: true,
                    unsafe_wipe_all: false,
                },
            ),
            "wipe",
        );
        t.join().expect("the watcher thread")
    });
    let err = wiped.expect("the watch ended with an error");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(err.to_string().contains("wiped"), "{err}");
}

/// A watch of several datasets reports a flush into one of them while the
/// others stay quiet, flushes into two datasets by two writers at once, a
/// dataset created while it runs, and a dataset quiet since the watch began
/// flushed again: a look at the datasets the waiter says changed (not at
/// all of them) misses nothing, and a new dataset is found.
pub fn watch_follows_each_dataset(open: Open<'_>) {
    let x = "wat3";
    let writer = opened(open, "writer");
    let second = opened(open, "a second writer");
    let day = |d: u32, step: u32| Spec {
        date: 20231200 + d,
        step,
        ..PL
    };
    // Three datasets (a date each) before the watch.
    for d in 1..=3 {
        archive_payload(&writer, &day(d, 0).key(x), 1, 50, 300);
    }
    must(writer.flush(), "the first flush");
    let watcher = opened(open, "watcher");
    let mut expected = Vec::new();
    let total = 9;
    let got = std::thread::scope(|scope| {
        let watch = must(
            watcher.watch(
                &request_of(x),
                WatchOptions {
                    since: Since::Now,
                    count: Some(total),
                    timeout: Some(Duration::from_secs(60)),
                    ..WatchOptions::default()
                },
            ),
            "watch",
        );
        let reader = &watcher;
        let t = scope.spawn(move || {
            watch
                .map(|e| canonical(reader, &must(e, "a watch event").element.full_key()))
                .collect::<Vec<_>>()
        });
        // Pauses let the watcher look between flushes: what it looks at
        // then is one dataset, the others quiet.
        let pause = || std::thread::sleep(Duration::from_millis(20));
        // One dataset, flush after flush.
        for step in 1..=4 {
            expected.push(archive_payload(&writer, &day(2, step).key(x), 1, 50, 300));
            must(writer.flush(), "a flush into one dataset");
            pause();
        }
        // A dataset created under the watch, then flushed into again.
        for step in [0, 6] {
            expected.push(archive_payload(&writer, &day(4, step).key(x), 1, 50, 300));
            must(writer.flush(), "a flush into a new dataset");
            pause();
        }
        // Two datasets by two writers at once.
        expected.push(archive_payload(&writer, &day(1, 6).key(x), 1, 50, 300));
        expected.push(archive_payload(&second, &day(3, 6).key(x), 1, 50, 300));
        must(writer.flush(), "the first writer's flush");
        must(second.flush(), "the second writer's flush");
        pause();
        // The first dataset again, quiet since.
        expected.push(archive_payload(&second, &day(1, 12).key(x), 1, 50, 300));
        must(second.flush(), "a flush into the first dataset again");
        t.join().expect("the watcher thread")
    });
    let want: BTreeMap<&str, ()> = expected
        .iter()
        .map(|s| (s.canonical.as_str(), ()))
        .collect();
    let have: BTreeMap<&str, ()> = got.iter().map(|k| (k.as_str(), ())).collect();
    assert_eq!(
        got.len(),
        total,
        "each flushed field once within 60 s: reported {got:?}, never reported {:?}",
        want.keys()
            .filter(|k| !have.contains_key(*k))
            .collect::<Vec<_>>()
    );
    assert_eq!(have, want, "what the watch reported");
}

/// `retrieve_wait` returns a complete request's fields once the last one
/// is flushed, and times out naming what is missing.
pub fn retrieve_waits_for_complete_requests(open: Open<'_>) {
    let x = "wat2";
    let writer = opened(open, "writer");
    let reader = opened(open, "reader");
    let a = archive_payload(&writer, &PL.key(x), 1, 50, 3000);
    must(writer.flush(), "flush");
    let b_key = Spec { step: 6, ..PL }.key(x);
    let both = request(&format!(
        "class=od,expver={x},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=0/6,number=1,levelist=500,param=130"
    ));
    let (got, b) = std::thread::scope(|scope| {
        let r = &reader;
        let both = &both;
        let waiting = scope.spawn(move || r.retrieve_wait(both, Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(50));
        let b = archive_payload(&writer, &b_key, 1, 50, 3000);
        must(writer.flush(), "flush");
        (waiting.join().expect("the waiting thread"), b)
    });
    let data = must(must(got, "retrieve_wait").read_all(), "read");
    assert_eq!(
        data,
        [a.data.clone(), b.data.clone()].concat(),
        "request order"
    );
    let missing = Spec { step: 12, ..PL }.key(x);
    let err = reader
        .retrieve_wait(
            &fieldstore::Request::from_key(&missing),
            Duration::from_millis(100),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
    assert!(
        err.to_string().contains("step=12"),
        "names what is missing: {err}"
    );
}
