//! Waiting for flushes with librados watch/notify: the RADOS catalogue's
//! [`ChangeWaiter`].
//!
//! What is watched: the root object (`fieldstore.root`: a writer's first
//! flush registers a new dataset there, a wipe unregisters it) and the
//! **head object** of every dataset the root lists (log segment 0,
//! `<dataset name>.catalogue`). Writers notify the head object after every
//! compound operation that appends to the log — whatever segment the record
//! went to: segment 0 lives as long as the dataset (a wipe removes it last),
//! so one watch per dataset follows its whole log — and the root after
//! registering or unregistering a dataset.
//!
//! A notify wakes the waiter at once (it is acknowledged from librados's
//! callback thread). Notifications can be lost (a writer with
//! `notify: false`, a watch broken while an OSD restarts, a dataset that
//! appeared and flushed before its watch), so the waiter never blocks
//! longer than [`POLL`] (50 ms) without returning: a lost notify costs
//! latency, never a missed flush. Before blocking it re-establishes broken
//! watches and adds watches for datasets it does not watch yet (when the
//! root was notified, and at least every [`RESCAN`]); if it did either it
//! returns at once, since a change may have come before the watch.
//!
//! What changed ([`Changes`]): a wait woken by notifications of head
//! objects alone names their datasets (each watch knows the dataset whose
//! head it watches, from the root's listing), so that a watch looks at
//! those datasets only. A notification of the root, a watch added or
//! re-established, and a wait that ran out say `Unknown`; so does any
//! wait [`POLL`] after the last `Unknown`, so that flushes whose notify
//! was lost are found within [`POLL`] even while other datasets' notifies
//! keep the waiter busy.
//!
//! A client the cluster refuses a watch (watch is a write operation in
//! Ceph: a user with read-only caps) waits by polling alone;
//! `mechanism()` says so.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fieldstore_core::{ChangeWaiter, Changes, DatasetKey, Key, Result};

use crate::naming::ROOT;
use crate::rados::{Pool, Watch, WatchHandler, ENOENT};

/// The longest a wait blocks without a notification: the latency of a
/// lost one.
pub const POLL: Duration = Duration::from_millis(50);
/// The longest between two listings of the root for datasets not watched
/// yet, when no notification of the root said one appeared.
pub const RESCAN: Duration = Duration::from_secs(1);
/// Datasets listed per omap read of the root.
const PAGE: u64 = 1000;

/// Why the last [`RadosWaiter::wait`] returned (a test and report hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// No wait yet.
    Created,
    /// A notification of a watched object arrived.
    Notified,
    /// A watch was added for a dataset (or the root) that was not watched:
    /// it may have changed before.
    Added,
    /// A broken watch was re-established, or reported broken.
    Rewatched,
    /// Nothing arrived within [`POLL`] (or the caller's timeout).
    Polled,
}

#[derive(Debug, Default)]
struct Flags {
    /// A notification arrived since the last wait returned.
    changed: bool,
    /// One of them was for the root.
    root: bool,
    /// The datasets whose head objects were notified.
    datasets: BTreeSet<DatasetKey>,
    /// A head object whose dataset is not known was notified.
    unnamed: bool,
    /// A watch reported an error.
    broken: bool,
}

/// What the callbacks share with the waiter.
#[derive(Debug, Default)]
struct Shared {
    flags: Mutex<Flags>,
    cond: Condvar,
    /// Notifications received, over the waiter's life.
    notifies: AtomicU64,
}

impl Shared {
    fn flags(&self) -> MutexGuard<'_, Flags> {
        self.flags.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn signal(&self, set: impl FnOnce(&mut Flags)) {
        set(&mut self.flags());
        self.cond.notify_all();
    }
}

/// What one watch's callbacks tell the waiter.
struct Head {
    shared: Arc<Shared>,
    root: bool,
    /// The dataset whose head object this is (`None` for the root, or a
    /// key the root's listing did not parse: then its notifications say
    /// `Unknown`).
    dataset: Option<DatasetKey>,
}

impl WatchHandler for Head {
    /// A notify arrived (acknowledged by the watch): count it, wake the
    /// waiter.
    fn notified(&self) {
        self.shared.notifies.fetch_add(1, Ordering::Relaxed);
        self.shared.signal(|f| {
            f.changed = true;
            f.root |= self.root;
            f.datasets.extend(self.dataset.clone());
            f.unnamed |= self.dataset.is_none() && !self.root;
        });
    }

    /// The watch broke (connection to the OSD lost, object removed): it is
    /// marked to be re-established; wake the waiter.
    fn broke(&self) {
        self.shared.signal(|f| f.broken = true);
    }
}

/// Waits for notifications of the root and of the datasets' head objects,
/// polling every [`POLL`] at most. See the module documentation.
pub struct RadosWaiter {
    pool: Arc<Pool>,
    shared: Arc<Shared>,
    /// Watched objects by name: the root and head objects.
    watches: HashMap<String, Watch<Head>>,
    /// List the root before the next wait (it was notified, or a watch
    /// was re-established).
    rescan: bool,
    scanned: Instant,
    /// The root object did not exist at the last try: try again each wait.
    root_missing: bool,
    /// When a wait last returned `Unknown`: one does at least every
    /// `unknown_every` ([`POLL`]).
    unknown_at: Instant,
    unknown_every: Duration,
    /// The cluster refused a watch (not `ENOENT`): why.
    refused: Option<String>,
    last: Wake,
}

impl std::fmt::Debug for RadosWaiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadosWaiter")
            .field("pool", &self.pool)
            .field("watched", &self.watches.len())
            .field("last", &self.last)
            .finish()
    }
}

