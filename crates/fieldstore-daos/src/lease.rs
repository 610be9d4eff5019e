//! Which processes still write into a dataset's store container: leases,
//! so that purge can tell the field arrays a killed writer left (orphans,
//! which it destroys) from a live writer's arrays whose fields are
//! archived but not flushed yet (which it must not touch). DAOS has no
//! session liveness a client can see (no watch), so liveness is a lease
//! renewed by the writer's process.
//!
//! **Layout.** Each process that writes field arrays into a store
//! container reserves their OIDs in ranges (`daos_cont_alloc_oids`) and,
//! before it uses a range, records it in the container's **lease KV**
//! (user bits `lo` [`LEASE_KV_LO`]) under its lease key
//! `<host>.<pid>.<start ns>.<generation>`. The value is text:
//! `1 <renewed: Unix ms> <lease ms> <array class> <chunk> <first>+<count>…`.
//! A thread of the process renews every lease it holds every quarter lease
//! (a conditional update: `DAOS_COND_KEY_UPDATE`).
//!
//! **Purge.** A lease not renewed for two leases (by the purging
//! process's clock: clocks may differ by up to a lease) is dead: its
//! ranges' arrays that no entry points into are orphans. Once none is
//! left, purge removes the lease key, so a process that was only cut off
//! finds its lease gone at its next renewal.
//!
//! **Writer.** A flush is acknowledged only if the lease its arrays were
//! written under is still this process's current one and was renewed
//! within the last half lease (it waits for a renewal if the last is
//! older, up to a lease). A renewal that comes more than half a lease
//! after the previous one, or finds the key gone, ends the lease: its
//! writers' unflushed arrays may have been destroyed, so their flushes
//! fail (`Unavailable`), and new arrays go to ranges under a new lease key.
//! Why purge and a writer cannot both win: purge destroys only after
//! reading a renewal time more than a lease old (in the writer's clock), so
//! the writer's next successful renewal, which that read did not see, is
//! more than half a lease after its previous one and ends the lease;
//! without such a renewal its flushes stop within half a lease.
//! The check runs twice, before the catalogue's slot insert and after it
//! (`StoreWriter::confirm_published`): a writer stopped past its lease
//! between the first check and its insert finds its lease ended at the
//! second, and its flush fails instead of being acknowledged.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fieldstore_core::record::maintenance::now_ns;
use fieldstore_core::{Error, ErrorKind, Result};

use crate::client::Container;
use crate::ffi::{der, DaosObjId, DAOS_OT_KV_HASHED};

/// User bits `lo` of a store container's lease KV (distinct from the root
/// and dataset KVs' 0 and 1; arrays have another object type, so their
/// OIDs never meet a KV's).
pub(crate) const LEASE_KV_LO: u64 = 2;

/// What a process knows of its lease on one container.
#[derive(Debug, Default)]
struct State {
    /// Bumped each time a lease ends; arrays written under an ended
    /// generation are never flushed.
    generation: u64,
    /// The lease key, once a range was recorded under it.
    key: Option<String>,
    /// OID ranges recorded: `(first, count)`.
    ranges: Vec<(u64, u64)>,
    /// OIDs of the newest range not used yet: `(next, left)`.
    free: (u64, u64),
    /// When the lease was last written successfully.
    renewed: Option<Instant>,
    lease: Duration,
    class: u32,
    chunk: u64,
    /// The lease KV's object class (`daos.kv_class`).
    kv_class: u32,
}

/// A process's lease on one store container (one per open container).
#[derive(Debug, Default)]
pub(crate) struct Lease {
    state: Mutex<State>,
}

impl Lease {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next OID (`lo`) for a field array of class `class` and chunk
    /// size `chunk`, and the lease generation it is written under (the
    /// lease KV of class `kv_class`):
    /// reserving `per_alloc` OIDs and recording them under the lease first
    /// when the range is used up (or the lease ended).
    ///
    /// # Errors
    /// As `daos_cont_alloc_oids` and the lease KV's put.
    pub(crate) fn next_oid(
        &self,
        c: &Container,
        per_alloc: u64,
        lease: Duration,
        (class, chunk, kv_class): (u32, u64, u32),
    ) -> Result<(u64, u64)> {
        let mut s = self.state();
        let stale = s.renewed.is_none_or(|t| t.elapsed() > s.lease / 2);
        if s.key.is_some() && (stale || s.class != class || s.chunk != chunk) {
            // Not renewed within half a lease (it may be found dead), or
            // of another class or chunk size (one lease records arrays of
            // one class and chunk size).
            end(&mut s);
        }
        if s.free.1 == 0 {
            let first = c.alloc_oids(per_alloc)?;
            s.lease = lease;
            s.class = class;
            s.chunk = chunk;
            s.kv_class = kv_class;
            s.ranges.push((first, per_alloc));
            if let Err(e) = write(c, &mut s) {
                s.ranges.pop();
                return Err(e);
            }
            s.free = (first, per_alloc);
        }
        let lo = s.free.0;
        s.free.0 += 1;
        s.free.1 -= 1;
        Ok((lo, s.generation))
    }

