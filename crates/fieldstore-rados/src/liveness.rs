//! Which store writers are alive: what lets purge tell the objects a
//! killed writer left (orphans, which it reclaims) from a live writer's
//! objects whose fields are archived but not flushed yet (which it must
//! not touch).
//!
//! A store writer, before it names its first data object, creates
//! `<writer>.alive` (holding its lease in seconds, as text) and watches it
//! with that lease as the watch's timeout: the OSD drops the watch once it
//! has heard nothing from the writer's client for the lease. When the
//! writer is done it creates `<writer>.closed` first and then unwatches and
//! removes `<writer>.alive`, so one of the two always exists while any of
//! its data objects does.
//!
//! Purge asks ([`states`]): a writer with `.closed` is done; otherwise it
//! notifies `.alive` and waits up to the writer's lease for an
//! acknowledgement, which only a live writer's watch gives. No answer in a
//! whole lease means the writer is dead: killed, or cut off for longer
//! than its lease.
//!
//! A writer cut off that long and then back must not flush fields whose
//! objects a purge may have removed meanwhile. So before a flush is
//! acknowledged, [`Liveness::confirm`] requires that the OSD confirmed the
//! watch within the last half lease (waiting for the next ping if it is
//! older, failing if the watch broke). A purge's verdict takes a whole
//! lease without an answer; a writer that answered the OSD's pings within
//! the last half lease would have answered the purge's notify: the two
//! cannot both hold, as long as the flush that follows the confirmation
//! completes within half a lease (seconds against 15 s by default). A
//! writer stopped longer between the confirmation and its log append is
//! caught by the same confirmation run again after the append
//! (`StoreWriter::confirm_published`): its watch was dropped by the OSD,
//! and its flush fails instead of being acknowledged.
//!
//! A writer of an older version wrote neither object before `.closed`:
//! its objects without `.closed` count as in use, as before (a wipe of
//! the dataset removes them).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fieldstore_core::{Error, ErrorKind, Result};

use crate::rados::{OrMissing, Pool, Watch, WriteOp, ENOENT};

/// The default lease: Ceph's own `osd_client_watch_timeout`.
pub(crate) const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// `<writer>.alive`.
pub(crate) fn alive_object(prefix: &str) -> String {
    format!("{prefix}.alive")
}

/// `<writer>.closed`.
pub(crate) fn closed_object(prefix: &str) -> String {
    format!("{prefix}.closed")
}

/// A store writer's proof of life: the watch on `<writer>.alive`.
pub(crate) struct Liveness {
    /// It acknowledges every notify: that is the writer's answer to purge.
    /// Declared before `alive`, so dropped first: unwatched, and its
    /// callbacks flushed, before the object is removed.
    watch: Watch<()>,
    alive: Alive,
    lease: Duration,
}

/// `<writer>.alive`, removed when dropped unless `keep`.
struct Alive {
    pool: Arc<Pool>,
    oid: String,
    /// Leave `.alive` behind when dropped (the writer could not create
    /// `.closed`): purge then finds the writer dead, not unknown.
    keep: bool,
}

impl Drop for Alive {
    fn drop(&mut self) {
        if !self.keep {
            let _ = self.pool.remove(&self.oid);
        }
    }
}

impl std::fmt::Debug for Liveness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Liveness")
            .field("oid", &self.alive.oid)
            .field("lease", &self.lease)
            .finish()
    }
}

impl Liveness {
    /// Create `<prefix>.alive` and watch it with `lease` as the timeout.
    ///
    /// # Errors
    /// As the RADOS write and watch (`Unavailable`, `PermissionDenied` for
    /// a client without write caps, …).
    pub(crate) fn register(pool: &Arc<Pool>, prefix: &str, lease: Duration) -> Result<Liveness> {
        let oid = alive_object(prefix);
        let mut op = WriteOp::new()?;
        op.create_exclusive();
        op.append(lease.as_secs().to_string().as_bytes());
        pool.operate(&oid, &op)
            .map_err(|e| e.error(format!("creating {}", pool.what(&oid))))?;
        // Removed again if the watch fails.
        let alive = Alive {
            pool: pool.clone(),
            oid,
            keep: false,
        };
        let watch = pool
            .watch(&alive.oid, lease.as_secs().max(1) as u32, ())
            .map_err(|e| e.error(format!("watching {}", pool.what(&alive.oid))))?;
        Ok(Liveness {
            watch,
            alive,
            lease,
        })
    }

