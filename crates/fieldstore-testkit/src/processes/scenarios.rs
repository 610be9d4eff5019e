//! The multi-process scenarios every backend runs (clauses 7 and 8 of the
//! contract with real processes).

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use super::{release_together, streams_args, Launcher, READER_TIMEOUT_SECS};
use crate::rng::Rng;
use crate::streams::{Observer, Streams};
use crate::support::must;

/// `s.writers` writer processes archive the workload `s` into one dataset
/// while `readers` reader processes poll list and retrieve, all released
/// together once their stores are open: every flushed field is found with
/// its bytes, none is ever partial, none lost ([`Observer`]'s rules, in
/// every reader at every poll).
///
/// Writers are started by `writers` and readers by `readers` (the same
/// launcher, or one with other environment settings). Checks that every
/// writer succeeded and reported all its fields flushed, that every reader
/// saw them all within [`READER_TIMEOUT_SECS`] without breaking a rule,
/// and finally, in this process, that a fresh reader sees every field.
///
/// # Panics
/// On any broken rule, with what it saw.
pub fn writers_and_readers(
    readers: &Launcher,
    writers: &Launcher,
    s: &Streams,
    reader_count: usize,
) {
    let total = s.writers * s.fields;
    let mut reader_flags = streams_args(s);
    reader_flags.push(("until-fields", total.to_string()));
    reader_flags.push(("timeout-secs", READER_TIMEOUT_SECS.to_string()));
    let mut reading: Vec<_> = (0..reader_count)
        .map(|r| readers.spawn_held(format!("reader {r}"), "read", &reader_flags))
        .collect();
    let mut writing: Vec<_> = (0..s.writers)
        .map(|w| {
            let mut flags = streams_args(s);
            flags.push(("writer", w.to_string()));
            writers.spawn_held(format!("writer {w}"), "write", &flags)
        })
        .collect();
    release_together(reading.iter_mut().chain(writing.iter_mut()));
    for (w, child) in writing.into_iter().enumerate() {
        let f = child.finish();
        let (status, out, err) = (f.status, f.out, f.err);
        assert!(status.success(), "writer {w} failed ({status}): {err}");
        assert_eq!(
            super::last_flushed(&out),
            s.fields,
            "writer {w} did not report all its fields flushed: {out}"
        );
        assert!(out.ends_with("done\n"), "writer {w}'s output: {out}");
    }
    for (r, child) in reading.into_iter().enumerate() {
        let f = child.finish();
        assert!(
            f.status.success(),
            "reader {r} found a violation or timed out ({}):\n{}",
            f.status,
            f.err
        );
        println!("reader {r}: {}", f.out.trim());
    }
    let fs = must(readers.open(), "open");
    let all = vec![s.fields; s.writers];
    let seen = Observer::new(s.clone())
        .poll(&fs, &all)
        .unwrap_or_else(|e| panic!("after all processes finished: {e}"));
    assert_eq!(seen, all, "fields visible per writer at the end");
}

