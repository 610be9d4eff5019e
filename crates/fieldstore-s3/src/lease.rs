//! Writer leases: how purge tells the data objects a killed writer left
//! (orphans, which it removes) from a live writer's objects that are
//! written but not yet published by the catalogue (which it must not
//! touch), and how a writer stopped past its lease never acknowledges a
//! flush whose objects a purge may have removed. S3 has no session
//! liveness (no watch, no lock), so liveness is a lease object the writer's
//! process keeps renewing.
//!
//! **Layout.** Before its first data object a writer PUTs its lease
//! object `<dataset>/lease/<writer id>.<lease ms>` (empty); a thread of the
//! process renews (PUTs again) every live lease every quarter lease. A
//! renewal counts from the instant it was sent, and only if the server
//! answered within a quarter lease. When the writer is dropped, it deletes
//! its lease: its objects are then all published, or orphans.
//!
//! **Purge.** One listing of the dataset's data objects, then one of its
//! leases: a data object no entry points into is an orphan when its
//! writer's lease is missing, or was last written more than two leases
//! (and a second, for the whole seconds of HTTP dates) before the server's
//! `Date` of that listing. Both times are the server's: the clocks of
//! writers and purge never meet.
//!
//! **Writer.** A data PUT, the end of a flush and the check after the
//! catalogue's publish (`StoreWriter::confirm_published`) each succeed only
//! if the lease is unbroken and was renewed within the last half lease. A
//! lease breaks, for good, when two renewals were sent more than half a
//! lease apart (the process was stopped, or the server did not answer):
//! a purge may then have found it dead, so every later flush of the writer
//! fails (`Unavailable`).
//!
//! **Why purge and a writer cannot both win.** Say purge listed the leases
//! at server time `D` and found this one last written at `M < D − 2L`,
//! and the writer's check succeeded at `C` after its publish. Let `r` be
//! the writer's last renewal sent before `C`, at `s ≤ C` with
//! `C − s < L/2`. If `r` was visible to the listing, `s ≤ M`, so the
//! check (and so the publish) happened before `M + L/2 < D`: purge's
//! fresh reading of the catalogue after its verdict sees the entries and
//! keeps their objects. If `r` was not visible, its answer came after `D`;
//! but it came within `L/4` of `s`, so `s > D − L/4`; the renewal before
//! it, visible or not, was sent within `L/2` before `s` (else the lease
//! broke), and so on back to one that was visible at `M`: a chain of
//! renewals each less than `L/2` apart from `M` to `s > D − L/4` — with
//! the first one after `M` sent within `L/2` of `M` and answered within
//! `L/4`, so before `M + 3L/4 < D`, and hence visible, later than `M`: a
//! contradiction. (Durations measured by the writer and by the server are
//! taken to agree within the margins; a stopped process is the case this
//! guards against, not a clock running at half speed.)

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use fieldstore_core::{Error, ErrorKind, Result};

use crate::client::Client;

/// One writer's lease.
#[derive(Debug)]
pub(crate) struct Lease {
    client: Arc<Client>,
    bucket: String,
    key: String,
    period: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When the last renewal that counts was sent.
    renewed: Option<Instant>,
    /// Why the lease broke, once it did.
    broken: Option<String>,
    /// The writer was dropped: no more renewals.
    ended: bool,
}

