//! The change waiter of a `type: select` catalogue: its lanes' own waiters
//! (inotify, RADOS watch/notify, polling) waited on at once, so that watch
//! behind select is woken as it would be by each lane alone.
//!
//! A [`ChangeWaiter`] blocks its caller, so each lane's waiter runs in a
//! thread of its own that waits in slices of [`LANE_SLICE`] and reports
//! what each return says changed ([`Changes`]; a return that says nothing
//! changed, a lane's quiet time-out, wakes no one). The caller gets what
//! the lanes reported since its last wait, merged: the datasets they
//! named, or `Unknown` if any lane could not tell. A waiter over one lane
//! is that lane's waiter itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use fieldstore_core::{ChangeWaiter, Changes, Error, Result};

use crate::sync::lock;

/// How long a lane's thread waits before it looks at whether the select
/// waiter is still wanted: the longest a dropped waiter's threads live on.
const LANE_SLICE: Duration = Duration::from_millis(500);

/// What the lanes' threads report.
#[derive(Default)]
struct Reports {
    /// What the lanes' waiters said changed since the last
    /// [`ChangeWaiter::wait`] returned (nothing: `None`).
    changes: Option<Changes>,
    /// A lane's waiter failed (its thread has stopped).
    failed: Option<Error>,
}

struct Shared {
    reports: Mutex<Reports>,
    woken: Condvar,
    /// The select waiter was dropped: threads stop after their slice.
    dropped: AtomicBool,
}

impl Shared {
    fn reports(&self) -> std::sync::MutexGuard<'_, Reports> {
        lock(&self.reports)
    }
}

/// Several lanes' waiters as one.
pub(crate) struct SelectWaiter {
    shared: Arc<Shared>,
    mechanism: String,
}

impl SelectWaiter {
    /// One waiter over `waiters` (the lanes', in configuration order).
    pub(crate) fn over(mut waiters: Vec<Box<dyn ChangeWaiter>>) -> Box<dyn ChangeWaiter> {
        if waiters.len() == 1 {
            return waiters.remove(0);
        }
        let mechanism = waiters
            .iter()
            .map(|w| w.mechanism())
            .collect::<Vec<_>>()
            .join(" + ");
        let shared = Arc::new(Shared {
            reports: Mutex::new(Reports::default()),
            woken: Condvar::new(),
            dropped: AtomicBool::new(false),
        });
        for mut w in waiters {
            let shared = shared.clone();
            std::thread::spawn(move || {
                while !shared.dropped.load(Ordering::Relaxed) {
                    let waited = w.wait(LANE_SLICE);
                    let failed = waited.is_err();
                    let mut r = shared.reports();
                    match waited {
                        Ok(c) if c.is_none() => continue,
                        Ok(c) => r.changes.get_or_insert_with(Changes::none).merge(c),
                        Err(e) => r.failed = Some(e),
                    }
                    drop(r);
                    shared.woken.notify_all();
                    if failed {
                        return;
                    }
                }
            });
        }
        Box::new(SelectWaiter { shared, mechanism })
    }
}

impl ChangeWaiter for SelectWaiter {
    fn wait(&mut self, timeout: Duration) -> Result<Changes> {
        let deadline = Instant::now() + timeout;
        let mut r = self.shared.reports();
        while r.changes.is_none() && r.failed.is_none() {
            let now = Instant::now();
            if now >= deadline {
                return Ok(Changes::none());
            }
            r = self
                .shared
                .woken
                .wait_timeout(r, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let changes = r.changes.take();
        match r.failed.take() {
            Some(e) => Err(e),
            None => Ok(changes.unwrap_or_else(Changes::none)),
        }
    }

    fn mechanism(&self) -> String {
        self.mechanism.clone()
    }

    /// The lanes' waiters run in their threads, each at its own pace.
    fn found(&mut self) {}
}

impl Drop for SelectWaiter {
    fn drop(&mut self) {
        self.shared.dropped.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiter that returns once `fire` is set, else at its time-out.
    struct Flag(Arc<AtomicBool>, &'static str);

    impl ChangeWaiter for Flag {
        fn wait(&mut self, timeout: Duration) -> Result<Changes> {
            let end = Instant::now() + timeout;
            while Instant::now() < end {
                if self.0.swap(false, Ordering::SeqCst) {
                    return Ok(Changes::Unknown);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(Error::internal(format!("{} timed out", self.1)))
        }

        fn mechanism(&self) -> String {
            self.1.into()
        }

        fn found(&mut self) {}
    }

    #[test]
    fn one_lane_is_its_own_waiter() {
        let w = SelectWaiter::over(vec![Box::new(Flag(Arc::default(), "inotify"))]);
        assert_eq!(w.mechanism(), "inotify");
    }

    #[test]
    fn a_change_in_any_lane_wakes_the_caller_at_once() {
        let (a, b) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let mut w = SelectWaiter::over(vec![
            Box::new(Flag(a.clone(), "inotify")),
            Box::new(Flag(b.clone(), "rados watch/notify")),
        ]);
        assert_eq!(w.mechanism(), "inotify + rados watch/notify");
        b.store(true, Ordering::SeqCst);
        let start = Instant::now();
        w.wait(Duration::from_secs(10)).expect("woken by lane b");
        assert!(
            start.elapsed() < Duration::from_millis(400),
            "a change in the second lane took {:?} to wake the caller",
            start.elapsed()
        );
    }

    /// A waiter that returns `says` once `fire` is set, else says nothing
    /// changed at its time-out.
    struct Named(Arc<AtomicBool>, Changes);

    impl ChangeWaiter for Named {
        fn wait(&mut self, timeout: Duration) -> Result<Changes> {
            let end = Instant::now() + timeout;
            while Instant::now() < end {
                if self.0.swap(false, Ordering::SeqCst) {
                    return Ok(self.1.clone());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(Changes::none())
        }

        fn mechanism(&self) -> String {
            "named".into()
        }

        fn found(&mut self) {}
    }

    #[test]
    fn what_the_lanes_name_is_what_the_caller_gets_and_quiet_lanes_wake_no_one() {
        let dataset = |d: &str| {
            fieldstore_core::DatasetKey(format!("class=od,date={d}").parse().expect("key"))
        };
        let (a, b) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let mut w = SelectWaiter::over(vec![
            Box::new(Named(a.clone(), Changes::Datasets([dataset("1")].into()))),
            Box::new(Named(b.clone(), Changes::Unknown)),
        ]);
        // The lanes time out every LANE_SLICE saying nothing changed: the
        // caller sleeps through that.
        let start = Instant::now();
        let quiet = w.wait(LANE_SLICE * 3).expect("wait");
        assert!(quiet.is_none(), "{quiet:?}");
        assert!(start.elapsed() >= LANE_SLICE * 3, "{:?}", start.elapsed());
        a.store(true, Ordering::SeqCst);
        assert_eq!(
            w.wait(Duration::from_secs(10)).expect("wait"),
            Changes::Datasets([dataset("1")].into())
        );
        b.store(true, Ordering::SeqCst);
        assert_eq!(
            w.wait(Duration::from_secs(10)).expect("wait"),
            Changes::Unknown
        );
    }

    #[test]
    fn a_lane_that_fails_fails_the_wait() {
        // Flag errs at its time-out: the lane's thread reports the error.
        let mut w = SelectWaiter::over(vec![
            Box::new(Flag(Arc::default(), "a")),
            Box::new(Flag(Arc::default(), "b")),
        ]);
        let e = w.wait(Duration::from_secs(10)).unwrap_err();
        assert!(e.to_string().contains("timed out"), "{e}");
    }
}
