//! `FileStore`: field bytes in per-writer data files.
//!
//! Each writer appends to its own data file in the dataset directory, so
//! writers never contend. The file is named as FDB5 names its data files,
//! the collocation's values first: `<collocation>.<writer id>.data`
//! (`an:pl.<host>.<pid>.<ns>.<n>.data`), after the collocation of the
//! first field the writer archives into the dataset; fields of other
//! collocations the same writer archives into the dataset go to the same
//! file (FDB5 opens one per collocation). Locations name files by path, so
//! data files named before (`<writer id>.data`) read as ever. Small fields are staged
//! and written in 4 MiB blocks, large ones as they come; buffered with
//! write-behind by default, with `O_DIRECT` on request (see `staging.rs`).
//! A location carries the CRC-32C of the field, checked on every read.
//! Reads of a retrieve are announced ahead ([`Store::prefetch`]) as
//! `POSIX_FADV_WILLNEED` ranges, so scattered fields are read in parallel.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fieldstore_core::maintenance::{Claim, Item, ItemKind, Removed, Unit, UnitState};
use fieldstore_core::store::{read_verified, remove_claimed};
use fieldstore_core::{CollocationKey, DatasetKey, Error, FieldLocation, Result, StoreMaintenance};

use super::layout::{self, FileKind};
use super::open_dir::OpenDir;
pub use super::staging::DataWrites;
use super::staging::Staging;
use crate::config::Root;
use crate::placement::Placement;
use crate::sync::lock;
use fieldstore_core::store::{Store, StoreWriter};

/// Open data files kept by a reader.
const MAX_OPEN: usize = 512;

/// The POSIX store (`store: file`).
#[derive(Debug)]
pub struct FileStore {
    roots: Vec<Root>,
    /// Where new datasets go (as the catalogue's, so that a store writer
    /// created before the catalogue's dataset directory chooses alike).
    placement: Placement,
    open: Mutex<HashMap<PathBuf, Arc<File>>>,
    /// How writers write data files.
    writes: DataWrites,
}

impl FileStore {
    /// A store over `roots` (the same roots as the catalogue's).
    ///
    /// # Errors
    /// `NotFound` if no root exists.
    pub fn open(roots: &[Root], placement: Placement, writes: DataWrites) -> Result<FileStore> {
        super::check_roots(roots)?;
        Ok(FileStore {
            roots: roots.to_vec(),
            placement,
            open: Mutex::new(HashMap::new()),
            writes,
        })
    }

    fn file(&self, path: &Path) -> Result<Arc<File>> {
        let mut open = lock(&self.open);
        if let Some(f) = open.get(path) {
            return Ok(f.clone());
        }
        let f = Arc::new(
            File::open(path).map_err(|e| Error::io(format!("data file {}", path.display()), e))?,
        );
        if open.len() >= MAX_OPEN {
            open.clear();
        }
        open.insert(path.to_path_buf(), f.clone());
        Ok(f)
    }
}

/// The path a `file://` URI names.
fn unit_path(uri: &str) -> Result<PathBuf> {
    uri.strip_prefix("file://")
        .map(PathBuf::from)
        .ok_or_else(|| Error::invalid_input(format!("not a file location: {uri}")))
}

/// Whether `path` is inside a directory that holds a table of contents
/// (the POSIX catalogue's dataset directory, which deletes it itself).
fn in_catalogue_dir(path: &Path) -> bool {
    path.parent().is_some_and(|d| d.join(layout::TOC).exists())
}

impl FileStore {
    /// Dataset directories of this store for `dataset` that no catalogue
    /// shares (no table of contents): the store owns what is in them.
    fn own_dirs(&self, dataset: &DatasetKey) -> Vec<PathBuf> {
        let name = layout::dataset_dir_name(dataset);
        self.roots
            .iter()
            .map(|r| r.path.join(&name))
            .filter(|d| d.is_dir() && !d.join(layout::TOC).exists())
            .collect()
    }

    /// The data files in a dataset directory (published names), every
    /// other file as unknown unless it is the catalogue's.
    fn listing(dir: &Path) -> Result<Vec<(FileKind, PathBuf)>> {
        let entries = super::manage::entries(dir)?.into_iter();
        let mut out: Vec<_> = entries
            .map(|(name, p)| (layout::classify(&name), p))
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        Ok(out)
    }
}

