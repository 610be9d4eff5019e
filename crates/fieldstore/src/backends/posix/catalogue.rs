//! `TocCatalogue`: an append-only table of contents per dataset, pointing at
//! per-writer index files; [`TocMedium`] is what POSIX gives the engine's
//! catalogue ([`LogCatalogue`]).
//!
//! Flush protocol (one writer, one dataset):
//! 1. the writer appends one block per collocation to its own index file,
//!    in one write, and starts its write-back (`prepare_flush`, before the
//!    handle flushes the store: the data file's sync then commits the
//!    blocks' allocation in the same journal commit);
//! 2. the store has synced the data; the writer syncs the index file;
//! 3. it appends one `FLUSH` record, naming those blocks and carrying their
//!    axes, to the shared table of contents in one `O_APPEND` write, and
//!    syncs it.
//!
//! A reader sees a flush when the whole `FLUSH` record is in the file and
//! its checksums hold; until then it stops before it. A killed writer can
//! leave a partial record only at the end of its own index file (never
//! referenced) — `write(2)` of one buffer is not torn by a signal — so a
//! visible record always points at synced index blocks and data.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fieldstore_core::catalogue::DatasetReader;
use fieldstore_core::engine::log_catalogue::{CatalogueMedium, LogCatalogue, MediumMaintenance};
use fieldstore_core::engine::LogReader;
use fieldstore_core::maintenance::{locked, DamagedDataset, Item};
use fieldstore_core::record::pending::PendingEntries;
use fieldstore_core::{
    CollocationKey, DamagedDatasets, DatasetKey, DatasetMover, Error, ErrorKind, Locks, Operation,
    Result, Schema,
};

use super::end_mark::{mark_end, refuse_if_cut};
use super::format::{self, Enc};
use super::layout::{self, TOC};
use super::manage;
use super::toc_reader::{
    open_dir_of, open_reader, read_init, read_init_with_schema, TocCursor, TocLog,
};
use super::toc_writer::{StagedFlush, TocWriter};
use crate::config::Root;
use crate::placement::Placement;
use crate::sync::lock;

/// A table of contents: its path, device and inode.
type TocIdent = (PathBuf, (u64, u64));

/// The POSIX catalogue (`engine: toc`).
pub type TocCatalogue = LogCatalogue<TocMedium>;

/// What POSIX gives the engine's catalogue: the roots, each dataset a
/// directory with its table of contents.
#[derive(Debug)]
pub struct TocMedium {
    pub(super) roots: Vec<Root>,
    /// Where new datasets go.
    placement: Placement,
    /// Dataset keys and `INIT` lengths by table of contents (path, device
    /// and inode), so `datasets()` reads each `INIT` once.
    known: Mutex<HashMap<TocIdent, (DatasetKey, u64)>>,
}

