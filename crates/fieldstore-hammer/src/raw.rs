//! Raw bandwidth, IOR-style (`--raw`, `--scenario raw`): the ceiling the
//! store's backend can reach, measured with none of the store in between,
//! over the same backend the store writes its field bytes to — POSIX
//! files, DAOS byte arrays or RADOS objects.
//!
//! Two patterns, as IO500 runs IOR:
//! - **easy**: one object per process, written sequentially in transfers of
//!   `--raw-transfer` bytes (IOR `-F`, file per process);
//! - **hard**: one object shared by every process, written in 47 008-byte
//!   transfers interleaved between the processes (transfer `i` of process
//!   `p` of `P` at offset `(i·P + p) · 47008`), as IO500's ior-hard.
//!
//! IOR's rules: a process makes its writes durable before its window ends
//! (`-e`: `fsync` on POSIX; a DAOS array write or a RADOS write returns
//! committed, so there is nothing more to do); reads are reordered so that
//! no process reads what it wrote (`-C`: process `p` reads process
//! `(p+1) mod P`'s transfers; with one process that is unavoidable); the
//! page cache is dropped before the reads (root only; the report says
//! whether it was). Every transfer carries its own offset in its first 8
//! bytes, and every read checks it: a read that returns other bytes, or
//! fewer, is a failure, not bandwidth.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use fieldstore::{Config, Error, ErrorKind, Result, StoreKind};
use fieldstore_daos::client::{Container, Daos};
use fieldstore_daos::ffi::{DaosObjId, DAOS_OT_ARRAY_BYTE};
use fieldstore_daos::DaosConfig;
use fieldstore_rados::{RadosConfig, RawObjects};
use serde::{Deserialize, Serialize};

use crate::payload::Generator;
use crate::worker::{Ops, ProcResult, StoreSpec};

/// IO500's ior-hard transfer size, bytes.
pub const HARD_TRANSFER: u64 = 47_008;

/// Which IOR pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// One object per process, sequential transfers.
    Easy,
    /// One shared object, interleaved 47 008-byte transfers.
    Hard,
}

/// One process's raw I/O in one phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RawTask {
    /// The pattern.
    pub pattern: Pattern,
    /// Bytes per transfer.
    pub transfer: u64,
    /// Transfers per process.
    pub transfers: u64,
    /// Processes of the phase (the interleave of the hard pattern).
    pub procs: u32,
    /// Whose transfers this process writes or reads (reads: the next
    /// process's, IOR's `-C`).
    pub owner: u32,
}

impl RawTask {
    /// The object this task's transfers go to.
    pub fn object(&self) -> String {
        match self.pattern {
            Pattern::Easy => format!("{OBJECT_PREFIX}easy.{}", self.owner),
            Pattern::Hard => format!("{OBJECT_PREFIX}hard"),
        }
    }

    /// The offset of transfer `i`.
    pub fn offset(&self, i: u64) -> u64 {
        match self.pattern {
            Pattern::Easy => i * self.transfer,
            Pattern::Hard => (i * u64::from(self.procs) + u64::from(self.owner)) * self.transfer,
        }
    }
}

/// Every raw object's name starts with this: they share the store's
/// directory, pool or container with nothing else of that name.
pub const OBJECT_PREFIX: &str = ".hammer-raw.";

/// Where raw objects live: bytes at offsets of named objects.
///
/// # Contract
/// `write` stores the bytes at the offset (creating the object); once
/// `sync` of that object returns, they are durable. `read` returns how
/// many bytes exist at the offset (fewer at the end). `remove` of a missing
/// object succeeds. Object names are [`OBJECT_PREFIX`]-prefixed by the
/// caller.
pub trait RawTarget {
    /// What and where, for the report.
    fn describe(&self) -> String;
    /// Write `data` at `offset` of `object`.
    ///
    /// # Errors
    /// The backend's.
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()>;
    /// Make `object`'s writes durable.
    ///
    /// # Errors
    /// The backend's.
    fn sync(&mut self, object: &str) -> Result<()>;
    /// Read at `offset` of `object` into `buf`; returns the bytes read.
    ///
    /// # Errors
    /// The backend's.
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize>;
    /// Remove `object`.
    ///
    /// # Errors
    /// The backend's.
    fn remove(&mut self, object: &str) -> Result<()>;
    /// Would-be RPCs so far (the DAOS stand-in counts them), else `None`.
    fn rpcs(&self) -> Option<u64> {
        None
    }
}