impl Store for FileStore {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        // The directory is opened now and its files created through the
        // descriptor, so that they follow the dataset if a move renames it
        // (see `open_dir.rs`). A store without a catalogue in its roots
        // makes the directory itself. A wipe or move racing with this may
        // take the directory away between finding and opening it: look
        // again.
        let mut attempt = 0;
        let dir = loop {
            attempt += 1;
            // A directory found is opened, never made again where it was
            // found (a move or wipe may take it away in between: look
            // again); only a dataset found nowhere gets one.
            let path = match layout::find_dataset(&self.roots, dataset) {
                Some(found) => found,
                None => {
                    // Made under the exclusive namespace lock, as a
                    // catalogue makes its dataset: a directory made beside
                    // a dataset being moved here would make the move fail.
                    let lock = layout::creation_lock(&self.roots)?;
                    match layout::find_dataset_locked(&self.roots, dataset, &lock) {
                        Some(found) => found,
                        None => {
                            let path = layout::new_dataset_dir(
                                &self.roots,
                                &self.placement,
                                dataset,
                                &lock,
                            )?;
                            layout::ensure_dir(&path)?;
                            path
                        }
                    }
                }
            };
            match OpenDir::open(&path) {
                Err(e) if e.kind() == fieldstore_core::ErrorKind::NotFound && attempt < 3 => {}
                r => break r?,
            }
        };
        let abs = std::path::absolute(dir.opened_at())
            .map_err(|e| Error::io(dir.opened_at().display(), e))?;
        Ok(Box::new(FileStoreWriter {
            dir,
            abs,
            writes: self.writes,
            uri: Arc::from(""),
            data: None,
            unsynced: false,
            new_file: false,
            indexed_len: 0,
        }))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        let len = usize::try_from(location.length)
            .map_err(|_| Error::corrupt(format!("{location}: length out of range")))?;
        // The read overwrites all `len` bytes: zero only what the buffer
        // grows by (zero-filling every read was 4-5 % of read CPU).
        buf.truncate(len);
        buf.resize(len, 0);
        let read = self.read_into(location, buf);
        if read.is_err() {
            buf.clear();
        }
        read
    }

    fn read_into(&self, location: &FieldLocation, buf: &mut [u8]) -> Result<()> {
        if location.scheme() != "file" {
            return Err(Error::invalid_input(format!(
                "not a file location: {}",
                location.uri
            )));
        }
        read_verified(location, buf, ": the data file is damaged", |buf| {
            let file = self.file(Path::new(location.path()))?;
            file.read_exact_at(buf, location.offset).map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    Error::corrupt(format!(
                        "{location}: the data file is shorter than the field (truncated?)"
                    ))
                } else {
                    Error::io(format!("reading {location}"), e)
                }
            })
        })
    }

    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        self.read_into(&location.range(offset, out.len() as u64)?, out)
    }

    fn prefetch(&self, locations: &[FieldLocation]) {
        // Only fields with no adjacent neighbour in the list are announced:
        // the kernel reads sequential runs ahead by itself, and announcing
        // them too made sequential cold reads slower (measured 0.6-0.8x),
        // while scattered fields, read one synchronous request at a time
        // otherwise, are then read in parallel (1.5-2.7x).
        let follows = |a: &FieldLocation, b: &FieldLocation| {
            a.uri == b.uri && a.offset + a.length == b.offset
        };
        for (i, loc) in locations.iter().enumerate() {
            let after = i > 0 && follows(&locations[i - 1], loc);
            let before = locations.get(i + 1).is_some_and(|n| follows(loc, n));
            if loc.scheme() == "file" && !after && !before {
                self.will_need(loc.path(), loc.offset, loc.length);
            }
        }
    }

    fn scheme(&self) -> &'static str {
        "file"
    }

    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        Some(self)
    }
}

impl StoreMaintenance for FileStore {
    fn remove(&self, uri: &str) -> Result<Removed> {
        remove_claimed(self.claim(uri)?)
    }

    fn inspect(&self, uri: &str) -> Result<Unit> {
        let path = unit_path(uri)?;
        let state = match layout::claim(&path)? {
            None => UnitState::Missing,
            Some(Ok(_held)) => UnitState::Idle,
            Some(Err(())) => UnitState::InUse,
        };
        let bytes = std::fs::metadata(&path).ok().map(|m| m.len());
        Ok(Unit {
            uri: uri.to_string(),
            bytes,
            state,
        })
    }