impl Lease {
    /// A lease for the writer whose lease object is `key`, not yet taken.
    pub(crate) fn new(client: Arc<Client>, bucket: &str, key: String, period: Duration) -> Lease {
        Lease {
            client,
            bucket: bucket.to_string(),
            key,
            period,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take the lease (its first renewal) if not taken yet, and have the
    /// process's renewal thread keep it.
    ///
    /// # Errors
    /// As the lease's PUT.
    pub(crate) fn take(self: &Arc<Self>) -> Result<()> {
        if self.state().renewed.is_some() {
            return Ok(());
        }
        let sent = Instant::now();
        self.client
            .put(&self.bucket, &self.key, b"", Some(self.period / 4))?;
        self.state().renewed = Some(sent);
        hold(self);
        Ok(())
    }

    /// Succeed if objects written under this lease may be published:
    /// the lease is unbroken and was renewed within the last half lease (a
    /// renewal is made here if the last is older than a quarter lease; one
    /// older than half a lease breaks the lease).
    ///
    /// # Errors
    /// `Unavailable` if the lease broke.
    pub(crate) fn confirm(&self) -> Result<()> {
        let due = {
            let s = self.state();
            if let Some(why) = &s.broken {
                return Err(self.lost(why));
            }
            s.renewed.is_none_or(|t| t.elapsed() >= self.period / 4)
        };
        if due {
            self.renew();
        }
        let s = self.state();
        match &s.broken {
            Some(why) => Err(self.lost(why)),
            None if s.renewed.is_some_and(|t| t.elapsed() < self.period / 2) => Ok(()),
            None => Err(self.lost("could not be renewed")),
        }
    }

    fn lost(&self, why: &str) -> Error {
        Error::new(
            ErrorKind::Unavailable,
            format!(
                "this writer's S3 lease (s3://{}/{}) {why}: a purge may have removed the fields \
                 it wrote since its last acknowledged flush; archive them again through a new \
                 handle",
                self.bucket, self.key
            ),
        )
    }

    /// Renew now: a PUT sent more than half a lease after the last renewal
    /// that counted breaks the lease (whether it succeeds or not); one
    /// answered after more than a quarter lease does not count.
    fn renew(&self) {
        let last = {
            let s = self.state();
            if s.broken.is_some() || s.ended {
                return;
            }
            s.renewed
        };
        let sent = Instant::now();
        if let Some(t) = last {
            if sent.duration_since(t) > self.period / 2 {
                self.state().broken = Some(format!(
                    "was not renewed for {:.1} s (more than half the {:?} lease)",
                    sent.duration_since(t).as_secs_f64(),
                    self.period
                ));
                return;
            }
        }
        let ok = self
            .client
            .put(&self.bucket, &self.key, b"", Some(self.period / 4))
            .is_ok();
        let mut s = self.state();
        if ok && sent.elapsed() < self.period / 4 && s.broken.is_none() {
            s.renewed = Some(sent);
        }
    }

    /// The writer is done: stop renewing and delete the lease object (its
    /// objects are published or orphans now). Best effort: a lease left
    /// behind dies (a killed writer's too), and a wipe of the dataset removes it.
    pub(crate) fn end(&self) {
        let taken = {
            let mut s = self.state();
            s.ended = true;
            s.renewed.is_some()
        };
        if taken {
            let _ = self.client.delete(&self.bucket, &self.key);
        }
    }
}

/// Leases the renewal thread keeps.
static HELD: Mutex<Vec<Weak<Lease>>> = Mutex::new(Vec::new());

/// Keep renewing `lease` in this process's renewal thread while it lives.
fn hold(lease: &Arc<Lease>) {
    // The process that started the thread: a child of `fork` inherits the
    // memory but not the thread, and starts its own.
    static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    HELD.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Arc::downgrade(lease));
    let me = std::process::id();
    if STARTED.swap(me, std::sync::atomic::Ordering::Relaxed) != me {
        let _ = std::thread::Builder::new()
            .name("fieldstore-s3-lease".into())
            .spawn(renewer);
    }
}

/// Every 50 ms, renew the leases a quarter lease old, each in its own
/// thread when several are due (one slow answer must not hold the others
/// back past their half lease).
fn renewer() {
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let due: Vec<Arc<Lease>> = {
            let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
            held.retain(|w| w.upgrade().is_some_and(|l| !l.state().ended));
            held.iter()
                .filter_map(Weak::upgrade)
                .filter(|l| {
                    let s = l.state();
                    s.broken.is_none() && s.renewed.is_some_and(|t| t.elapsed() >= l.period / 4)
                })
                .collect()
        };
        if due.len() == 1 {
            due[0].renew();
        } else if !due.is_empty() {
            std::thread::scope(|scope| {
                for l in &due {
                    scope.spawn(move || l.renew());
                }
            });
        }
    }
}