/// Files in the store's directory (its first root).
struct PosixTarget {
    dir: PathBuf,
    files: HashMap<String, File>,
}

impl PosixTarget {
    fn file(&mut self, object: &str) -> Result<&File> {
        if !self.files.contains_key(object) {
            let path = self.dir.join(object);
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| Error::io(path.display(), e))?;
            self.files.insert(object.to_string(), f);
        }
        self.files
            .get(object)
            .ok_or_else(|| Error::internal("raw file missing"))
    }
}

impl RawTarget for PosixTarget {
    fn describe(&self) -> String {
        format!("POSIX files in {}", self.dir.display())
    }
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()> {
        let dir = self.dir.clone();
        self.file(object)?
            .write_all_at(data, offset)
            .map_err(|e| Error::io(dir.join(object).display(), e))
    }
    fn sync(&mut self, object: &str) -> Result<()> {
        let dir = self.dir.clone();
        self.file(object)?
            .sync_all()
            .map_err(|e| Error::io(dir.join(object).display(), e))
    }
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let dir = self.dir.clone();
        let f = self.file(object)?;
        let mut n = 0;
        while n < buf.len() {
            match f.read_at(&mut buf[n..], offset + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(dir.join(object).display(), e)),
            }
        }
        Ok(n)
    }
    fn remove(&mut self, object: &str) -> Result<()> {
        self.files.remove(object);
        let path = self.dir.join(object);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path.display(), e)),
            _ => Ok(()),
        }
    }
}

/// Byte arrays in a container of the store's pool, through fieldstore's
/// libdaos binding, chunked as the store's field arrays are.
struct DaosTarget {
    daos: &'static Daos,
    cont: Container,
    class: u32,
    chunk: u64,
    oids: HashMap<String, DaosObjId>,
}

/// The container raw arrays go to (created on first use).
pub const DAOS_CONTAINER: &str = "fieldstore-hammer-raw";

/// Open (creating if missing) container `label` of the pool `config`'s
/// store uses.
pub(crate) fn daos_container(
    config: &DaosConfig,
    label: &str,
) -> Result<(&'static Daos, Container)> {
    let daos = Daos::get(config.library.as_deref())?;
    let pool = Arc::new(daos.connect(&config.store_pool)?);
    let cont = match pool.open(label, true) {
        Ok(c) => c,
        Err(e) if e.is(fieldstore_daos::ffi::der::NONEXIST) => {
            match pool.create(label, config.container_redundancy) {
                // Another process created it first.
                Err(e) if !e.is(fieldstore_daos::ffi::der::EXIST) => return Err(e.into()),
                _ => {}
            }
            pool.open(label, true)?
        }
        Err(e) => return Err(e.into()),
    };
    Ok((daos, cont))
}

/// The same 64-bit id for a name in every process (FNV-1a).
pub(crate) fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl DaosTarget {
    fn oid(&mut self, object: &str) -> Result<DaosObjId> {
        if let Some(o) = self.oids.get(object) {
            return Ok(*o);
        }
        // Generated, not allocated: every process derives the same OID
        // from the name (the high user bits keep them apart from the
        // store's allocated ones, which have none).
        let oid = self.cont.generate_oid(
            0x5241_5700,
            name_hash(object),
            DAOS_OT_ARRAY_BYTE,
            self.class,
        )?;
        self.oids.insert(object.to_string(), oid);
        Ok(oid)
    }
}

