//! Logs that are a row of numbered slots, each holding one whole record:
//! DAOS's dataset KV (`f.0`, `f.1`, …) and S3's log objects. The commit is
//! a conditional insert into the first free slot, which fails when the
//! slot is taken, so two writers never share a slot and the slots fill
//! without gaps, in the order flushes became visible, with no lock between
//! writers. This module holds what every such medium does the same way:
//! finding the first free slot, publishing, and following the log with
//! gaps told from the end.
//!
//! A medium gives a [`SlotLog`] (four methods, and two optional ones for a
//! medium that can list its slots) and how to decode a slot's value into
//! a [`SlotRecord`]; FLUSH records carry their blocks inline
//! ([`crate::record::inline`]), so a reader needs no block loader.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{DatasetIndex, EndLook};
use crate::error::{Error, ErrorKind, Result};
use crate::record::inline::{self, Flush};
use crate::record::kind;
use crate::record::maintenance::MaintenanceRecord;

/// One dataset's row of slots on a medium.
///
/// # Contract
/// [`SlotLog::insert`] writes a slot only if no value is there, atomically
/// with the test (DAOS `DAOS_COND_KEY_INSERT`, S3 `If-None-Match: *`): of
/// racing inserts into one slot exactly one returns `true`. A slot's value
/// is never changed afterwards.
pub trait SlotLog: Sync {
    /// Read slot `n` into `buf` (its old content replaced); `false` if the
    /// slot holds nothing.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool>;

    /// Whether slot `n` holds a value (a cheap look: no value read).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn exists(&self, n: u64) -> Result<bool>;

    /// The first slot after `n` that holds a value, if any. A medium that
    /// can list its slots in order (S3) answers across any run of missing
    /// slots, so [`follow`] finds a gap of any length; the default looks
    /// at slot `n + 1` only.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn next_after(&self, n: u64) -> Result<Option<u64>> {
        Ok(self.exists(n + 1)?.then_some(n + 1))
    }

    /// A slot at or after `n` that was seen to hold a value, so that
    /// [`follow`] tells a run of two or more missing slots, or a lost tail
    /// that reaches it, from the end where [`SlotLog::next_after`] looks at
    /// `n + 1` only: what this process saw of the log, or, when `cold` (a
    /// reader's first look, which reads slot after slot anyway), a hint
    /// stored with the log (the greatest slot [`SlotLog::set_hint`]
    /// stored). Only a hint: `follow` checks it. A writer that shares the
    /// log with writers of other processes asks it `cold` too, before each
    /// flush, and starts past it. `None` (the default) when there is none.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn hint_past(&self, n: u64, cold: bool) -> Result<Option<u64>> {
        let _ = (n, cold);
        Ok(None)
    }

    /// Store `n`, a slot just published, as the log's tail hint: what
    /// [`SlotLog::hint_past`] reads when `cold`, so that a process that
    /// never saw the log tells a lost tail or a long gap by it, and starts
    /// its writers past it rather than filling removed slots and hiding
    /// their loss. [`publish`] calls it after every insert it won.
    ///
    /// A stored hint only grows: writers racing call this out of order,
    /// and a call with a smaller slot than one stored before must not
    /// lower what [`SlotLog::hint_past`] reads (else a lost tail past the
    /// lower slot goes unseen). DAOS writes a byte at offset `n` of an
    /// array and reads its size; S3 PUTs an object named by the slot and
    /// lists the greatest. The default stores nothing.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn set_hint(&self, n: u64) -> Result<()> {
        let _ = n;
        Ok(())
    }

    /// The slots that hold a value, in order, if the medium lists them in
    /// a request or a few (S3: 1,000 keys a listing); `None` (the
    /// default) if it cannot, and a cold reader reads slot after slot.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn listed(&self) -> Result<Option<Vec<u64>>> {
        Ok(None)
    }

    /// The slot after the last one that holds a value, looking from
    /// `from` on (every slot before `from` exists), if the medium finds it
    /// in a request or a few (S3: a listing of up to 1,000 keys after
    /// `from - 1`; DAOS: a look at `from`, then the tail hint and a gallop
    /// past it); `None` (the default) if it cannot. A writer that lost the
    /// race for a slot moves there (see [`publish`]). The end found may lie
    /// past a lost slot that the hint reaches over: a writer then leaves
    /// the gap as it is (damage a reader reports), as a cold writer does.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn end_from(&self, from: u64) -> Result<Option<u64>> {
        let _ = from;
        Ok(None)
    }

    /// Put `value` into slot `n` if it is free; `false` if it was taken.
    ///
    /// # Errors
    /// The medium's I/O errors (the insert may then have happened).
    fn insert(&self, n: u64, value: &[u8]) -> Result<bool>;

    /// Slot `n`'s name, for messages (`daos://pool/cont/f.12`).
    fn name(&self, n: u64) -> String;
}

