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
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fieldstore_core::{Error, ErrorKind, Result};

use crate::rados::{Errno, OrMissing, Pool, WriteOp, ENOENT};

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

/// What a watch's callbacks share with the writer. Boxed, so its address
/// stays put; freed only after the watch is unregistered and librados's
/// queue of callbacks flushed.
struct Arg {
    pool: Arc<Pool>,
    oid: CString,
    broken: AtomicBool,
}

/// A notify arrived: acknowledge it (that is the writer's answer).
unsafe extern "C" fn on_notify(
    arg: *mut c_void,
    notify_id: u64,
    cookie: u64,
    _notifier: u64,
    _data: *mut c_void,
    _len: usize,
) {
    // Never unwind into librados.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `arg` is the `Arg` this watch was registered with, kept
        // alive until after the watch is unregistered and the callbacks
        // flushed (`Liveness::drop`); only shared references are made.
        let a = unsafe { &*(arg as *const Arg) };
        a.pool.notify_ack(&a.oid, notify_id, cookie);
    }));
}

/// The watch broke: the writer's flushes fail from now on.
unsafe extern "C" fn on_error(arg: *mut c_void, _cookie: u64, _err: c_int) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: as in `on_notify`.
        let a = unsafe { &*(arg as *const Arg) };
        a.broken.store(true, Ordering::Relaxed);
    }));
}

/// A store writer's proof of life: the watch on `<writer>.alive`.
pub(crate) struct Liveness {
    pool: Arc<Pool>,
    oid: String,
    lease: Duration,
    cookie: u64,
    arg: Box<Arg>,
    /// Leave `.alive` behind when dropped (the writer could not create
    /// `.closed`): purge then finds the writer dead, not unknown.
    keep_object: bool,
}

impl std::fmt::Debug for Liveness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Liveness")
            .field("oid", &self.oid)
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
        let arg = Box::new(Arg {
            pool: pool.clone(),
            oid: CString::new(oid.as_str())
                .map_err(|_| Error::invalid_input(format!("object name {oid:?}")))?,
            broken: AtomicBool::new(false),
        });
        let p: *const Arg = &*arg;
        // SAFETY: `arg` is boxed and kept in the returned value until
        // `Drop` has unwatched and flushed; the callbacks catch unwinds.
        let cookie = unsafe {
            pool.watch(
                &arg.oid,
                lease.as_secs().max(1) as u32,
                on_notify,
                on_error,
                p as *mut c_void,
            )
        };
        let cookie = match cookie {
            Ok(c) => c,
            Err(e) => {
                let _ = pool.remove(&oid);
                return Err(e.error(format!("watching {}", pool.what(&oid))));
            }
        };
        Ok(Liveness {
            pool: pool.clone(),
            oid,
            lease,
            cookie,
            arg,
            keep_object: false,
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
                        self.pool.what(&self.oid)
                    ),
                )
            };
            if self.arg.broken.load(Ordering::Relaxed) {
                return Err(lost("broke".into()));
            }
            match self.pool.watch_check(self.cookie) {
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
}

impl Liveness {
    /// Stop showing the writer alive: unwatch, and remove `.alive` unless
    /// `closed` is false (the writer could not create `.closed`, so
    /// `.alive` without a watch is what tells purge it is done).
    pub(crate) fn end(mut self, closed: bool) {
        self.keep_object = !closed;
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        let _ = self.pool.unwatch(self.cookie);
        // Callbacks already queued may still use `arg`: wait for them
        // before it is freed with `self`.
        self.pool.watch_flush();
        if !self.keep_object {
            let _ = self.pool.remove(&self.oid);
        }
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
    if ask.is_empty() {
        return Ok(out);
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
            Err(e) => return Err(notify_error(pool, &alive, e)),
        };
        out.insert(prefix, state);
    }
    Ok(out)
}

fn notify_error(pool: &Pool, oid: &str, e: Errno) -> Error {
    e.error(format!("notifying {}", pool.what(oid)))
}