impl TocMedium {
    /// The datasets of the visited roots (those something was flushed
    /// into), and those whose INIT record cannot be read. One pass serves
    /// `datasets()` and `damaged()`: each INIT is read once per table of
    /// contents and remembered (a damaged one is read again each time, so
    /// that its repair is seen); otherwise a pass costs a directory listing
    /// and a `stat` per dataset.
    pub(super) fn scan(&self) -> Result<(Vec<DatasetKey>, Vec<DamagedDataset>)> {
        let mut out = Vec::new();
        let mut damaged = Vec::new();
        super::present(&self.roots)?;
        let mut known = lock(&self.known);
        for root in self
            .roots
            .iter()
            .filter(|r| r.visit && !super::absent_default(r))
        {
            let entries = std::fs::read_dir(&root.path)
                .map_err(|e| Error::io(format!("root {}", root.path.display()), e))?;
            for entry in entries {
                let entry =
                    entry.map_err(|e| Error::io(format!("root {}", root.path.display()), e))?;
                // Tombstones of wipes and moves in progress start with a
                // dot; dataset names never do.
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    continue;
                }
                let dir = entry.path();
                let toc = dir.join(TOC);
                // A dataset is listed once something was flushed into it:
                // its table of contents holds more than the INIT record.
                let Ok(meta) = std::fs::metadata(&toc) else {
                    continue;
                };
                // The path and the inode: a wiped dataset's inode number
                // may be reused, by then under another path or for the
                // same dataset created anew.
                let ident = (dir.clone(), layout::identity(&meta));
                if let Some((k, init_len)) = known.get(&ident) {
                    if meta.len() > *init_len {
                        out.push(k.clone());
                    }
                    continue;
                }
                // A move's copy is not the dataset while its source exists
                // (looked at only until the directory is known: a known
                // one never becomes a copy, a new copy has a new inode).
                if layout::is_unfinished_copy(&dir) {
                    continue;
                }
                let f = match File::open(&toc) {
                    Ok(f) => f,
                    // Wiped or moved since the directory was read.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(Error::io(toc.display(), e)),
                };
                // A damaged INIT costs only its own dataset.
                let (key, init_len) = match read_init(&f, &toc) {
                    Ok(k) => k,
                    Err(e) if e.kind() == ErrorKind::Corrupt => {
                        damaged.push(DamagedDataset {
                            place: dir.display().to_string(),
                            values: layout::dataset_dir_values(&name),
                            problem: e.to_string(),
                        });
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if meta.len() > init_len {
                    out.push(key.clone());
                }
                known.insert(ident, (key, init_len));
            }
        }
        Ok((out, damaged))
    }

    /// A catalogue over `roots`, creating datasets where `placement`
    /// says.
    ///
    /// # Errors
    /// `NotFound` if a root does not exist.
    pub fn open(roots: &[Root], placement: Placement) -> Result<TocMedium> {
        super::check_roots(roots)?;
        Ok(TocMedium {
            roots: roots.to_vec(),
            placement,
            known: Mutex::new(HashMap::new()),
        })
    }
}

/// Create the dataset at `dir` if needed and `may_create`, race-free
/// between processes: the `INIT` record is written to a private file and
/// hard-linked into place, which fails if another writer won. Returns the
/// schema the dataset was created under.
///
/// # Errors
/// `NotFound` if there is no dataset at `dir` and not `may_create` (it was
/// found there, then moved or wiped: look for it again).
fn create_dataset(
    dir: &Path,
    key: &DatasetKey,
    schema: &Schema,
    may_create: bool,
) -> Result<Arc<str>> {
    let toc = dir.join(TOC);
    // Looked at once: a dataset found (not `may_create`) that a move or
    // wipe takes away after this look must not be created again where it
    // was, outside the namespace lock (a second dataset of the key, which
    // the next move finds in its way); opening it below fails instead.
    let exists = toc.exists();
    if !exists && !may_create {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("{} moved or wiped while it was opened", dir.display()),
        ));
    }
    if !exists {
        layout::ensure_dir(dir)?;
        let tmp = dir.join(format!(".toc.{}", layout::writer_id()));
        let mut payload = Enc::default();
        payload.str(&key.to_string());
        payload.str(schema.text());
        let mut rec = Vec::new();
        format::frame(&mut rec, format::INIT, &payload.0);
        layout::write_new_synced(&tmp, &rec)
            .map_err(|e| Error::io(format!("creating {}", tmp.display()), e))?;
        let linked = std::fs::hard_link(&tmp, &toc);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(format!("creating {}", toc.display()), e)),
        }
        layout::sync_dir(dir)?;
        if let Some(parent) = dir.parent() {
            layout::sync_dir(parent)?;
        }
    }
    let f = File::open(&toc).map_err(|e| Error::io(toc.display(), e))?;
    let (stored, _, stored_schema) = read_init_with_schema(&f, &toc)?;
    if &stored != key {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "{} holds dataset {stored}, not {key}: two dataset keys have the same values",
                dir.display()
            ),
        ));
    }
    Ok(stored_schema)
}

/// A dataset as opened: its key and directory, and, for a writer's, the
/// schema it was created under (empty when only opened).
#[derive(Debug, Clone)]
pub struct TocDataset {
    key: DatasetKey,
    dir: PathBuf,
    schema: Arc<str>,
}

impl CatalogueMedium for TocMedium {
    type Dataset = TocDataset;
    type Writer = TocWriter;
    type Staged = StagedFlush;

    /// Where the dataset's directory is: no read beyond the roots'.
    fn open(&self, key: &DatasetKey) -> Result<Option<TocDataset>> {
        super::present(&self.roots)?;
        Ok(
            layout::find_dataset(&self.roots, key).map(|dir| TocDataset {
                key: key.clone(),
                dir,
                schema: Arc::from(""),
            }),
        )
    }

    fn registered(&self) -> Result<Vec<DatasetKey>> {
        Ok(self.scan()?.0)
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        match layout::find_dataset(&self.roots, dataset) {
            Some(d) => d.display().to_string(),
            None => format!("{} (not created)", layout::dataset_dir_name(dataset)),
        }
    }