impl RadosWaiter {
    /// Watch the root of `pool` and every dataset it lists.
    ///
    /// # Errors
    /// I/O errors listing the root. A watch the cluster refuses is not an
    /// error: the waiter polls.
    pub(crate) fn new(pool: Arc<Pool>) -> Result<RadosWaiter> {
        let mut w = RadosWaiter {
            pool,
            shared: Arc::default(),
            watches: HashMap::new(),
            rescan: true,
            scanned: Instant::now(),
            root_missing: false,
            unknown_at: Instant::now(),
            unknown_every: POLL,
            refused: None,
            last: Wake::Created,
        };
        w.scan()?;
        Ok(w)
    }

    /// Notifications received so far.
    pub fn notifies(&self) -> u64 {
        self.shared.notifies.load(Ordering::Relaxed)
    }

    /// Why the last wait returned.
    pub fn last_wake(&self) -> Wake {
        self.last
    }

    /// Say `Unknown` at least every `period` instead of every [`POLL`]
    /// (a test hook: with a long period, what a notification names is
    /// what a wait returns). Lost notifications then cost up to `period`.
    pub fn set_unknown_every(&mut self, period: Duration) {
        self.unknown_every = period;
    }

    /// Objects watched now (the root and head objects).
    pub fn watched(&self) -> usize {
        self.watches.len()
    }

    /// Watch `oid` (the head object of `dataset`, or the root); whether
    /// the watch was added.
    fn add(&mut self, oid: &str, root: bool, dataset: Option<DatasetKey>) -> bool {
        if oid.contains('\0') {
            // Not an object name (NUL): skipped, not a refused watch.
            return false;
        }
        let head = Head {
            shared: self.shared.clone(),
            root,
            dataset,
        };
        match self.pool.watch(oid, 0, head) {
            Ok(watch) => {
                self.watches.insert(oid.to_string(), watch);
                self.root_missing &= !root;
                return true;
            }
            Err(e) if e == ENOENT => self.root_missing |= root,
            Err(e) => self.refused = Some(format!("{}: {e}", self.pool.what(oid))),
        }
        false
    }

    /// Watch the root, if not watched yet, and every dataset it lists that
    /// is not watched yet; whether any watch was added.
    fn scan(&mut self) -> Result<bool> {
        self.rescan = false;
        self.scanned = Instant::now();
        let mut added = !self.watches.contains_key(ROOT) && self.add(ROOT, true, None);
        let pool = Arc::clone(&self.pool);
        let what = || format!("listing datasets in {}", pool.what(ROOT));
        pool.omap_each(ROOT, "", PAGE, what, |k, v| {
            // `!list-locked …` markers are not datasets.
            if k.starts_with(b"!") {
                return Ok(());
            }
            let Ok(object) = std::str::from_utf8(&v) else {
                return Ok(());
            };
            if !object.is_empty() && !self.watches.contains_key(object) {
                let key = String::from_utf8_lossy(&k).parse::<Key>().ok();
                added |= self.add(object, false, key.map(DatasetKey));
            }
            Ok(())
        })?;
        Ok(added)
    }

    /// Unregister the watches whose callbacks reported an error and watch
    /// those objects again (a removed object is not watched again until
    /// the root lists it anew); whether any was broken.
    fn repair(&mut self) -> bool {
        let broken: Vec<(String, Option<DatasetKey>)> = self
            .watches
            .iter()
            .filter(|(_, w)| w.broken())
            .map(|(k, w)| (k.clone(), w.handler().dataset.clone()))
            .collect();
        let any = !broken.is_empty();
        for (oid, dataset) in broken {
            // Unregistered, its callbacks flushed, before it is watched anew.
            drop(self.watches.remove(&oid));
            self.add(&oid, oid == ROOT, dataset);
        }
        self.rescan |= any;
        any
    }

    /// `Unknown`, noting when.
    fn unknown(&mut self) -> Changes {
        self.unknown_at = Instant::now();
        Changes::Unknown
    }
}

impl ChangeWaiter for RadosWaiter {
    fn wait(&mut self, timeout: Duration) -> Result<Changes> {
        let start = Instant::now();
        if self.repair() {
            self.last = Wake::Rewatched;
            return Ok(self.unknown());
        }
        let root_unwatched =
            !self.watches.contains_key(ROOT) && self.root_missing && self.refused.is_none();
        if (self.rescan || root_unwatched || self.scanned.elapsed() >= RESCAN) && self.scan()? {
            self.last = Wake::Added;
            return Ok(self.unknown());
        }
        let left = (start + timeout.min(POLL)).saturating_duration_since(Instant::now());
        let waited = self
            .shared
            .cond
            .wait_timeout_while(self.shared.flags(), left, |f| !f.changed && !f.broken);
        let mut f = waited.unwrap_or_else(|p| p.into_inner()).0;
        let flags = std::mem::take(&mut *f);
        drop(f);
        self.rescan |= flags.root;
        self.last = if flags.changed {
            Wake::Notified
        } else if flags.broken {
            Wake::Rewatched
        } else {
            Wake::Polled
        };
        // Head objects' notifications alone, and an `Unknown` recent
        // enough that a lost notification is still within its [`POLL`].
        if self.last == Wake::Notified
            && !flags.root
            && !flags.unnamed
            && self.unknown_at.elapsed() < self.unknown_every
        {
            return Ok(Changes::Datasets(flags.datasets));
        }
        Ok(self.unknown())
    }

    fn mechanism(&self) -> String {
        match &self.refused {
            Some(why) if self.watches.is_empty() => format!(
                "polling every {} ms (rados watch refused: {why})",
                POLL.as_millis()
            ),
            _ => "rados watch/notify".into(),
        }
    }

    /// Notified, or polling at a fixed period: nothing to speed up.
    fn found(&mut self) {}
}