    /// Succeed once the OSD has confirmed the watch within the last half
    /// lease (waiting up to a lease for the next ping): no purge can have
    /// found this writer dead, so its objects are all there.
    ///
    /// # Errors
    /// `Unavailable` if the watch broke or was not confirmed within a
    /// lease: a purge may have reclaimed this writer's unflushed fields,
    /// so they must be archived again through a new handle.
    pub(crate) fn confirm(&self) -> Result<()> {
        let start = Instant::now();
        loop {
            let lost = |why: String| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "this writer's liveness watch on {} {why}: a purge may have reclaimed \
                         the fields it archived since its last flush; archive them again \
                         through a new handle",
                        self.alive.pool.what(&self.alive.oid)
                    ),
                )
            };
            if self.watch.broken() {
                return Err(lost("broke".into()));
            }
            match self.watch.check() {
                Ok(age) if age < self.lease / 2 => return Ok(()),
                Ok(age) if start.elapsed() > self.lease => {
                    return Err(lost(format!(
                        "was last confirmed {:.1} s ago, more than half its lease of {} s",
                        age.as_secs_f64(),
                        self.lease.as_secs()
                    )))
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => return Err(lost(format!("broke ({e})"))),
            }
        }
    }

    /// Stop showing the writer alive: unwatch, and remove `.alive` unless
    /// `closed` is false (the writer could not create `.closed`, so
    /// `.alive` without a watch is what tells purge it is done).
    pub(crate) fn end(mut self, closed: bool) {
        self.alive.keep = !closed;
    }
}

/// What purge knows of a store writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriterState {
    /// It created `.closed`: it appends to none of its objects.
    Closed,
    /// It acknowledged a notify: its objects may hold fields it archived
    /// and will flush.
    Live,
    /// No acknowledgement within its lease: killed (or cut off longer than
    /// its lease, and then its flushes fail).
    Dead,
    /// Neither object exists: a writer of an older version that did not
    /// close its objects (in use, to be safe), or one whose objects are
    /// all gone.
    Unknown,
}

impl WriterState {
    /// Whether nothing will ever append to or flush into the writer's
    /// objects again.
    pub(crate) fn is_done(self) -> bool {
        matches!(self, WriterState::Closed | WriterState::Dead)
    }
}

/// The state of each writer (`<dataset>.<writer id>` prefixes), asking the
/// live-looking ones all at once: at most one lease (the longest of those
/// asked) when some writer was killed less than a lease ago, a round trip
/// otherwise.
///
/// # Errors
/// RADOS errors other than a missing object.
pub(crate) fn states<'p>(
    pool: &Pool,
    prefixes: impl IntoIterator<Item = &'p str>,
) -> Result<HashMap<String, WriterState>> {
    let mut out = HashMap::new();
    let mut ask = Vec::new();
    let mut lease = Duration::ZERO;
    for prefix in prefixes {
        let closed = closed_object(prefix);
        let what = || format!("reading {}", pool.what(&closed));
        if pool.stat(&closed).or_missing(what)?.is_some() {
            out.insert(prefix.to_string(), WriterState::Closed);
            continue;
        }
        let alive = alive_object(prefix);
        let mut buf = [0u8; 16];
        let what = || format!("reading {}", pool.what(&alive));
        let Some(n) = pool.read(&alive, 0, &mut buf).or_missing(what)? else {
            out.insert(prefix.to_string(), WriterState::Unknown);
            continue;
        };
        let secs = std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_LEASE.as_secs());
        lease = lease.max(Duration::from_secs(secs));
        ask.push((prefix.to_string(), alive));
    }
    let oids: Vec<String> = ask.iter().map(|(_, o)| o.clone()).collect();
    // A little more than the lease: the OSD counts it from its last ping.
    let answers = pool.acks(&oids, lease + Duration::from_secs(1));
    for ((prefix, alive), answer) in ask.into_iter().zip(answers) {
        let state = match answer {
            Ok(0) => WriterState::Dead,
            Ok(_) => WriterState::Live,
            // Closed between the two looks.
            Err(e) if e == ENOENT => match pool.stat(&closed_object(&prefix)) {
                Ok(_) => WriterState::Closed,
                Err(_) => WriterState::Unknown,
            },
            Err(e) => return Err(e.error(format!("notifying {}", pool.what(&alive)))),
        };
        out.insert(prefix, state);
    }
    Ok(out)
}