    fn reader(
        self: Arc<Self>,
        key: &DatasetKey,
        d: TocDataset,
    ) -> Result<Option<Arc<dyn DatasetReader>>> {
        match open_reader(&self.roots, &d.dir, key) {
            Ok(r) => Ok(Some(Arc::new(r))),
            // Wiped or moved between finding and opening it: a reader of
            // whatever is there now.
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let medium = TocLog {
                    roots: self.roots.clone(),
                    key: key.clone(),
                };
                let reader = LogReader::open(medium, TocCursor::gone(&d.dir))?;
                if reader.read().cursor.toc.is_none() {
                    return Ok(None);
                }
                Ok(Some(Arc::new(reader)))
            }
            Err(e) => Err(e),
        }
    }

    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<(TocDataset, TocWriter)> {
        // A wipe or move racing with this may take the directory away
        // between finding and opening it: look again.
        // A move across file systems that a crash interrupted after it
        // retired the source is finished first, so that this writer's
        // flushes come after the ones the move still has to copy.
        if layout::find_dataset(&self.roots, dataset)
            .is_some_and(|d| d.join(layout::MOVED_FROM).exists())
        {
            manage::finish_moves(self)?;
        }
        let mut attempt = 0;
        let (dir, open_dir, toc, stored_schema, ident) = loop {
            attempt += 1;
            // A dataset found is opened, never created again where it was
            // found: a move or wipe may take it away in between, and a new
            // dataset there would hide the moved one.
            crate::failpoint::hit("catalogue_writer.find");
            // Found nowhere: look again under the exclusive namespace lock,
            // held until the dataset is created, so that no one else
            // creates it meanwhile.
            let (dir, may_create, _namespace) = match layout::find_dataset(&self.roots, dataset) {
                Some(d) => (d, false, None),
                None => {
                    let lock = layout::creation_lock(&self.roots)?;
                    match layout::find_dataset_locked(&self.roots, dataset, &lock) {
                        Some(d) => (d, false, Some(lock)),
                        None => (
                            layout::new_dataset_dir(&self.roots, &self.placement, dataset, &lock)?,
                            true,
                            Some(lock),
                        ),
                    }
                }
            };
            crate::failpoint::hit("catalogue_writer.found");
            let opened = create_dataset(&dir, dataset, schema, may_create).and_then(|stored| {
                let toc_path = dir.join(TOC);
                let toc = OpenOptions::new()
                    .append(true)
                    .open(&toc_path)
                    .map_err(|e| Error::io(toc_path.display(), e))?;
                let (open_dir, ident) = open_dir_of(&dir, &toc, &toc_path)?;
                Ok((open_dir, toc, stored, ident))
            });
            match opened {
                Ok((open_dir, toc, stored, ident)) => break (dir, open_dir, toc, stored, ident),
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < 3 => continue,
                Err(e) => return Err(e),
            }
        };
        if layout::dataset_locks(&self.roots, &dir)?.contains(Operation::Archive) {
            return Err(locked(dataset, Operation::Archive));
        }
        let toc_path = dir.join(TOC);
        let toc_lock = Arc::new(
            toc.try_clone()
                .map_err(|e| Error::io(toc_path.display(), e))?,
        );
        let d = TocDataset {
            key: dataset.clone(),
            dir: dir.clone(),
            schema: stored_schema,
        };
        let writer = TocWriter {
            key: dataset.clone(),
            roots: self.roots.clone(),
            ident,
            abs_dir: std::path::absolute(&dir).map_err(|e| Error::io(dir.display(), e))?,
            open_dir,
            dir,
            toc,
            toc_lock,
            toc_path,
            index: None,
            same_dir: HashMap::new(),
            invisible: false,
        };
        Ok((d, writer))
    }

    fn schema(&self, d: &TocDataset) -> Arc<str> {
        d.schema.clone()
    }

    /// Steps 1 and 2 of a flush (the module's doc): the index blocks
    /// written, their write-back started, so that a sync of any file of
    /// this file system that follows (the store's `fdatasync` of its data
    /// file) may commit them too. Until the FLUSH record is appended whole,
    /// a failure leaves nothing visible.
    fn stage(
        &self,
        _: &DatasetKey,
        _: &TocDataset,
        w: &mut TocWriter,
        pending: PendingEntries,
    ) -> Result<StagedFlush> {
        w.invisible = true;
        let base = w.index.as_ref().map_or(0, |idx| idx.len);
        w.write_blocks(pending).map_err(|e| {
            // No record names what was appended to the index file: it goes.
            w.cut_index(base);
            w.explain(e)
        })
    }

    /// Step 3: the blocks synced, one FLUSH record appended, synced.
    fn publish(
        &self,
        _: &DatasetKey,
        _: &TocDataset,
        w: &mut TocWriter,
        staged: StagedFlush,
    ) -> Result<()> {
        w.publish(&staged).map_err(|e| {
            if w.invisible {
                // No record names what this flush appended to the index
                // file: it goes.
                w.cut_index(staged.base);
            }
            w.explain(e)
        })
    }

    /// Its blocks go, as a failed flush's do.
    fn abandon(&self, w: &mut TocWriter, staged: StagedFlush) {
        w.cut_index(staged.base);
    }

    fn invisible(&self, w: &TocWriter) -> bool {
        w.invisible
    }

    /// The `control` file.
    fn locks(&self, d: &TocDataset) -> Result<Locks> {
        layout::read_control(&d.dir)
    }

    /// What the dataset's root disables.
    fn inherited_locks(&self, d: &TocDataset) -> Result<Locks> {
        Ok(layout::root_of(&self.roots, &d.dir).map_or(Locks::NONE, Root::disabled))
    }

    /// Writers read the file; readers follow the table of contents.
    fn set_locks(&self, d: &TocDataset, locks: Locks, control: &[u8]) -> Result<()> {
        layout::write_control(&d.dir, locks)?;
        append_record(&d.dir, format::CONTROL, control)
    }

    fn append(&self, d: &TocDataset, kind: u16, payload: &[u8]) -> Result<()> {
        append_record(&d.dir, kind, payload)
    }

    /// Units are named relative to the dataset's directory.
    fn wipe_collocations(
        &self,
        d: &TocDataset,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()> {
        manage::wipe_collocations(&d.dir, collocations, units)
    }

    /// Also removes the index files nothing visible needs any more.
    fn reclaim(
        &self,
        d: &TocDataset,
        units: &[String],
        hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        manage::reclaim(self, &d.key, &d.dir, units, hidden, dry_run)
    }

    fn waiter(&self) -> Result<Box<dyn fieldstore_core::ChangeWaiter>> {
        super::present(&self.roots)?;
        let roots = self
            .roots
            .iter()
            .filter(|r| r.visit)
            .map(|r| r.path.clone())
            .collect();
        Ok(Box::new(super::notify::InotifyWaiter::new(roots)?))
    }

    fn damaged_datasets(&self) -> Option<&dyn DamagedDatasets> {
        Some(self)
    }

    fn mover(&self) -> Option<&dyn DatasetMover> {
        Some(self)
    }
}

