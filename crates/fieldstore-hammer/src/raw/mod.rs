//! Raw bandwidth, IOR-style (`--raw`, `--scenario raw`): the ceiling the
//! store's backend can reach, measured with none of the store in between,
//! over the same backend the store writes its field bytes to — POSIX
//! files, DAOS byte arrays, RADOS objects or S3 objects (one per transfer:
//! S3 writes whole objects).
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
//! page cache is dropped before the reads with `--drop-caches` (root only;
//! the report says whether it was). Every transfer carries its own offset in its first 8
//! bytes, and every read checks it: a read that returns other bytes, or
//! fewer, is a failure, not bandwidth.

mod daos;
mod posix;
mod rados;
mod s3;
mod target;

use std::time::Instant;

use fieldstore::{Config, Error, ErrorKind, Result, StoreKind};
use fieldstore_daos::client::Daos;
use fieldstore_daos::DaosConfig;
use fieldstore_rados::RadosConfig;
use serde::{Deserialize, Serialize};

use crate::payload::Generator;
use crate::result::ProcResult;
use crate::store_spec::StoreSpec;
use crate::trace::Ops;

use daos::DaosTarget;
pub use daos::DAOS_CONTAINER;
pub(crate) use daos::{daos_container, name_hash};
use posix::PosixTarget;
use rados::RadosTarget;
use s3::S3Target;
pub use target::RawTarget;

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
            Ok(Box::new(PosixTarget::new(dir)?))
        }
        StoreKind::Daos => Ok(Box::new(DaosTarget::open(&DaosConfig::from_value(
            config.backend("daos"),
        )?)?)),
        StoreKind::Rados => Ok(Box::new(RadosTarget::open(&RadosConfig::from_value(
            config.backend("rados"),
        )?)?)),
        StoreKind::S3 => Ok(Box::new(S3Target::open(
            &fieldstore_s3::S3Config::from_value(config.backend("s3"))?,
        )?)),
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