/// What a slot holds, decoded.
#[derive(Debug)]
pub enum SlotRecord {
    /// A writer's flush, its blocks inline.
    Flush(Flush),
    /// A WIPE, RECLAIM or CONTROL record.
    Maintenance(MaintenanceRecord),
    /// The dataset was wiped here: nothing after it belongs to this
    /// incarnation (the medium reopens the dataset).
    Wiped,
    /// Only the start of a record: an insert still in flight, on a medium
    /// that shows an object before its whole body is there (SeaweedFS
    /// answers a GET with an empty body then). Read again later; see
    /// [`follow`].
    Incomplete,
    /// A record type of a newer version: skipped.
    Unknown,
}

impl SlotRecord {
    /// Decode a slot's record, unframed, of type `kind` (the core's
    /// numbering, [`kind`]): a FLUSH with its blocks inline, WIPED, WIPE,
    /// RECLAIM or CONTROL; a type of a newer version is `Unknown`.
    ///
    /// # Errors
    /// `Corrupt`, naming `what`, for a payload that does not decode whole,
    /// or a record that is never a log slot (INIT, DATASET).
    pub fn decode(kind: u16, payload: &[u8], what: &dyn Fn() -> String) -> Result<SlotRecord> {
        Ok(match kind {
            kind::FLUSH => SlotRecord::Flush(inline::decode_flush(payload, what)?),
            kind::WIPED => SlotRecord::Wiped,
            kind::INIT | kind::DATASET => {
                let problem = format!("{}: record type {kind}, expected a log record", what());
                return Err(Error::corrupt(problem));
            }
            _ => MaintenanceRecord::decode(kind, payload, what)?
                .map_or(SlotRecord::Unknown, SlotRecord::Maintenance),
        })
    }
}

/// Where a reader stopped in a slot log.
#[derive(Debug, Default)]
pub struct SlotCursor {
    /// The next slot to read.
    pub next: u64,
    /// Whether the end of the log was looked past once (see [`follow`]).
    pub looked_past_end: bool,
    /// When this reader last looked past the end: a call that reads
    /// nothing new looks again once [`super::LOOK_AGAIN`] has passed.
    pub looked_at: EndLook,
    /// The slot at which a lost tail was reported, so that looking again
    /// does not report it twice.
    pub lost_at: Option<u64>,
    /// A buffer for slot values, kept between reads.
    pub buf: Vec<u8>,
}

/// How [`follow`] stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum FollowEnd {
    /// At the end of the log.
    End,
    /// At a [`SlotRecord::Wiped`] record, in slot `.0`.
    Wiped(u64),
}

/// Tell `index` what one decoded slot says.
pub fn apply(index: &mut DatasetIndex<()>, slot: u64, record: SlotRecord) {
    match record {
        SlotRecord::Flush(flush) => {
            for block in flush.blocks {
                index.add_loaded_block(block.collocation, (), block.axes, block.entries);
            }
        }
        // Blocks are inline in their FLUSH records: none is reclaimed.
        SlotRecord::Maintenance(r) => index.apply_maintenance(slot, r, &str::to_string, &|_| false),
        SlotRecord::Wiped | SlotRecord::Incomplete | SlotRecord::Unknown => {}
    }
}

