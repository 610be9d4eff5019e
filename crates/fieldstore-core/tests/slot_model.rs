//! The engine's reading of a slot log (`slots::follow`, what DAOS and S3
//! readers run) against a model, on a row of slots in memory: random
//! histories of FLUSH and WIPE records published into the row, slots
//! removed or overwritten with junk behind fieldstore's back, and a warm
//! reader that follows at random points in between. On a medium that lists
//! its slots (S3) and on one that looks one slot ahead and keeps a tail
//! hint (DAOS):
//!
//! - a cold reader of the final row answers every lookup as the model of
//!   the row does (the newest entry since the collocation's last WIPE,
//!   `Corrupt` when a missing or damaged slot newer than it may hold a
//!   newer one), or `Corrupt` where the model answers (slots past a gap it
//!   stepped over are damage to it); never another entry;
//! - the warm reader, once it looked past its end again (`LOOK_AGAIN`),
//!   answers with success only what the cold reader answers with success:
//!   never an older version.

use std::collections::BTreeMap;
use std::sync::Mutex;

use fieldstore_core::axes::AxesExt;
use fieldstore_core::catalogue::Axes;
use fieldstore_core::engine::slots::{self, SlotCursor, SlotLog, SlotRecord};
use fieldstore_core::engine::DatasetIndex;
use fieldstore_core::record::inline::{self, Flush};
use fieldstore_core::record::maintenance::encode_wipe;
use fieldstore_core::record::{kind, Framing};
use fieldstore_core::{CollocationKey, ElementKey, ErrorKind, FieldLocation, Result};
use proptest::prelude::*;

const FRAMING: Framing = Framing::new(*b"FSS1");

/// A row of slots in memory. `listing`: `next_after` answers across any
/// run of missing slots (S3); else it looks at the next slot only (DAOS).
/// `warm_hint`: the hint is known to warm readers too (DAOS keeps the
/// tail it saw in process memory); else only on a cold look (S3).
struct Row {
    slots: Mutex<BTreeMap<u64, Vec<u8>>>,
    hint: Mutex<Option<u64>>,
    listing: bool,
    warm_hint: bool,
}

