//! Waiting for data: [`FieldStore::watch`] yields every field a request
//! names once, as soon as a flush makes it visible, and
//! [`FieldStore::retrieve_wait`] waits until every field of a complete
//! request exists, then reads them.
//!
//! A watch alternates *looks* and *waits*. A look lists what the request
//! names (pruned by axes as `list` is, so a narrow request costs what it
//! names) and reports what it has not reported yet, or reported at
//! another location (a replacement). A wait blocks on the catalogue's
//! [`ChangeWaiter`]: POSIX uses inotify on the roots, the dataset
//! directories and their tables of contents; RADOS librados watch/notify
//! on the root and each dataset's head object; backends without
//! notifications (DAOS, memory) poll with a backoff from 1 to 50 ms. The waiter is made
//! before the first look, so no flush after it is missed; a field is
//! reported only once a look has seen it, that is once `retrieve` finds it.
//!
//! A look after a wait visits what the waiter says changed
//! ([`Changes`]): the datasets it names (inotify knows which `toc` was
//! appended to, RADOS which head object was notified), so that a look costs
//! what changed, not the number of datasets the request names; or, when
//! the waiter cannot tell (polling, a dataset created, wiped or moved, lost
//! events), every dataset the request names. The first look visits every
//! one.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use fieldstore_core::{
    ChangeWaiter, Changes, CollocationKey, DatasetKey, ElementKey, Error, ErrorKind, FieldLocation,
    Matcher, PollingWaiter, Request, Result, SplitKey,
};

use crate::handle::FieldStore;
use crate::list::{ListElement, ListOptions};
use crate::retrieve::DataReader;

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Since {
    /// Report the fields already there first, then new ones.
    #[default]
    Start,
    /// Report only what is flushed after the watch began (replacements of
    /// fields already there included).
    Now,
}

/// How a watch runs and when it ends (it also ends when dropped).
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Where it starts.
    pub since: Since,
    /// End after this many fields.
    pub count: Option<usize>,
    /// End when this much time has passed.
    pub timeout: Option<Duration>,
    /// End once every key of the (complete) request has been reported.
    pub until_complete: bool,
    /// Poll instead of waiting for notifications: for file systems where
    /// notifications do not see other clients' writes (NFS, Lustre).
    pub polling: bool,
}

/// One field a watch reports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WatchEvent {
    /// The field, as `list` gives it.
    #[serde(flatten)]
    pub element: ListElement,
    /// The key was reported before, with other bytes: archived again.
    pub replaced: bool,
    /// When the look that found it ended: a caller that is busy with
    /// earlier events takes this one later, and can tell by how much.
    #[serde(skip)]
    pub seen_at: std::time::SystemTime,
}

type FieldId = (DatasetKey, CollocationKey, ElementKey);

/// The handle a watch looks through: borrowed, or shared (for a watch
/// that outlives the caller's borrow, as the Python binding's does).
enum Handle<'a> {
    Borrowed(&'a FieldStore),
    Shared(std::sync::Arc<FieldStore>),
}

impl std::ops::Deref for Handle<'_> {
    type Target = FieldStore;
    fn deref(&self) -> &FieldStore {
        match self {
            Handle::Borrowed(fs) => fs,
            Handle::Shared(fs) => fs,
        }
    }
}

/// A running watch: an iterator of the fields a request names, each once
/// (and again when replaced), as flushes make them visible.
pub struct Watch<'a> {
    fs: Handle<'a>,
    request: Request,
    options: WatchOptions,
    waiter: Box<dyn ChangeWaiter>,
    started: Instant,
    queue: VecDeque<WatchEvent>,
    seen: HashMap<FieldId, FieldLocation>,
    /// Datasets something was reported from: one of them gone means it was
    /// wiped under the watch.
    datasets: HashSet<DatasetKey>,
    /// How far each dataset's log was looked at: a look scans only what
    /// came after (`DatasetReader::scan_since`), so it costs what is new.
    marks: crate::walk::Marks,
    /// With `until_complete`: the request's points (its keywords' values,
    /// one combination each) no reported field has yet.
    missing: Option<HashSet<String>>,
    reported: usize,
    looked: bool,
    ended: bool,
}