/// `trials` writer processes, one after the other, each SIGKILLed at a
/// random instant into one dataset: after a random number of its flushes
/// (0 to all of them) and a random further delay below `max_delay`
/// ([`super::Worker::kill_after_flushes`]). The seed is printed and
/// repeatable ([`Rng::from_env`], "sigkill trials"). `s.writers` must be
/// `trials + 1`: writer `t` is trial `t`'s, the last writes after them all.
///
/// After each kill, a reader in this process that has watched every trial
/// checks that nothing partial or corrupt is visible, that everything the
/// writer reported flushed is readable, and that the writers of earlier
/// trials still show exactly what they showed. Then a writer in this
/// process writes all its fields (the dataset stays writable after the
/// crashes), and a fresh reader sees what the long-lived one saw.
///
/// # Panics
/// On any broken rule, with the trial, the seed having been printed.
pub fn writers_killed_at_random_instants(
    launcher: &Launcher,
    s: &Streams,
    trials: usize,
    max_delay: Duration,
) {
    assert_eq!(
        s.writers,
        trials + 1,
        "a writer per trial and one after them"
    );
    let mut rng = Rng::from_env("sigkill trials");
    let max_delay_us = u64::try_from(max_delay.as_micros())
        .unwrap_or(u64::MAX)
        .max(1);
    let flushes = s.fields.div_ceil(s.flush_every);
    let mut observer = Observer::new(s.clone());
    let mut floor = vec![0; s.writers];
    let mut stats = [0usize; 3]; // killed before any flush, mid-way, after the end
    for t in 0..trials {
        let after = rng.below(flushes as u64 + 1) as usize;
        let mut flags = streams_args(s);
        flags.push(("writer", t.to_string()));
        let writer = launcher.spawn(format!("writer {t}"), "write", &flags);
        let reported =
            writer.kill_after_flushes(after, Duration::from_micros(rng.below(max_delay_us)));
        floor[t] = reported;
        let before: Vec<usize> = observer.seen().to_vec();
        let fs = must(launcher.open(), "open after a kill");
        let seen = observer.poll(&fs, &floor).unwrap_or_else(|e| {
            panic!("trial {t}: writer killed after {after} flushes ({reported} fields reported flushed): {e}")
        });
        for w in 0..t {
            assert_eq!(
                seen[w], before[w],
                "trial {t}: writer {w}, killed in an earlier trial, now shows {} fields instead of {}",
                seen[w], before[w]
            );
        }
        stats[match seen[t] {
            0 => 0,
            n if n == s.fields => 2,
            _ => 1,
        }] += 1;
    }
    println!(
        "killed {trials} writers: {} with nothing visible, {} part-way, {} complete",
        stats[0], stats[1], stats[2]
    );
    // The dataset stays writable after all those crashes.
    let fs = must(launcher.open(), "open");
    must(
        s.write(&fs, trials, &mut |_| ()),
        "a writer after the crashes",
    );
    floor[trials] = s.fields;
    let seen = observer
        .poll(&must(launcher.open(), "open"), &floor)
        .unwrap_or_else(|e| panic!("after the last writer: {e}"));
    assert_eq!(seen[trials], s.fields, "the writer after the crashes");
    // Finally every visible field once more, read afresh by a new reader.
    let fs = must(launcher.open(), "open");
    let again = Observer::new(s.clone())
        .poll(&fs, &floor)
        .unwrap_or_else(|e| panic!("a fresh reader at the end: {e}"));
    assert_eq!(
        again, seen,
        "a fresh reader sees what the long-lived one saw"
    );
}

