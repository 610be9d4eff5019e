//! Clauses 7 and 8 in one process: concurrent writers, readers during
//! writes, a shared handle, an abandoned writer.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;

use super::{expect_exactly, opened, OnExit, PL};
use crate::streams::{Observer, Streams};
use crate::support::{archive_payload, must, Spec, Stored};
use crate::Open;

/// "One handle is safe to share between threads": four threads archive 50
/// fields each through one handle; nothing is visible to another handle
/// before the one flush, everything after it.
pub fn shared_handle_across_threads(open: Open<'_>) {
    let x = "shr1";
    let fs = opened(open, "shared writer");
    let stored: Vec<Vec<Stored>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u32)
            .map(|t| {
                let fs = &fs;
                s.spawn(move || {
                    (0..50u32)
                        .map(|i| {
                            let spec = Spec {
                                number: Some(t),
                                step: i,
                                ..PL
                            };
                            archive_payload(fs, &spec.key(x), 1, 30, 400)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let all: Vec<&Stored> = stored.iter().flatten().collect();
    let reader = opened(open, "reader");
    expect_exactly(
        &reader,
        x,
        &[],
        &all[..8],
        "archived from four threads, not flushed",
    );
    must(fs.flush(), "flush of the shared handle");
    expect_exactly(&reader, x, &all, &[], "after the shared handle's flush");
}

/// Clause 7: four writers, each with its own handle on its own thread,
/// archive 250 fields each into the same dataset and collocation, flushing
/// every 25, with no coordination; afterwards every field is listed and
/// retrieved with its bytes, none twice, none lost.
pub fn concurrent_writers(open: Open<'_>) {
    let streams = Streams {
        expver: "cwr1".into(),
        writers: 4,
        fields: 250,
        flush_every: 25,
        min_len: 28,
        max_len: 1500,
    };
    // Handles are opened before the threads start: a thread that failed to
    // open one would never reach the barrier, and the others would wait at
    // it for ever.
    let writers: Vec<_> = (0..streams.writers)
        .map(|w| opened(open, &format!("writer {w}")))
        .collect();
    let start = Barrier::new(streams.writers);
    std::thread::scope(|s| {
        for (w, fs) in writers.into_iter().enumerate() {
            let (streams, start) = (&streams, &start);
            s.spawn(move || {
                start.wait();
                must(
                    streams.write(&fs, w, &mut |_| ()),
                    format_args!("writer {w}"),
                );
            });
        }
    });
    let reader = opened(open, "reader");
    let mut observer = Observer::new(streams.clone());
    let all = vec![streams.fields; streams.writers];
    let seen = observer
        .poll(&reader, &all)
        .unwrap_or_else(|e| panic!("after {} concurrent writers finished: {e}", streams.writers));
    assert_eq!(seen, all, "fields visible per writer");
}

/// Clauses 4 and 7: three writers (own handles, own threads, one dataset
/// and collocation) archive 200 fields each, flushing every 10, while two
/// readers poll list and retrieve. Every poll: each field read is whole and
/// belongs to its key; of each writer exactly a prefix of whole flushes is
/// visible, never less than the writer had reported flushed when the poll
/// began, never less than the reader saw before. The last poll, after the
/// writers finished, sees everything.
pub fn readers_during_writes(open: Open<'_>) {
    const READERS: usize = 2;
    let streams = Streams {
        expver: "rdw1".into(),
        writers: 3,
        fields: 200,
        flush_every: 10,
        min_len: 28,
        max_len: 2000,
    };
    let progress: Vec<AtomicUsize> = (0..streams.writers).map(|_| AtomicUsize::new(0)).collect();
    let finished = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // Handles are opened before the threads start (a thread that failed to
    // open one would leave the others waiting at the barrier), and a writer
    // counts as finished also when it fails (the readers poll until all
    // have), having marked the check failed.
    let writers: Vec<_> = (0..streams.writers)
        .map(|w| opened(open, &format!("writer {w}")))
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|r| opened(open, &format!("reader {r}")))
        .collect();
    let start = Barrier::new(streams.writers + READERS);
    std::thread::scope(|s| {
        for (w, fs) in writers.into_iter().enumerate() {
            let (streams, start, progress, finished, failed) =
                (&streams, &start, &progress, &finished, &failed);
            s.spawn(move || {
                let _end = OnExit(|| {
                    if std::thread::panicking() {
                        failed.store(true, Ordering::Release);
                    }
                    finished.fetch_add(1, Ordering::AcqRel);
                });
                start.wait();
                must(
                    streams.write(&fs, w, &mut |n| progress[w].store(n, Ordering::Release)),
                    format_args!("writer {w}"),
                );
            });
        }
        for (r, fs) in readers.into_iter().enumerate() {
            let (streams, start, progress, finished, failed) =
                (&streams, &start, &progress, &finished, &failed);
            s.spawn(move || {
                let mut observer = Observer::new(streams.clone());
                start.wait();
                loop {
                    let done = finished.load(Ordering::Acquire) == streams.writers;
                    let floor: Vec<usize> =
                        progress.iter().map(|p| p.load(Ordering::Acquire)).collect();
                    if let Err(e) = observer.poll(&fs, &floor) {
                        failed.store(true, Ordering::Release);
                        panic!("reader {r}: {e}");
                    }
                    if done || failed.load(Ordering::Acquire) {
                        break;
                    }
                }
                if !failed.load(Ordering::Acquire) {
                    assert_eq!(
                        observer.seen(),
                        vec![streams.fields; streams.writers].as_slice(),
                        "reader {r}: after the writers finished"
                    );
                }
                println!("reader {r}: {} polls", observer.polls);
            });
        }
    });
}

/// Clause 8 in one process: a writer handle that is abandoned without
/// flushing or dropping (as a process killed between flushes leaves it)
/// leaves exactly what it flushed visible: not its pending fields, not its
/// pending replacement; another writer then writes into the same dataset
/// and collocation as usual.
pub fn abandoned_writer_keeps_flushed(open: Open<'_>) {
    let x = "abn1";
    let w = opened(open, "writer to abandon");
    let flushed: Vec<Stored> = (0..10)
        .map(|step| archive_payload(&w, &Spec { step, ..PL }.key(x), 1, 30, 3000))
        .collect();
    must(w.flush(), "flush");
    let pending: Vec<Stored> = (10..20)
        .map(|step| archive_payload(&w, &Spec { step, ..PL }.key(x), 1, 30, 3000))
        .collect();
    let _replacement = archive_payload(&w, &flushed[3].key, 2, 30, 3000);
    // Dropping would flush; a killed process does not.
    std::mem::forget(w);

    let reader = opened(open, "reader");
    let visible: Vec<&Stored> = flushed.iter().collect();
    let hidden: Vec<&Stored> = pending.iter().collect();
    expect_exactly(
        &reader,
        x,
        &visible,
        &hidden,
        "after the writer was abandoned",
    );

    let w2 = opened(open, "next writer");
    let later: Vec<Stored> = (10..15)
        .map(|step| archive_payload(&w2, &Spec { step, ..PL }.key(x), 3, 30, 3000))
        .collect();
    must(w2.flush(), "flush of the next writer");
    let visible: Vec<&Stored> = flushed.iter().chain(&later).collect();
    let hidden: Vec<&Stored> = pending[5..].iter().collect();
    expect_exactly(
        &reader,
        x,
        &visible,
        &hidden,
        "after the next writer's flush",
    );
}
