//! The watchers' registry (fieldstore's `Watch` extension): who is told of
//! which flushes.
//!
//! A flush never writes to a watcher's socket. It only raises the flag of
//! each watch its fields may concern ([`Watchers::notify`]); the watching
//! connection's own notifier thread waits on its [`Signal`] and sends one
//! empty `Blob` per raised watch. Flags coalesce: however many flushes
//! happen while a watcher is slow, it is told once more, which is all it
//! needs (each word means "look again"), so nothing is queued and nothing
//! is lost. A watcher that stops reading stalls only its own notifier,
//! until the write time-out ends its connection.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use fieldstore::schema::SplitKey;
use fieldstore::{Key, Request, Schema};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A connection's raised watches, and whether it is closing.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    state: Mutex<(BTreeSet<(u32, u32)>, bool)>,
    raised: Condvar,
}

impl Signal {
    /// Raise the watch of `client` under `request`.
    fn raise(&self, client: u32, request: u32) {
        lock(&self.state).0.insert((client, request));
        self.raised.notify_all();
    }

    /// Wake the notifier to end.
    pub(crate) fn close(&self) {
        lock(&self.state).1 = true;
        self.raised.notify_all();
    }

    /// The watches raised since the last call, waiting until there are
    /// some; `None` once closed.
    pub(crate) fn wait(&self) -> Option<Vec<(u32, u32)>> {
        let mut g = lock(&self.state);
        loop {
            if g.1 {
                return None;
            }
            if !g.0.is_empty() {
                return Some(std::mem::take(&mut g.0).into_iter().collect());
            }
            g = match self.raised.wait(g) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
    }
}

/// One registered watch.
#[derive(Debug)]
struct Watch {
    connection: u64,
    client: u32,
    request: u32,
    /// The fields it asked about (`None`: every flush).
    filter: Option<Request>,
    signal: Arc<Signal>,
}

/// What a flush made visible, as far as its watchers need to know.
#[derive(Debug, Default)]
pub(crate) struct Flushed {
    /// The keys archived, split (once, here, not once per watcher), while
    /// at most [`Flushed::KEPT`].
    keys: Vec<SplitKey>,
    /// More were archived than kept, or one did not split: every watcher
    /// is told.
    overflow: bool,
}

impl Flushed {
    /// Keys kept per flush for filtering; past it every watch is raised
    /// (telling a watcher of a flush it did not ask about costs it a look;
    /// missing one would be a wrong answer).
    const KEPT: usize = 1024;

    /// Note a key archived under `schema`; `watched`: whether the server
    /// has watchers now (without, nothing is split or kept, and the flush
    /// tells whoever watches by then: no cost when nobody watches).
    pub(crate) fn add(&mut self, schema: &Schema, key: &Key, watched: bool) {
        if !watched || self.overflow {
            self.overflow = true;
            return;
        }
        match schema.split(key) {
            Ok(split) if self.keys.len() < Self::KEPT => self.keys.push(split),
            _ => self.overflow = true,
        }
    }

    /// Whether nothing was archived.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty() && !self.overflow
    }

    /// Whether a watch of `filter` may care. A request the schema cannot
    /// read is told: when unsure, tell.
    fn concerns(&self, schema: &Schema, filter: &Request) -> bool {
        if self.overflow {
            return true;
        }
        let Ok(selector) = schema.selector(filter) else {
            return true;
        };
        self.keys.iter().any(|split| {
            selector
                .match_dataset(split.dataset.key())
                .and_then(|d| selector.match_collocation(&d, split.collocation.key()))
                .is_some_and(|c| selector.element_filter(&c).matches(split.element.key()))
        })
    }
}

/// Every watch of a server, and their number (read without the lock on
/// every archived field).
#[derive(Debug, Default)]
pub(crate) struct Watchers(Mutex<Vec<Watch>>, AtomicUsize);

impl Watchers {
    /// Register the watch of `client` on `connection`, told through
    /// `signal` under `request` of flushes `filter` names (of every flush
    /// without one).
    pub(crate) fn add(
        &self,
        connection: u64,
        client: u32,
        request: u32,
        filter: Option<Request>,
        signal: Arc<Signal>,
    ) {
        let mut g = lock(&self.0);
        g.push(Watch {
            connection,
            client,
            request,
            filter,
            signal,
        });
        self.1.store(g.len(), Ordering::Release);
    }

    /// Whether anyone watches.
    pub(crate) fn any(&self) -> bool {
        self.1.load(Ordering::Acquire) > 0
    }

    /// Raise every watch `flushed` may concern. Never blocks on a client,
    /// nor holds the registry while it matches.
    pub(crate) fn notify(&self, schema: &Schema, flushed: &Flushed) {
        let watches: Vec<(Option<Request>, u32, u32, Arc<Signal>)> = lock(&self.0)
            .iter()
            .map(|w| (w.filter.clone(), w.client, w.request, Arc::clone(&w.signal)))
            .collect();
        for (filter, client, request, signal) in watches {
            if filter.as_ref().is_none_or(|f| flushed.concerns(schema, f)) {
                signal.raise(client, request);
            }
        }
    }

    /// Forget a client's watch (it stopped).
    pub(crate) fn remove(&self, connection: u64, client: u32) {
        let mut g = lock(&self.0);
        g.retain(|w| !(w.connection == connection && w.client == client));
        self.1.store(g.len(), Ordering::Release);
    }

    /// Forget a connection's watches (it ended).
    pub(crate) fn forget(&self, connection: u64) {
        let mut g = lock(&self.0);
        g.retain(|w| w.connection != connection);
        self.1.store(g.len(), Ordering::Release);
    }

    /// Whether `connection` watches.
    pub(crate) fn watching(&self, connection: u64) -> bool {
        lock(&self.0).iter().any(|w| w.connection == connection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(step: &str) -> Key {
        format!(
            "class=od,expver=0001,stream=oper,date=20240101,time=0000,domain=g,type=fc,\
             levtype=sfc,step={step},param=167"
        )
        .parse()
        .unwrap()
    }

    #[test]
    fn a_flush_raises_the_watches_it_concerns_once_each() {
        let schema = Schema::ecmwf();
        let w = Watchers::default();
        let (a, b) = (Arc::new(Signal::default()), Arc::new(Signal::default()));
        w.add(1, 1, 10, Some("step=6".parse().unwrap()), Arc::clone(&a));
        w.add(2, 1, 20, Some("step=12".parse().unwrap()), Arc::clone(&b));
        w.add(2, 2, 30, None, Arc::clone(&b));
        let mut f = Flushed::default();
        f.add(&schema, &key("6"), w.any());
        w.notify(&schema, &f);
        w.notify(&schema, &f);
        assert_eq!(a.wait(), Some(vec![(1, 10)]), "coalesced");
        assert_eq!(b.wait(), Some(vec![(2, 30)]), "step=12 not told");
        // Keys archived while nobody watched: whoever watches at the flush
        // is told.
        let mut unwatched = Flushed::default();
        unwatched.add(&schema, &key("99"), false);
        w.notify(&schema, &unwatched);
        assert_eq!(a.wait(), Some(vec![(1, 10)]));
        assert!(w.watching(2));
        w.forget(2);
        assert!(!w.watching(2));
        b.close();
        assert_eq!(b.wait(), None);
    }
}
