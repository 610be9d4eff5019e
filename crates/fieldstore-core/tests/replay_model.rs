//! The engine's replay of a byte log against a model of what it must
//! answer: random sequences of FLUSH records (their blocks whole or
//! damaged), WIPE and RECLAIM records, and damaged regions (bytes that are
//! no record, and records whose payload does not decode), framed and read
//! by `framed::walk` into a `DatasetIndex` as POSIX and RADOS read theirs.
//! Every lookup must give the newest entry since the collocation's last
//! WIPE, or fail `Corrupt` exactly when damage newer than that entry may
//! hold a newer one; never an older version with success.

use std::collections::HashMap;
use std::sync::Arc;

use fieldstore_core::axes::AxesExt;
use fieldstore_core::catalogue::Axes;
use fieldstore_core::engine::framed::{self, FramedRecords};
use fieldstore_core::engine::{may_hold, Block, Log};
use fieldstore_core::record::maintenance::{encode_reclaim, encode_wipe};
use fieldstore_core::record::named::{self, NamedBlock};
use fieldstore_core::record::{kind, Framing};
use fieldstore_core::{CollocationKey, ElementKey, ErrorKind, FieldLocation, Result};
use proptest::prelude::*;

const FRAMING: Framing = Framing::new(*b"FSR1");

/// A medium whose FLUSH records name blocks by a string, as RADOS's do.
struct Medium;

impl FramedRecords<String, ()> for Medium {
    fn what(&self, _: &Log<String, ()>, at: u64) -> String {
        format!("log at offset {at}")
    }

    fn flush(&self, log: &mut Log<String, ()>, payload: &[u8], at: u64) -> Result<()> {
        let what = || format!("log at offset {at}");
        let blocks = named::decode_flush(payload, &what, false, &|d| Ok(d.str()?.to_string()))?;
        for b in blocks {
            log.index.add_block(b.collocation, b.place, b.axes);
        }
        Ok(())
    }
}

/// One block a FLUSH record names: its collocation (0–2), its entries
/// (element number 0–3, location number) and whether it fails to load.
#[derive(Debug, Clone)]
struct GenBlock {
    collocation: u8,
    entries: Vec<(u8, u64)>,
    damaged: bool,
}