/// Four watcher processes — three watching the workload's dataset, one
/// only its 500 hPa fields — while `s.writers` writer processes flush the
/// workload `s` (each flush a step of ten levels), all released together.
/// With `kill`, each writer is SIGKILLed after a random number of its
/// flushes and a random delay under 2 ms (mid-step). When the writers are
/// done, each watcher must have reported exactly the fields a fresh `list`
/// shows for its request, each once, and nothing else: nothing a killed
/// writer left half-flushed, nothing twice.
///
/// # Panics
/// On any difference, with what was seen.
pub fn watchers_see_exactly_what_is_flushed(launcher: &Launcher, s: &Streams, kill: bool) {
    use std::collections::BTreeSet;
    let dataset = format!(
        "class=od,expver={},stream=enfo,date=20231201,time=1200",
        s.expver
    );
    let requests = [
        dataset.clone(),
        dataset.clone(),
        dataset.clone(),
        format!("{dataset},levelist=500"),
    ];
    let mut watchers: Vec<_> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            launcher.spawn_held(
                format!("watcher {i}"),
                "watch",
                &[("request", r.clone()), ("timeout-secs", "300".into())],
            )
        })
        .collect();
    let mut writers: Vec<_> = (0..s.writers)
        .map(|w| {
            let mut flags = streams_args(s);
            flags.push(("writer", w.to_string()));
            launcher.spawn_held(format!("writer {w}"), "write", &flags)
        })
        .collect();
    release_together(watchers.iter_mut().chain(writers.iter_mut()));
    let mut rng = Rng::from_env("watchers and killed writers");
    let flushes = s.fields.div_ceil(s.flush_every);
    // Each writer in a thread of its own, so that all of them are killed
    // while the others still write.
    let plans: Vec<(usize, Duration)> = (0..s.writers)
        .map(|_| {
            (
                rng.below(flushes as u64 + 1) as usize,
                Duration::from_micros(rng.below(2000)),
            )
        })
        .collect();
    std::thread::scope(|scope| {
        for ((w, child), (after, delay)) in writers.into_iter().enumerate().zip(plans) {
            scope.spawn(move || {
                if kill {
                    let reported = child.kill_after_flushes(after, delay);
                    println!("writer {w}: killed after reporting {reported} fields flushed");
                } else {
                    let f = child.finish();
                    assert!(
                        f.status.success(),
                        "writer {w} failed ({}): {}",
                        f.status,
                        f.err
                    );
                }
            });
        }
    });
    let fs = must(launcher.open(), "open");
    for (i, (mut watcher, request)) in watchers.into_iter().zip(&requests).enumerate() {
        let request: fieldstore::Request = must(request.parse(), "the request");
        let truth: BTreeSet<String> = must(
            fs.list(&request, fieldstore::ListOptions::default()),
            "list",
        )
        .iter()
        .map(|e| e.full_key().to_string())
        .collect();
        let mut seen = Vec::new();
        while seen.len() < truth.len() {
            let Some(line) = watcher.next_line() else {
                break;
            };
            seen.push(line);
        }
        // Anything printed after: a field it should not have reported.
        let rest = watcher.kill();
        let extra: Vec<&str> = rest
            .out
            .lines()
            .skip(seen.len())
            .filter(|l| !l.is_empty() && *l != "ready")
            .collect();
        let keys: Vec<&str> = seen
            .iter()
            .map(|l| l.strip_prefix("field ").unwrap_or(l))
            .collect();
        let unique: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
        assert_eq!(
            unique.len(),
            keys.len(),
            "watcher {i} reported a field twice: {keys:?}"
        );
        assert_eq!(
            unique, truth,
            "watcher {i} ({request}) saw other fields than are flushed (it ended {}; its stderr: {})",
            rest.status, rest.err
        );
        assert!(extra.is_empty(), "watcher {i} reported more: {extra:?}");
        println!("watcher {i}: {} fields, each once", keys.len());
    }
}

