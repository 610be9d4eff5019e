//! The engine's reader on a RADOS log ([`RadosLog`], a
//! [`LogMedium`]): it follows a dataset's segments from where it stopped,
//! across seals, tells records cut off or removed by each segment's count
//! and seal, and reads the index blocks its records name from the
//! segments' omaps, many per round trip.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use fieldstore_core::engine::framed::{self, FramedRecords, Step};
use fieldstore_core::engine::{check_held, EndLook, Entries, Log, LogMedium, LogReader};
use fieldstore_core::record::block::{self, BlockFormat, ValueLen};
use fieldstore_core::record::named;
use fieldstore_core::{DamageMayName, DatasetKey, ElementKey, Error, FieldLocation, Result};

use crate::format::{self, Dec, Framed};
use crate::naming::ROOT;
use crate::rados::{OrMissing, Pool, ENOENT};
use crate::registry::head_lost;
use crate::segments::{read_from, read_init, segment_end, segment_object, Seal, PAGE};

/// Blocks fetched per omap read.
const KEYS_PER_READ: usize = 512;

/// The index blocks of this backend: values with a `u32` length, units
/// named by their URI.
pub(crate) struct Blocks;

impl BlockFormat for Blocks {
    const VALUES: ValueLen = ValueLen::U32;
    const UNIT: &'static str = "location";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        Cow::Borrowed(uri)
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(name)
    }
}

/// Where a block lives: its log segment and its omap key there.
pub(crate) type Place = (u32, String);

/// A record's place in the log, for the engine: its segment and offset.
fn log_at(segment: u32, offset: u64) -> u64 {
    (u64::from(segment) << 40) | offset
}

/// Where a RADOS reader stopped in its dataset's log.
#[derive(Debug, Default)]
pub struct RadosCursor {
    /// The log segment being followed.
    segment: u32,
    /// Bytes of that segment consumed.
    pos: u64,
    /// The log ended in WIPED, or the dataset object is gone: nothing is
    /// visible, until a dataset is created anew under the same name.
    pub(crate) gone: bool,
    /// When the end of the log was last checked against its segment's
    /// seal and count (never, before a reader's first refresh; an idle
    /// reader checks again after `LOOK_AGAIN`; see `follow`).
    looked_at: EndLook,
    /// Records read in this segment (after INIT in segment 0; damaged
    /// ones too, when they can be counted: `Framing::records_in`), to
    /// compare with its `!records` count.
    records: u64,
    /// A damaged region in this segment whose records could not be
    /// counted: a count higher than the records read may be only those,
    /// so it is reported as records that may have been lost.
    uncountable: bool,
    /// A shortfall of this segment's records was reported (or a cut below
    /// the reader): not again.
    reported: bool,
    /// The segment was found shorter than `pos`, and that reported.
    cut_below: bool,
}

impl RadosCursor {
    /// Go on at the start of log segment `segment`.
    fn enter(&mut self, segment: u32) {
        self.segment = segment;
        self.pos = 0;
        self.records = 0;
        self.uncountable = false;
        self.reported = false;
        self.cut_below = false;
    }
}

/// What a RADOS reader knows of its dataset.
pub(crate) type ReaderLog = Log<Place, RadosCursor>;

/// A log read from `pos` of segment 0 (just after INIT) of a dataset
/// created under `schema` (empty: unknown).
pub(crate) fn log_from(pos: u64, schema: Arc<str>) -> ReaderLog {
    Log::new(
        schema,
        RadosCursor {
            pos,
            ..RadosCursor::default()
        },
    )
}

/// The log of a dataset that is gone.
pub(crate) fn gone_log() -> ReaderLog {
    let mut log = log_from(0, Arc::from(""));
    log.cursor.gone = true;
    log
}

/// One dataset's log in RADOS, as the engine's reader follows it: the
/// dataset object's segments, and the index blocks in their omaps.
#[derive(Debug)]
pub struct RadosLog {
    pub(crate) pool: Arc<Pool>,
    pub(crate) object: String,
    pub(crate) key: DatasetKey,
}

