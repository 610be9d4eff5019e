//! Clauses 2 and 3: archive copies, flush makes durable and visible.

use super::{expect_exactly, opened, PL, SFC};
use crate::support::{archive_payload, must, retrieve_one, Spec, Stored};
use crate::Open;

/// Clauses 2–3: archived fields are invisible to other handles until the
/// writer flushes, then visible to every handle (opened before or after,
/// by list at every depth, axes, retrieve and location); a second round of
/// archives into a dataset and collocation that already exist is again
/// invisible until its flush; a flush with nothing pending succeeds; what
/// was flushed outlives the writer handle.
pub fn flush_makes_visible(open: Open<'_>) {
    let x = "vis1";
    let writer = opened(open, "writer");
    let reader = opened(open, "reader");

    let first_specs = [PL, Spec { step: 6, ..PL }, SFC];
    let pending: Vec<Stored> = first_specs
        .iter()
        .map(|s| crate::support::Stored {
            key: s.key(x),
            canonical: crate::support::canonical(&writer, &s.key(x)),
            data: Vec::new(),
        })
        .collect();
    let refs: Vec<&Stored> = pending.iter().collect();
    expect_exactly(&reader, x, &[], &refs, "before any archive");

    let first: Vec<Stored> = first_specs
        .iter()
        .map(|s| archive_payload(&writer, &s.key(x), 1, 100, 5000))
        .collect();
    let first_refs: Vec<&Stored> = first.iter().collect();
    expect_exactly(&reader, x, &[], &first_refs, "after archive, before flush");

    must(writer.flush(), "flush of the first round");
    expect_exactly(
        &reader,
        x,
        &first_refs,
        &[],
        "after the first flush (handle opened before)",
    );
    let late = opened(open, "late reader");
    expect_exactly(
        &late,
        x,
        &first_refs,
        &[],
        "after the first flush (handle opened after)",
    );

    // A second round into the same dataset and collocations, and a new
    // collocation, seen by readers that already hold the dataset open.
    let second: Vec<Stored> = [
        Spec { step: 12, ..PL },
        Spec { step: 6, ..SFC },
        Spec {
            ty: "cf",
            number: Some(0),
            ..PL
        },
    ]
    .iter()
    .map(|s| archive_payload(&writer, &s.key(x), 1, 100, 5000))
    .collect();
    let second_refs: Vec<&Stored> = second.iter().collect();
    for (fs, who) in [(&reader, "early reader"), (&late, "late reader")] {
        expect_exactly(
            fs,
            x,
            &first_refs,
            &second_refs,
            &format!("{who}, second round archived but not flushed"),
        );
    }
    must(writer.flush(), "flush of the second round");
    let all: Vec<&Stored> = first.iter().chain(&second).collect();
    for (fs, who) in [(&reader, "early reader"), (&late, "late reader")] {
        expect_exactly(fs, x, &all, &[], &format!("{who}, after the second flush"));
    }

    must(writer.flush(), "a flush with nothing pending");
    drop(writer);
    let fresh = opened(open, "fresh reader");
    expect_exactly(&fresh, x, &all, &[], "after the writer handle was dropped");
}

/// Clause 2: `archive` takes its own copy. Overwriting or dropping the
/// caller's buffer after `archive` returns, before and after `flush`, does
/// not change what is stored.
pub fn archive_copies_data(open: Open<'_>) {
    let x = "cop1";
    let fs = opened(open, "writer");
    let mut buf = Vec::new();
    let mut kept = Vec::new();
    for step in [0, 6, 12] {
        let key = Spec { step, ..PL }.key(x);
        let canonical = crate::support::canonical(&fs, &key);
        // One buffer reused for every field, as a model's I/O server does.
        buf.clear();
        buf.extend_from_slice(&crate::payload::make(&canonical, 1, 3000 + step as usize));
        must(fs.archive(&key, &buf), format_args!("archiving {key}"));
        kept.push(Stored {
            key,
            canonical,
            data: buf.clone(),
        });
        buf.iter_mut().for_each(|b| *b = !*b);
    }
    {
        let key = Spec { step: 18, ..PL }.key(x);
        let canonical = crate::support::canonical(&fs, &key);
        let temp = crate::payload::make(&canonical, 1, 777);
        must(fs.archive(&key, &temp), format_args!("archiving {key}"));
        kept.push(Stored {
            key,
            canonical,
            data: temp.clone(),
        });
        drop(temp);
    }
    must(fs.flush(), "flush");
    buf.iter_mut().for_each(|b| *b = 0);
    let reader = opened(open, "reader");
    for s in &kept {
        let got = retrieve_one(&reader, &s.key)
            .unwrap_or_else(|| panic!("retrieve {} after flush found nothing", s.key));
        assert!(
            got == s.data,
            "retrieve {} does not return the bytes archive was given: the caller's buffer was \
             modified after archive returned, and the store's copy changed with it",
            s.key
        );
    }
}

/// Clause 3: `flush` publishes what *this* handle archived. Two handles
/// archive into the same dataset and collocation; after the first one's
/// flush only its fields are visible, after the second's both.
pub fn flush_publishes_only_own_writes(open: Open<'_>) {
    let x = "own1";
    let a = opened(open, "writer A");
    let b = opened(open, "writer B");
    let reader = opened(open, "reader");
    let from_a: Vec<Stored> = [0, 6]
        .iter()
        .map(|&step| archive_payload(&a, &Spec { step, ..PL }.key(x), 1, 50, 500))
        .collect();
    let from_b: Vec<Stored> = [12, 18]
        .iter()
        .map(|&step| archive_payload(&b, &Spec { step, ..PL }.key(x), 1, 50, 500))
        .collect();
    let ra: Vec<&Stored> = from_a.iter().collect();
    let rb: Vec<&Stored> = from_b.iter().collect();
    let both: Vec<&Stored> = from_a.iter().chain(&from_b).collect();
    expect_exactly(&reader, x, &[], &both, "before any flush");
    must(a.flush(), "flush of writer A");
    expect_exactly(&reader, x, &ra, &rb, "after A's flush, before B's");
    must(b.flush(), "flush of writer B");
    expect_exactly(&reader, x, &both, &[], "after both flushes");
}
