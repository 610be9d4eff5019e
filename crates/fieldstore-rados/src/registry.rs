//! The root object's omap: one entry per dataset (its key, its object
//! name), set after the dataset's first flush and removed last by its
//! wipe; the count of those entries (`!datasets`), so that entries removed
//! behind fieldstore's back are told; and the marks of data management
//! (`!list-locked <key>`, `!wiping <key>`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fieldstore_core::engine::stored_key;
use fieldstore_core::{DatasetKey, Error, ErrorKind, Result};

use crate::naming::ROOT;
use crate::rados::{OrMissing, Pool, WriteOp, ECANCELED, ENOENT};
use crate::segments::{append_error, count, counter, PAGE};

/// The datasets a root registers, and its count as stored, if it has one
/// ([`Registry::read`]).
type Listing = (Vec<DatasetKey>, Option<Vec<u8>>);

/// What [`Registry::keys`] calls with each key and its value.
type KeyVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// The root's registrations, as one client reads and settles them.
#[derive(Debug)]
pub(crate) struct Registry {
    pool: Arc<Pool>,
    /// The OSDs refused to let this client set the root's count (a key
    /// without write access): listings no longer try.
    count_refused: AtomicBool,
}

impl Registry {
    /// The registrations in `pool`'s root.
    pub(crate) fn new(pool: Arc<Pool>) -> Registry {
        Registry {
            pool,
            count_refused: AtomicBool::new(false),
        }
    }

    /// Visit the root's omap keys that start with `prefix` and their
    /// values, a page of `PAGE` per read.
    pub(crate) fn keys(&self, prefix: &str, visit: &mut KeyVisitor<'_>) -> Result<()> {
        let what = || format!("reading {}", self.pool.what(ROOT));
        let visit = |k: Vec<u8>, v: Vec<u8>| visit(&k, &v);
        self.pool
            .omap_each(ROOT, prefix, PAGE, what, visit)
            .map(drop)
    }

    /// Set the root's count ([`DATASETS`]) to `n` if it is still
    /// `counted` (empty: absent). Best effort: a client the OSDs refuse
    /// (no write access) stops trying.
    fn set_count(&self, counted: &[u8], n: usize) {
        if self.count_refused.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut op) = WriteOp::new() else {
            return;
        };
        op.omap_cmp_eq(DATASETS, counted);
        op.omap_set(&[(DATASETS, n.to_string().as_bytes())]);
        if let Err(e) = self.pool.operate(ROOT, &op) {
            let refused = e.kind() == ErrorKind::PermissionDenied;
            self.count_refused.store(refused, Ordering::Relaxed);
        }
    }

    /// The datasets the root registers, and its count ([`DATASETS`]) as
    /// stored, if it has one.
    pub(crate) fn read(&self) -> Result<Listing> {
        let (mut keys, mut counted) = (Vec::new(), None);
        self.keys("", &mut |k, v| {
            if k == DATASETS {
                counted = Some(v.to_vec());
            } else if !k.starts_with(b"!") {
                // `!` keys are marks (`!list-locked <key>`), not datasets.
                let text = String::from_utf8_lossy(k);
                keys.push(stored_key(&text, &|| self.pool.what(ROOT))?);
            }
            Ok(())
        })?;
        Ok((keys, counted))
    }

    /// The root's entries. A root that holds fewer entries than its
    /// count (`!datasets`) lost some behind fieldstore's back: the
    /// datasets they named are looked for (`find_lost`, given the entries
    /// read: one listing of the namespace) and registered again, so that a
    /// listing of the datasets never leaves out one with something visible.
    /// The count is then set to what the root holds, if it did not change
    /// meanwhile (best effort: a reader may not be allowed to write), so
    /// that a loss is looked for once, and a root from before the count
    /// gets one.
    pub(crate) fn datasets(
        &self,
        find_lost: &dyn Fn(&[DatasetKey]) -> Result<()>,
    ) -> Result<Vec<DatasetKey>> {
        let short = |(keys, counted): &Listing| {
            counted.as_deref().and_then(counter).unwrap_or(0.0) > keys.len() as f64
        };
        let mut read = self.read()?;
        if short(&read) {
            // Read again first: a root of many pages is not read at one
            // instant.
            read = self.read()?;
        }
        if short(&read) {
            find_lost(&read.0)?;
            read = self.read()?;
        }
        let (keys, counted) = read;
        let settled = counted.as_deref().and_then(counter) == Some(keys.len() as f64);
        if !settled && (counted.is_some() || !keys.is_empty()) {
            self.set_count(&counted.unwrap_or_default(), keys.len());
        }
        Ok(keys)
    }
}