    /// Succeed if arrays written under `generation` may be flushed: the
    /// lease is still that generation and was renewed within the last half
    /// lease (waiting up to a lease for a renewal).
    ///
    /// # Errors
    /// `Unavailable` if the lease ended or is not renewed in time.
    pub(crate) fn confirm(&self, generation: u64) -> Result<()> {
        let start = Instant::now();
        loop {
            let s = self.state();
            let lost = |why: &str| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "this writer's DAOS lease {why}: a purge may have destroyed the fields \
                         it archived since its last flush; archive them again through a new \
                         handle"
                    ),
                )
            };
            if s.generation != generation {
                return Err(lost(
                    "ended (not renewed in time, or found dead by a purge)",
                ));
            }
            if s.renewed.is_some_and(|t| t.elapsed() < s.lease / 2) {
                return Ok(());
            }
            if start.elapsed() > s.lease {
                return Err(lost("was not renewed within a lease"));
            }
            drop(s);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Renew the lease if a quarter lease passed since the last renewal.
    pub(crate) fn renew(&self, c: &Container) {
        let mut s = self.state();
        if s.key.is_none() || s.renewed.is_some_and(|t| t.elapsed() < s.lease / 4) {
            return;
        }
        let _ = write(c, &mut s);
    }
}

/// Write the lease (insert it under a new key, or update it), and note
/// the renewal; a lease found gone, or renewed too late, ends.
fn write(c: &Container, s: &mut State) -> Result<()> {
    let kv = c.kv(lease_kv(c, s.kv_class)?, true)?;
    let fresh = s.key.is_none();
    let key = s
        .key
        .get_or_insert_with(|| {
            format!("{}.{}", fieldstore_core::writer_id::process(), s.generation)
        })
        .clone();
    // Taken before the put: the local notion of the renewal is never newer
    // than the time the value records.
    let at = Instant::now();
    let value = encode(s);
    let late = s.renewed.is_some_and(|t| t.elapsed() > s.lease / 2);
    let r = if fresh {
        kv.insert(&key, value.as_bytes()).map(|_| ())
    } else {
        kv.update(&key, value.as_bytes())
    };
    match r {
        Ok(()) if late => {
            // Renewed, but after a gap in which a purge may have found it
            // dead: its arrays are not to be flushed.
            end(s);
            Err(Error::new(
                ErrorKind::Unavailable,
                "the DAOS lease was renewed too late",
            ))
        }
        Ok(()) => {
            s.renewed = Some(at);
            Ok(())
        }
        Err(e) if e.is(der::NONEXIST) => {
            end(s);
            Err(Error::new(
                ErrorKind::Unavailable,
                "the DAOS lease was found dead by a purge",
            ))
        }
        Err(e) => {
            if fresh {
                s.key = None;
            }
            Err(e.into())
        }
    }
}

/// End the current lease: a new generation, no key, no ranges, no free
/// OIDs (the rest of the range is never used).
fn end(s: &mut State) {
    s.generation += 1;
    s.key = None;
    s.ranges.clear();
    s.free = (0, 0);
    s.renewed = None;
}

fn encode(s: &State) -> String {
    let (lease, class, chunk) = (s.lease.as_millis(), s.class, s.chunk);
    let mut v = format!("1 {} {lease} {class} {chunk}", now_ms());
    for (first, n) in &s.ranges {
        v.push_str(&format!(" {first}+{n}"));
    }
    v
}

/// A lease as purge reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// When it was last renewed (Unix ms).
    pub renewed_ms: u64,
    pub lease: Duration,
    pub class: u32,
    pub chunk: u64,
    pub ranges: Vec<(u64, u64)>,
}

impl Recorded {
    /// Parse a lease value; `None` if it is not one (left alone).
    pub(crate) fn parse(v: &[u8]) -> Option<Recorded> {
        let text = std::str::from_utf8(v).ok()?;
        let mut it = text.split(' ');
        if it.next()? != "1" {
            return None;
        }
        let mut num = || it.next()?.parse::<u64>().ok();
        Some(Recorded {
            renewed_ms: num()?,
            lease: Duration::from_millis(num()?),
            class: u32::try_from(num()?).ok()?,
            chunk: num()?,
            ranges: it
                .map(|r| {
                    let (a, b) = r.split_once('+')?;
                    Some((a.parse().ok()?, b.parse().ok()?))
                })
                .collect::<Option<_>>()?,
        })
    }

    /// Whether nothing has renewed it for two leases, by this clock.
    pub(crate) fn is_dead(&self) -> bool {
        now_ms() > self.renewed_ms + 2 * self.lease.as_millis() as u64
    }
}

/// The lease KV of a container, of object class `class` (`daos.kv_class`:
/// writers and purge must agree, as for the dataset KV).
pub(crate) fn lease_kv(c: &Container, class: u32) -> Result<DaosObjId> {
    c.generate_oid(0, LEASE_KV_LO, DAOS_OT_KV_HASHED, class)
        .map_err(crate::client::class_error)
}

/// Unix ms, as a lease records its renewals.
fn now_ms() -> u64 {
    now_ns() / 1_000_000
}
