//! A store that stops its own process (SIGSTOP, every thread) right after
//! a writer's store flush returned, before the catalogue publishes the
//! flush: a writer paused between the two steps, as a VM paused or a
//! process swapped out would be, for the test to resume (SIGCONT) whenever
//! it likes. Everything else is the wrapped store's.

use std::sync::Arc;

use fieldstore::{
    CollocationKey, DatasetKey, FieldLocation, Result, Store, StoreMaintenance, StoreWriter,
};

/// `inner`, whose writers stop the process after each store flush.
#[derive(Debug)]
pub(crate) struct StopAfterStoreFlush(pub(crate) Arc<dyn Store>);

struct Writer(Box<dyn StoreWriter>);

/// Stop this process with SIGSTOP (sent by `kill`, so that no signal
/// crate is needed): it goes on when someone sends SIGCONT.
pub(crate) fn stop_self() {
    let _ = std::process::Command::new("kill")
        .args(["-STOP", &std::process::id().to_string()])
        .status();
}

impl Store for StopAfterStoreFlush {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(Writer(self.0.writer(dataset)?)))
    }
    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        self.0.read(location, buf)
    }
    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        self.0.read_into(location, out)
    }
    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        self.0.read_range(location, offset, out)
    }
    fn prefetch(&self, locations: &[FieldLocation]) {
        self.0.prefetch(locations)
    }
    fn scheme(&self) -> &'static str {
        self.0.scheme()
    }
    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        self.0.maintenance()
    }
}

impl StoreWriter for Writer {
    fn archive(&mut self, collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        self.0.archive(collocation, data)
    }
    fn flush(&mut self) -> Result<()> {
        self.0.flush()?;
        stop_self();
        Ok(())
    }
    fn indexed(&mut self) {
        self.0.indexed()
    }
    fn abandon(&mut self) {
        self.0.abandon()
    }
    fn confirm_published(&mut self) -> Result<()> {
        self.0.confirm_published()
    }
}
