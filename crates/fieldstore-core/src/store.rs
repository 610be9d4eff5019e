//! The `Store` trait: where field bytes live.

use std::fmt::Debug;

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
pub trait Store: Send + Sync + Debug + 'static {
    /// A writer for fields of one dataset, private to the caller.
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>>;

    /// Read a field's bytes into `buf` (replacing its contents).
    ///
    /// # Errors
    /// `NotFound` if the location names nothing; `Corrupt` if the bytes fail
    /// their checksum.
    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()>;

    /// The URI scheme of the locations this store writes (`file`, `memory`).
    fn scheme(&self) -> &'static str;
}

/// One writer's session with a [`Store`] for one dataset.
pub trait StoreWriter: Send {
    /// Store `data` as one field of `collocation`.
    fn archive(&mut self, collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation>;

    /// Make everything archived so far durable.
    fn flush(&mut self) -> Result<()>;
}