impl RawTarget for DaosTarget {
    fn describe(&self) -> String {
        format!(
            "DAOS byte arrays in {} (chunk {} B, library {})",
            self.cont.name(),
            self.chunk,
            self.daos.path()
        )
    }
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()> {
        let oid = self.oid(object)?;
        Ok(self
            .cont
            .array(oid, self.chunk, true)?
            .write(offset, data)?)
    }
    fn sync(&mut self, _object: &str) -> Result<()> {
        // An array write returns once the engines hold it durably.
        Ok(())
    }
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let oid = self.oid(object)?;
        let n = self.cont.array(oid, self.chunk, false)?.read(offset, buf)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX).min(buf.len()))
    }
    fn remove(&mut self, object: &str) -> Result<()> {
        let oid = self.oid(object)?;
        match self.cont.array(oid, self.chunk, true)?.destroy() {
            Err(e) if !e.is(fieldstore_daos::ffi::der::NONEXIST) => Err(e.into()),
            _ => Ok(()),
        }
    }
    fn rpcs(&self) -> Option<u64> {
        self.daos.standin_rpcs()
    }
}

/// Objects in the store's pool and namespace. A RADOS object has a
/// maximum size (`osd_max_object_size`), so a raw object is striped over
/// RADOS objects of the config's `object_size`, as the store's data objects
/// roll over: `<name>.<n>` holds bytes `[n·size, (n+1)·size)`.
struct RadosTarget {
    objects: RawObjects,
    pool: String,
    stripe: u64,
    /// Stripes written, per raw object (for `remove`).
    written: HashMap<String, u64>,
}

/// The pieces of `[offset, offset + len)` over stripes of `stripe` bytes:
/// (stripe, offset in it, offset in the caller's buffer, length).
fn stripe_pieces(stripe: u64, offset: u64, len: usize) -> Vec<(u64, u64, usize, usize)> {
    let mut out = Vec::new();
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let (n, within) = (at / stripe, at % stripe);
        let take = usize::try_from(stripe - within).map_or(len - done, |s| s.min(len - done));
        out.push((n, within, done, take));
        done += take;
    }
    out
}

impl RadosTarget {
    fn pieces(&self, offset: u64, len: usize) -> Vec<(u64, u64, usize, usize)> {
        stripe_pieces(self.stripe, offset, len)
    }
}

impl RawTarget for RadosTarget {
    fn describe(&self) -> String {
        format!(
            "RADOS objects in pool {} (striped over objects of {} B)",
            self.pool, self.stripe
        )
    }
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()> {
        for (n, within, at, len) in self.pieces(offset, data.len()) {
            self.objects
                .write(&format!("{object}.{n}"), within, &data[at..at + len])?;
            let w = self.written.entry(object.to_string()).or_default();
            *w = (*w).max(n + 1);
        }
        Ok(())
    }
    fn sync(&mut self, _object: &str) -> Result<()> {
        // A RADOS write is acknowledged once committed on every replica.
        Ok(())
    }
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut total = 0;
        for (n, within, at, len) in self.pieces(offset, buf.len()) {
            let got =
                match self
                    .objects
                    .read(&format!("{object}.{n}"), within, &mut buf[at..at + len])
                {
                    Err(e) if e.kind() == ErrorKind::NotFound => 0,
                    r => r?,
                };
            total += got;
            if got < len {
                break;
            }
        }
        Ok(total)
    }
    fn remove(&mut self, object: &str) -> Result<()> {
        // Stripes this process wrote, and beyond until one is missing
        // (another process may have written them).
        let known = self.written.remove(object).unwrap_or(0);
        let mut n = 0;
        loop {
            let name = format!("{object}.{n}");
            let mut probe = [0u8; 1];
            let exists = match self.objects.read(&name, 0, &mut probe) {
                Err(e) if e.kind() == ErrorKind::NotFound => false,
                r => {
                    r?;
                    true
                }
            };
            if !exists && n >= known {
                return Ok(());
            }
            self.objects.remove(&name)?;
            n += 1;
        }
    }
}

/// The configuration a store spec names (the hammer's schema is not
/// needed to find where bytes go).
pub(crate) fn config_of(store: &StoreSpec) -> Result<Config> {
    if let Some(c) = &store.config {
        Config::from_file(c)
    } else if let Some(root) = &store.root {
        Ok(Config::embedded(root))
    } else {
        Config::from_env()
    }
}