/// A read view of one dataset that follows its log, and the dataset itself
/// when it is wiped (it becomes empty, then shows the dataset created anew).
pub type RadosReader = LogReader<RadosLog>;

impl RadosLog {
    /// Read the log again from the start (a dataset created anew, or one
    /// whose objects a wipe is removing).
    fn restart(&self, st: &mut ReaderLog) -> Result<bool> {
        match read_init(&self.pool, &self.object)? {
            Some((stored, pos, schema)) => {
                check_held(&|| self.pool.what(&self.object), &stored, &self.key)?;
                *st = log_from(pos, schema);
                Ok(true)
            }
            None => {
                *st = gone_log();
                Ok(false)
            }
        }
    }

    fn decode_block(
        &self,
        object: &str,
        key: &str,
        value: &[u8],
    ) -> Result<Vec<(ElementKey, FieldLocation)>> {
        let what = || format!("{} omap key '{key}'", self.pool.what(object));
        let payload =
            format::FRAMING.unframe_kind(value, format::BLOCK, "an index block", &what)?;
        Ok(block::decode(&Blocks, payload, &what)?.entries)
    }

    /// The collocations and units of the index blocks in the omaps of the
    /// segments read so far that no FLUSH record read names: those of
    /// damaged records (and of flushes whose last operation never applied,
    /// and of wiped collocations: more, never fewer). Anything when one of
    /// them does not decode. Per segment, one listing of its omap's keys a
    /// page, then the unnamed blocks only: paid once per operation on a
    /// damaged dataset that asks (a lookup of a collocation the reader does
    /// not know, a wipe, a purge), the engine keeping the answer until the
    /// reader next follows the log.
    ///
    /// # Errors
    /// RADOS errors reading the omaps.
    fn unnamed_blocks(&self, st: &ReaderLog) -> Result<DamageMayName> {
        let named: HashSet<&Place> = st
            .index
            .all_blocks()
            .flat_map(|(_, blocks, _)| blocks.iter().map(|b| &b.place))
            .collect();
        let (mut collocations, mut units) = (BTreeSet::new(), BTreeSet::new());
        for segment in 0..=st.cursor.segment {
            let obj = segment_object(&self.object, segment);
            let what = || format!("reading the index blocks of {}", self.pool.what(&obj));
            let mut unnamed = Vec::new();
            let mut after = Vec::new();
            loop {
                let page = self.pool.omap_keys(&obj, &after, PAGE).or_missing(what)?;
                // Removed behind fieldstore's back: its blocks may have
                // held anything.
                let Some((keys, more)) = page else {
                    return Ok(DamageMayName::Anything);
                };
                for k in &keys {
                    let key = String::from_utf8_lossy(k).into_owned();
                    if !key.starts_with('!') && !named.contains(&(segment, key)) {
                        unnamed.push(k.clone());
                    }
                }
                match keys.last() {
                    Some(last) if more => after.clone_from(last),
                    _ => break,
                }
            }
            for batch in unnamed.chunks(KEYS_PER_READ) {
                let keys: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                let Some(got) = self.pool.omap_get(&obj, &keys).or_missing(what)? else {
                    return Ok(DamageMayName::Anything);
                };
                for (_, v) in &got {
                    let what = String::new;
                    let block = match format::FRAMING.unframe(v, &what) {
                        Ok(Framed::Record(format::BLOCK, p, n)) if n == v.len() => {
                            block::decode(&Blocks, p, &what).ok()
                        }
                        _ => None,
                    };
                    let Some(b) = block else {
                        return Ok(DamageMayName::Anything);
                    };
                    let Ok(c) = b.collocation.parse() else {
                        return Ok(DamageMayName::Anything);
                    };
                    collocations.insert(c);
                    units.extend(b.entries.iter().map(|(_, l)| l.uri.to_string()));
                }
            }
        }
        Ok(DamageMayName::Only {
            collocations,
            units,
        })
    }