/// Purge reclaims what killed writers left, and only that (the orphan
/// clause of `docs/maintenance.md`): writer 0 flushes all its fields;
/// writers `1..s.writers - 1` archive theirs (without flushing) and are
/// SIGKILLed; the last writer archives its fields and holds them,
/// unflushed, alive, while this process takes stats and purges. The purge
/// must remove at least one unit per killed writer, keep everything of the
/// live one — which then flushes, and every one of its fields reads back
/// with its bytes — and leave nothing for a second purge. Writer 0's
/// fields read back throughout.
///
/// `dead_after` is how long the backend takes to find a killed writer
/// dead by itself (DAOS: two leases); a backend whose purge waits for the
/// answer itself (RADOS) or knows at once (POSIX: the lock is gone) gives
/// zero.
///
/// Each field should be large enough that a killed writer's fields are in
/// units of their own on the backend (a POSIX writer's data file; a RADOS
/// writer's objects); `s.writers` at least 3.
///
/// # Panics
/// On anything kept that should go, gone that should stay, or unreadable.
pub fn purge_reclaims_only_what_killed_writers_left(
    launcher: &Launcher,
    s: &Streams,
    dead_after: Duration,
) {
    assert!(s.writers >= 3, "a flushed, a killed and a live writer");
    let live = s.writers - 1;
    let flags = |w: usize| {
        let mut f = streams_args(s);
        f.push(("writer", w.to_string()));
        f
    };
    launcher.spawn("writer 0", "write", &flags(0)).finish_done();
    let archived = format!("archived {}", s.fields);
    for w in 1..live {
        let mut killed = launcher.spawn_held(format!("writer {w}"), "write-hold", &flags(w));
        killed.wait_for_line(&archived);
        let f = killed.kill();
        assert_eq!(
            f.status.signal(),
            Some(9),
            "writer {w} ended by itself: {}",
            f.err
        );
    }
    let mut holder = launcher.spawn_held(format!("writer {live}"), "write-hold", &flags(live));
    holder.wait_for_line(&archived);
    std::thread::sleep(dead_after);

    let fs = must(launcher.open(), "open");
    let dataset = crate::support::request(&format!("expver={}", s.expver));
    let before = must(fs.stats(&dataset), "stats");
    assert_eq!(before.len(), 1, "one dataset: {before:?}");
    assert!(
        before[0].reclaimable_bytes > 0,
        "stats count nothing reclaimable after {} killed writers: {before:?}",
        live - 1
    );
    let report = must(fs.purge(&dataset, true), "purge");
    let removed: Vec<_> = report.datasets.iter().flat_map(|d| &d.items).collect();
    assert!(
        removed.len() >= live - 1,
        "purge removed {} units after {} writers were killed: {report:?}",
        removed.len(),
        live - 1
    );
    let freed: u64 = removed.iter().filter_map(|i| i.bytes).sum();
    assert!(
        freed >= before[0].reclaimable_bytes,
        "purge freed {freed} bytes, stats said {} were reclaimable: {report:?}",
        before[0].reclaimable_bytes
    );

    holder.release();
    holder.finish_done();
    let fs = must(launcher.open(), "open after the live writer flushed");
    let mut want = vec![0; s.writers];
    want[0] = s.fields;
    want[live] = s.fields;
    let seen = Observer::new(s.clone())
        .poll(&fs, &want)
        .unwrap_or_else(|e| panic!("after the purge and the live writer's flush: {e}"));
    assert_eq!(seen, want, "fields visible per writer");

    let again = must(fs.purge(&dataset, true), "second purge");
    let left: Vec<_> = again.datasets.iter().flat_map(|d| &d.items).collect();
    assert!(left.is_empty(), "a second purge found more: {again:?}");
    let after = must(fs.stats(&dataset), "stats");
    assert_eq!(after[0].reclaimable_bytes, 0, "{after:?}");
}

