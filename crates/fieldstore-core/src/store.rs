//! The `Store` trait: where field bytes live.

use std::fmt::Debug;

use crate::error::{Error, Result};
use crate::key::{CollocationKey, DatasetKey};
use crate::location::FieldLocation;
use crate::maintenance::{Claim, Item, Removed, Unit};

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
///   [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt), never
///   returned as data.
/// - Writers of different processes and threads never coordinate: each gets
///   its own writer with its own files or objects.
///
/// The data-management side (units, orphans, wipe) is its own trait,
/// reached through [`Store::maintenance`], which answers `None` when the
/// store has none: "not supported" is a fact of the type.
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
    /// so that the bytes are copied once (storage → caller), not twice.
    /// Every store reads straight into `out` (`pread`, `rados_read`, a DAOS
    /// array read, a copy from memory). On error `out` holds no field bytes
    /// the caller may use (stores zero it when the checksum fails).
    ///
    /// # Errors
    /// As [`Store::read`]; `Corrupt` if the field's length is not
    /// `out.len()`.
    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()>;

    /// Read `out.len()` bytes of a field, starting `offset` bytes into it:
    /// for readers that need a few bytes of a large field (values at points
    /// through jump info, `docs/extract.md`). One request to the medium
    /// (`pread`, `rados_read`, a DAOS array read, a copy from memory).
    /// The field's checksum covers the whole field, so these bytes are not
    /// verified against it.
    ///
    /// # Errors
    /// `InvalidInput` if the range is not inside the field
    /// ([`FieldLocation::range`]); `NotFound` if the location names
    /// nothing; `Corrupt` if the medium holds fewer bytes than the field.
    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()>;

    /// A hint: these fields will be read soon, in this order. A store may
    /// start fetching them so that later [`Store::read`]s find them close
    /// (the POSIX store asks the kernel to read them ahead, which turns
    /// scattered reads of one field in ten into reads in flight together);
    /// one that cannot does nothing. It must not fail, block for long, or
    /// change what is read.
    fn prefetch(&self, locations: &[FieldLocation]);

    /// The URI scheme of the locations this store writes (`file`, `memory`).
    fn scheme(&self) -> &'static str;

    /// Units, orphans and wipe, if this store has them (see
    /// [`StoreMaintenance`]).
    fn maintenance(&self) -> Option<&dyn StoreMaintenance>;
}

/// The data-management side of a store.
///
/// # Contract
/// A *unit* is the file or object a location's URI names (`uri` without
/// offset and length). Units belong to one writer, or to one field.
/// - [`StoreMaintenance::claim`] holds a unit only when no live writer
///   appends to it (else [`Claim::InUse`]); while held, none can start to
///   (see [`HeldUnit`](crate::maintenance::HeldUnit)). Removing a missing
///   unit is not an error. The caller removes only units that no newest
///   entry points into *by a reading of the catalogue taken after the
///   claim*.
/// - [`StoreMaintenance::wipe`] deletes everything the store keeps for a
///   dataset that it can find from the dataset and the given units, after
///   the catalogue has hidden the dataset.
pub trait StoreMaintenance: Send + Sync {
    /// What the store knows of a unit, cheaply (no per-field remote call).
    ///
    /// # Errors
    /// `InvalidInput` for a URI of another store; I/O errors.
    fn inspect(&self, uri: &str) -> Result<Unit>;

    /// [`StoreMaintenance::inspect`] of many units at once, in their
    /// order. A store that asks others about its units (RADOS: whether
    /// their writers are alive, which a dead writer's watch may leave
    /// unanswered for a whole lease) asks about all of them together, so
    /// that `stats` and `purge` wait at most once (a lease), not once per
    /// writer. The default inspects one after another.
    fn inspect_all(&self, uris: &[String]) -> Vec<Result<Unit>> {
        uris.iter().map(|u| self.inspect(u)).collect()
    }