    fn claim(&self, uri: &str) -> Result<Claim<'_>> {
        let path = unit_path(uri)?;
        Ok(match layout::claim(&path)? {
            None => Claim::Missing,
            Some(Err(())) => Claim::InUse,
            // Held exclusively: no writer has it open, and none will (writer
            // ids are never reused, so nobody creates or opens this name for
            // writing again). The exclusive `flock` is the hold: named in
            // the closure, it moves into it and is released after the
            // removal, or when the closure is dropped without one.
            Some(Ok(flock)) => Claim::Held(Box::new(move || {
                layout::remove_file(&path)?;
                lock(&self.open).remove(&path);
                drop(flock);
                Ok(())
            })),
        })
    }

    fn orphans(&self, dataset: &DatasetKey, referenced: &HashSet<String>) -> Result<Vec<Unit>> {
        let mut out = Vec::new();
        // Only the dataset's own directory: a move's unfinished copy in
        // another root holds files of the same names that the source's
        // entries do not point into, and they are not orphans.
        let dirs = layout::find_dataset(&self.roots, dataset)
            .into_iter()
            .chain(self.own_dirs(dataset));
        for dir in dirs {
            for (kind, path) in FileStore::listing(&dir)? {
                // Published data files, and the private `.<writer>.data.new`
                // of a writer killed before it renamed it into place (never
                // referenced; a live writer holds its lock, so it is found
                // in use below).
                if kind != FileKind::Data {
                    continue;
                }
                let abs = std::path::absolute(&path).map_err(|e| Error::io(path.display(), e))?;
                let uri = format!("file://{}", abs.display());
                if referenced.contains(&uri) {
                    continue;
                }
                let unit = self.inspect(&uri)?;
                if unit.state == UnitState::Idle {
                    out.push(unit);
                }
            }
        }
        Ok(out)
    }

    fn inventory(&self, dataset: &DatasetKey, units: &[String]) -> Result<Vec<Item>> {
        let mut out = Vec::new();
        for uri in units {
            let Some(path) = unit_path(uri).ok().filter(|p| !in_catalogue_dir(p)) else {
                continue;
            };
            if let Ok(m) = std::fs::metadata(&path) {
                out.push(Item::new(
                    ItemKind::Data,
                    path.display().to_string(),
                    Some(m.len()),
                ));
            }
        }
        for dir in self.own_dirs(dataset) {
            for (kind, path) in FileStore::listing(&dir)? {
                let name = path.display().to_string();
                if out.iter().any(|i| i.name == name) {
                    continue;
                }
                let bytes = std::fs::metadata(&path).ok().map(|m| m.len());
                let kind = match kind {
                    FileKind::Data => ItemKind::Data,
                    _ => ItemKind::Unknown,
                };
                out.push(Item::new(kind, name, bytes));
            }
        }
        Ok(out)
    }

    fn wipe(&self, dataset: &DatasetKey, units: &[String]) -> Result<()> {
        for uri in units {
            if let Ok(path) = unit_path(uri) {
                layout::remove_file(&path)?;
                lock(&self.open).remove(&path);
            }
        }
        // A directory the store owns alone (with a catalogue of another
        // backend): its other data files are what killed writers left.
        for dir in self.own_dirs(dataset) {
            for (kind, path) in FileStore::listing(&dir)? {
                if kind == FileKind::Data {
                    if let Some(Ok(_held)) = layout::claim(&path)? {
                        layout::remove_file(&path)?;
                    }
                }
            }
            let _ = std::fs::remove_dir(&dir);
        }
        Ok(())
    }
}

impl FileStore {
    /// Ask the kernel to read `len` bytes at `start` of a data file ahead.
    /// A hint: a file that cannot be opened is left to the read to report.
    fn will_need(&self, path: &str, start: u64, len: u64) {
        use std::os::fd::AsRawFd;
        let Ok(file) = self.file(Path::new(path)) else {
            return;
        };
        let (Ok(offset), Ok(len)) = (i64::try_from(start), i64::try_from(len)) else {
            return;
        };
        // SAFETY: a system call on a descriptor `file` keeps open for the
        // call's duration; it touches no memory of this process.
        let _ = unsafe {
            libc::posix_fadvise(file.as_raw_fd(), offset, len, libc::POSIX_FADV_WILLNEED)
        };
    }
}

