//! Raw objects as DAOS byte arrays, through fieldstore's libdaos binding.

use std::collections::HashMap;
use std::sync::Arc;

use fieldstore::Result;
use fieldstore_daos::client::{Container, Daos};
use fieldstore_daos::ffi::{DaosObjId, DAOS_OT_ARRAY_BYTE};
use fieldstore_daos::DaosConfig;

use super::target::RawTarget;

/// Byte arrays in a container of the store's pool, through fieldstore's
/// libdaos binding, chunked as the store's field arrays are.
pub(crate) struct DaosTarget {
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
    /// Arrays in [`DAOS_CONTAINER`] of the pool `config`'s store uses.
    ///
    /// # Errors
    /// DAOS errors.
    pub(crate) fn open(config: &DaosConfig) -> Result<DaosTarget> {
        let (daos, cont) = daos_container(config, DAOS_CONTAINER)?;
        Ok(DaosTarget {
            daos,
            cont,
            class: config.array_class,
            chunk: config.chunk_size,
            oids: HashMap::new(),
        })
    }

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