/// Read the slots past `cursor` into `index`, each once, in order.
///
/// **Gaps.** A slot is inserted only after the slot before it was seen to
/// exist, so a missing slot with a slot after it was removed behind
/// fieldstore's back: a gap, which is damage (a region that may have held
/// any record: lookups it may change fail, never answering an older version
/// with success), and reading goes on after it. Telling the end from a gap
/// costs a look past it ([`SlotLog::next_after`]), paid when this call read
/// something new, at a reader's first call, and by a call that read
/// nothing new once [`super::LOOK_AGAIN`] has passed since the last look
/// (else an idle reader's call costs one read): a slot removed right where
/// an idle reader stopped is a gap or a lost tail it sees within a second,
/// not the end of the log for good. The first call after `LOOK_AGAIN`
/// looks as a first call does, with the hint, also where it reads new
/// slots up to the end: a lost tail past where a reader stopped is seen
/// at that call, not at the idle one after it. A slot found missing while
/// a later one exists is looked at once more before it is called a gap (a
/// writer may have inserted both since). Not seen: a lost tail or, on a
/// medium that cannot list its slots (DAOS), a gap of two or more slots,
/// that no hint reaches ([`SlotLog::hint_past`]: a slot seen to exist in
/// or past them).
///
/// A slot that does not decode (`Corrupt`) costs only itself: it is a
/// damaged region, and reading goes on.
///
/// **Inserts in flight, and torn ones.** A slot that holds only the start
/// of a record ([`SlotRecord::Incomplete`]) is an insert not acknowledged
/// yet: this call stops before it (its writer has not been told it is
/// visible, so nothing is lost by waiting), and the next call reads it
/// again. If a later slot exists, the slot is read again after 10, 100 and
/// 1,000 ms (a writer that lost the race for it may have moved on while
/// the body was still arriving); still incomplete then, it is a torn
/// insert — its writer died in it, unacknowledged — and is stepped over
/// and reported in `torn`, as POSIX steps over a torn append.
///
/// **Catching up.** A reader at the start of a log whose medium lists its
/// slots ([`SlotLog::listed`]) fetches them [`AHEAD`] at a time, in
/// parallel, then reads them in order from memory: slots never change, so
/// a slot fetched ahead is what a read in turn would give (one removed
/// meanwhile is read again, and found missing).
///
/// # Errors
/// The medium's I/O errors, and `decode`'s other than `Corrupt`.
pub fn follow(
    log: &dyn SlotLog,
    index: &mut DatasetIndex<()>,
    torn: &mut Vec<String>,
    cursor: &mut SlotCursor,
    decode: &mut dyn FnMut(u64, &[u8]) -> Result<SlotRecord>,
) -> Result<FollowEnd> {
    let mut read_some = false;
    // Asked once: a look at a gap early in this call must not make a lost
    // tail later in it look fresh.
    let due = cursor.looked_at.due();
    let mut ahead = if cursor.next == 0 {
        fetch_ahead(log)?
    } else {
        HashMap::new()
    };
    loop {
        let slot = cursor.next;
        let mut buf = std::mem::take(&mut cursor.buf);
        let found = match ahead.remove(&slot) {
            Some(v) => {
                buf = v;
                true
            }
            None => log.get(slot, &mut buf)?,
        };
        if !found {
            cursor.buf = buf;
            // A first call, or the first after `LOOK_AGAIN`, looks past
            // the end with the hint, whether or not it read something new
            // (a reader that reads up to a lost tail reads the hint that
            // tells it); another call that read something new looks
            // without it; one that read nothing new takes the end looked
            // past before.
            let fresh = !cursor.looked_past_end || due;
            let past = if read_some || fresh {
                cursor.looked_at.now();
                match log.next_after(slot)? {
                    None => past_a_gap(log, slot, fresh)?,
                    Some(later) => Past::After(later),
                }
            } else {
                Past::End
            };
            if matches!(past, Past::After(_) | Past::Lost(_)) && log.exists(slot)? {
                continue;
            }
            if let Past::Lost(hinted) = past.filter_reported(&mut cursor.lost_at, slot) {
                index.damaged_region(
                    slot,
                    format!(
                        "{}: the log ends here, though {} was seen to exist (its last slots were \
                         removed behind fieldstore's back)",
                        log.name(slot),
                        log.name(hinted)
                    ),
                );
            }
            if let Past::After(later) = past {
                let missing = match later - slot {
                    1 => "log slot missing".to_string(),
                    n => format!("{n} log slots missing from here"),
                };
                index.damaged_region(
                    slot,
                    format!(
                        "{}: {missing}, though {} exists (a gap in the log: removed behind \
                         fieldstore's back)",
                        log.name(slot),
                        log.name(later)
                    ),
                );
                cursor.next = later;
                continue;
            }
            cursor.looked_past_end = true;
            return Ok(FollowEnd::End);
        }
        let mut record = decode(slot, &buf);
        if matches!(record, Ok(SlotRecord::Incomplete)) {
            if log.next_after(slot)?.is_none() {
                cursor.buf = buf;
                return Ok(FollowEnd::End);
            }
            for pause in [10, 100, 1000] {
                std::thread::sleep(std::time::Duration::from_millis(pause));
                if log.get(slot, &mut buf)? {
                    record = decode(slot, &buf);
                    if !matches!(record, Ok(SlotRecord::Incomplete)) {
                        break;
                    }
                }
            }
        }
        cursor.buf = buf;
        cursor.next = slot + 1;
        read_some = true;
        match record {
            Ok(SlotRecord::Incomplete) => torn.push(format!(
                "{}: the start of a record only ({} bytes), though a later slot exists: a torn \
                 insert, stepped over",
                log.name(slot),
                cursor.buf.len()
            )),
            Ok(SlotRecord::Wiped) => return Ok(FollowEnd::Wiped(slot)),
            Ok(r) => apply(index, slot, r),
            Err(e) if e.kind() == ErrorKind::Corrupt => {
                index.damaged_region(slot, format!("{e}; slot skipped"))
            }
            Err(e) => return Err(e),
        }
    }
}