    fn follow_log(&self, st: &mut ReaderLog) -> Result<()> {
        if st.cursor.gone && !self.restart(st)? {
            return Ok(());
        }
        'segments: loop {
            let obj = segment_object(&self.object, st.cursor.segment);
            // From one byte before `pos`: a segment shorter than where this
            // reader stopped (cut behind fieldstore's back, as appends are
            // whole and never undone) shows in the same read.
            let back = usize::from(st.cursor.pos > 0);
            let Some(buf) = read_from(&self.pool, &obj, st.cursor.pos - back as u64)? else {
                // Segment 0 gone: the dataset was wiped, unless it is
                // still registered and not being wiped (`head_lost`). A
                // later segment missing: being removed by a wipe (a
                // segment is created before the seal that names it).
                let k = st.cursor.segment;
                if (k == 0 || self.pool.stat(&self.object) == Err(ENOENT))
                    && !head_lost(&self.pool, &self.key)?
                {
                    *st = gone_log();
                    return Ok(());
                }
                // A wipe removes segments from the last down: with
                // the next one still there, this one was removed
                // behind fieldstore's back. Damage; read on after it.
                let next = segment_object(&self.object, k + 1);
                if k == 0 || self.pool.stat(&next).is_ok() {
                    let why = if k == 0 {
                        format!(
                            "the dataset is registered in {} and no wipe is under way",
                            self.pool.what(ROOT)
                        )
                    } else {
                        format!("{} exists", self.pool.what(&next))
                    };
                    st.index.damaged_region(
                        log_at(k, 0),
                        format!(
                            "{}: log segment {k} missing, though {why} (removed behind \
                             fieldstore's back); reading on in the next segment",
                            self.pool.what(&obj),
                        ),
                    );
                    st.cursor.enter(k + 1);
                    continue 'segments;
                }
                return Ok(());
            };
            let (start, segment) = (st.cursor.pos, st.cursor.segment);
            if buf.len() < back && !st.cursor.cut_below {
                // Records appended after the cut lie below `pos`, where
                // this reader does not read: damage, reported once (and
                // the count, which goes on from the records cut off, is
                // no longer compared: it would report the same cut).
                st.cursor.cut_below = true;
                st.cursor.reported = true;
                st.index.damaged_region(
                    log_at(segment, start),
                    format!(
                        "{}: shorter than offset {start}, where this reader stopped: cut behind \
                         fieldstore's back",
                        self.pool.what(&obj),
                    ),
                );
            }
            let buf = buf.get(back..).unwrap_or_default();
            let used = framed::walk(st, &format::FRAMING, buf, start, self)?;
            if st.cursor.gone {
                return Ok(()); // At a WIPED record.
            }
            if st.cursor.segment != segment {
                continue 'segments; // At a SEAL record.
            }
            st.cursor.pos += used as u64;
            // The end of this segment's records: the end of the log, unless
            // the segment is sealed and its SEAL record was cut off, or
            // records were cut off (checked when something new was read, at
            // a reader's first refresh, and by an idle refresh once
            // `LOOK_AGAIN` has passed: else an idle refresh costs one read,
            // as before).
            if used > 0 || st.cursor.looked_at.due() {
                st.cursor.looked_at.now();
                let (seal, count) = segment_end(&self.pool, &obj)?.unzip();
                // Unsealed, `!records` counts the records read, unless
                // some were appended since the read above, or the log was
                // cut or a record removed (damage). Fewer counted than read:
                // a writer of a version before the count appended some.
                let count = count.flatten().filter(|&c| c > st.cursor.records);
                if let (Some(Seal::Open), Some(count), false) = (seal, count, st.cursor.reported) {
                    match read_from(&self.pool, &obj, st.cursor.pos)? {
                        // Removed meanwhile (a wipe): the next refresh sees it.
                        None => return Ok(()),
                        Some(more) if !more.is_empty() => continue 'segments,
                        Some(_) => {
                            let at = st.cursor.pos;
                            self.shortfall(st, &obj, count, at, &format!("its end at offset {at}"));
                        }
                    }
                }
                if let Some(Seal::Next(n)) = seal {
                    // Sealed since the read above (the SEAL record is there
                    // now), or the record is gone.
                    let Some(more) = read_from(&self.pool, &obj, st.cursor.pos)? else {
                        // Removed meanwhile (a wipe): the next refresh sees it.
                        return Ok(());
                    };
                    if more.is_empty() {
                        st.index.damaged_region(
                            log_at(st.cursor.segment, st.cursor.pos),
                            format!(
                                "{}: sealed (its `!sealed` key names segment {n}), but its log \
                                 ends at offset {} without a SEAL record: cut short behind \
                                 fieldstore's back; reading on in segment {n}",
                                self.pool.what(&obj),
                                st.cursor.pos
                            ),
                        );
                        st.cursor.enter(n);
                    }
                    continue 'segments;
                }
            }
            return Ok(());
        }
    }

    /// At the SEAL record (offset `at`) of segment `obj`, the last record
    /// appended to it: its `!records` key counting more records than were
    /// read means records were removed from the segment behind
    /// fieldstore's back (its bytes rewritten, the SEAL kept). Damage at
    /// the SEAL's place: the lost records are older than every later
    /// segment's, so only answers found up to here are in doubt. One omap
    /// read per sealed segment crossed (one per 64 MiB of log, by default).
    fn check_sealed_count(&self, st: &mut ReaderLog, obj: &str, at: u64) -> Result<()> {
        if st.cursor.reported {
            return Ok(());
        }
        if let Some((_, Some(count))) = segment_end(&self.pool, obj)? {
            if count > st.cursor.records {
                self.shortfall(
                    st,
                    obj,
                    count,
                    at,
                    &format!("its SEAL record at offset {at}"),
                );
            }
        }
        Ok(())
    }

    /// Segment `obj` counts `count` records, more than were read up to
    /// `end` (offset `at`): a damaged region there, reported once a segment
    /// ([`RadosCursor::reported`]). With a damaged region whose records
    /// could not be counted, they may be those, or lost: a cut after such
    /// damage must not go unseen, so it is damage all the same.
    fn shortfall(&self, st: &mut ReaderLog, obj: &str, count: u64, at: u64, end: &str) {
        st.cursor.reported = true;
        let what = self.pool.what(obj);
        let read = st.cursor.records;
        let counts =
            format!("{what}: its `!records` key counts {count} records, but its log holds");
        let lost = "records were cut off or removed behind fieldstore's back";
        let problem = if st.cursor.uncountable {
            format!(
                "{counts} {read} that could be counted up to {end}, after damaged bytes whose \
                 records could not be: {lost}, or they are those"
            )
        } else {
            format!("{counts} {read} up to {end}: {lost}")
        };
        self.damaged(st, at, problem);
    }
}