impl std::fmt::Debug for Watch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("request", &self.request)
            .field("mechanism", &self.waiter.mechanism())
            .field("reported", &self.reported)
            .finish()
    }
}

impl FieldStore {
    /// Watch what `request` names: an iterator that yields every field
    /// once, as soon as a flush makes it visible (fields already there
    /// first, unless `since: Now`), and a key archived again as a
    /// replacement. It ends after `count` fields, when `timeout` passes,
    /// once every key of a complete request was reported
    /// (`until_complete`), or when dropped. A dataset it reported from
    /// that is wiped ends it with `NotFound`.
    ///
    /// # Errors
    /// `InvalidInput` for a malformed request, or `until_complete` with a
    /// request that is not complete; errors of the catalogue's waiter.
    pub fn watch(&self, request: &Request, options: WatchOptions) -> Result<Watch<'_>> {
        Watch::start(Handle::Borrowed(self), request, options)
    }

    /// [`FieldStore::watch`] through a shared handle: the watch owns a
    /// reference to it and may outlive the caller's borrow.
    ///
    /// # Errors
    /// As [`FieldStore::watch`].
    pub fn watch_shared(
        self: &std::sync::Arc<Self>,
        request: &Request,
        options: WatchOptions,
    ) -> Result<Watch<'static>> {
        Watch::start(Handle::Shared(self.clone()), request, options)
    }

    /// Wait until every field of the complete `request` exists (or
    /// `timeout` passes), then read them in request order, as
    /// [`FieldStore::retrieve`].
    ///
    /// # Errors
    /// `TimedOut` naming the fields still missing when `timeout` passed;
    /// as [`FieldStore::retrieve`] and [`FieldStore::watch`].
    pub fn retrieve_wait(&self, request: &Request, timeout: Duration) -> Result<DataReader> {
        let options = WatchOptions {
            until_complete: true,
            timeout: Some(timeout),
            ..WatchOptions::default()
        };
        let mut watch = self.watch(request, options)?;
        for event in watch.by_ref() {
            event?;
        }
        let missing = watch.missing();
        if !missing.is_empty() {
            let n = missing.len();
            let shown: Vec<String> = missing.iter().take(5).cloned().collect();
            return Err(Error::new(
                ErrorKind::TimedOut,
                format!(
                    "{n} field{} of the request still missing after {timeout:?}: {}{}",
                    if n == 1 { "" } else { "s" },
                    shown.join(", "),
                    if n > 5 { ", …" } else { "" }
                ),
            ));
        }
        self.retrieve(request)
    }

    /// Every point a complete request names: one combination of its
    /// keywords' values (a field under any rule of the schema that gives it
    /// those values satisfies it, as `retrieve` finds it).
    fn keys_of(&self, request: &Request) -> Result<HashSet<String>> {
        if request.has_all() {
            return Err(Error::invalid_input(
                "waiting for every field needs a complete request: 'all' names no fields to wait for",
            ));
        }
        let expansion = self.schema().expand(request)?;
        if expansion.size_hint_upper() > crate::resolve::POINT_LOOKUP_LIMIT {
            return Err(Error::invalid_input(format!(
                "waiting for every field of a request naming more than {} keys is refused",
                crate::resolve::POINT_LOOKUP_LIMIT
            )));
        }
        let keys: HashSet<String> = expansion
            .map(|s: SplitKey| self.point(request, &s))
            .collect();
        if keys.is_empty() {
            return Err(Error::invalid_input(
                "the request names no complete key to wait for",
            ));
        }
        Ok(keys)
    }
}

