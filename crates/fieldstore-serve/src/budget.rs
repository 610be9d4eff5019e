//! Bytes held at once: a [`Budget`] per connection and one for the server.
//!
//! A reader takes room from both before it reads a large frame's bytes, as
//! they arrive, and gives it back when the frame is dropped (or the field
//! parked from it is taken). When there is no room it waits, up to a
//! deadline: the client is not read meanwhile, which is back-pressure (its
//! writes block), not loss.
//!
//! Invariant: `used <= limit` at all times, for every budget; room is
//! given back exactly once (by the [`Permit`]'s drop).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// A number of bytes that can be held at once.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

impl Budget {
    /// A budget of `limit` bytes, none held.
    pub(crate) fn new(limit: u64) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    fn used(&self) -> std::sync::MutexGuard<'_, u64> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes held now.
    pub(crate) fn in_use(&self) -> u64 {
        *self.used()
    }

    /// The limit.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Take `n` bytes, waiting for room until `deadline`; `false` if
    /// there was none by then (or `n` is over the limit: never room).
    fn take(&self, n: u64, deadline: Instant) -> bool {
        if n > self.limit {
            return false;
        }
        let mut used = self.used();
        while *used + n > self.limit {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            used = match self.freed.wait_timeout(used, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        *used += n;
        true
    }

    fn give(&self, n: u64) {
        let mut used = self.used();
        *used = used.saturating_sub(n);
        drop(used);
        self.freed.notify_all();
    }
}

/// Room held in a connection's budget and the server's; given back when
/// dropped.
#[derive(Debug, Default)]
pub(crate) struct Permit {
    held: Vec<(Arc<Budget>, u64)>,
}

impl Permit {
    /// Take `n` more bytes from every budget of `budgets` (in order),
    /// waiting for room until `deadline`.
    ///
    /// # Errors
    /// The budget that had no room by the deadline (what was taken from
    /// the others is given back).
    pub(crate) fn grow(
        &mut self,
        budgets: &[&Arc<Budget>],
        n: u64,
        deadline: Instant,
    ) -> Result<(), Arc<Budget>> {
        if n == 0 {
            return Ok(());
        }
        let mut taken: Vec<&Arc<Budget>> = Vec::with_capacity(budgets.len());
        for b in budgets {
            if !b.take(n, deadline) {
                for t in taken {
                    t.give(n);
                }
                return Err(Arc::clone(b));
            }
            taken.push(b);
        }
        for b in budgets {
            match self.held.iter_mut().find(|(h, _)| Arc::ptr_eq(h, b)) {
                Some((_, m)) => *m += n,
                None => self.held.push((Arc::clone(b), n)),
            }
        }
        Ok(())
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        for (b, n) in self.held.drain(..) {
            b.give(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn room_is_taken_from_every_budget_and_given_back_once() {
        let server = Budget::new(100);
        let conn = Budget::new(60);
        let soon = || Instant::now() + Duration::from_millis(20);
        let mut a = Permit::default();
        a.grow(&[&conn, &server], 50, soon()).unwrap();
        // The connection's budget is the one without room.
        let mut b = Permit::default();
        let full = b.grow(&[&conn, &server], 20, soon()).unwrap_err();
        assert_eq!(full.limit(), 60);
        assert_eq!(server.in_use(), 50, "what was taken is given back");
        // Never room for more than the limit.
        assert!(Permit::default().grow(&[&server], 101, soon()).is_err());
        // A waiter gets room as soon as it is given back.
        let waiter = {
            let (conn, server) = (Arc::clone(&conn), Arc::clone(&server));
            std::thread::spawn(move || {
                let mut p = Permit::default();
                p.grow(
                    &[&conn, &server],
                    40,
                    Instant::now() + Duration::from_secs(10),
                )
                .map(|()| p)
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(a);
        let p = waiter.join().unwrap().unwrap();
        assert_eq!((conn.in_use(), server.in_use()), (40, 40));
        drop(p);
        assert_eq!((conn.in_use(), server.in_use()), (0, 0));
    }
}