/// One writer's data file in one dataset.
struct FileStoreWriter {
    /// The dataset directory, open: the data file is created through it.
    dir: OpenDir,
    /// Its absolute path when opened: locations name the data file by it
    /// (the catalogue keeps names relative to the dataset directory, so a
    /// move does not change what they resolve to).
    abs: PathBuf,
    writes: DataWrites,
    uri: Arc<str>,
    /// Created on the first archive.
    data: Option<Staging>,
    unsynced: bool,
    new_file: bool,
    /// The data file's length when the catalogue last made its fields
    /// visible: what a failed flush cuts it back to.
    indexed_len: u64,
}

impl FileStoreWriter {
    fn open_file(&mut self, collocation: &CollocationKey) -> Result<&mut Staging> {
        if self.data.is_none() {
            // Created locked (shared flock, held while the file is open), so
            // that purge never takes a live writer's file for an orphan; in
            // the directory this writer opened, wherever it is now. A
            // dataset wiped meanwhile fails here (`NotFound`) or at the
            // catalogue's flush, which says it was wiped.
            let prefix = layout::data_file_prefix(collocation);
            let (name, f) = self
                .dir
                .create_writer_file(Some(&prefix), "data")
                .map_err(|e| {
                    if e.kind() == fieldstore_core::ErrorKind::NotFound {
                        Error::new(
                            fieldstore_core::ErrorKind::NotFound,
                            format!(
                                "{e}: the dataset was wiped or moved to another file system while \
                             this handle was writing to it; archive again"
                            ),
                        )
                    } else {
                        e
                    }
                })?;
            let path = self.abs.join(&name);
            self.uri = Arc::from(format!("file://{}", path.display()));
            self.data = Some(Staging::new(&path, f, self.writes));
            self.new_file = true;
        }
        self.data
            .as_mut()
            .ok_or_else(|| Error::internal("data file not open"))
    }
}

impl StoreWriter for FileStoreWriter {
    fn archive(&mut self, collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        let staging = self.open_file(collocation)?;
        let offset = staging.next_offset();
        staging.append(data)?;
        self.unsynced = true;
        Ok(
            FieldLocation::new(self.uri.clone(), offset, data.len() as u64)
                .with_checksum(fieldstore_core::checksum::of_field(data)),
        )
    }

    fn flush(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        if let Some(data) = self.data.as_mut() {
            data.sync()?;
        }
        if self.new_file {
            // The data file's directory entry must be durable before any
            // index entry pointing into it is.
            self.dir.sync()?;
            self.new_file = false;
        }
        self.unsynced = false;
        Ok(())
    }

    fn indexed(&mut self) {
        if let Some(data) = &self.data {
            self.indexed_len = data.next_offset();
        }
    }

    /// The data file is this writer's alone (created under a private name,
    /// `flock`ed while open): what was archived since the last flush the
    /// catalogue made visible is cut off.
    fn abandon(&mut self) {
        if let Some(data) = self.data.as_mut() {
            data.abandon_from(self.indexed_len);
        }
        self.unsynced = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::Space;

    /// The claim's closure owns the `flock`: the unit stays held (a second
    /// claim finds it in use) until the claim is dropped or removed.
    #[test]
    fn a_claim_holds_its_unit_until_dropped_or_removed() {
        let dir = tempfile::tempdir().unwrap();
        let roots = vec![Root::new(dir.path())];
        let placement = Placement::new(&[Space::default_space()], &roots);
        let store = FileStore::open(&roots, placement, DataWrites::Direct).unwrap();
        let file = dir.path().join("x.data");
        std::fs::write(&file, b"abc").unwrap();
        let uri = format!("file://{}", file.display());
        let held = store.claim(&uri).unwrap();
        assert!(matches!(held, Claim::Held(_)));
        assert!(matches!(store.claim(&uri).unwrap(), Claim::InUse));
        drop(held);
        let Claim::Held(held) = store.claim(&uri).unwrap() else {
            panic!("not held after the first claim was dropped")
        };
        assert!(matches!(store.claim(&uri).unwrap(), Claim::InUse));
        held.remove().unwrap();
        assert!(!file.exists());
        assert!(matches!(store.claim(&uri).unwrap(), Claim::Missing));
    }
}