/// What the log holds, in order.
#[derive(Debug, Clone)]
enum Event {
    Flush(Vec<GenBlock>),
    Wipe(Vec<u8>),
    Reclaim,
    /// Bytes that are no record (never containing the framing's magic).
    Garbage(Vec<u8>),
    /// A whole record, checksums right, whose payload does not decode.
    Undecodable,
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

fn location(n: u64) -> FieldLocation {
    FieldLocation::new("file:///d/x.data", n, 1)
}

fn event() -> impl Strategy<Value = Event> {
    let block = (
        0u8..3,
        prop::collection::vec((0u8..4, 0u64..1000), 0..4),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(collocation, entries, damaged)| GenBlock {
            collocation,
            entries,
            damaged,
        });
    prop_oneof![
        6 => prop::collection::vec(block, 1..3).prop_map(Event::Flush),
        1 => prop::collection::vec(0u8..3, 1..3).prop_map(Event::Wipe),
        1 => Just(Event::Reclaim),
        1 => prop::collection::vec(b'a'..=b'z', 1..24).prop_map(Event::Garbage),
        1 => Just(Event::Undecodable),
    ]
}

/// Each block's entries and whether it fails to load, by its place.
type Blocks = HashMap<String, (Vec<(ElementKey, FieldLocation)>, bool)>;

/// The log's bytes, and its blocks.
fn encode(events: &[Event]) -> (Vec<u8>, Blocks) {
    let (mut log, mut blocks) = (Vec::new(), HashMap::new());
    for (i, ev) in events.iter().enumerate() {
        match ev {
            Event::Flush(bs) => {
                let mut named = Vec::new();
                for (j, b) in bs.iter().enumerate() {
                    let place = format!("{i}.{j}");
                    let entries: Vec<_> = b
                        .entries
                        .iter()
                        .map(|&(e, l)| (element(e), location(l)))
                        .collect();
                    let mut axes = Axes::new();
                    for (k, _) in &entries {
                        axes.add_key(k);
                    }
                    named.push(NamedBlock {
                        place: place.clone(),
                        count: entries.len() as u32,
                        collocation: collocation(b.collocation),
                        axes,
                    });
                    blocks.insert(place, (entries, b.damaged));
                }
                let p = named::encode_flush(None, &named, &mut |e, k| e.str(k));
                FRAMING.frame(&mut log, kind::FLUSH, &p);
            }
            Event::Wipe(cs) => {
                let cs: Vec<_> = cs.iter().map(|&c| collocation(c)).collect();
                let units = vec!["file:///d/x.data".to_string()];
                FRAMING.frame(&mut log, kind::WIPE, &encode_wipe(&cs, &units, 1));
            }
            Event::Reclaim => {
                let units = vec!["file:///d/gone.data".to_string()];
                FRAMING.frame(&mut log, kind::RECLAIM, &encode_reclaim(&units, None, 1));
            }
            Event::Garbage(bytes) => log.extend_from_slice(bytes),
            Event::Undecodable => FRAMING.frame(&mut log, kind::FLUSH, b"\x01\x02"),
        }
    }
    (log, blocks)
}

/// What a lookup of `e` in `c` must answer: `Err(())` for `Corrupt`.
fn expected(events: &[Event], c: u8, e: u8) -> std::result::Result<Option<u64>, ()> {
    let wiped = events
        .iter()
        .rposition(|ev| matches!(ev, Event::Wipe(cs) if cs.contains(&c)));
    let start = wiped.map_or(0, |w| w + 1);
    // Blocks of `c` since its last WIPE, in log order: (event, block).
    let since: Vec<(usize, &GenBlock)> = events[start..]
        .iter()
        .enumerate()
        .flat_map(|(i, ev)| match ev {
            Event::Flush(bs) => bs.iter().map(|b| (start + i, b)).collect(),
            _ => Vec::new(),
        })
        .filter(|(_, b)| b.collocation == c)
        .collect();
    let found = since
        .iter()
        .enumerate()
        .filter(|(_, (_, b))| !b.damaged)
        .flat_map(|(k, (i, b))| {
            let ours = b.entries.iter().filter(|(x, _)| *x == e);
            ours.map(move |&(_, l)| (k, *i, l))
        })
        .last();
    let newer_block = found.map_or(0, |(k, ..)| k + 1);
    let axes_of = |b: &GenBlock| {
        let mut axes = Axes::new();
        for &(x, _) in &b.entries {
            axes.add_key(&element(x));
        }
        axes
    };
    if since[newer_block..]
        .iter()
        .any(|(_, b)| b.damaged && may_hold(&axes_of(b), &element(e)))
    {
        return Err(());
    }
    let after = found.map_or(start, |(_, i, _)| i.max(start));
    let damage_after = events
        .iter()
        .enumerate()
        .any(|(i, ev)| i >= after && matches!(ev, Event::Garbage(_) | Event::Undecodable));
    if damage_after {
        // With no medium to say what a damaged region named, any region
        // newer than the answer (or the WIPE) may hold a newer version.
        return Err(());
    }
    Ok(found.map(|(.., l)| l))
}

/// The collocations a reader lists: named since their last WIPE, in the
/// order they were (again) first named.
fn expected_order(events: &[Event]) -> Vec<u8> {
    let mut order: Vec<u8> = Vec::new();
    for ev in events {
        match ev {
            Event::Flush(bs) => {
                for b in bs {
                    if !order.contains(&b.collocation) {
                        order.push(b.collocation);
                    }
                }
            }
            Event::Wipe(cs) => order.retain(|c| !cs.contains(c)),
            _ => {}
        }
    }
    order
}

/// Load every block `log` names and has not loaded, then look up every
/// element of every collocation against the model of `events`.
fn check(
    log: &mut Log<String, ()>,
    blocks: &Blocks,
    events: &[Event],
) -> std::result::Result<(), TestCaseError> {
    let order: Vec<CollocationKey> = expected_order(events)
        .into_iter()
        .map(collocation)
        .collect();
    prop_assert_eq!(log.index.order(), &order[..]);
    for c in log.index.order().to_vec() {
        for (i, place) in log.index.to_load(&c, &|_| true) {
            let (entries, damaged) = blocks.get(&place).expect("a block the log named").clone();
            let block = if damaged {
                Block::damaged(format!("block {place} damaged"))
            } else {
                Block::new(entries)
            };
            log.index.set_loaded(&c, i, block);
        }
    }
    for c in 0..3u8 {
        for e in 0..4u8 {
            let got = match log.index.lookup(&collocation(c), &element(e), None) {
                Ok(l) => Ok(l.map(|l| l.offset)),
                Err(err) => {
                    prop_assert_eq!(err.kind(), ErrorKind::Corrupt, "{}", err);
                    Err(())
                }
            };
            prop_assert_eq!(
                got,
                expected(events, c, e),
                "collocation {} element {}",
                c,
                e
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Read at once, and by a reader that read the log as far as `seen`
    /// (an event boundary: appends are whole) and looked up everything
    /// there before the rest was appended.
    #[test]
    fn replay_answers_as_the_model(events in prop::collection::vec(event(), 0..14), seen in any::<prop::sample::Index>()) {
        let (bytes, blocks) = encode(&events);
        let mut log: Log<String, ()> = Log::new(Arc::from(""), ());
        let used = framed::walk(&mut log, &FRAMING, &bytes, 0, &Medium).expect("the walk");
        prop_assert_eq!(used, bytes.len());
        check(&mut log, &blocks, &events)?;

        let k = seen.index(events.len() + 1);
        let (prefix, _) = encode(&events[..k]);
        let mut warm: Log<String, ()> = Log::new(Arc::from(""), ());
        let used = framed::walk(&mut warm, &FRAMING, &prefix, 0, &Medium).expect("the walk");
        prop_assert_eq!(used, prefix.len());
        check(&mut warm, &blocks, &events[..k])?;
        let rest = &bytes[prefix.len()..];
        let used = framed::walk(&mut warm, &FRAMING, rest, prefix.len() as u64, &Medium).expect("the walk");
        prop_assert_eq!(used, rest.len());
        check(&mut warm, &blocks, &events)?;
    }
}
