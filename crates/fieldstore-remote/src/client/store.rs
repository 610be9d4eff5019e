//! The store half of `type: remote`: fields go to the catalogue's store
//! server, reads to the store server each location names.

use std::sync::{Arc, Mutex};

use fieldstore_core::store::read_into_by_copy;
use fieldstore_core::{
    CollocationKey, DatasetKey, Error, FieldLocation, Result, Store, StoreMaintenance, StoreWriter,
};

use super::link::Link;
use super::{lock, Remote};

/// Store servers, reached through a [`Remote`] session.
#[derive(Debug)]
pub struct RemoteStore(pub(crate) Arc<Remote>);

impl RemoteStore {
    /// The store half of `remote`.
    pub fn new(remote: Arc<Remote>) -> RemoteStore {
        RemoteStore(remote)
    }
}

impl Store for RemoteStore {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(RemoteStoreWriter(self.0.link(dataset)?)))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        self.0.read(location, buf)
    }

    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        read_into_by_copy(self, location, out)
    }

    /// Reads just the range: the store server reads any range of a
    /// location it handed out.
    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        let part = location.range(offset, out.len() as u64)?;
        let mut buf = Vec::new();
        self.0.read(&part, &mut buf)?;
        if buf.len() != out.len() {
            return Err(Error::corrupt(format!(
                "{location}: read {} bytes of a range of {}",
                buf.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&buf);
        Ok(())
    }

    /// Nothing: each read is one request already.
    fn prefetch(&self, _locations: &[FieldLocation]) {}

    fn scheme(&self) -> &'static str {
        "fdb"
    }

    /// None: a store server's data is managed through its catalogue server.
    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        None
    }
}

/// One dataset's store writer: its half of the dataset's [`Link`].
struct RemoteStoreWriter(Arc<Mutex<Link>>);

impl StoreWriter for RemoteStoreWriter {
    fn archive(&mut self, collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        lock(&self.0).archive(collocation, data)
    }

    fn flush(&mut self) -> Result<()> {
        lock(&self.0).flush_store()
    }

    fn indexed(&mut self) {}

    /// Nothing to give back here: the server drops what a flush did not
    /// make visible when the logical client stops.
    fn abandon(&mut self) {}
}