/// What is past a missing slot whose next slot is missing too.
#[derive(Clone, Copy)]
enum Past {
    /// Nothing known: the end of the log.
    End,
    /// The first slot holding a value after the missing ones.
    After(u64),
    /// The hinted slot is missing too, and nothing follows it: the log
    /// lost its last slots.
    Lost(u64),
}

impl Past {
    /// `self`, unless it is the lost tail at `slot` already reported
    /// (`reported`, which this sets): then the end.
    fn filter_reported(self, reported: &mut Option<u64>, slot: u64) -> Past {
        match self {
            Past::Lost(_) if *reported == Some(slot) => Past::End,
            Past::Lost(_) => {
                *reported = Some(slot);
                self
            }
            past => past,
        }
    }
}

/// What is past missing slots `slot` and `slot + 1`, if the medium's hint
/// ([`SlotLog::hint_past`]) names a slot at or past `slot`. A hinted slot
/// was seen to exist, and slots are never removed: if it is missing, a
/// slot after it (where writers went on) ends the gap, else the log lost
/// its tail. The first slot after the gap is found by bisection, as the
/// slots after a gap fill without gaps (with more gaps than one, the first
/// slot found after a missing one): a look per halving, paid only when the
/// hint is past the end the reader found.
///
/// # Errors
/// The medium's I/O errors.
fn past_a_gap(log: &dyn SlotLog, slot: u64, cold: bool) -> Result<Past> {
    let Some(hinted) = log.hint_past(slot, cold)?.filter(|&h| h >= slot) else {
        return Ok(Past::End);
    };
    let mut hi = hinted;
    if hinted <= slot + 1 || !log.exists(hinted)? {
        match log.next_after(hinted.max(slot + 1))? {
            Some(n) => hi = n,
            None => return Ok(Past::Lost(hinted)),
        }
    }
    let mut lo = slot + 1;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if log.exists(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Past::After(hi))
}