    /// Hold a unit for removal, unless a live writer still appends to it.
    ///
    /// # Errors
    /// `InvalidInput` for a URI of another store; I/O errors.
    fn claim(&self, uri: &str) -> Result<Claim<'_>>;

    /// Remove a unit unless a live writer still appends to it: a claim and
    /// its removal at once (see [`remove_claimed`]), for callers that know
    /// nothing can point into it (a wiped dataset's units).
    ///
    /// # Errors
    /// As [`StoreMaintenance::claim`]; I/O errors.
    fn remove(&self, uri: &str) -> Result<Removed>;

    /// Units of `dataset` that no entry points into (`referenced` holds
    /// every unit entries point into) and that no live writer uses: what a
    /// killed writer left.
    ///
    /// # Errors
    /// I/O errors; `Unsupported` from a store that cannot enumerate a
    /// dataset's units (purge then reports that it did not look).
    fn orphans(
        &self,
        dataset: &DatasetKey,
        referenced: &std::collections::HashSet<String>,
    ) -> Result<Vec<Unit>>;

    /// What a wipe of the whole dataset deletes from the store: `units` are
    /// every unit the dataset's entries point into.
    ///
    /// # Errors
    /// I/O errors.
    fn inventory(&self, dataset: &DatasetKey, units: &[String]) -> Result<Vec<Item>>;

    /// Delete what the store keeps for `dataset` (`units`: as for
    /// [`StoreMaintenance::inventory`]), once the catalogue has hidden it.
    ///
    /// # Errors
    /// I/O errors.
    fn wipe(&self, dataset: &DatasetKey, units: &[String]) -> Result<()>;
}

/// [`StoreMaintenance::remove`] as a claim and its removal: what a store
/// whose claims already exclude live writers does.
///
/// # Errors
/// As [`StoreMaintenance::claim`] and [`HeldUnit::remove`](crate::maintenance::HeldUnit::remove).
pub fn remove_claimed(claim: Claim<'_>) -> Result<Removed> {
    Ok(match claim {
        Claim::Held(h) => {
            h.remove()?;
            Removed::Done
        }
        Claim::InUse => Removed::InUse,
        Claim::Missing => Removed::Missing,
    })
}

/// [`Store::read`] through [`Store::read_into`], for stores that read
/// straight into a caller's buffer: `buf` is sized to the field, and left
/// empty when the read fails.
///
/// # Errors
/// As [`Store::read_into`]; `Corrupt` if the field's length does not fit
/// in memory.
pub fn read_by_resize(
    store: &dyn Store,
    location: &FieldLocation,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let len = usize::try_from(location.length)
        .map_err(|_| Error::corrupt(format!("{location}: length out of range")))?;
    buf.clear();
    buf.resize(len, 0);
    store.read_into(location, buf).inspect_err(|_| buf.clear())
}