/// The records of a log segment, as the engine's walk reads them.
impl FramedRecords<Place, RadosCursor> for RadosLog {
    fn what(&self, st: &ReaderLog, at: u64) -> String {
        let obj = segment_object(&self.object, st.cursor.segment);
        format!("{} at offset {at}", self.pool.what(&obj))
    }

    fn place(&self, st: &ReaderLog, at: u64) -> u64 {
        log_at(st.cursor.segment, at)
    }

    /// Counted, to compare with the segment's `!records`.
    fn met(&self, st: &mut ReaderLog, _: u16, _: u64) {
        st.cursor.records += 1;
    }

    fn flush(&self, st: &mut ReaderLog, payload: &[u8], at: u64) -> Result<()> {
        let what = || self.what(st, at);
        let blocks = named::decode_flush(payload, &what, true, &|d| Ok(d.str()?.to_string()))?;
        for b in blocks {
            let place = (st.cursor.segment, b.place);
            st.index.add_block(b.collocation, place, b.axes);
        }
        Ok(())
    }

    /// Damaged, its records counted (`Framing::records_in`: each damaged in
    /// its header or in its payload, not both), so that the segment's count
    /// still shows records cut off or removed after them; or not countable.
    fn skipped(&self, st: &mut ReaderLog, region: &[u8], at: u64, problem: String) {
        match format::FRAMING.records_in(region) {
            Some(n) => st.cursor.records += n,
            None => st.cursor.uncountable = true,
        }
        self.damaged(st, at, problem);
    }

