//! Damage in the middle of a dataset's life, at random: random histories
//! of flushes by two writers into two collocations of one dataset, a
//! reader following in between (and readers opened afresh), writers
//! closed and opened anew, purges and wipes of a collocation, damage
//! through the backend's hooks (a record damaged, removed or cut off,
//! whichever the backend offers) at a random point and, in some, again at
//! a later one, then more of the same. Shrunk to a minimal history when it
//! fails (proptest).

use std::collections::BTreeMap;
use std::time::Duration;

use fieldstore::{ErrorKind, FieldStore, Key};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::opened;
use crate::support::{must, Spec, PL, SFC};
use crate::{Capabilities, DamageRecord, Open};

/// One step of a history.
#[derive(Debug, Clone)]
enum Step {
    /// Writer 0 or 1 archives these (collocation, step) fields and flushes.
    Flush(usize, Vec<(usize, u32)>),
    /// The reader that was there from the start (`false`) or one opened
    /// now (`true`) answers every key.
    Follow(bool),
    /// `purge --doit` of the dataset, by the reader that was there from
    /// the start: it may remove only what no key's answer needs (after
    /// the damage, nothing the damage may reference).
    Purge,
    /// A wipe of collocation 0 or 1 by a handle opened for it.
    Wipe(usize),
    /// Writer 0 or 1 closes its handle: its next flush is a new writer's,
    /// which learns where the log ends afresh.
    Close(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let fields = prop::collection::vec((0usize..2, 0u32..3), 1..4);
    prop_oneof![
        6 => (0usize..2, fields).prop_map(|(w, f)| Step::Flush(w, f)),
        2 => any::<bool>().prop_map(Step::Follow),
        1 => Just(Step::Purge),
        1 => (0usize..2).prop_map(Step::Wipe),
        1 => (0usize..2).prop_map(Step::Close),
    ]
}

/// A purge or wipe may be refused only as damage (`Corrupt`): any other
/// failure of one is a finding.
fn refused_only_for_damage<T>(
    result: fieldstore::Result<T>,
    what: &str,
) -> Result<Option<T>, TestCaseError> {
    match result {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            prop_assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {}", what, e);
            Ok(None)
        }
    }
}

fn key(expver: &str, collocation: usize, step: u32) -> Key {
    let spec = [PL, SFC][collocation];
    Spec { step, ..spec }.key(expver)
}

/// Every key's answer from `fs` is its newest acknowledged version, or
/// `Corrupt`.
fn check(
    fs: &FieldStore,
    x: &str,
    newest: &BTreeMap<(usize, u32), Vec<u8>>,
    who: &str,
) -> Result<(), TestCaseError> {
    for c in 0..2 {
        for s in 0..3 {
            let got = fs
                .retrieve(&fieldstore::Request::from_key(&key(x, c, s)))
                .and_then(|r| {
                    if r.is_empty() {
                        Ok(None)
                    } else {
                        r.read_all().map(Some)
                    }
                });
            match got {
                Ok(got) => prop_assert_eq!(
                    got.as_ref(),
                    newest.get(&(c, s)),
                    "{}: collocation {} step {}: {:?}",
                    who,
                    c,
                    s,
                    got.as_ref()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                ),
                Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {}", who, e),
            }
        }
    }
    Ok(())
}

/// Run `steps` of expver `x`: flushes (acknowledged ones into `newest`;
/// `records` counts them, each one record of the log, and so at most the
/// log's records, which purges and wipes may add to; `all_acknowledged`
/// is `false` once one failed), follows, closes, purges and wipes.
struct History<'a> {
    open: Open<'a>,
    x: String,
    writers: [Option<FieldStore>; 2],
    warm: FieldStore,
    newest: BTreeMap<(usize, u32), Vec<u8>>,
    records: usize,
    all_acknowledged: bool,
    version: u32,
}