/// How many slots a catching-up reader fetches at once.
pub const AHEAD: usize = 8;

/// Every listed slot's value, fetched [`AHEAD`] at a time (errors and
/// slots gone meanwhile are left to the reads in turn).
fn fetch_ahead(log: &dyn SlotLog) -> Result<HashMap<u64, Vec<u8>>> {
    let Some(slots) = log.listed()? else {
        return Ok(HashMap::new());
    };
    let fetched = Mutex::new(HashMap::with_capacity(slots.len()));
    std::thread::scope(|s| {
        let fetched = &fetched;
        for part in slots.chunks(slots.len().div_ceil(AHEAD).max(1)) {
            s.spawn(move || {
                for &n in part {
                    let mut buf = Vec::new();
                    if let Ok(true) = log.get(n, &mut buf) {
                        fetched
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(n, buf);
                    }
                }
            });
        }
    });
    Ok(fetched.into_inner().unwrap_or_else(|e| e.into_inner()))
}

/// The first free slot at or after `from`, knowing that every slot before
/// `from` exists (slots fill without gaps): gallop, then bisect, with
/// [`SlotLog::exists`] looks.
///
/// # Errors
/// The medium's I/O errors.
pub fn first_free(log: &dyn SlotLog, from: u64) -> Result<u64> {
    let (mut lo, mut step) = (from, 1u64);
    while log.exists(lo + step - 1)? {
        lo += step;
        step = step.saturating_mul(2);
    }
    let mut hi = lo + step - 1;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if log.exists(mid)? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Insert `value` into the first free slot, starting the search at `hint`
/// (a slot every slot before which exists), then store the slot as the
/// log's tail hint ([`SlotLog::set_hint`]); returns the slot. When the
/// guessed slot is taken (someone else appended since this process last
/// looked), `check` runs once before the next attempt: that is where a
/// writer learns of an archive lock, whose CONTROL record is such an
/// append.
///
/// A writer that lost a race looks for the end again: in a request or a
/// few where the medium can ([`SlotLog::end_from`]), else by galloping and
/// bisecting ([`first_free`], ~2 log₂(slots appended since) looks), which
/// writers appending meanwhile may outrun.
///
/// # Errors
/// The medium's I/O errors; `check`'s.
pub fn publish(
    log: &dyn SlotLog,
    hint: u64,
    value: &[u8],
    check: &mut dyn FnMut() -> Result<()>,
) -> Result<u64> {
    let mut slot = hint;
    let mut checked = false;
    loop {
        if log.insert(slot, value)? {
            log.set_hint(slot)?;
            return Ok(slot);
        }
        if !checked {
            check()?;
            checked = true;
        }
        slot = match log.end_from(slot + 1)? {
            Some(end) => end,
            None => first_free(log, slot + 1)?,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// An in-memory row of slots, with rivals: before each of the next
    /// `rivals` inserts, another writer appends `burst` records at the end.
    #[derive(Default)]
    struct Row {
        slots: Mutex<BTreeMap<u64, Vec<u8>>>,
        rivals: Mutex<(u32, u64)>,
        inserts: Mutex<u32>,
        looks: Mutex<u32>,
    }

    impl Row {
        fn with(n: u64, rivals: u32, burst: u64) -> Row {
            let row = Row::default();
            row.slots
                .lock()
                .unwrap()
                .extend((0..n).map(|i| (i, vec![])));
            *row.rivals.lock().unwrap() = (rivals, burst);
            row
        }

        fn count(c: &Mutex<u32>) -> u32 {
            *c.lock().unwrap()
        }
    }

    impl SlotLog for Row {
        fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool> {
            let slots = self.slots.lock().unwrap();
            let value = slots.get(&n);
            buf.clone_from(value.unwrap_or(&Vec::new()));
            Ok(value.is_some())
        }

        fn exists(&self, n: u64) -> Result<bool> {
            *self.looks.lock().unwrap() += 1;
            Ok(self.slots.lock().unwrap().contains_key(&n))
        }

        fn insert(&self, n: u64, value: &[u8]) -> Result<bool> {
            *self.inserts.lock().unwrap() += 1;
            let mut slots = self.slots.lock().unwrap();
            let mut rivals = self.rivals.lock().unwrap();
            if rivals.0 > 0 {
                rivals.0 -= 1;
                for _ in 0..rivals.1 {
                    let end = slots.len() as u64;
                    slots.insert(end, b"rival".to_vec());
                }
            }
            if slots.contains_key(&n) {
                return Ok(false);
            }
            slots.insert(n, value.to_vec());
            Ok(true)
        }

        fn set_hint(&self, _: u64) -> Result<()> {
            Ok(())
        }

        fn name(&self, n: u64) -> String {
            format!("slot {n}")
        }
    }

    /// The slot `publish` took: the first free one, the row without gaps.
    fn published(row: &Row, hint: u64) -> u64 {
        let slot = publish(row, hint, b"mine", &mut || Ok(())).unwrap();
        let slots = row.slots.lock().unwrap();
        assert_eq!(slots.get(&slot).map(Vec::as_slice), Some(&b"mine"[..]));
        assert_eq!(
            slots.keys().copied().collect::<Vec<_>>(),
            (0..slots.len() as u64).collect::<Vec<_>>()
        );
        assert_eq!(slot + 1, slots.len() as u64, "not the first free slot");
        slot
    }

    #[test]
    fn a_writer_beaten_at_the_end_looks_again_and_takes_the_first_free_slot() {
        // Three rivals win in turn: after each loss one look (the slot
        // after the lost one is free), then one insert.
        let row = Row::with(10, 3, 1);
        assert_eq!(published(&row, 10), 13);
        assert_eq!((Row::count(&row.inserts), Row::count(&row.looks)), (4, 3));
    }

    #[test]
    fn a_stale_writer_looks_for_the_end() {
        let row = Row::with(10, 0, 1);
        assert_eq!(published(&row, 0), 10);
        assert_eq!(Row::count(&row.inserts), 2);
    }

    #[test]
    fn a_writer_outrun_by_bursts_still_takes_the_first_free_slot() {
        let row = Row::with(1, 20, 2);
        assert_eq!(published(&row, 1), 41);
        assert_eq!(Row::count(&row.inserts), 21, "one loss per rival burst");
    }

    #[test]
    fn slot_records_decode_by_their_type() {
        use crate::record::maintenance::encode_control;
        let what = || "slot 3".to_string();
        let control = SlotRecord::decode(kind::CONTROL, &encode_control(2, 9), &what).unwrap();
        assert!(matches!(
            control,
            SlotRecord::Maintenance(MaintenanceRecord::Control(2))
        ));
        assert!(matches!(
            SlotRecord::decode(kind::WIPED, &[], &what),
            Ok(SlotRecord::Wiped)
        ));
        let newer = SlotRecord::decode(kind::BLOCK + 100, b"anything", &what).unwrap();
        assert!(matches!(newer, SlotRecord::Unknown));
        for k in [kind::INIT, kind::DATASET] {
            let e = SlotRecord::decode(k, &[], &what).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt);
            assert!(e.to_string().starts_with("slot 3: record type"), "{e}");
        }
        let e = SlotRecord::decode(kind::FLUSH, b"\x01", &what).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
    }
}
