//! Pool and container handles cached for the life of the process, shared
//! by every catalogue and store (FDB5's `DaosManager` does the same): a
//! container is opened once per process, not once per operation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use fieldstore_core::{Error, ErrorKind, Result};

use crate::client::{class_error, Container, Daos, DaosError, Pool};
use crate::ffi::{der, DaosObjId, DAOS_OT_KV_HASHED};

/// An open container and what the process knows about it.
#[derive(Debug)]
pub struct Cont {
    pub(crate) c: Container,
    /// OIDs reserved and not yet used: (next, how many left).
    oids: Mutex<(u64, u64)>,
    /// The KV at user bits (0, lo), header stamped, per lo.
    kvs: Mutex<HashMap<(u64, u32), DaosObjId>>,
    /// One past the highest log slot known to exist (dataset containers).
    pub(crate) known_tail: AtomicU64,
    /// This process created the dataset (its log started empty).
    pub(crate) known_empty: AtomicBool,
    /// The dataset is registered in the root KV (by this process).
    pub(crate) registered: AtomicBool,
    /// The dataset's `meta` was read and checked (by this process).
    pub(crate) meta_checked: OnceLock<crate::format::Meta>,
    /// The schema text of `meta`, shared by the readers and writers of
    /// the dataset (set with `meta_checked`).
    pub(crate) schema: OnceLock<Arc<str>>,
    /// This process's lease on the container, under which its store
    /// writers reserve the OIDs of field arrays (`crate::lease`).
    pub(crate) lease: crate::lease::Lease,
}

impl Cont {
    fn new(c: Container) -> Cont {
        Cont {
            c,
            oids: Mutex::new((0, 0)),
            kvs: Mutex::new(HashMap::new()),
            known_tail: AtomicU64::new(0),
            known_empty: AtomicBool::new(false),
            registered: AtomicBool::new(false),
            meta_checked: OnceLock::new(),
            schema: OnceLock::new(),
            lease: crate::lease::Lease::default(),
        }
    }

    /// The next reserved OID (`lo`), reserving `per_alloc` more with one
    /// `daos_cont_alloc_oids` when the range is used up. For the
    /// catalogue's own arrays; field arrays take theirs under the lease
    /// ([`crate::lease::Lease::next_oid`]), so purge never takes one of
    /// these for a field.
    pub(crate) fn next_oid(&self, per_alloc: u64) -> Result<u64> {
        let mut r = self.oids.lock().unwrap_or_else(|p| p.into_inner());
        if r.1 == 0 {
            let first = self.c.alloc_oids(per_alloc)?;
            *r = (first, per_alloc);
        }
        let lo = r.0;
        r.0 += 1;
        r.1 -= 1;
        Ok(lo)
    }

    /// The KV with user bits `(hi 0, lo)` and class `class`.
    pub(crate) fn kv_oid(&self, lo: u64, class: u32) -> Result<DaosObjId> {
        let mut kvs = self.kvs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = kvs.get(&(lo, class)) {
            return Ok(*o);
        }
        let oid = self
            .c
            .generate_oid(0, lo, DAOS_OT_KV_HASHED, class)
            .map_err(class_error)?;
        kvs.insert((lo, class), oid);
        Ok(oid)
    }

    /// Raise the known tail to `slot + 1`.
    pub(crate) fn saw_slot(&self, slot: u64) {
        self.known_tail.fetch_max(slot + 1, Ordering::Relaxed);
    }
}

/// The process's pools and containers.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) daos: &'static Daos,
    pools: Mutex<HashMap<String, Arc<Pool>>>,
    conts: Mutex<HashMap<(String, String), Arc<Cont>>>,
}