/// The raw target of the backend the store writes field bytes to.
///
/// # Errors
/// `InvalidInput` for a store that keeps its bytes in memory; the
/// backend's errors when it cannot be reached.
pub fn open(store: &StoreSpec) -> Result<Box<dyn RawTarget>> {
    let config = config_of(store)?;
    match config.store {
        StoreKind::File => {
            let dir = store.directory().ok_or_else(|| {
                Error::invalid_input("raw bandwidth on POSIX needs the store's directory")
            })?;
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
            Ok(Box::new(PosixTarget {
                dir,
                files: HashMap::new(),
            }))
        }
        StoreKind::Daos => {
            let dc = DaosConfig::from_value(config.backend("daos"))?;
            let (daos, cont) = daos_container(&dc, DAOS_CONTAINER)?;
            Ok(Box::new(DaosTarget {
                daos,
                cont,
                class: dc.array_class,
                chunk: dc.chunk_size,
                oids: HashMap::new(),
            }))
        }
        StoreKind::Rados => {
            let rc = RadosConfig::from_value(config.backend("rados"))?;
            Ok(Box::new(RadosTarget {
                objects: RawObjects::open(&rc)?,
                pool: rc.pool.clone(),
                stripe: rc.object_size.max(1),
                written: HashMap::new(),
            }))
        }
        _ => Err(Error::invalid_input(format!(
            "--raw measures the backend a store writes its bytes to; {} keeps them in memory",
            config.source
        ))),
    }
}

/// The payload of transfer `offset`: `base` with the offset in its first 8
/// bytes (little-endian), so a read can tell whose bytes it got.
fn stamp(buf: &mut [u8], offset: u64) {
    let n = buf.len().min(8);
    buf[..n].copy_from_slice(&offset.to_le_bytes()[..n]);
}

/// Set up a raw task before the barrier: the target and a buffer.
pub(crate) struct Prepared {
    target: Box<dyn RawTarget>,
    buf: Vec<u8>,
}

/// Open the target and make the transfer buffer (outside the window).
///
/// # Errors
/// As [`open`]; a transfer size of 0.
pub(crate) fn prepare(store: &StoreSpec, task: &RawTask) -> Result<Prepared> {
    if task.transfer == 0 || task.transfers == 0 {
        return Err(Error::invalid_input(
            "--raw-transfer and --raw-bytes must be at least 1",
        ));
    }
    let len = usize::try_from(task.transfer)
        .map_err(|_| Error::invalid_input("--raw-transfer too large"))?;
    Ok(Prepared {
        target: open(store)?,
        buf: Generator::synthetic(len),
    })
}

impl Prepared {
    /// Would-be RPCs so far.
    pub(crate) fn rpcs(&self) -> Option<u64> {
        self.target.rpcs()
    }

    /// The timed writes: every transfer, then `sync` (IOR `-e`).
    ///
    /// # Errors
    /// The backend's.
    pub(crate) fn write(
        &mut self,
        task: &RawTask,
        ops: &mut Ops,
        r: &mut ProcResult,
    ) -> Result<()> {
        let object = task.object();
        for i in 0..task.transfers {
            let off = task.offset(i);
            stamp(&mut self.buf, off);
            let t = Instant::now();
            self.target.write(&object, off, &self.buf)?;
            ops.add("write", t);
            r.fields += 1;
            r.bytes += task.transfer;
            ops.io(task.transfer);
        }
        let t = Instant::now();
        self.target.sync(&object)?;
        ops.add("sync", t);
        Ok(())
    }

    /// The timed reads of the owner's transfers, each checked.
    ///
    /// # Errors
    /// The backend's.
    pub(crate) fn read(&mut self, task: &RawTask, ops: &mut Ops, r: &mut ProcResult) -> Result<()> {
        let object = task.object();
        r.expected = task.transfers;
        for i in 0..task.transfers {
            let off = task.offset(i);
            let t = Instant::now();
            let n = self.target.read(&object, off, &mut self.buf)?;
            ops.add("read", t);
            if n as u64 != task.transfer {
                r.missing += 1;
                continue;
            }
            r.fields += 1;
            r.bytes += task.transfer;
            ops.io(task.transfer);
            let got = u64::from_le_bytes(self.buf[..8].try_into().unwrap_or([0; 8]));
            if self.buf.len() >= 8 && got != off {
                r.check_failures += 1;
                r.first_failure.get_or_insert_with(|| {
                    format!("{object} at {off}: holds the transfer written for offset {got}")
                });
            }
        }
        Ok(())
    }
}