impl MediumMaintenance for TocMedium {
    /// Asked per dataset: each keeps its locks in its own directory.
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        Ok(None)
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        manage::inventory(self, dataset)
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        manage::wipe(self, dataset, unsafe_wipe_all, store_step)
    }

    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        manage::interrupted_wipes(self)
    }
}

impl DamagedDatasets for TocMedium {
    fn damaged(&self) -> Result<Vec<DamagedDataset>> {
        Ok(self.scan()?.1)
    }

    fn wipe_damaged(&self, place: &str) -> Result<()> {
        manage::wipe_damaged(self, place)
    }
}

impl DatasetMover for TocMedium {
    fn unfinished(&self) -> Result<Vec<(DatasetKey, String)>> {
        manage::unfinished(self)
    }

    fn move_dataset(&self, dataset: &DatasetKey, root: &Path) -> Result<String> {
        manage::move_dataset(self, dataset, root)
    }
}

/// Append one record to a dataset's table of contents in one `O_APPEND`
/// write, and sync it.
pub(super) fn append_record(dir: &Path, kind: u16, payload: &[u8]) -> Result<()> {
    let path = dir.join(TOC);
    let toc = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| Error::io(path.display(), e))?;
    let mut rec = Vec::new();
    format::frame(&mut rec, kind, payload);
    append_whole(&toc, &path, &rec, "readers will report the partial record")?;
    layout::sync_data(&toc, &path)?;
    mark_end(&toc);
    Ok(())
}

/// Append the framed record `rec` to the table of contents `toc` (at
/// `path`, open for appending) in one write, refused if it was cut below
/// its end mark; a short write is `StorageFull`, saying `then` of the
/// partial record. Framing is left to the caller, so that a writer frames
/// before it takes the append lock other writers wait on.
pub(super) fn append_whole(mut toc: &File, path: &Path, rec: &[u8], then: &str) -> Result<()> {
    refuse_if_cut(toc, path)?;
    let n = toc
        .write(rec)
        .map_err(|e| Error::io(format!("appending to {}", path.display()), e))?;
    if n != rec.len() {
        return Err(Error::new(
            ErrorKind::StorageFull,
            format!(
                "{}: short append ({n} of {} bytes); {then}",
                path.display(),
                rec.len()
            ),
        ));
    }
    Ok(())
}
