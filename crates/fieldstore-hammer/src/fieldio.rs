//! Field I/O (`--fieldio`, `--scenario fieldio`): the workload of ECMWF's
//! Field I/O benchmark (ecmwf-projects/daos-tests, `src/field_io`, its
//! "simplified KVs" variant), the raw DAOS pattern FDB's DAOS backends were
//! designed from — driven through fieldstore's libdaos binding, with the
//! hammer's keys, barrier, window and report, so that the DAOS backend's
//! RPCs and bandwidth can be shown beside it.
//!
//! The pattern, per field, in one container of the store's pool:
//! - **write**: get the field's *index key* (the key without step, level
//!   and param: class … levtype and `number`) from the **main KV**, shared
//!   by every process; when missing, put the OID of a new **index KV**
//!   under it (a process's members are its own, so index KVs are private
//!   to their process); write the field into **its own byte array** (OID
//!   derived from the full key); put the array's OID and length into the
//!   index KV under the *store key* (step, levelist, param).
//! - **read**: get the index key from the main KV, the store key from the
//!   index KV, then read the array — every field found by querying the
//!   KVs, nothing cached between fields, as Field I/O does.
//!
//! Differences from the C original, all in its favour or neutral: arrays
//! are opened with their attributes (local) rather than created
//! (`daos_array_create`, one RPC), OIDs come from a 64-bit hash of the key
//! rather than an MD5 UUID, and a value is fetched with one `kv_get` when
//! the buffer is large enough (Field I/O asks for the size first).

use std::time::Instant;

use fieldstore::{Error, Result, StoreKind};
use fieldstore_daos::client::{Container, Daos, Kv};
use fieldstore_daos::ffi::{DaosObjId, DAOS_OT_ARRAY_BYTE, DAOS_OT_KV_HASHED};
use fieldstore_daos::DaosConfig;

use crate::payload::{self, Check, Generator, Identity};
use crate::raw::{config_of, daos_container, name_hash};
use crate::result::ProcResult;
use crate::store_spec::StoreSpec;
use crate::task::Task;
use crate::trace::Ops;

/// The container Field I/O writes to (created on first use, destroyed by
/// [`remove_all`]).
pub const CONTAINER: &str = "fieldstore-hammer-fieldio";

/// High user bits of every OID Field I/O generates ("FIO").
const OID_HI: u32 = 0x4649_4f00;

/// An open Field I/O container.
pub(crate) struct FieldIo {
    daos: &'static Daos,
    cont: Container,
    kv_class: u32,
    array_class: u32,
    chunk: u64,
}

/// The DAOS section of the store's config, or why Field I/O cannot run.
fn daos_config(store: &StoreSpec) -> Result<DaosConfig> {
    let config = config_of(store)?;
    if config.store != StoreKind::Daos {
        return Err(Error::invalid_input(format!(
            "--fieldio is DAOS's raw pattern: {} does not store field bytes in DAOS \
             (give a config with `store: daos`)",
            config.source
        )));
    }
    DaosConfig::from_value(config.backend("daos"))
}

/// Open (creating) the Field I/O container of the store's pool.
///
/// # Errors
/// `InvalidInput` when the store is not on DAOS; DAOS errors.
pub(crate) fn open(store: &StoreSpec) -> Result<FieldIo> {
    let dc = daos_config(store)?;
    let (daos, cont) = daos_container(&dc, CONTAINER)?;
    Ok(FieldIo {
        daos,
        cont,
        kv_class: dc.kv_class,
        array_class: dc.array_class,
        chunk: dc.chunk_size,
    })
}

/// Destroy the Field I/O container (after a run's reads).
///
/// # Errors
/// DAOS errors.
pub fn remove_all(store: &StoreSpec) -> Result<()> {
    let dc = daos_config(store)?;
    let daos = Daos::get(dc.library.as_deref())?;
    let pool = daos.connect(&dc.store_pool)?;
    match pool.destroy(CONTAINER) {
        Err(e) if !e.is(fieldstore_daos::ffi::der::NONEXIST) => Err(e.into()),
        _ => Ok(()),
    }
}

fn oid_bytes(oid: DaosObjId) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&oid.hi.to_le_bytes());
    b[8..].copy_from_slice(&oid.lo.to_le_bytes());
    b
}

fn oid_of(b: &[u8]) -> Option<DaosObjId> {
    Some(DaosObjId {
        hi: u64::from_le_bytes(b.get(..8)?.try_into().ok()?),
        lo: u64::from_le_bytes(b.get(8..16)?.try_into().ok()?),
    })
}

/// Index key and store key of a field.
fn keys(task: &Task, step: u32, member: u32, level: u32, param: u32) -> (String, String) {
    let mut index = task
        .base
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    index.push_str(&format!(",number={member}"));
    (index, format!("step={step},levelist={level},param={param}"))
}