impl Session {
    /// The session of this process, loading libdaos on first use.
    pub(crate) fn get(library: Option<&std::path::Path>) -> Result<&'static Session> {
        static SESSION: OnceLock<Session> = OnceLock::new();
        if let Some(s) = SESSION.get() {
            return Ok(s);
        }
        let daos = Daos::get(library)?;
        Ok(SESSION.get_or_init(|| Session {
            daos,
            pools: Mutex::new(HashMap::new()),
            conts: Mutex::new(HashMap::new()),
        }))
    }

    /// A connected pool.
    pub(crate) fn pool(&self, label: &str) -> Result<Arc<Pool>> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.get(label) {
            return Ok(p.clone());
        }
        let p = Arc::new(self.daos.connect(label).map_err(|e| {
            if e.is(der::NONEXIST) {
                Error::new(
                    ErrorKind::NotFound,
                    format!("DAOS pool '{label}' does not exist (daos.pool in the configuration)"),
                )
                .with_source(e)
            } else {
                e.into()
            }
        })?);
        pools.insert(label.to_string(), p.clone());
        Ok(p)
    }

    /// Forget a cached container handle (its container was destroyed): the
    /// next [`Session::container`] opens it afresh.
    pub(crate) fn evict(&self, pool: &str, label: &str) {
        self.conts().remove(&(pool.to_string(), label.to_string()));
    }

    fn conts(&self) -> MutexGuard<'_, HashMap<(String, String), Arc<Cont>>> {
        self.conts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Destroy a container (open handles are revoked); a missing one is
    /// fine. Returns whether it existed.
    pub(crate) fn destroy(&self, pool: &str, label: &str) -> Result<bool> {
        self.evict(pool, label);
        let p = self.pool(pool)?;
        match p.destroy(label) {
            Ok(()) => Ok(true),
            Err(e) if e.is(der::NONEXIST) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// An open container, or `None` if it does not exist and `create` is
    /// `None`; with `create: Some(rf)` it is created if missing (a creation
    /// race with another process is harmless: the loser opens the winner's).
    pub(crate) fn container(
        &self,
        pool: &str,
        label: &str,
        create: Option<Option<u32>>,
    ) -> Result<Option<Arc<Cont>>> {
        let key = (pool.to_string(), label.to_string());
        if let Some(c) = self.conts().get(&key) {
            return Ok(Some(c.clone()));
        }
        let p = self.pool(pool)?;
        let c = match p.open(label, true) {
            Ok(c) => c,
            Err(e) if e.is(der::NONEXIST) => {
                let Some(rf) = create else {
                    return Ok(None);
                };
                match p.create(label, rf) {
                    Ok(()) => {}
                    Err(e) if e.is(der::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                p.open(label, true)?
            }
            Err(e) => return Err(e.into()),
        };
        let mut conts = self.conts();
        // Another thread may have opened it meanwhile: keep the first (our
        // handle closes on drop).
        Ok(Some(
            conts
                .entry(key)
                .or_insert_with(|| Arc::new(Cont::new(c)))
                .clone(),
        ))
    }
}

/// Whether an error means the container is gone (destroyed by a wipe, its
/// handle revoked).
pub(crate) fn is_gone(e: &Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(d) = s.downcast_ref::<DaosError>() {
            return d.is(der::NO_HDL) || d.is(der::NONEXIST);
        }
        source = s.source();
    }
    false
}

/// Containers holding a lease, renewed by [`renewer`].
static HELD: Mutex<Vec<Weak<Cont>>> = Mutex::new(Vec::new());

/// Keep renewing the lease of `cont` (from its first recorded range on) in
/// this process's renewal thread, for as long as the container is open.
pub(crate) fn hold(cont: &Arc<Cont>) {
    // The process that started the renewal thread: a child of `fork`
    // inherits the memory but not the thread, and starts its own.
    static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    {
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|w| w.strong_count() > 0);
        if !held
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(cont)))
        {
            held.push(Arc::downgrade(cont));
        }
    }
    let me = std::process::id();
    if STARTED.swap(me, std::sync::atomic::Ordering::Relaxed) != me {
        let _ = std::thread::Builder::new()
            .name("fieldstore-daos-lease".into())
            .spawn(renewer);
    }
}

/// Every 100 ms, renew the leases due (a quarter lease old).
fn renewer() {
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let held: Vec<Arc<Cont>> = HELD
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for cont in held {
            cont.lease.renew(&cont.c);
        }
    }
}