impl History<'_> {
    /// Apply `hook` (its name, itself, how many records after the chosen
    /// one it needs) to a record at random among the first `below`, unless
    /// a flush failed (the records are then not known) or there are too
    /// few; the record's number, if done. Then wait
    /// [`fieldstore::engine::LOOK_AGAIN`]: an idle reader may see damage
    /// at where it stopped only at its next look.
    fn damage(
        &self,
        (what, hook, needs_after): &(&str, DamageRecord<'_>, usize),
        below: usize,
        at: prop::sample::Index,
    ) -> Option<usize> {
        if !self.all_acknowledged || below <= *needs_after {
            return None;
        }
        let n = at.index(below - needs_after);
        let probe = opened(self.open, "probe");
        let dataset = must(probe.schema().split(&key(&self.x, 0, 0)), "splitting a key").dataset;
        hook(&dataset, n);
        println!(
            "{}: record {n} {what} (after {} flushes; wipes and purges add records)",
            self.x, self.records
        );
        std::thread::sleep(fieldstore::engine::LOOK_AGAIN + Duration::from_millis(100));
        Some(n)
    }

    fn run(&mut self, steps: &[Step], when: &str) -> Result<(), TestCaseError> {
        for (n, s) in steps.iter().enumerate() {
            match s {
                Step::Flush(w, fields) => {
                    let open = self.open;
                    let fs = self.writers[*w].get_or_insert_with(|| opened(open, "writer"));
                    let mut these = Vec::new();
                    let mut archived = Ok(());
                    for &(c, st) in fields {
                        self.version += 1;
                        let bytes = format!("{} {c} {st} v{}", self.x, self.version).into_bytes();
                        archived = archived.and_then(|()| fs.archive(&key(&self.x, c, st), &bytes));
                        these.push(((c, st), bytes));
                    }
                    match archived.and_then(|()| fs.flush()) {
                        Ok(()) => {
                            self.newest.extend(these);
                            self.records += 1;
                        }
                        // Refused after the damage (a cut POSIX `toc`):
                        // nothing of it may be visible; the handle goes.
                        Err(_) => {
                            self.all_acknowledged = false;
                            self.writers[*w] = None;
                        }
                    }
                }
                Step::Follow(false) => {
                    let who = format!("the reader at step {n} {when}");
                    check(&self.warm, &self.x, &self.newest, &who)?;
                }
                Step::Follow(true) => {
                    let who = format!("a reader opened at step {n} {when}");
                    check(&opened(self.open, "reader"), &self.x, &self.newest, &who)?;
                }
                Step::Close(w) => self.writers[*w] = None,
                Step::Purge => {
                    let what = format!("purge at step {n} {when}");
                    let request = PL.dataset_request(&self.x);
                    refused_only_for_damage(self.warm.purge(&request, true), &what)?;
                }
                Step::Wipe(c) => {
                    let what = format!("wipe of collocation {c} at step {n} {when}");
                    let request = [PL, SFC][*c].collocation_request(&self.x);
                    let options = fieldstore::WipeOptions {
                        doit: true,
                        unsafe_wipe_all: false,
                    };
                    let wiper = opened(self.open, "wiper");
                    if refused_only_for_damage(wiper.wipe(&request, options), &what)?.is_some() {
                        self.newest.retain(|&(col, _), _| col != *c);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Random histories of one dataset each (`FIELDSTORE_HISTORY_CASES`, 12 by
/// default): flushes (1–4 fields of two collocations, by two writers,
/// each closed now and then and opened anew), follows of a reader opened
/// first or of one opened then, purges, and wipes of a collocation; then
/// one of the backend's damage hooks on a record at random; then,
/// [`fieldstore::engine::LOOK_AGAIN`] later, more of the same; and in half
/// of them a second damage, by any hook, of a record before the first
/// damaged one (records from there on may be gone), then more. At every
/// follow, and at the end for the first reader and a new one, every key is
/// its newest acknowledged version (a flush that returned `Ok`; nothing
/// once a wipe of its collocation returned `Ok`) or fails `Corrupt`: never
/// an older version, a version of a flush that failed, or nothing, with
/// success. A purge or wipe fails only `Corrupt`. Without a damage hook,
/// nothing to do.
pub fn damage_in_mid_life(open: Open<'_>, caps: &Capabilities<'_>) {
    // (hook, how many records after the chosen one it needs: removing one
    // leaves a gap only with a record after it).
    let hooks: Vec<(&str, DamageRecord<'_>, usize)> = [
        ("damaged", caps.damage_record, 0),
        ("damaged in its header", caps.damage_header, 0),
        ("removed", caps.remove_record, 1),
        ("spliced", caps.splice_record, 1),
        ("cut", caps.cut_log, 0),
    ]
    .into_iter()
    .filter_map(|(what, hook, after)| hook.map(|h| (what, h, after)))
    .collect();
    if hooks.is_empty() {
        return;
    }
    let cases = std::env::var("FIELDSTORE_HISTORY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicU32::new(0);
    let damage = (any::<prop::sample::Index>(), any::<prop::sample::Index>());
    let histories = (
        prop::collection::vec(step(), 1..8),
        prop::collection::vec(step(), 0..6),
        damage.clone(),
        prop::option::of((damage, prop::collection::vec(step(), 0..6))),
    );
    let result = runner.run(&histories, |(before, after, (hook, at), again)| {
        let number = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        // An expver has at most 4 letters or digits: the case's number in
        // base 36, so that 46,656 histories each have a dataset of their own.
        let digit = |n: u32| char::from_digit(n % 36, 36).unwrap_or('0');
        let x: String = ['h', digit(number / 1296), digit(number / 36), digit(number)]
            .into_iter()
            .collect();
        let mut h = History {
            open,
            warm: opened(open, "reader"),
            writers: [None, None],
            newest: BTreeMap::new(),
            records: 0,
            all_acknowledged: true,
            version: 0,
            x,
        };
        h.run(&before, "before the damage")?;
        let first = h.damage(&hooks[hook.index(hooks.len())], h.records, at);
        h.run(&after, "after the damage")?;
        if let (Some(first), Some(((hook, at), more))) = (first, again) {
            h.damage(&hooks[hook.index(hooks.len())], first, at);
            h.run(&more, "after the second damage")?;
        }
        check(&h.warm, &h.x, &h.newest, "the reader at the end")?;
        check(&opened(open, "new reader"), &h.x, &h.newest, "a new reader")
    });
    if let Err(e) = result {
        panic!("damage in mid-life: {e}");
    }
}