impl SlotLog for Row {
    fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool> {
        match self.slots.lock().unwrap().get(&n) {
            Some(v) => {
                buf.clone_from(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn exists(&self, n: u64) -> Result<bool> {
        Ok(self.slots.lock().unwrap().contains_key(&n))
    }

    fn next_after(&self, n: u64) -> Result<Option<u64>> {
        let slots = self.slots.lock().unwrap();
        Ok(if self.listing {
            slots.range(n + 1..).next().map(|(&k, _)| k)
        } else {
            slots.contains_key(&(n + 1)).then_some(n + 1)
        })
    }

    fn hint_past(&self, n: u64, cold: bool) -> Result<Option<u64>> {
        if !cold && !self.warm_hint {
            return Ok(None);
        }
        Ok(self.hint.lock().unwrap().filter(|&h| h >= n))
    }

    fn set_hint(&self, n: u64) -> Result<()> {
        let mut hint = self.hint.lock().unwrap();
        *hint = Some(hint.map_or(n, |h| h.max(n)));
        Ok(())
    }

    fn listed(&self) -> Result<Option<Vec<u64>>> {
        Ok(self
            .listing
            .then(|| self.slots.lock().unwrap().keys().copied().collect()))
    }

    fn insert(&self, n: u64, value: &[u8]) -> Result<bool> {
        let mut slots = self.slots.lock().unwrap();
        if slots.contains_key(&n) {
            return Ok(false);
        }
        slots.insert(n, value.to_vec());
        Ok(true)
    }

    fn name(&self, n: u64) -> String {
        format!("slot {n}")
    }
}

/// A record published into the next slot.
#[derive(Debug, Clone)]
enum Record {
    /// Per block: its collocation (0–2) and entries (element 0–3, location).
    Flush(Vec<(u8, Vec<(u8, u64)>)>),
    Wipe(Vec<u8>),
}

/// One step of a history.
#[derive(Debug, Clone)]
enum Step {
    Publish(Record),
    /// A published slot removed behind fieldstore's back.
    Remove(prop::sample::Index),
    /// A published slot's value replaced by bytes that are no record.
    Junk(prop::sample::Index),
    /// The warm reader follows.
    Follow,
}

fn collocation(c: u8) -> CollocationKey {
    CollocationKey(format!("type=t{c},levtype=pl").parse().expect("a key"))
}

fn element(e: u8) -> ElementKey {
    ElementKey(
        format!("step={},param={}", e / 2, e % 2)
            .parse()
            .expect("a key"),
    )
}

fn step() -> impl Strategy<Value = Step> {
    let block = (0u8..3, prop::collection::vec((0u8..4, 0u64..1000), 1..4));
    let record = prop_oneof![
        5 => prop::collection::vec(block, 1..3).prop_map(Record::Flush),
        1 => prop::collection::vec(0u8..3, 1..3).prop_map(Record::Wipe),
    ];
    prop_oneof![
        6 => record.prop_map(Step::Publish),
        1 => any::<prop::sample::Index>().prop_map(Step::Remove),
        1 => any::<prop::sample::Index>().prop_map(Step::Junk),
        3 => Just(Step::Follow),
    ]
}

fn encode(record: &Record) -> Vec<u8> {
    match record {
        Record::Flush(blocks) => {
            let blocks = blocks
                .iter()
                .map(|(c, entries)| {
                    let entries: Vec<_> = entries
                        .iter()
                        .map(|&(e, l)| (element(e), FieldLocation::new("file:///d/x", l, 1)))
                        .collect();
                    let mut axes = Axes::new();
                    for (k, _) in &entries {
                        axes.add_key(k);
                    }
                    inline::Block {
                        collocation: collocation(*c),
                        entries,
                        axes,
                    }
                })
                .collect();
            let flush = Flush {
                timestamp_ns: 1,
                writer: "w".to_string(),
                blocks,
            };
            FRAMING.framed(kind::FLUSH, &inline::encode_flush(&flush))
        }
        Record::Wipe(cs) => {
            let cs: Vec<_> = cs.iter().map(|&c| collocation(c)).collect();
            FRAMING.framed(kind::WIPE, &encode_wipe(&cs, &[], 1))
        }
    }
}

/// A reader of the row: its index and cursor.
struct Reader {
    index: DatasetIndex<()>,
    cursor: SlotCursor,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            index: DatasetIndex::default(),
            cursor: SlotCursor::default(),
        }
    }

    fn follow(&mut self, row: &Row) {
        let mut torn = Vec::new();
        let end = slots::follow(
            row,
            &mut self.index,
            &mut torn,
            &mut self.cursor,
            &mut |n, v| {
                let what = || format!("slot {n}");
                let (kind, payload) = FRAMING.unframe_exact(v, &what)?;
                SlotRecord::decode(kind, payload, &what)
            },
        )
        .expect("the follow");
        assert_eq!(end, slots::FollowEnd::End);
        assert!(torn.is_empty(), "{torn:?}");
    }

    /// Every lookup: `Ok(offset)` or `Err(())` for `Corrupt`.
    fn answers(&mut self) -> BTreeMap<(u8, u8), std::result::Result<Option<u64>, ()>> {
        let mut out = BTreeMap::new();
        for c in 0..3 {
            for e in 0..4 {
                let got = match self.index.lookup(&collocation(c), &element(e), None) {
                    Ok(l) => Ok(l.map(|l| l.offset)),
                    Err(err) => {
                        assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
                        Err(())
                    }
                };
                out.insert((c, e), got);
            }
        }
        out
    }
}

/// What a slot of the final row holds for the model: its record, or
/// nothing readable (removed, or junk).
type Model = Vec<Option<Record>>;

/// The model's answer for `e` in `c`.
fn expected(model: &Model, c: u8, e: u8) -> std::result::Result<Option<u64>, ()> {
    let wiped = model
        .iter()
        .rposition(|r| matches!(r, Some(Record::Wipe(cs)) if cs.contains(&c)));
    let start = wiped.map_or(0, |w| w + 1);
    let mut found = None;
    for (slot, r) in model.iter().enumerate().skip(start) {
        if let Some(Record::Flush(blocks)) = r {
            for (bc, entries) in blocks {
                for &(x, l) in entries {
                    if *bc == c && x == e {
                        found = Some((slot, l));
                    }
                }
            }
        }
    }
    let since = found.map_or(start, |(slot, _)| slot);
    if model.iter().skip(since).any(Option::is_none) {
        return Err(());
    }
    Ok(found.map(|(_, l)| l))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn readers_answer_as_the_model(
        history in prop::collection::vec(step(), 0..24),
        listing in any::<bool>(),
    ) {
        let row = Row {
            slots: Mutex::new(BTreeMap::new()),
            hint: Mutex::new(None),
            listing,
            warm_hint: !listing,
        };
        let mut model: Model = Vec::new();
        let mut warm = Reader::new();
        for s in &history {
            match s {
                Step::Publish(record) => {
                    let n = model.len() as u64;
                    prop_assert!(row.insert(n, &encode(record)).unwrap());
                    row.set_hint(n).unwrap();
                    model.push(Some(record.clone()));
                }
                Step::Remove(i) if !model.is_empty() => {
                    let n = i.index(model.len());
                    row.slots.lock().unwrap().remove(&(n as u64));
                    model[n] = None;
                }
                Step::Junk(i) if !model.is_empty() => {
                    let n = i.index(model.len());
                    let mut slots = row.slots.lock().unwrap();
                    if let Some(v) = slots.get_mut(&(n as u64)) {
                        *v = b"junk".to_vec();
                    }
                    model[n] = None;
                }
                Step::Follow => warm.follow(&row),
                Step::Remove(_) | Step::Junk(_) => {}
            }
        }

        let mut cold = Reader::new();
        cold.follow(&row);
        let cold = cold.answers();
        for ((c, e), got) in &cold {
            let want = expected(&model, *c, *e);
            prop_assert!(
                *got == want || (got.is_err() && want.is_ok()),
                "cold reader, collocation {} element {}: {:?}, the model {:?}", c, e, got, want
            );
        }

        // `LOOK_AGAIN` later, the warm reader looks past its end again (a
        // slot removed right where it stopped hid the rest), at its first
        // call: also when that call reads new slots up to a lost tail.
        warm.cursor.looked_at = Default::default();
        warm.follow(&row);
        // Looking again reports nothing twice.
        let damage = warm.index.damage(None).len();
        warm.cursor.looked_at = Default::default();
        warm.follow(&row);
        prop_assert_eq!(warm.index.damage(None).len(), damage);
        for ((c, e), got) in warm.answers() {
            if let Ok(v) = cold[&(c, e)] {
                prop_assert_eq!(
                    got, Ok(v),
                    "warm reader, collocation {} element {} (the cold reader's answer)", c, e
                );
            }
        }
    }
}