/// The root's omap key counting the datasets registered in it, in ASCII
/// digits: the operation that sets a dataset's entry adds 1 to it, the one
/// that removes it takes 1 ([`count`]), so that a listing that finds fewer
/// entries than the count tells entries removed behind fieldstore's back
/// ([`Registry::datasets`]). Absent in a root written before it.
const DATASETS: &[u8] = b"!datasets";

/// The prefix of the root's omap key `!wiping <dataset key>`, present while
/// a wipe removes the dataset's log segments: segment 0 missing while the
/// dataset is registered is a wipe under way only with it ([`head_lost`]).
pub(crate) const WIPING: &str = "!wiping ";

/// Whether the log of `key` lost its segment 0 behind fieldstore's back:
/// the dataset is still registered in the root, and no wipe marked it as
/// being wiped ([`WIPING`]; a wipe removes segment 0, then the
/// registration). One omap read of the root, paid only when segment 0 is
/// missing.
pub(crate) fn head_lost(pool: &Pool, key: &DatasetKey) -> Result<bool> {
    let k = key.to_string();
    let wiping = format!("{WIPING}{k}");
    let v = pool
        .omap_get(ROOT, &[k.as_bytes(), wiping.as_bytes()])
        .or_missing(|| format!("reading {}", pool.what(ROOT)))?;
    Ok(v.is_some_and(|v| v.len() == 1 && v[0].0 == k.as_bytes()))
}

/// Register a dataset in the root object's omap (after its first flush, so
/// that a dataset is listed once something in it is visible): set the
/// entry only if it is absent (a missing key compares equal to the empty
/// value; stored values are never empty), adding 1 to the root's count
/// ([`DATASETS`]) in the same operation unless the entry is set again
/// after it was lost (`lost`: the count still counts it). Whether this
/// call set it.
pub(crate) fn register(pool: &Pool, object: &str, key: &DatasetKey, lost: bool) -> Result<bool> {
    let k = key.to_string();
    let what = || format!("registering dataset {key} in {}", pool.what(ROOT));
    let registered = |pool: &Pool| -> Result<Option<Vec<u8>>> {
        let v = pool
            .omap_get(ROOT, &[k.as_bytes()])
            .or_missing(|| format!("reading {}", pool.what(ROOT)))?;
        Ok(v.and_then(|mut v| v.pop()).map(|(_, v)| v))
    };
    let mut current = registered(pool)?;
    if current.is_none() {
        let mut op = WriteOp::new()?;
        op.omap_cmp_eq(k.as_bytes(), b"");
        op.omap_set(&[(k.as_bytes(), object.as_bytes())]);
        if !lost {
            count(&mut op, DATASETS, "1");
        }
        match pool.operate(ROOT, &op) {
            Ok(()) => return Ok(true),
            Err(e) if e == ECANCELED || e == ENOENT => current = registered(pool)?,
            Err(e) => return Err(e.error(what())),
        }
        if current.is_none() {
            // The root object did not exist yet (cmp on a missing object
            // fails): create it by setting the entry (then count it).
            let mut op = WriteOp::new()?;
            op.omap_set(&[(k.as_bytes(), object.as_bytes())]);
            if !lost {
                count(&mut op, DATASETS, "1");
            }
            pool.operate(ROOT, &op).map_err(|e| e.error(what()))?;
            return Ok(true);
        }
    }
    match current {
        Some(v) if v == object.as_bytes() => Ok(false),
        Some(v) => Err(Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "dataset {key} is registered in {} as object '{}', not '{object}'",
                pool.what(ROOT),
                String::from_utf8_lossy(&v)
            ),
        )),
        None => Ok(false),
    }
}

/// Remove the root's entry `key` (a dataset key's canonical form) and the
/// marks `also` in one operation, which takes 1 from the root's count
/// ([`DATASETS`]) if the entry was there. Whether the root exists.
pub(crate) fn unregister(pool: &Pool, key: &str, also: &[&[u8]]) -> Result<bool> {
    let mut keys = vec![key.as_bytes()];
    keys.extend_from_slice(also);
    for present in [true, false] {
        let mut op = WriteOp::new()?;
        if present {
            op.omap_cmp_gt(key.as_bytes(), b"");
            count(&mut op, DATASETS, "-1");
        }
        op.omap_rm_keys(&keys);
        match pool.operate(ROOT, &op) {
            Ok(()) => return Ok(true),
            Err(e) if e == ENOENT => return Ok(false),
            Err(e) if e == ECANCELED && present => {}
            Err(e) => {
                let what = format!("unregistering {key} from {}", pool.what(ROOT));
                return Err(append_error(e, what));
            }
        }
    }
    Ok(true)
}
