//! Writer streams: the workload of the concurrency checks and of the worker
//! processes, and the reader's verification of what it sees.
//!
//! Writer `w` archives fields `0..fields` of one dataset and collocation,
//! flushing after every `flush_every` fields (and at the end). Field `i` of
//! writer `w` has the element key `step=i/10,number=w,levelist=LEVELS[i%10],param=130`
//! and a self-verifying payload ([`crate::payload`]). Because flushes are
//! atomic and a writer's flushes become visible in order, what one `list`
//! shows of writer `w` is exactly fields `0..c` where `c` is a multiple of
//! `flush_every` (or `fields`), never less than what the writer had
//! reported flushed before the list began, never less than the reader saw
//! before; a `retrieve` that follows finds at least those fields (it looks
//! fields up one by one while writers go on, so it may find more).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use fieldstore::{FieldLocation, FieldStore, Key, Request, Result};

use crate::payload;
use crate::support::{key, request};

/// The pressure levels that index fields within a step.
pub const LEVELS: [u32; 10] = [1000, 925, 850, 700, 500, 400, 300, 250, 200, 100];

/// The shape of a writer workload.
#[derive(Debug, Clone)]
pub struct Streams {
    /// The dataset's `expver` (keeps workloads apart on one backend).
    pub expver: String,
    /// Number of writers (`number=0..writers`).
    pub writers: usize,
    /// Fields per writer.
    pub fields: usize,
    /// Fields per flush.
    pub flush_every: usize,
    /// Smallest payload.
    pub min_len: usize,
    /// Largest payload.
    pub max_len: usize,
}

impl Streams {
    /// The key of field `index` of writer `writer`.
    pub fn key(&self, writer: usize, index: usize) -> Key {
        key(&format!(
            "class=od,expver={},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step={},number={writer},levelist={},param=130",
            self.expver,
            index / LEVELS.len(),
            LEVELS[index % LEVELS.len()],
        ))
    }

    /// `(writer, index)` of a key of this workload.
    pub fn locate(&self, key: &Key) -> Option<(usize, usize)> {
        if key.get("expver") != Some(self.expver.as_str()) || key.get("param") != Some("130") {
            return None;
        }
        let step: usize = key.get("step")?.parse().ok()?;
        let writer: usize = key.get("number")?.parse().ok()?;
        let level: u32 = key.get("levelist")?.parse().ok()?;
        let l = LEVELS.iter().position(|&x| x == level)?;
        let index = step * LEVELS.len() + l;
        (writer < self.writers && index < self.fields).then_some((writer, index))
    }

    /// The request naming the workload's dataset (for `list`).
    pub fn dataset_request(&self) -> Request {
        request(&format!(
            "class=od,expver={},stream=enfo,date=20231201,time=1200",
            self.expver
        ))
    }

    /// The explicit request naming every field of every writer (for
    /// `retrieve`).
    pub fn full_request(&self) -> Request {
        let levels: Vec<String> = LEVELS.iter().map(u32::to_string).collect();
        request(&format!(
            "class=od,expver={},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=0/to/{}/by/1,number=0/to/{},levelist={},param=130",
            self.expver,
            self.fields.saturating_sub(1) / LEVELS.len(),
            self.writers.saturating_sub(1),
            levels.join("/"),
        ))
    }

    /// The payload of a field (version 1).
    pub fn payload(&self, fs: &FieldStore, writer: usize, index: usize) -> Vec<u8> {
        let canonical = crate::support::canonical(fs, &self.key(writer, index));
        let len = payload::length_for(&canonical, 1, self.min_len, self.max_len);
        payload::make(&canonical, 1, len)
    }

    /// Archive every field of `writer` through `fs`, flushing every
    /// `flush_every` fields and at the end; `flushed(count)` is called
    /// after each flush returns.
    ///
    /// # Errors
    /// The first error of archive or flush.
    pub fn write(
        &self,
        fs: &FieldStore,
        writer: usize,
        flushed: &mut dyn FnMut(usize),
    ) -> Result<()> {
        for i in 0..self.fields {
            let data = self.payload(fs, writer, i);
            fs.archive(&self.key(writer, i), &data)?;
            if (i + 1) % self.flush_every == 0 || i + 1 == self.fields {
                fs.flush()?;
                flushed(i + 1);
            }
        }
        Ok(())
    }