/// Remove every raw object of a run of `procs` processes (after its reads).
///
/// # Errors
/// The backend's.
pub fn remove_all(store: &StoreSpec, procs: u32) -> Result<()> {
    let mut target = open(store)?;
    for p in 0..procs {
        target.remove(&format!("{OBJECT_PREFIX}easy.{p}"))?;
    }
    target.remove(&format!("{OBJECT_PREFIX}hard"))?;
    drop(target);
    let config = config_of(store)?;
    if config.store == StoreKind::Daos {
        // The container was the raw run's own: leave the pool as it was.
        let dc = DaosConfig::from_value(config.backend("daos"))?;
        let pool = Daos::get(dc.library.as_deref())?.connect(&dc.store_pool)?;
        match pool.destroy(DAOS_CONTAINER) {
            Err(e) if !e.is(fieldstore_daos::ffi::der::NONEXIST) => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// What the report says about the raw target.
pub fn describe(store: &StoreSpec) -> String {
    match open(store) {
        Ok(t) => t.describe(),
        Err(e) if e.kind() == ErrorKind::InvalidInput => e.to_string(),
        Err(e) => format!("unreachable: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_transfers_interleave_and_tile_the_shared_object() {
        let procs = 3;
        let mut offsets: Vec<u64> = (0..procs)
            .flat_map(|owner| {
                let t = RawTask {
                    pattern: Pattern::Hard,
                    transfer: HARD_TRANSFER,
                    transfers: 4,
                    procs,
                    owner,
                };
                (0..4).map(move |i| t.offset(i))
            })
            .collect();
        offsets.sort_unstable();
        let want: Vec<u64> = (0..12).map(|i| i * HARD_TRANSFER).collect();
        assert_eq!(offsets, want, "no gap, no overlap");
        let t = RawTask {
            pattern: Pattern::Hard,
            transfer: HARD_TRANSFER,
            transfers: 4,
            procs,
            owner: 1,
        };
        assert_eq!(t.offset(0), HARD_TRANSFER);
        assert_eq!(t.offset(1), 4 * HARD_TRANSFER);
        assert_eq!(t.object(), ".hammer-raw.hard");
    }

    /// RADOS raw objects are striped: a transfer across a stripe's end is
    /// split, each piece at its offset within its own object.
    #[test]
    fn rados_stripes_split_transfers_at_object_ends() {
        let pieces = stripe_pieces;
        assert_eq!(pieces(100, 0, 50), [(0, 0, 0, 50)]);
        assert_eq!(pieces(100, 80, 50), [(0, 80, 0, 20), (1, 0, 20, 30)]);
        assert_eq!(
            pieces(100, 250, 200),
            [(2, 50, 0, 50), (3, 0, 50, 100), (4, 0, 150, 50)]
        );
    }

    /// A read that gets bytes written for another offset, or too few, is
    /// counted as a failure or a missing transfer, not as bandwidth.
    #[test]
    fn reads_tell_wrong_and_short_transfers() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreSpec {
            config: None,
            root: Some(dir.path().to_path_buf()),
        };
        let task = RawTask {
            pattern: Pattern::Easy,
            transfer: 4096,
            transfers: 4,
            procs: 1,
            owner: 0,
        };
        let mut p = prepare(&store, &task).unwrap();
        let mut r = ProcResult::default();
        p.write(&task, &mut Ops::default(), &mut r).unwrap();
        assert_eq!(r.bytes, 4 * 4096);
        // Transfer 2 now holds transfer 1's bytes.
        let mut wrong = Generator::synthetic(4096);
        stamp(&mut wrong, 4096);
        p.target.write(&task.object(), 2 * 4096, &wrong).unwrap();
        let longer = RawTask {
            transfers: 5,
            ..task.clone()
        };
        let mut r = ProcResult::default();
        p.read(&longer, &mut Ops::default(), &mut r).unwrap();
        assert_eq!((r.fields, r.missing, r.check_failures), (4, 1, 1));
        assert_eq!(r.bytes, 4 * 4096);
        assert!(
            r.first_failure.as_deref().unwrap().contains("at 8192"),
            "{:?}",
            r.first_failure
        );
        remove_all(&store, 1).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
