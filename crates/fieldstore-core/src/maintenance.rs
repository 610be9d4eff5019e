//! Data management: the vocabulary of wipe, purge, stats, status, control
//! and move, shared by the handle and the backends.
//!
//! The backend side is a set of traits reached through accessors of
//! [`Catalogue`] and [`Store`] that answer `None` when a backend lacks them
//! ([`CatalogueMaintenance`], [`DamagedDatasets`], [`DatasetMover`],
//! [`StoreMaintenance`]), plus the reports every [`DatasetReader`] gives
//! (locks, damage, pending units). None has a default: what a backend
//! cannot do is a fact of its type, and the handle says so plainly
//! ([`unsupported`]: [`ErrorKind::Unsupported`] naming the operation and
//! the backend).
//!
//! Two ideas carry every backend's implementation:
//!
//! - **Hide, then delete.** A wipe first makes what it deletes invisible in
//!   one atomic step (a directory renamed to a tombstone, a container
//!   destroyed, a record appended to the dataset's log), then deletes the
//!   bytes. Readers see a dataset or collocation whole or not at all, and a
//!   crash between the steps leaves something the next wipe finishes.
//! - **Units.** The store keeps fields in *units*: the file or object a
//!   location's URI names (a POSIX data file, a DAOS array, a memory blob).
//!   A unit can be removed once no visible, newest entry points into it and
//!   no writer still appends to it; the catalogue then records the removal
//!   so that listings of replaced fields stop showing entries whose bytes
//!   are gone.
//!
//! [`Catalogue`]: crate::catalogue::Catalogue
//! [`CatalogueMaintenance`]: crate::catalogue::CatalogueMaintenance
//! [`DamagedDatasets`]: crate::catalogue::DamagedDatasets
//! [`DatasetMover`]: crate::catalogue::DatasetMover
//! [`DatasetReader`]: crate::catalogue::DatasetReader
//! [`Store`]: crate::store::Store
//! [`StoreMaintenance`]: crate::store::StoreMaintenance

use std::fmt;

use crate::error::{Error, ErrorKind, Result};
use crate::key::DatasetKey;

/// An operation a dataset can be locked against (`control`). The
/// discriminant is the operation's bit in [`Locks::bits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Archiving (and flushing) into the dataset.
    Archive = 1,
    /// Retrieving its fields.
    Retrieve = 2,
    /// Listing it (`list`, `axes`).
    List = 4,
    /// Wiping, purging or moving it.
    Wipe = 8,
}

impl Operation {
    /// Every operation, in the order they are printed.
    pub const ALL: [Operation; 4] = [
        Operation::Archive,
        Operation::Retrieve,
        Operation::List,
        Operation::Wipe,
    ];

    /// The lower-case name (`archive`, `retrieve`, `list`, `wipe`).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Archive => "archive",
            Operation::Retrieve => "retrieve",
            Operation::List => "list",
            Operation::Wipe => "wipe",
        }
    }

    /// The operation a name names.
    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.name() == name)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of operations a dataset is locked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Locks(u8);

impl Locks {
    /// Nothing locked.
    pub const NONE: Locks = Locks(0);
    /// Everything locked.
    pub const ALL: Locks = Locks(15);

    /// Whether `op` is locked.
    pub fn contains(self, op: Operation) -> bool {
        self.0 & (op as u8) != 0
    }

    /// This set with `op` added.
    #[must_use]
    pub fn with(self, op: Operation) -> Locks {
        Locks(self.0 | op as u8)
    }

    /// The union.
    #[must_use]
    pub fn union(self, other: Locks) -> Locks {
        Locks(self.0 | other.0)
    }

    /// Whether nothing is locked.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The operations in the set, in [`Operation::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Operation> {
        Operation::ALL
            .into_iter()
            .filter(move |o| self.contains(*o))
    }

    /// The set as a bit mask (archive 1, retrieve 2, list 4, wipe 8), for
    /// storage formats.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// The set a bit mask stands for (unknown bits are dropped).
    pub fn from_bits(bits: u8) -> Locks {
        Locks(bits & Locks::ALL.0)
    }

    /// Apply `control` to `operations`.
    #[must_use]
    pub fn apply(self, control: Control, operations: Locks) -> Locks {
        match control {
            Control::Lock => self.union(operations),
            Control::Unlock => Locks(self.0 & !operations.0),
        }
    }
}