    /// WIPED ends the incarnation; SEAL moves the cursor to the next
    /// segment.
    fn own(&self, st: &mut ReaderLog, kind: u16, p: &[u8], at: u64, rest: &[u8]) -> Result<Step> {
        let what = || self.what(st, at);
        match kind {
            format::WIPED => {
                // Everything before is wiped. The objects are being
                // removed; a dataset may be created anew after.
                *st = gone_log();
                Ok(Step::Leave)
            }
            format::SEAL => {
                let next = Dec::new(p, &what).u32()?;
                if next != st.cursor.segment + 1 {
                    return Err(Error::corrupt(format!(
                        "{}: seal names segment {next}, not {}",
                        what(),
                        st.cursor.segment + 1
                    )));
                }
                // Nothing follows a SEAL but another SEAL (a seal finished
                // again after its `!sealed` key was lost): anything else was
                // appended after the seal, when the key was gone, and is out
                // of the log's order.
                let resealed = matches!(
                    format::FRAMING.unframe(rest, &what),
                    Ok(Framed::Record(format::SEAL, ..))
                );
                let obj = segment_object(&self.object, st.cursor.segment);
                if !rest.is_empty() && !resealed {
                    let problem = format!(
                        "{}: {} bytes after the SEAL record at offset {at} (appended after the \
                         segment was sealed, its `!sealed` key lost): not read",
                        self.pool.what(&obj),
                        rest.len(),
                    );
                    self.damaged(st, at + (format::HEADER + p.len()) as u64, problem);
                } else if !resealed {
                    self.check_sealed_count(st, &obj, at)?;
                }
                st.cursor.enter(next);
                Ok(Step::Leave)
            }
            // Unknown record types from newer versions are skipped.
            _ => Ok(Step::Read),
        }
    }
}

impl LogMedium for RadosLog {
    type Place = Place;
    type Cursor = RadosCursor;

    fn follow(&self, log: &mut ReaderLog) -> Result<()> {
        self.follow_log(log)
    }

    /// Read the blocks at `places`, a run of one segment's omap keys at a
    /// time. A segment that vanished is a wipe this reader has not read
    /// yet, or removed behind fieldstore's back (`NotFound`); a key
    /// missing from its omap is damage.
    fn read_blocks(&self, _: &mut ReaderLog, places: &[Place]) -> Result<Vec<Entries>> {
        let mut out = Vec::with_capacity(places.len());
        for run in places.chunk_by(|a, b| a.0 == b.0) {
            for batch in run.chunks(KEYS_PER_READ) {
                let obj = segment_object(&self.object, batch[0].0);
                let keys: Vec<&[u8]> = batch.iter().map(|(_, k)| k.as_bytes()).collect();
                let got = match self.pool.omap_get(&obj, &keys) {
                    Ok(got) => got,
                    Err(e) if e == ENOENT => {
                        let gone =
                            || Err(e.error(format!("index blocks of {}", self.pool.what(&obj))));
                        out.extend(batch.iter().map(|_| gone()));
                        continue;
                    }
                    Err(e) => {
                        let what = format!("reading index blocks of {}", self.pool.what(&obj));
                        return Err(e.error(what));
                    }
                };
                // Not taken out: two records may name one block (a record
                // appended twice behind fieldstore's back).
                let got: HashMap<Vec<u8>, Vec<u8>> = got.into_iter().collect();
                out.extend(batch.iter().map(|(_, k)| match got.get(k.as_bytes()) {
                    None => Err(Error::corrupt(format!(
                        "{}: index block '{k}' named by the log is missing from the omap",
                        self.pool.what(&obj)
                    ))),
                    Some(value) => self.decode_block(&obj, k, value),
                }));
            }
        }
        Ok(out)
    }

    /// A damaged FLUSH record's blocks are intact in the omap, so they
    /// tell what it may have named (`unnamed_blocks`).
    fn damage_may_name(&self, log: &mut ReaderLog) -> Result<DamageMayName> {
        self.unnamed_blocks(log)
    }
}