/// [`Store::read_into`] around a store's own read: `out` must be the
/// field's length, `read` fills it, and its bytes are then checked against
/// the field's checksum ([`checksum::verify`](crate::checksum::verify) with
/// `cause`, the medium's likeliest reason). On any error `out` is zeroed, so
/// a failed read hands out no bytes, damaged or partial.
///
/// # Errors
/// `Corrupt` if `out` is not the field's length or the bytes fail their
/// checksum; as `read`.
pub fn read_verified(
    location: &FieldLocation,
    out: &mut [u8],
    cause: &str,
    read: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<()> {
    let (n, len) = (out.len(), location.length);
    let result = if n as u64 != len {
        Err(Error::corrupt(format!(
            "{location}: a buffer of {n} bytes for a field of {len}"
        )))
    } else {
        read(out).and_then(|()| crate::checksum::verify(location, out, cause))
    };
    result.inspect_err(|_| out.fill(0))
}

/// [`Store::read_into`] through [`Store::read`] and a copy, for stores
/// whose reads produce an owned buffer anyway.
///
/// # Errors
/// As [`Store::read`]; `Corrupt` if the field's length is not `out.len()`.
pub fn read_into_by_copy(
    store: &dyn Store,
    location: &FieldLocation,
    out: &mut [u8],
) -> Result<()> {
    let mut buf = Vec::new();
    store.read(location, &mut buf)?;
    let (read, want) = (buf.len(), out.len());
    if read != want {
        return Err(Error::corrupt(format!(
            "{location}: read {read} bytes, the index says {want}"
        )));
    }
    out.copy_from_slice(&buf);
    Ok(())
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
    /// for an orphan; a store whose units are held open does nothing.
    fn indexed(&mut self);

    /// The flush that just failed made nothing visible, for certain (the
    /// store's own flush failed, or the catalogue writer says so:
    /// [`CatalogueWriter::last_flush_invisible`](crate::catalogue::CatalogueWriter::last_flush_invisible)):
    /// the fields archived since the last [`StoreWriter::indexed`] will never
    /// be visible. Give back their space now, if only this writer could:
    /// after a full disk, the bytes of a failed flush must not keep the file
    /// system full. The handle drops the writer afterwards. Never called
    /// when entries may be visible. A store whose units hold one field
    /// each (or one writer's fields only) may do nothing: they become
    /// orphans a purge removes once the writer is gone.
    fn abandon(&mut self);

    /// The catalogue's flush has just made the entries of the last
    /// [`StoreWriter::flush`] visible: succeed only if no purge can have
    /// reclaimed the units they point into at any instant between that
    /// flush and now, the publish included. The handle acknowledges the
    /// flush only then; on an error the entries are visible but may point
    /// at nothing (the fields were not acknowledged, and a retrieve of them
    /// fails rather than answering an older version).
    ///
    /// Why after the publish, not only before it: a writer stopped past its
    /// lease (SIGSTOP, a VM paused, swap) between its check and its publish
    /// resumes and publishes; only a check that covers the publish itself
    /// sees that its liveness lapsed meanwhile. Together with purge's order
    /// (verdict on the writer, then a fresh reading of the catalogue, then
    /// removal: `manage.rs`), every publish either precedes that reading
    /// (its units are kept) or follows the verdict (this check fails).
    ///
    /// A store whose units are held by the writer's open files or locks
    /// (POSIX), or that reclaims no writer's units by a verdict on its
    /// liveness, has nothing to check (the default).
    ///
    /// # Errors
    /// `Unavailable` when the writer's liveness lapsed (its lease ended or
    /// its watch broke) since the flush.
    fn confirm_published(&mut self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorKind};

    /// A buffer of the wrong length, a failed read and damaged bytes are
    /// each an error that leaves `out` zeroed; good bytes are handed out.
    #[test]
    fn read_verified_hands_out_only_verified_bytes() {
        let field = b"field bytes";
        let location = FieldLocation::new("test://x", 0, field.len() as u64)
            .with_checksum(crate::checksum::of_field(field));
        let fill = |out: &mut [u8]| {
            out.copy_from_slice(field);
            Ok(())
        };

        let mut out = [7u8; 4];
        let e = read_verified(&location, &mut out, ": cause", fill).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(
            e.to_string()
                .contains("a buffer of 4 bytes for a field of 11"),
            "{e}"
        );
        assert_eq!(out, [0; 4]);

        let mut out = [7u8; 11];
        let e = read_verified(&location, &mut out, ": cause", |out| {
            out[0] = 1;
            Err(Error::corrupt("short"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("short"), "{e}");
        assert_eq!(out, [0; 11]);

        let damaged = location.clone().with_checksum(0);
        let e = read_verified(&damaged, &mut out, ": cause", fill).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        let read = crate::checksum::of_field(field);
        let want = format!("checksum mismatch (stored 00000000, read {read:08x}): cause");
        assert!(e.to_string().ends_with(&want), "{e}");
        assert_eq!(out, [0; 11]);

        read_verified(&location, &mut out, ": cause", fill).unwrap();
        assert_eq!(&out, field);
    }
}