impl FromIterator<Operation> for Locks {
    fn from_iter<I: IntoIterator<Item = Operation>>(iter: I) -> Self {
        iter.into_iter().fold(Locks::NONE, Locks::with)
    }
}

/// `archive,wipe`, or `none`.
impl fmt::Display for Locks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.iter().map(Operation::name).collect();
        f.write_str(&names.join(","))
    }
}

/// What `control` does to the operations it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Refuse them.
    Lock,
    /// Allow them again.
    Unlock,
}

/// The error of an operation a dataset is locked against.
pub fn locked(dataset: &DatasetKey, op: Operation) -> Error {
    let dataset = dataset.braced();
    let message = format!("dataset {dataset} is locked against {op} (unlock it to allow {op})");
    Error::new(ErrorKind::Locked, message)
}

/// The error of a maintenance operation a backend does not have (its
/// accessor answered `None`), naming the operation and the backend.
pub fn unsupported(operation: &str, backend: &str) -> Error {
    let message = format!("{operation} is not supported by the {backend} backend");
    Error::new(ErrorKind::Unsupported, message)
}

/// The error a writer gets when its dataset was wiped (or moved away)
/// while it was writing: the flush made nothing visible.
pub fn wiped_while_writing(dataset: &DatasetKey) -> Error {
    let dataset = dataset.braced();
    let message = format!(
        "dataset {dataset} was wiped while this handle was writing to it: the fields of this \
         flush are not stored; archive them again to create the dataset anew"
    );
    Error::new(ErrorKind::NotFound, message)
}

/// What kind of thing a maintenance report names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// The catalogue's own file or object (a table of contents, a KV, a
    /// container).
    Catalogue,
    /// An index file or object.
    Index,
    /// Field bytes (a data file, an array, a container of arrays).
    Data,
    /// Lock state.
    Control,
    /// What an interrupted wipe left behind (a tombstone directory).
    Leftover,
    /// Something the backend did not create: a wipe of the whole dataset
    /// refuses to delete it unless told to (`unsafe_wipe_all`).
    Unknown,
}

impl ItemKind {
    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Catalogue => "catalogue",
            ItemKind::Index => "index",
            ItemKind::Data => "data",
            ItemKind::Control => "control",
            ItemKind::Leftover => "leftover",
            ItemKind::Unknown => "unknown",
        }
    }
}

/// A file or object that holds part of a dataset.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Item {
    /// What it is.
    pub kind: ItemKind,
    /// Its path or URI.
    pub name: String,
    /// Its size, when the backend knows it without extra cost.
    pub bytes: Option<u64>,
}

impl Item {
    /// An item.
    pub fn new(kind: ItemKind, name: impl Into<String>, bytes: Option<u64>) -> Item {
        Item {
            kind,
            name: name.into(),
            bytes,
        }
    }
}

/// What a store knows of one unit (the file or object a location's URI
/// names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitState {
    /// It exists and no writer appends to it.
    Idle,
    /// A live writer still appends to it: it must not be removed.
    InUse,
    /// It does not exist (already removed).
    Missing,
}

/// One unit, as [`StoreMaintenance::inspect`](crate::store::StoreMaintenance::inspect) reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Its URI (the `uri` of the locations in it).
    pub uri: String,
    /// Its size, when known without extra cost (a file's length).
    pub bytes: Option<u64>,
    /// Whether it can be removed.
    pub state: UnitState,
}

/// What [`StoreMaintenance::remove`](crate::store::StoreMaintenance::remove) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// Removed now.
    Done,
    /// Kept: a live writer still appends to it.
    InUse,
    /// Already gone.
    Missing,
}

