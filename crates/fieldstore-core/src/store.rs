//! The `Store` trait: where field bytes live.

use std::fmt::Debug;

use crate::maintenance::{unsupported, Claim, Item, Removed, Unit};
use crate::{CollocationKey, DatasetKey, FieldLocation, Result};

/// Bulk field bytes.
///
/// # Contract
/// - [`StoreWriter::archive`] copies the bytes before it returns and gives
///   back a [`FieldLocation`] that stays valid for as long as the field is
///   indexed anywhere; it is not readable through [`Store::read`] until
///   [`StoreWriter::flush`] has returned.
/// - [`StoreWriter::flush`] returns once every byte archived through that
///   writer is on stable storage. The catalogue indexes a location only after
///   the store's flush returned, so a visible index entry never points at
///   bytes that a crash could lose.
/// - Stored bytes are immutable. A damaged field is reported as
///   [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt), never
///   returned as data.
/// - Writers of different processes and threads never coordinate: each gets
///   its own writer with its own files or objects.
///
/// # Contract of the data-management methods
/// A *unit* is the file or object a location's URI names (`uri` without
/// offset and length). Units belong to one writer, or to one field.
/// - [`Store::claim`] holds a unit only when no live writer appends to it
///   (else [`Claim::InUse`]); while held, none can start to (see
///   [`HeldUnit`](crate::maintenance::HeldUnit)). Removing a missing unit
///   is not an error. The caller removes only units that no newest entry
///   points into *by a reading of the catalogue taken after the claim*.
/// - [`Store::wipe`] deletes everything the store keeps for a dataset that
///   it can find from the dataset and the given units, after the catalogue
///   has hidden the dataset.
/// - The defaults return `Unsupported` naming the operation and the
///   backend (`orphans`: none).
pub trait Store: Send + Sync + Debug + 'static {
    /// A writer for fields of one dataset, private to the caller.
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>>;

    /// Read a field's bytes into `buf` (replacing its contents).
    ///
    /// # Errors
    /// `NotFound` if the location names nothing; `Corrupt` if the bytes fail
    /// their checksum.
    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()>;

    /// Read a field's bytes into `out`, which is exactly `location.length`
    /// bytes long: for readers whose caller's buffer holds the whole field,
    /// so that the bytes are copied once (file → caller), not twice.
    /// On error `out` holds no field bytes the caller may use (the POSIX
    /// store zeroes it when the checksum fails). Default: [`Store::read`]
    /// into a temporary buffer, then copied — correct, but an allocation
    /// per field, so readers call it only when
    /// [`Store::reads_into_natively`] says the store does better.
    ///
    /// # Errors
    /// As [`Store::read`]; `Corrupt` if the field's length is not
    /// `out.len()`.
    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        let mut buf = Vec::new();
        self.read(location, &mut buf)?;
        if buf.len() != out.len() {
            return Err(crate::Error::corrupt(format!(
                "{location}: read {} bytes, the index says {}",
                buf.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&buf);
        Ok(())
    }

    /// Whether [`Store::read_into`] reads straight into the caller's buffer
    /// (the POSIX store: `pread`), so that readers should prefer it for a
    /// field that fits. Default: `false`.
    fn reads_into_natively(&self) -> bool {
        false
    }

    /// A hint: these fields will be read soon, in this order. A store may
    /// start fetching them so that later [`Store::read`]s find them close
    /// (the POSIX store asks the kernel to read them ahead, which turns
    /// scattered reads of one field in ten into reads in flight together).
    /// It must not fail, block for long, or change what is read. Default:
    /// nothing.
    fn prefetch(&self, _locations: &[FieldLocation]) {}

    /// The URI scheme of the locations this store writes (`file`, `memory`).
    fn scheme(&self) -> &'static str;

    /// What the store knows of a unit, cheaply (no per-field remote call).
    ///
    /// # Errors
    /// `InvalidInput` for a URI of another store; I/O errors; `Unsupported`.
    fn inspect(&self, uri: &str) -> Result<Unit> {
        let _ = uri;
        Err(unsupported::<Self>("purge"))
    }

    /// Hold a unit for removal, unless a live writer still appends to it.
    ///
    /// # Errors
    /// `InvalidInput` for a URI of another store; I/O errors; `Unsupported`.
    fn claim(&self, uri: &str) -> Result<Claim<'_>> {
        let _ = uri;
        Err(unsupported::<Self>("purge"))
    }

    /// Remove a unit unless a live writer still appends to it: a claim and
    /// its removal at once, for callers that know nothing can point into it
    /// (a wiped dataset's units).
    ///
    /// # Errors
    /// As [`Store::claim`]; I/O errors.
    fn remove(&self, uri: &str) -> Result<Removed> {
        Ok(match self.claim(uri)? {
            Claim::Held(h) => {
                h.remove()?;
                Removed::Done
            }
            Claim::InUse => Removed::InUse,
            Claim::Missing => Removed::Missing,
        })
    }

    /// Units of `dataset` that no entry points into (`referenced` holds
    /// every unit entries point into) and that no live writer uses: what a
    /// killed writer left. Default: none (a store that cannot enumerate its
    /// units).
    ///
    /// # Errors
    /// I/O errors.
    fn orphans(
        &self,
        dataset: &DatasetKey,
        referenced: &std::collections::HashSet<String>,
    ) -> Result<Vec<Unit>> {
        let _ = (dataset, referenced);
        Ok(Vec::new())
    }

    /// What a wipe of the whole dataset deletes from the store: `units` are
    /// every unit the dataset's entries point into.
    ///
    /// # Errors
    /// I/O errors; `Unsupported`.
    fn inventory(&self, dataset: &DatasetKey, units: &[String]) -> Result<Vec<Item>> {
        let _ = (dataset, units);
        Err(unsupported::<Self>("wipe"))
    }

    /// Delete what the store keeps for `dataset` (`units`: as for
    /// [`Store::inventory`]), once the catalogue has hidden it.
    ///
    /// # Errors
    /// I/O errors; `Unsupported`.
    fn wipe(&self, dataset: &DatasetKey, units: &[String]) -> Result<()> {
        let _ = (dataset, units);
        Err(unsupported::<Self>("wipe"))
    }
}

/// One writer's session with a [`Store`] for one dataset.
pub trait StoreWriter: Send {
    /// Store `data` as one field of `collocation`.
    fn archive(&mut self, collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation>;

    /// Make everything archived so far durable.
    fn flush(&mut self) -> Result<()>;

    /// The catalogue has made everything flushed so far visible (the handle
    /// calls this after the catalogue's flush returned). A store whose units
    /// are not held by an open file or object may count them in use until
    /// here, so that a purge cannot take a unit flushed but not yet indexed
    /// for an orphan. Default: nothing.
    fn indexed(&mut self) {}

    /// The flush that just failed made nothing visible, for certain (the
    /// store's own flush failed, or the catalogue writer says so:
    /// [`CatalogueWriter::last_flush_invisible`](crate::CatalogueWriter::last_flush_invisible)):
    /// the fields archived since the last [`StoreWriter::indexed`] will never
    /// be visible. Give back their space now, if only this writer could:
    /// after a full disk, the bytes of a failed flush must not keep the file
    /// system full. The handle drops the writer afterwards. Never called
    /// when entries may be visible. Default: nothing — for stores whose
    /// units hold one field each (or one writer's fields only), which become
    /// orphans a purge removes once the writer is gone.
    fn abandon(&mut self) {}
}