impl FieldStore {
    /// A field's values of the request's keywords, in the request's order:
    /// the point of the request it is. An optional keyword a field's rule
    /// leaves empty counts as its default (`domain?g`: absent is `g`), as
    /// the expansion of a request treats it; a keyword its key lacks is
    /// empty.
    pub(crate) fn point(&self, request: &Request, key: &SplitKey) -> String {
        let rules = self.schema().chain(key.rule);
        let mut out = String::new();
        for kw in request.keywords() {
            let mut v = [key.dataset.key(), key.collocation.key(), key.element.key()]
                .into_iter()
                .find_map(|k| k.get(kw))
                .unwrap_or("");
            if v.is_empty() {
                if let Some(Matcher::Optional(Some(default))) = rules
                    .iter()
                    .find_map(|r| r.predicate(kw))
                    .map(|p| &p.matcher)
                {
                    v = default;
                }
            }
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(kw);
            out.push('=');
            out.push_str(v);
        }
        out
    }
}

impl<'a> Watch<'a> {
    fn start(fs: Handle<'a>, request: &Request, options: WatchOptions) -> Result<Watch<'a>> {
        fs.schema().selector(request)?;
        let missing = (options.until_complete.then(|| fs.keys_of(request))).transpose()?;
        // Before the first look: nothing flushed after this is missed.
        let waiter = if options.polling {
            Box::new(PollingWaiter::new(Duration::from_millis(50)))
        } else {
            fs.catalogue().waiter_for(request)?
        };
        let mut w = Watch {
            fs,
            request: request.clone(),
            options,
            waiter,
            started: Instant::now(),
            queue: VecDeque::new(),
            seen: HashMap::new(),
            datasets: HashSet::new(),
            marks: crate::walk::Marks::default(),
            missing,
            reported: 0,
            looked: false,
            ended: false,
        };
        // What is there when the watch begins: reported first (`Start`),
        // or only remembered (`Now`).
        w.look(Changes::Unknown)?;
        if w.options.since == Since::Now {
            w.queue.clear();
        }
        Ok(w)
    }
}

impl Watch<'_> {
    /// How this watch learns of flushes (`inotify`, `polling every …`).
    pub fn mechanism(&self) -> String {
        self.waiter.mechanism()
    }

    /// How many fields the last look found that `next` has not yielded
    /// yet: while it is not zero, `next` returns at once. Right after
    /// [`FieldStore::watch`] (with `since: Start`) it is the number of
    /// fields already there; a caller that takes events until it is zero
    /// takes one look's worth, the fields of the flushes that look found.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// With `until_complete`: the request's points no field was reported
    /// for yet, as `keyword=value,…` over the request's keywords.
    pub fn missing(&self) -> Vec<String> {
        let mut out: Vec<String> = self.missing.iter().flatten().cloned().collect();
        out.sort();
        out
    }

    fn remaining(&self) -> Duration {
        match self.options.timeout {
            Some(t) => t.saturating_sub(self.started.elapsed()),
            None => Duration::from_secs(3600),
        }
    }