    /// [`Streams::write`] through a failing server: on an error of archive
    /// or flush, `failed(error, from, at)` runs (it panics to fail the
    /// check; `from..=at` are the fields archived since the last flush
    /// that returned, which the writer archives again: the failed flush
    /// may have become visible all the same), then the writer discards
    /// what it holds and archives again from field `from`. `flushed` holds
    /// the count the last flush that returned covered.
    pub fn write_retrying(
        &self,
        fs: &FieldStore,
        writer: usize,
        flushed: &AtomicUsize,
        failed: &mut dyn FnMut(&fieldstore::Error, usize, usize),
    ) {
        let mut i = flushed.load(Ordering::SeqCst);
        while i < self.fields {
            let r = fs
                .archive(&self.key(writer, i), &self.payload(fs, writer, i))
                .and_then(|()| {
                    if (i + 1) % self.flush_every == 0 || i + 1 == self.fields {
                        fs.flush()?;
                        flushed.store(i + 1, Ordering::SeqCst);
                    }
                    Ok(())
                });
            match r {
                Ok(()) => i += 1,
                Err(e) => {
                    let from = flushed.load(Ordering::SeqCst);
                    failed(&e, from, i);
                    fs.discard().expect("discard");
                    i = from;
                }
            }
        }
    }
}

/// A reader of a [`Streams`] workload that checks every poll against the
/// rules in the module documentation.
#[derive(Debug)]
pub struct Observer {
    streams: Streams,
    last: Vec<usize>,
    /// Fields already read and verified, by canonical key, with their
    /// location.
    verified: HashMap<String, FieldLocation>,
    /// Fields (writer, index) their writer may archive again
    /// ([`Observer::may_move`]).
    movable: HashSet<(usize, usize)>,
    /// Polls done.
    pub polls: usize,
}

impl Observer {
    /// A reader that has seen nothing yet.
    pub fn new(streams: Streams) -> Observer {
        let last = vec![0; streams.writers];
        Observer {
            streams,
            last,
            verified: HashMap::new(),
            movable: HashSet::new(),
            polls: 0,
        }
    }

    /// Let field `index` of `writer` show up at another location than where it was read
    /// before: its writer archives it again (after a flush that failed,
    /// and may have become visible all the same). Its bytes are checked
    /// there too.
    pub fn may_move(&mut self, writer: usize, index: usize) {
        self.movable.insert((writer, index));
    }

    fn movable(&self, key: &str) -> bool {
        let located = key.parse().ok().and_then(|k| self.streams.locate(&k));
        located.is_some_and(|at| self.movable.contains(&at))
    }

    /// Fields seen per writer at the last poll.
    pub fn seen(&self) -> &[usize] {
        &self.last
    }

    /// Read and verify the field `key` at `loc` the first time it is seen
    /// there. The workload never replaces a field, so a field seen at
    /// another location than before is an error.
    fn verify(
        &mut self,
        fs: &FieldStore,
        key: &str,
        loc: &FieldLocation,
        buf: &mut Vec<u8>,
    ) -> std::result::Result<(), String> {
        match self.verified.get(key) {
            Some(known) if known == loc => return Ok(()),
            Some(_) if self.movable(key) => {}
            Some(known) => {
                return Err(format!(
                    "{key} moved from {known} to {loc}, but it was never archived again"
                ))
            }
            None => {}
        }
        fs.store()
            .read(loc, buf)
            .map_err(|err| format!("reading {key} at {loc}: {err}"))?;
        if buf.len() as u64 != loc.length {
            return Err(format!("{key}: read {} bytes from {loc}", buf.len()));
        }
        payload::verify(buf, key)?;
        self.verified.insert(key.to_string(), loc.clone());
        Ok(())
    }