/// A unit held by a maintenance operation ([`StoreMaintenance::claim`](crate::store::StoreMaintenance::claim)).
///
/// # Contract
/// While a unit is held, no writer appends to it and none can start to: a
/// writer that held it has finished, so every entry that will ever point
/// into it is already in the catalogue. That is what makes the maintenance
/// rule safe against live writers: *claim first, then read the catalogue,
/// then remove only what that reading shows unneeded* (a reading taken
/// before the claim may miss a writer's last flush). Dropping the hold
/// releases the unit unchanged.
pub trait HeldUnit {
    /// Remove the unit (a unit already gone is not an error).
    ///
    /// # Errors
    /// I/O errors.
    fn remove(self: Box<Self>) -> Result<()>;
}

/// A closure is a held unit: calling it removes the unit, and what it
/// captures is the hold, released when the closure is dropped (called or
/// not).
impl<F: FnOnce() -> Result<()>> HeldUnit for F {
    fn remove(self: Box<Self>) -> Result<()> {
        (*self)()
    }
}

/// What [`StoreMaintenance::claim`](crate::store::StoreMaintenance::claim) found.
pub enum Claim<'a> {
    /// Held: nobody appends to it now or later, until the hold is dropped or
    /// the unit removed.
    Held(Box<dyn HeldUnit + 'a>),
    /// A live writer still appends to it: it must not be removed.
    InUse,
    /// It does not exist (already removed).
    Missing,
}

impl fmt::Debug for Claim<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Claim::Held(_) => "Held",
            Claim::InUse => "InUse",
            Claim::Missing => "Missing",
        })
    }
}

/// A dataset the catalogue cannot open at all: the record that names it is
/// damaged. Reported by `status` and by listings over it; everything else
/// goes on; a wipe that names it removes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DamagedDataset {
    /// Where it is (a directory).
    pub place: String,
    /// The dataset key's values, in its rule's order, as far as the place's
    /// name tells them (`None` when it cannot: a long name ends in a hash).
    pub values: Option<Vec<String>>,
    /// What is wrong, naming the file and offset.
    pub problem: String,
}

/// The prefix under which a catalogue that lists datasets from one root
/// index (RADOS's root omap, DAOS's root KV) marks the datasets locked
/// against `list`, so that a listing reads the root only. A dataset key
/// never starts with `!`, so markers and datasets never collide.
pub const LIST_LOCK_PREFIX: &str = "!list-locked ";

/// The root index key marking `dataset` as locked against `list`.
pub fn list_lock_marker(dataset: &DatasetKey) -> String {
    format!("{LIST_LOCK_PREFIX}{dataset}")
}

/// The dataset a root index key marks as locked against `list`, if it is
/// such a marker (and names a dataset key).
pub fn list_locked_dataset(key: &str) -> Option<DatasetKey> {
    key.strip_prefix(LIST_LOCK_PREFIX)?
        .parse()
        .ok()
        .map(DatasetKey)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_are_sets_of_operations() {
        let l: Locks = [Operation::Wipe, Operation::Archive].into_iter().collect();
        assert_eq!(l.to_string(), "archive,wipe");
        assert!(l.contains(Operation::Archive) && !l.contains(Operation::List));
        assert_eq!(Locks::NONE.to_string(), "none");
        assert_eq!(
            l.apply(Control::Unlock, Locks::NONE.with(Operation::Archive)),
            Locks::NONE.with(Operation::Wipe)
        );
        assert_eq!(Locks::from_bits(0xff), Locks::ALL);
        assert_eq!(Locks::from_bits(l.bits()), l);
        assert_eq!(Operation::from_name("list"), Some(Operation::List));
        assert_eq!(Operation::from_name("lists"), None);
    }

    #[test]
    fn errors_name_what_and_where() {
        let d: DatasetKey = "class=od,expver=0001".parse().unwrap();
        let e = locked(&d, Operation::Retrieve);
        assert_eq!(e.kind(), ErrorKind::Locked);
        assert_eq!(
            e.to_string(),
            "dataset {class=od,expver=0001} is locked against retrieve (unlock it to allow retrieve)"
        );
        let e = unsupported("wipe", "Shiny");
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert_eq!(e.to_string(), "wipe is not supported by the Shiny backend");
    }
}