impl FieldIo {
    /// Would-be RPCs so far (the stand-in counts them).
    pub(crate) fn rpcs(&self) -> Option<u64> {
        self.daos.standin_rpcs()
    }

    fn main_kv(&self) -> Result<Kv<'_>> {
        let oid = self
            .cont
            .generate_oid(OID_HI, 0, DAOS_OT_KV_HASHED, self.kv_class)?;
        Ok(self.cont.kv(oid, true)?)
    }

    /// Write every field of `task` (the write role's fields and bytes).
    ///
    /// # Errors
    /// DAOS errors; a corrupt main-KV entry.
    pub(crate) fn write(
        &self,
        task: &Task,
        gen: &mut Generator,
        ops: &mut Ops,
        r: &mut ProcResult,
    ) -> Result<()> {
        let main = self.main_kv()?;
        let mut buf = Vec::with_capacity(64);
        let date = task.date();
        for &step in &task.steps {
            for &member in &task.members {
                for &level in &task.levels {
                    for &param in &task.params {
                        let t = Instant::now();
                        let id = Identity::new(date, step, member, level, param);
                        let data = gen.field(&id);
                        let (index_key, store_key) = keys(task, step, member, level, param);
                        let t = ops.add("encode", t);
                        let index_oid = if main.get_into(&index_key, &mut buf)? {
                            oid_of(&buf).ok_or_else(|| {
                                Error::corrupt(format!("main KV entry {index_key}: not an OID"))
                            })?
                        } else {
                            let oid = self.cont.generate_oid(
                                OID_HI,
                                name_hash(&index_key),
                                DAOS_OT_KV_HASHED,
                                self.kv_class,
                            )?;
                            main.put(&index_key, &oid_bytes(oid))?;
                            oid
                        };
                        let t = ops.add("main kv", t);
                        let index = self.cont.kv(index_oid, true)?;
                        let full = format!("{index_key},{store_key}");
                        let array_oid = self.cont.generate_oid(
                            OID_HI,
                            name_hash(&full),
                            DAOS_OT_ARRAY_BYTE,
                            self.array_class,
                        )?;
                        let array = self.cont.array(array_oid, self.chunk, true)?;
                        array.write(0, data)?;
                        drop(array);
                        let t = ops.add("array write", t);
                        let mut entry = oid_bytes(array_oid).to_vec();
                        entry.extend_from_slice(&(data.len() as u64).to_le_bytes());
                        index.put(&store_key, &entry)?;
                        ops.add("index kv", t);
                        r.fields += 1;
                        r.bytes += data.len() as u64;
                        ops.io(data.len() as u64);
                    }
                }
            }
        }
        Ok(())
    }

    /// Read every field of `task` back by querying the KVs.
    ///
    /// # Errors
    /// DAOS errors; corrupt KV entries.
    pub(crate) fn read(&self, task: &Task, ops: &mut Ops, r: &mut ProcResult) -> Result<()> {
        let main = self.main_kv()?;
        let mut buf = Vec::with_capacity(64);
        let mut data = Vec::new();
        r.expected = task.fields();
        let date = task.date();
        for &step in &task.steps {
            for &member in &task.members {
                for &level in &task.levels {
                    for &param in &task.params {
                        let (index_key, store_key) = keys(task, step, member, level, param);
                        let t = Instant::now();
                        if !main.get_into(&index_key, &mut buf)? {
                            ops.add("main kv", t);
                            r.missing += 1;
                            continue;
                        }
                        let index_oid = oid_of(&buf).ok_or_else(|| {
                            Error::corrupt(format!("main KV entry {index_key}: not an OID"))
                        })?;
                        let t = ops.add("main kv", t);
                        let index = self.cont.kv(index_oid, false)?;
                        let found = index.get_into(&store_key, &mut buf)?;
                        let t = ops.add("index kv", t);
                        if !found {
                            r.missing += 1;
                            continue;
                        }
                        let (Some(array_oid), Some(len)) = (
                            oid_of(&buf),
                            buf.get(16..24)
                                .and_then(|b| b.try_into().ok())
                                .map(u64::from_le_bytes),
                        ) else {
                            return Err(Error::corrupt(format!(
                                "index KV entry {index_key} {store_key}: not an OID and a length"
                            )));
                        };
                        data.resize(
                            usize::try_from(len).map_err(|_| Error::corrupt("field length"))?,
                            0,
                        );
                        let n = self
                            .cont
                            .array(array_oid, self.chunk, false)?
                            .read(0, &mut data)?;
                        ops.add("array read", t);
                        if n < len {
                            r.missing += 1;
                            continue;
                        }
                        r.fields += 1;
                        r.bytes += len;
                        ops.io(len);
                        if task.check != Check::None {
                            let id = Identity::new(date, step, member, level, param);
                            if let Err(e) = payload::verify(&data, &id, task.check) {
                                r.check_failures += 1;
                                r.first_failure
                                    .get_or_insert_with(|| format!("{index_key} {store_key}: {e}"));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