    /// One poll through `fs`: list the dataset (a list is one consistent
    /// view: whole flushes, in order), then retrieve every field of the
    /// workload (at least what the list showed). Every field is read and
    /// verified the first time it is seen, so each poll costs what is new.
    /// `floor[w]` is what writer `w` had reported flushed before this poll
    /// began. Returns the number of fields visible per writer.
    ///
    /// # Errors
    /// A description of the first rule broken.
    pub fn poll(
        &mut self,
        fs: &FieldStore,
        floor: &[usize],
    ) -> std::result::Result<Vec<usize>, String> {
        self.polls += 1;
        let poll = self.polls;
        let s = self.streams.clone();
        let ctx = |e: String| format!("poll {poll}: {e}");
        let mut buf = Vec::new();

        // 1. list, and read each new listed field.
        let req = s.dataset_request();
        let listed = fs
            .list(&req, fieldstore::ListOptions::default())
            .map_err(|e| ctx(format!("list {req} failed: {e}")))?;
        let mut seen: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); s.writers];
        for e in &listed {
            if e.element.is_empty() {
                return Err(ctx(format!(
                    "list at the element level gave {}",
                    e.braced()
                )));
            }
            let key = e.full_key();
            let (w, i) = s
                .locate(&key)
                .ok_or_else(|| ctx(format!("list shows a key nobody wrote: {key}")))?;
            if !seen[w].insert(i) {
                return Err(ctx(format!("list without duplicates shows {key} twice")));
            }
            let loc = e
                .location
                .as_ref()
                .ok_or_else(|| ctx(format!("list gave no location for {key}")))?;
            self.verify(fs, &key.to_string(), loc, &mut buf)
                .map_err(|e| ctx(format!("list: {e}")))?;
        }
        let counts = self.check_prefixes("list", &seen, floor).map_err(&ctx)?;

        // 2. retrieve everything by an explicit request.
        let req = s.full_request();
        let reader = fs
            .retrieve(&req)
            .map_err(|e| ctx(format!("retrieve {req} failed: {e}")))?;
        let mut got: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); s.writers];
        for (key, loc) in reader.fields() {
            let (w, i) = s
                .locate(key)
                .ok_or_else(|| ctx(format!("retrieve yields a key nobody wrote: {key}")))?;
            if !got[w].insert(i) {
                return Err(ctx(format!("retrieve yields {key} twice")));
            }
            self.verify(fs, &key.to_string(), loc, &mut buf)
                .map_err(|e| ctx(format!("retrieve: {e}")))?;
        }
        // A retrieve looks fields up one by one while writers go on
        // flushing, so it is no snapshot: it must find at least what the list
        // before it showed, and may find more.
        for (w, set) in got.iter().enumerate() {
            if let Some(missing) = (0..counts[w]).find(|i| !set.contains(i)) {
                return Err(ctx(format!(
                    "retrieve {req} did not find {} although the list just before showed it",
                    s.key(w, missing)
                )));
            }
        }
        self.last.clone_from(&counts);
        Ok(counts)
    }

    fn check_prefixes(
        &self,
        what: &str,
        seen: &[BTreeSet<usize>],
        floor: &[usize],
    ) -> std::result::Result<Vec<usize>, String> {
        let s = &self.streams;
        let mut counts = Vec::with_capacity(s.writers);
        for (w, set) in seen.iter().enumerate() {
            let c = set.len();
            if let Some(missing) = (0..c).find(|i| !set.contains(i)) {
                let absent: Vec<usize> = (0..c).filter(|i| !set.contains(i)).collect();
                return Err(format!(
                    "{what}: writer {w} has {c} fields visible but field {missing} ({}) is not among them, \
                     so a later flush became visible before an earlier one (missing: {absent:?}; visible: {set:?})",
                    s.key(w, missing)
                ));
            }
            if c % s.flush_every != 0 && c != s.fields {
                return Err(format!(
                    "{what}: writer {w} has {c} fields visible, not a whole number of flushes of {}: \
                     a flush became partly visible",
                    s.flush_every
                ));
            }
            let f = floor.get(w).copied().unwrap_or(0);
            if c < f {
                return Err(format!(
                    "{what}: writer {w} reported {f} fields flushed before this poll, only {c} visible"
                ));
            }
            if c < self.last[w] {
                return Err(format!(
                    "{what}: writer {w}: {c} fields visible, {} at the previous poll: flushed fields disappeared",
                    self.last[w]
                ));
            }
            counts.push(c);
        }
        Ok(counts)
    }
}