    /// List what the request names in the datasets that `changes` names
    /// (all of them: `Unknown`) and queue what is new.
    fn look(&mut self, changes: Changes) -> Result<()> {
        self.looked = true;
        if changes.is_none() {
            return Ok(());
        }
        let mut new = Vec::new();
        let mut present = HashSet::new();
        let mut damage = std::collections::BTreeSet::new();
        let seen = &self.seen;
        let fs = &*self.fs;
        let request = &self.request;
        let selector = fs.schema().selector(request)?;
        let mut admit = |dataset: &DatasetKey, reader: &dyn fieldstore_core::DatasetReader| {
            present.insert(dataset.clone());
            fs.listable(request, dataset, reader.locks())
        };
        let mut note = |e: ListElement| {
            let id = (e.dataset.clone(), e.collocation.clone(), e.element.clone());
            match (seen.get(&id), &e.location) {
                (None, _) => new.push((id, e, false)),
                (Some(old), Some(loc)) if !same_field(old, loc) => new.push((id, e, true)),
                _ => {}
            }
            true
        };
        match fs.catalogue().queries() {
            // A catalogue server lists the request itself: one request
            // per look.
            Some(q) => q.list(request, fieldstore_core::Level::Element, false, &mut |e| {
                present.insert(e.dataset.clone());
                note(e)
            })?,
            None => {
                let (datasets, named) = match &changes {
                    Changes::Unknown => fs.candidate_datasets(&selector)?,
                    // Only these changed: the others have nothing new, and
                    // none was wiped (that would be `Unknown`).
                    Changes::Datasets(changed) => (changed.iter().cloned().collect(), false),
                };
                fs.walk(
                    datasets,
                    named,
                    &selector,
                    ListOptions::default(),
                    &mut HashSet::new(),
                    &mut damage,
                    &mut admit,
                    Some(&mut self.marks),
                    &mut note,
                )?;
            }
        }
        if !damage.is_empty() {
            return Err(Error::corrupt(format!(
                "the watched request names damaged places: {}",
                Vec::from_iter(damage).join("; ")
            )));
        }
        let seen_at = std::time::SystemTime::now();
        // Newest first within a collocation: oldest first is flush order.
        new.reverse();
        // A look at some datasets only says nothing of the others.
        let everything = changes == Changes::Unknown;
        if let Some(gone) = self
            .datasets
            .iter()
            .find(|d| everything && !present.contains(*d))
        {
            if !self.fs.catalogue().datasets()?.contains(gone) {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("dataset {} was wiped while it was watched", gone.braced()),
                ));
            }
        }
        for (id, e, replaced) in new {
            if let Some(loc) = &e.location {
                self.seen.insert(id.clone(), loc.clone());
            }
            if let Some(m) = &mut self.missing {
                let full = e.full_key();
                if let Ok(split) = self.fs.schema().split(&full) {
                    m.remove(&self.fs.point(&self.request, &split));
                }
            }
            self.datasets.insert(e.dataset.clone());
            self.queue.push_back(WatchEvent {
                element: e,
                replaced,
                seen_at,
            });
        }
        Ok(())
    }
}

/// Whether two locations of one key are the same stored field: the same
/// unit name (the last part of its URI), offset, length and checksum. A
/// replacement is another field (appended elsewhere, units are never
/// written twice at one place); a dataset moved to another root keeps its
/// data files' names, offsets and bytes, and only the directory in its
/// URIs changes, which is no replacement.
fn same_field(a: &FieldLocation, b: &FieldLocation) -> bool {
    fn unit(l: &FieldLocation) -> &str {
        l.uri.rsplit('/').next().unwrap_or(&l.uri)
    }
    a == b
        || (a.offset == b.offset
            && a.length == b.length
            && a.checksum == b.checksum
            && unit(a) == unit(b))
}

impl Iterator for Watch<'_> {
    type Item = Result<WatchEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.ended {
                return None;
            }
            if self.options.count.is_some_and(|n| self.reported >= n) {
                self.ended = true;
                return None;
            }
            if let Some(e) = self.queue.pop_front() {
                self.reported += 1;
                return Some(Ok(e));
            }
            let deadline = self.options.timeout;
            if self.missing.as_ref().is_some_and(HashSet::is_empty)
                || (self.looked && deadline.is_some_and(|t| self.started.elapsed() >= t))
            {
                self.ended = true;
                return None;
            }
            let changes = match self.looked {
                true => self.waiter.wait(self.remaining()),
                false => Ok(Changes::Unknown),
            };
            if let Err(e) = changes.and_then(|c| self.look(c)) {
                self.ended = true;
                return Some(Err(e));
            }
            if !self.queue.is_empty() {
                self.waiter.found();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(uri: &str, offset: u64, checksum: u32) -> FieldLocation {
        FieldLocation::new(uri, offset, 100).with_checksum(checksum)
    }

    #[test]
    fn a_moved_field_is_the_same_field_and_a_replacement_is_not() {
        let here = at("file:///a/od:x/pf:pl.vm.1.2.3.data", 4096, 7);
        let moved = at("file:///b/od:x/pf:pl.vm.1.2.3.data", 4096, 7);
        assert!(same_field(&here, &moved));
        for other in [
            at("file:///a/od:x/pf:pl.vm.1.2.3.data", 8192, 7),
            at("file:///a/od:x/pf:pl.vm.1.2.4.data", 4096, 7),
            at("file:///a/od:x/pf:pl.vm.1.2.3.data", 4096, 8),
        ] {
            assert!(!same_field(&here, &other), "{other:?}");
        }
    }
}