/// A writer stopped past its lease across its commit while purge runs
/// (issue 38's first row): writer 0 flushes a first batch; writer 1
/// archives its fields, flushes its store and stops (SIGSTOP, every
/// thread) before its catalogue flush; after `dead_after` (when the
/// backend counts it dead) a purge (`doit`) runs and reclaims the stopped
/// writer's units, which nothing points into yet. Then writer 1 resumes
/// and publishes. Its flush must not be acknowledged unless every one of
/// its fields reads back: either `flushed` and all readable, or `failed`
/// (then each of its fields reads back whole or fails, never wrong bytes).
/// Writer 0's fields stay readable throughout.
///
/// The purge must remove something (the stopped writer's units): else the
/// race was not run, and the test says so.
///
/// # Panics
/// On an acknowledged field that does not read back, or anything else
/// above broken.
pub fn writer_paused_across_its_commit_while_purge_runs(
    launcher: &Launcher,
    s: &Streams,
    dead_after: Duration,
) {
    assert!(s.writers >= 2, "a first writer and a stopped one");
    let flags = |w: usize| {
        let mut f = streams_args(s);
        f.push(("writer", w.to_string()));
        f
    };
    launcher.spawn("writer 0", "write", &flags(0)).finish_done();
    let mut stopped_flags = flags(1);
    stopped_flags.push(("stop-after-store-flush", "1".into()));
    let mut stopped = launcher.spawn_held("writer 1", "write-hold", &stopped_flags);
    stopped.wait_for_line(&format!("archived {}", s.fields));
    stopped.release();
    stopped.wait_stopped();
    std::thread::sleep(dead_after);

    let fs = must(launcher.open(), "open");
    let dataset = crate::support::request(&format!("expver={}", s.expver));
    let report = must(fs.purge(&dataset, true), "purge");
    let removed: Vec<_> = report.datasets.iter().flat_map(|d| &d.items).collect();
    assert!(
        !removed.is_empty(),
        "purge removed nothing of the writer stopped for {dead_after:?}: the race was not \
         run: {report:?}"
    );

    stopped.resume();
    let f = stopped.finish_done();
    let acknowledged = f.out.lines().any(|l| l == format!("flushed {}", s.fields));
    let failed = f.out.lines().find(|l| l.starts_with("failed "));
    assert!(
        acknowledged != failed.is_some(),
        "writer 1 said neither flushed nor failed: {}",
        f.out
    );

    let fs = must(launcher.open(), "open after the resumed writer");
    // Ok: read back whole; Err((true, why)): bytes that are not the
    // field's; Err((false, why)): not found or not readable.
    let read = |w: usize, i: usize| -> Result<(), (bool, String)> {
        let key = s.key(w, i).to_string();
        let mut r = fs
            .retrieve(&crate::support::request(&key))
            .map_err(|e| (false, format!("retrieve: {e}")))?;
        let mut buf = Vec::new();
        match r.next_field(&mut buf) {
            Ok(Some(_)) => crate::payload::verify(&buf, &key)
                .map(|_| ())
                .map_err(|e| (true, e)),
            Ok(None) => Err((false, "not found".into())),
            Err(e) => Err((false, format!("reading: {e}"))),
        }
    };
    for i in 0..s.fields {
        if let Err((_, e)) = read(0, i) {
            panic!("writer 0's field {i}, flushed before the pause: {e}");
        }
    }
    for i in 0..s.fields {
        match read(1, i) {
            Ok(()) => {}
            Err((_, e)) if acknowledged => panic!(
                "writer 1's flush was acknowledged after a purge reclaimed its units while it \
                 was stopped, and its field {i} is lost: {e} (purge: {report:?})"
            ),
            Err((wrong, e)) => assert!(
                !wrong,
                "writer 1's field {i}, not acknowledged ({failed:?}), reads wrong bytes: {e}"
            ),
        }
    }
}

/// An archive lock set by another process stops a writer whose own process
/// reads the dataset meanwhile (its reader learns of the lock's record
/// first, and may share what it learnt with the process's writers): a
/// writer flushes field 0 of writer 0, a `lock` worker locks archiving,
/// this process lists the dataset, then the writer's next flush (field 1)
/// must fail `Locked`, and field 1 must not be listed.
///
/// # Panics
/// If the flush after the lock is acknowledged, or fails otherwise.
pub fn a_lock_from_another_process_stops_a_writer_that_reads(launcher: &Launcher) {
    let s = &Streams {
        expver: "lck1".into(),
        writers: 1,
        fields: 2,
        flush_every: 1,
        min_len: 28,
        max_len: 1024,
    };
    let fs = must(launcher.open(), "open");
    let archive = |i: usize| {
        let data = s.payload(&fs, 0, i);
        fs.archive(&s.key(0, i), &data).and_then(|()| fs.flush())
    };
    must(archive(0), "the flush before the lock");
    let request = s.dataset_request().to_string();
    launcher
        .spawn("lock", "lock", &[("request", request)])
        .finish_done();
    let listed = must(fs.list(&s.full_request(), Default::default()), "list");
    assert_eq!(listed.len(), 1, "field 0 only: {listed:?}");
    match archive(1) {
        Err(e) if e.kind() == fieldstore::ErrorKind::Locked => {}
        Err(e) => panic!("the flush after another process's lock failed otherwise: {e}"),
        Ok(()) => panic!(
            "a flush after another process locked archiving was acknowledged (this process \
             had read the lock's record)"
        ),
    }
    let fresh = must(launcher.open(), "open again");
    let listed = must(fresh.list(&s.full_request(), Default::default()), "list");
    assert_eq!(
        listed.len(),
        1,
        "field 1 is visible though refused: {listed:?}"
    );
}
