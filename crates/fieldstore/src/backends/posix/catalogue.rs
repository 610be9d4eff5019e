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

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use fieldstore_core::maintenance::{locked, wiped_while_writing, DamagedDataset, Item};
use fieldstore_core::record::block::{self, BlockFormat, ValueLen};
use fieldstore_core::record::maintenance::MaintenanceRecord;
use fieldstore_core::record::named::{self, NamedBlock};
use fieldstore_core::record::pending::PendingEntries;
use fieldstore_core::{
    AxesExt, CollocationKey, DamagedDatasets, DatasetKey, DatasetMover, ElementKey, Error,
    ErrorKind, FieldLocation, Locks, Operation, Result, Schema,
};

use super::end_mark::{cut_off, mark_end, marked_end, refuse_if_cut};
use super::format::{self, Enc, Framed};
use super::layout::{self, TOC};
use super::manage;
use super::open_dir::OpenDir;
use crate::config::Root;
use crate::placement::Placement;
use fieldstore_core::catalogue::{Axes, DamageMayName, DatasetReader};
use fieldstore_core::engine::framed::{self, FramedRecords, Tail};
use fieldstore_core::engine::log_catalogue::{CatalogueMedium, LogCatalogue, MediumMaintenance};
use fieldstore_core::engine::{EndLook, Entries, Log, LogMedium, LogReader};

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

/// Read the `INIT` record of a table of contents: the dataset key and the
/// offset of the next record.
pub(super) fn read_init(toc: &File, path: &Path) -> Result<(DatasetKey, u64)> {
    read_init_with_schema(toc, path).map(|(key, len, _)| (key, len))
}

/// As [`read_init`], with the text of the schema the dataset was created
/// under.
pub(super) fn read_init_with_schema(
    toc: &File,
    path: &Path,
) -> Result<(DatasetKey, u64, Arc<str>)> {
    let len = toc
        .metadata()
        .map_err(|e| Error::io(path.display(), e))?
        .len();
    let what = || format!("{} at offset 0", path.display());
    // The first 64 KiB hold the INIT record unless its schema is long:
    // then up to 1 MiB (a large table of contents is not read whole).
    let mut head = Vec::new();
    for limit in [64 << 10, 1 << 20] {
        head.resize(len.min(limit) as usize, 0);
        toc.read_exact_at(&mut head, 0)
            .map_err(|e| Error::io(path.display(), e))?;
        if len <= limit || !matches!(format::FRAMING.unframe(&head, &what)?, Framed::Incomplete) {
            break;
        }
    }
    framed::init(&format::FRAMING, &head, &what)
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
        let write = || -> std::io::Result<()> {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(&rec)?;
            f.sync_all()?;
            crate::failpoint::synced(&tmp);
            Ok(())
        };
        write().map_err(|e| Error::io(format!("creating {}", tmp.display()), e))?;
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
                "{} holds dataset {} , not {}: two dataset keys have the same values",
                dir.display(),
                stored,
                key
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
        let (dir, open_dir, toc, stored_schema) = loop {
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
                let toc = OpenOptions::new()
                    .append(true)
                    .open(dir.join(TOC))
                    .map_err(|e| Error::io(dir.join(TOC).display(), e))?;
                let open_dir = OpenDir::open(&dir)?;
                // A move between opening the two would leave them naming
                // different datasets.
                let ident = layout::identity(
                    &toc.metadata()
                        .map_err(|e| Error::io(dir.join(TOC).display(), e))?,
                );
                if open_dir.identity_of(TOC)? != Some(ident) {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!("{} moved while it was opened", dir.display()),
                    ));
                }
                Ok((open_dir, toc, stored))
            });
            match opened {
                Ok((open_dir, toc, stored)) => break (dir, open_dir, toc, stored),
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < 3 => continue,
                Err(e) => return Err(e),
            }
        };
        if layout::dataset_locks(&self.roots, &dir)?.contains(Operation::Archive) {
            return Err(locked(dataset, Operation::Archive));
        }
        let toc_path = dir.join(TOC);
        let ident = layout::identity(
            &toc.metadata()
                .map_err(|e| Error::io(toc_path.display(), e))?,
        );
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

/// A data file's name as index blocks and records keep it: relative to the
/// dataset directory when it lives there (so datasets can be moved), else
/// its full URI.
pub(super) fn data_name(abs_dir: &Path, uri: &str) -> String {
    match uri
        .strip_prefix("file://")
        .and_then(|p| Path::new(p).strip_prefix(abs_dir).ok())
    {
        Some(rel) if rel.components().count() == 1 => format!("./{}", rel.display()),
        _ => uri.to_string(),
    }
}

/// The URI of a data file name kept in a block or record.
pub(super) fn data_uri(abs_dir: &Path, name: &str) -> String {
    match name.strip_prefix("./") {
        Some(n) => format!("file://{}", abs_dir.join(n).display()),
        None => name.to_string(),
    }
}

/// The index blocks of the dataset in this directory (absolute): values
/// with a `u16` length, data files named by [`data_name`].
struct DataFiles<'a>(&'a Path);

impl BlockFormat for DataFiles<'_> {
    const VALUES: ValueLen = ValueLen::U16;
    const UNIT: &'static str = "data file";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        Cow::Owned(data_name(self.0, uri))
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(data_uri(self.0, name))
    }
}

/// How a writer names data files in its blocks: [`data_name`], and a data
/// file whose directory is the dataset's own under another path (a move
/// came between the catalogue's and the store's writer opening it) by its
/// name in the dataset directory too.
struct WriterFiles<'a> {
    abs_dir: &'a Path,
    /// Data file URIs in the dataset directory under another path, with
    /// their relative names.
    same_dir: &'a HashMap<Arc<str>, String>,
}

impl BlockFormat for WriterFiles<'_> {
    const VALUES: ValueLen = ValueLen::U16;
    const UNIT: &'static str = "data file";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        match self.same_dir.get(uri) {
            Some(name) => Cow::Owned(name.clone()),
            None => Cow::Owned(data_name(self.abs_dir, uri)),
        }
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(data_uri(self.abs_dir, name))
    }
}

/// One writer's index file (shared-`flock`ed while open, like the data
/// files, so that purge can tell a live writer's file).
struct IndexFile {
    name: String,
    path: PathBuf,
    file: File,
    len: u64,
    synced_dir: bool,
}

/// One writer's session with one dataset's table of contents.
///
/// It follows the dataset, not a path: its `toc` and directory are open
/// descriptors, so a move within one file system (a rename of the
/// directory) takes them along, and its index file is created in the
/// directory it opened, wherever that is now.
pub struct TocWriter {
    key: DatasetKey,
    roots: Vec<Root>,
    /// Device and inode of the table of contents it appends to.
    ident: (u64, u64),
    /// Where the dataset directory is (last seen).
    dir: PathBuf,
    /// The directory's absolute path when opened: the base of the relative
    /// names of data files in blocks.
    abs_dir: PathBuf,
    open_dir: OpenDir,
    toc: File,
    /// A second descriptor of `toc` (one open file description, so the
    /// same `flock`), made once per writer rather than once per flush: the
    /// append lock is taken on it, leaving `self` free to update while it
    /// is held.
    toc_lock: Arc<File>,
    toc_path: PathBuf,
    index: Option<IndexFile>,
    /// Data file URIs under another path of the same directory, with their
    /// names in it (see [`WriterFiles`]).
    same_dir: HashMap<Arc<str>, String>,
    /// The last flush failed before its record could be visible
    /// (`CatalogueWriter::last_flush_invisible`, through [`CatalogueMedium::invisible`]).
    invisible: bool,
}

/// A flush whose index blocks are written (their write-back started, not
/// yet synced) and named by no record yet.
pub struct StagedFlush {
    /// Where its blocks start in the index file: what a flush that fails
    /// before its record is in cuts the file back to.
    base: u64,
    /// Its blocks, in file order, each placed by its framed length.
    blocks: Vec<NamedBlock<u32>>,
}

/// A shared `flock` on a writer's `toc`, held from before it checks where
/// the dataset is until its append is synced and checked: a move takes the
/// exclusive lock before it renames the dataset, so that what a writer
/// found stays true until its record is in (see `docs/maintenance.md`,
/// "Move").
struct AppendLock<'a>(&'a File);

impl<'a> AppendLock<'a> {
    fn take(toc: &'a File, path: &Path) -> Result<AppendLock<'a>> {
        layout::flock(toc, libc::LOCK_SH)
            .map_err(|e| Error::io(format!("locking {}", path.display()), e))?;
        Ok(AppendLock(toc))
    }
}

impl Drop for AppendLock<'_> {
    fn drop(&mut self) {
        let _ = layout::flock(self.0, libc::LOCK_UN);
    }
}

/// Where a writer's dataset is, as seen from its `toc`.
enum Whereabouts {
    /// Its `toc` path names the writer's `toc`, here (moved within one
    /// file system if not where it was).
    Here(PathBuf),
    /// Found elsewhere as a copy of the writer's (a move across file
    /// systems retired the writer's).
    Moved,
    /// Another dataset of that key is there, not known as the writer's
    /// copy: wiped and created anew, or moved across file systems and on
    /// since.
    Other,
    /// Nowhere: wiped.
    Wiped,
}

impl TocWriter {
    fn index_file(&mut self) -> Result<&mut IndexFile> {
        if self.index.is_none() {
            let (name, file) = self.open_dir.create_writer_file(None, "index")?;
            self.index = Some(IndexFile {
                path: self.dir.join(&name),
                name,
                file,
                len: 0,
                synced_dir: false,
            });
        }
        self.index
            .as_mut()
            .ok_or_else(|| Error::internal("index file not open"))
    }

    /// Where this writer's dataset is now: its `toc` at the path it had,
    /// or found by identity in another root (moved within one file
    /// system); else gone, copied to another file system (a move's copy is
    /// the dataset now) or wiped.
    fn whereabouts(&self) -> Whereabouts {
        let same =
            |p: &Path| std::fs::metadata(p).is_ok_and(|m| layout::identity(&m) == self.ident);
        if same(&self.toc_path) {
            return Whereabouts::Here(self.dir.clone());
        }
        match layout::find_dataset(&self.roots, &self.key) {
            Some(dir) if same(&dir.join(TOC)) => Whereabouts::Here(dir),
            Some(dir) if dir.join(layout::MOVED_FROM).exists() || self.was_copied_to(&dir) => {
                Whereabouts::Moved
            }
            Some(_) => Whereabouts::Other,
            None => Whereabouts::Wiped,
        }
    }

    /// Whether the dataset at `dir` is a copy of this writer's (a move
    /// across file systems, finished): its `toc` starts with the bytes of
    /// this writer's.
    fn was_copied_to(&self, dir: &Path) -> bool {
        let Ok(theirs) = File::open(dir.join(TOC)) else {
            return false;
        };
        let mut ours = [0u8; 4096];
        let mut got = [0u8; 4096];
        let n = self.read_toc_start(&mut ours);
        // Either may be the longer: the copy has records appended since,
        // the retired source failed appends after the seal.
        let m = theirs.read_at(&mut got[..n], 0).unwrap_or(0);
        m > 0 && ours[..m] == got[..m]
    }

    fn read_toc_start(&self, buf: &mut [u8]) -> usize {
        // The writer's `toc` is open for appending only: read it by its
        // descriptor's path.
        File::open(format!("/proc/self/fd/{}", self.toc.as_raw_fd()))
            .and_then(|f| f.read_at(buf, 0))
            .unwrap_or(0)
    }

    /// Before appending, with the append lock held: follow the dataset if
    /// it moved within one file system; fail if it is gone (nothing of
    /// this flush is visible then).
    fn follow(&mut self) -> Result<()> {
        match self.whereabouts() {
            Whereabouts::Here(dir) => {
                if dir != self.dir {
                    self.toc_path = dir.join(TOC);
                    self.dir = dir;
                }
                Ok(())
            }
            Whereabouts::Moved => Err(moved_while_writing(&self.key)),
            Whereabouts::Other => Err(gone_while_writing(&self.key)),
            Whereabouts::Wiped => Err(wiped_while_writing(&self.key)),
        }
    }

    /// After appending to the table of contents, with the append lock
    /// held: is it still the dataset's? A wipe renames the dataset
    /// directory away without the lock (the append then went to a
    /// tombstone: nothing of it is visible).
    fn check_still_there(&mut self) -> Result<()> {
        match self.whereabouts() {
            Whereabouts::Here(dir) => {
                self.toc_path = dir.join(TOC);
                self.dir = dir;
                Ok(())
            }
            _ => Err(wiped_while_writing(&self.key)),
        }
    }

    /// The names blocks give the data files at `uris`: a data file in this
    /// dataset's directory named by another path of it (the store's writer
    /// opened the directory before or after a move, or it moved since) is
    /// named relative to it too. Writer ids are unique, so a file of that
    /// name in the directory this writer has open is that file; looked up
    /// once per file, through the open directory (the paths may all be
    /// stale).
    fn learn_data_files<'u>(&mut self, uris: impl Iterator<Item = &'u Arc<str>>) {
        // Entries of one writer share one URI: each distinct one is looked
        // at once per flush, not once per field.
        let mut last: Option<&Arc<str>> = None;
        for uri in uris {
            if last.is_some_and(|l| Arc::ptr_eq(l, uri)) {
                continue;
            }
            last = Some(uri);
            if self.same_dir.contains_key(uri) || data_name(&self.abs_dir, uri).starts_with("./") {
                continue;
            }
            let Some(name) = uri
                .strip_prefix("file://")
                .and_then(|p| Path::new(p).file_name())
                .map(|n| n.to_string_lossy().into_owned())
            else {
                continue;
            };
            if layout::classify(&name) == layout::FileKind::Data
                && self.open_dir.identity_of(&name).ok().flatten().is_some()
            {
                self.same_dir.insert(uri.clone(), format!("./{name}"));
            }
        }
    }
}

/// A flush refused because the writer's dataset is not where it was nor
/// found elsewhere as its own: wiped, or copied to another file system
/// (and perhaps moved again since, so that the copy could not be told).
fn gone_while_writing(dataset: &DatasetKey) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!(
            "dataset {} was wiped, or moved to another file system, while this handle was \
             writing to it: the fields of this flush are not stored; archive them again",
            dataset.braced()
        ),
    )
}

/// A flush refused because the dataset was copied to another file system
/// while the writer held it (see `docs/maintenance.md`, "Move").
fn moved_while_writing(dataset: &DatasetKey) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!(
            "dataset {} was moved to another file system while this handle was writing to it: \
             the fields of this flush are not stored; archive them again (they go to the moved \
             dataset)",
            dataset.braced()
        ),
    )
}

impl TocWriter {
    /// Give back what a failed flush appended to the index file from
    /// `base` on (the file is this writer's alone, and no record names
    /// those blocks). Best effort: blocks left are named by nothing.
    fn cut_index(&mut self, base: u64) {
        use std::io::{Seek, SeekFrom};
        if let Some(idx) = self.index.as_mut() {
            if idx.file.set_len(base).is_ok() && idx.file.seek(SeekFrom::Start(base)).is_ok() {
                idx.len = base;
            }
        }
    }

    /// A failed flush's error, saying so when it failed because the
    /// dataset was wiped or moved away under the writer (its directory
    /// gone).
    fn explain(&self, e: Error) -> Error {
        match self.whereabouts() {
            Whereabouts::Here(_) => e,
            Whereabouts::Moved => moved_while_writing(&self.key),
            Whereabouts::Other => gone_while_writing(&self.key),
            Whereabouts::Wiped => wiped_while_writing(&self.key),
        }
    }

    /// Steps 1 and 2 of a flush: the pending entries' index blocks, one
    /// write to the index file, their write-back started (not waited for:
    /// [`TocWriter::publish`] syncs them). Named by nothing yet.
    fn write_blocks(&mut self, pending: PendingEntries) -> Result<StagedFlush> {
        if self.locks()?.contains(Operation::Archive) {
            return Err(locked(&self.key, Operation::Archive));
        }
        self.learn_data_files(
            pending
                .groups()
                .flat_map(|(_, entries)| entries.iter().map(|(_, l)| &l.uri)),
        );
        let files = WriterFiles {
            abs_dir: &self.abs_dir,
            same_dir: &self.same_dir,
        };
        // 1. Blocks: per collocation, runs of one keyword list.
        let mut all = Vec::new();
        let mut blocks = Vec::new();
        for (collocation, entries) in pending.groups() {
            let (payload, axes) = block::encode(&files, collocation, entries);
            let from = all.len();
            if entries.iter().any(|(_, l)| l.extension.is_some()) {
                // Version 2: a version-1 reader would misread the entry
                // flags; it refuses the block by name instead.
                format::FRAMING.frame(&mut all, format::BLOCK, &payload);
            } else {
                format::frame(&mut all, format::BLOCK, &payload);
            }
            blocks.push(NamedBlock {
                place: (all.len() - from) as u32,
                count: entries.len() as u32,
                collocation: collocation.clone(),
                axes,
            });
        }
        // 2. Index blocks, one write, their write-back started: on a
        // journalling file system the blocks are allocated now, and the
        // next sync of the file system (the store's, of its data file)
        // commits them; `publish`'s own sync then only waits.
        let idx = self.index_file()?;
        let base = idx.len;
        idx.file
            .write_all(&all)
            .map_err(|e| Error::io(format!("writing {}", idx.path.display()), e))?;
        idx.len += all.len() as u64;
        super::staging::start_writeback(&idx.file, base, all.len());
        Ok(StagedFlush { base, blocks })
    }

    /// Steps 2 (its sync) and 3 of a flush: the staged blocks synced, then
    /// one FLUSH record naming them appended to the table of contents,
    /// synced.
    fn publish(&mut self, staged: &StagedFlush) -> Result<()> {
        let idx = self
            .index
            .as_mut()
            .ok_or_else(|| Error::internal("index file not open"))?;
        layout::sync_data(&idx.file, &idx.path)?;
        let need_dir_sync = !idx.synced_dir;
        idx.synced_dir = true;
        let index_name = idx.name.clone();
        if need_dir_sync {
            self.open_dir.sync()?;
        }
        // 3. One FLUSH record in the table of contents, one write, synced.
        let mut offset = staged.base;
        let p = named::encode_flush(None, &staged.blocks, &mut |e, length| {
            e.str(&index_name);
            e.u64(offset);
            e.u32(*length);
            offset += u64::from(*length);
        });
        let mut rec = Vec::new();
        format::frame(&mut rec, format::FLUSH, &p);
        let toc_lock = self.toc_lock.clone();
        let _lock = AppendLock::take(&toc_lock, &self.toc_path)?;
        crate::failpoint::hit("flush.before_append");
        self.follow()?;
        if self.locks()?.contains(Operation::Archive) {
            return Err(locked(&self.key, Operation::Archive));
        }
        refuse_if_cut(&self.toc, &self.toc_path)?;
        let n = self
            .toc
            .write(&rec)
            .map_err(|e| Error::io(format!("appending to {}", self.toc_path.display()), e))?;
        if n != rec.len() {
            // A start of a record and nothing else: not visible, and not
            // damage to anything visible (readers step over it).
            return Err(Error::new(
                ErrorKind::StorageFull,
                format!(
                    "{}: short append ({n} of {} bytes); this flush is not visible (readers step over \
                     the partial record it left)",
                    self.toc_path.display(),
                    rec.len()
                ),
            ));
        }
        // From here on the record may be visible, even if its sync fails.
        self.invisible = false;
        layout::sync_data(&self.toc, &self.toc_path)?;
        mark_end(&self.toc);
        self.check_still_there()
    }

    /// The operations the dataset is locked against: its `control` file's
    /// (read through the open directory) and those its root's flags
    /// disable.
    fn locks(&self) -> Result<Locks> {
        let root = layout::root_of(&self.roots, &self.dir).map_or(Locks::NONE, Root::disabled);
        Ok(self.open_dir.read_control()?.union(root))
    }
}

/// A block's place in an index file, as the table of contents gives it
/// (the engine's `P` for POSIX).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockPlace {
    pub(super) file: String,
    offset: u64,
    length: u32,
}

/// What a POSIX reader knows of its dataset.
pub(super) type ReaderLog = Log<BlockPlace, TocCursor>;

/// Where a POSIX reader stopped in its dataset's table of contents, and
/// the files it holds open (the default: nothing read, nothing open).
#[derive(Debug, Default)]
pub struct TocCursor {
    pub(super) dir: PathBuf,
    pub(super) abs_dir: PathBuf,
    toc_path: PathBuf,
    /// `None`: the dataset is gone (wiped, or moved out of the roots).
    toc: Option<File>,
    /// Device and inode of `toc`.
    ident: (u64, u64),
    /// Bytes of the table of contents consumed: everything before is known.
    pos: u64,
    /// CRC-32C of those bytes: a table of contents found elsewhere that
    /// starts with the same bytes is this log, moved (see
    /// [`TocCursor::same_log`]).
    digest: u32,
    index_files: HashMap<String, Arc<File>>,
    /// The dataset directory, open: index files are opened through it, so
    /// that a rename of the dataset (a move within one file system) does
    /// not make them vanish under the reader.
    open_dir: Option<OpenDir>,
    /// Index files a RECLAIM record says are removed.
    pub(super) removed_index: HashSet<String>,
    /// What recovering damaged records needs.
    log: LogDamage,
    /// When the end of the table of contents was last checked against its
    /// end mark (`end_mark.rs`; never, before a reader's first refresh: an
    /// idle reader checks again after `LOOK_AGAIN`), and whether it was
    /// found cut (reported once).
    looked_at: EndLook,
    cut: bool,
}

/// What recovering damaged records of the log needs. (Damaged regions
/// themselves, what lookups they fail, and what was recovered are the
/// engine's: [`damaged_region`], [`Log::recovered`]. A torn
/// append stepped over, [`Log::torn`], is the start of a record and nothing
/// else, followed by whole records: a writer's append cut short by a full
/// disk, whose flush failed and was never visible; lookups, lists and purge
/// go on.)
///
/// [`damaged_region`]: fieldstore_core::engine::DatasetIndex::damaged_region
#[derive(Debug, Default)]
struct LogDamage {
    /// Per index file, the end of the blocks the records read so far name.
    /// A writer appends its blocks, then names them in one record, flush
    /// after flush, and is dropped after a failed flush: the blocks of its
    /// next record start exactly there.
    index_ends: HashMap<String, u64>,
}

/// What damaged records of a dataset's log may have named: the
/// collocations and data files of the blocks in its index files that no
/// record `log` read names (a FLUSH names blocks written before it).
/// Sound only while the index files that hold its blocks are there: a data
/// file that no block names means a writer's index file may be gone too
/// (removed behind fieldstore's back, with the record damaged), or its
/// writer never flushed; either way the blocks may have held anything, as
/// may bytes that do not read as blocks.
fn unnamed_blocks(log: &ReaderLog) -> DamageMayName {
    let (dir, abs_dir) = (&log.cursor.dir, &log.cursor.abs_dir);
    let named: HashSet<(&str, u64)> = log
        .index
        .all_blocks()
        .flat_map(|(_, blocks, _)| blocks.iter())
        .map(|b| (b.place.file.as_str(), b.place.offset))
        .collect();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return DamageMayName::Anything;
    };
    let (mut data, mut in_blocks) = (Vec::new(), HashSet::new());
    let (mut collocations, mut units) = (BTreeSet::new(), BTreeSet::new());
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        match layout::classify(&name) {
            layout::FileKind::Index => {
                let Ok(bytes) = std::fs::read(e.path()) else {
                    return DamageMayName::Anything;
                };
                for (at, b) in blocks_in(&bytes, abs_dir) {
                    let Some(b) = b else {
                        return DamageMayName::Anything;
                    };
                    let Ok(c) = b.collocation.parse() else {
                        return DamageMayName::Anything;
                    };
                    let uris = b.entries.iter().map(|(_, l)| l.uri.to_string());
                    if !named.contains(&(name.as_str(), at)) {
                        units.extend(uris.clone());
                        collocations.insert(c);
                    }
                    in_blocks.extend(uris);
                }
            }
            layout::FileKind::Data => data.push(data_uri(abs_dir, &format!("./{name}"))),
            _ => {}
        }
    }
    if data.iter().any(|d| !in_blocks.contains(d.as_str())) {
        return DamageMayName::Anything;
    }
    DamageMayName::Only {
        collocations,
        units,
    }
}

/// The blocks of one index file with their offsets, `None` for bytes that
/// do not read as one. A block cut short at the end is not named by any
/// record (records are appended after their blocks are synced).
fn blocks_in<'b>(bytes: &'b [u8], abs_dir: &Path) -> Vec<(u64, Option<block::Block<'b>>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match format::FRAMING.unframe(&bytes[at..], &String::new) {
            Ok(Framed::Record(kind, payload, n)) => {
                let b = block::decode(&DataFiles(abs_dir), payload, &String::new).ok();
                out.push((at as u64, b.filter(|_| kind == format::BLOCK)));
                at += n;
            }
            Ok(Framed::Incomplete) => break,
            Err(_) => {
                out.push((at as u64, None));
                match format::FRAMING.resync(&bytes[at + 1..]) {
                    Some(skip) => at += skip + 1,
                    None => break,
                }
            }
        }
    }
    out
}

/// One block a FLUSH record names.
type FlushBlock = NamedBlock<BlockPlace>;

/// Decode a FLUSH record's payload (every length is bounds-checked by
/// [`Dec`]).
fn decode_flush(payload: &[u8], what: &dyn Fn() -> String) -> Result<Vec<FlushBlock>> {
    named::decode_flush(payload, what, false, &|d| {
        Ok(BlockPlace {
            file: d.str()?.to_string(),
            offset: d.u64()?,
            length: d.u32()?,
        })
    })
}

impl TocCursor {
    fn open(dir: &Path, key: &DatasetKey) -> Result<ReaderLog> {
        let toc_path = dir.join(TOC);
        let toc = File::open(&toc_path).map_err(|e| Error::io(toc_path.display(), e))?;
        let meta = toc
            .metadata()
            .map_err(|e| Error::io(toc_path.display(), e))?;
        let (stored, pos, schema) = read_init_with_schema(&toc, &toc_path)?;
        if &stored != key {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                format!("{} holds dataset {stored}, not {key}", dir.display()),
            ));
        }
        let open_dir = OpenDir::open(dir)?;
        if open_dir.identity_of(TOC)? != Some(layout::identity(&meta)) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("{} moved while it was opened", dir.display()),
            ));
        }
        let digest = prefix_digest(&toc, pos)
            .map_err(|e| Error::io(toc_path.display(), e))?
            .unwrap_or(0);
        let cursor = TocCursor {
            digest,
            open_dir: Some(open_dir),
            abs_dir: std::path::absolute(dir).map_err(|e| Error::io(dir.display(), e))?,
            dir: dir.to_path_buf(),
            toc_path,
            toc: Some(toc),
            ident: layout::identity(&meta),
            pos,
            ..TocCursor::default()
        };
        Ok(Log::new(schema, cursor))
    }

    /// Whether `other` (just opened elsewhere) is this reader's log moved
    /// there: a rename within one file system, or a move's byte-for-byte
    /// copy. It then starts with every byte this reader consumed (a
    /// dataset created anew differs: its FLUSH records carry other times
    /// and writers).
    fn same_log(&self, other: &TocCursor) -> bool {
        let Some(toc) = other.toc.as_ref() else {
            return false;
        };
        self.toc.is_some()
            && self.pos > other.pos
            && prefix_digest(toc, self.pos).ok().flatten() == Some(self.digest)
    }

    /// The state of a dataset that is gone: nothing in it.
    fn gone(dir: &Path) -> ReaderLog {
        let cursor = TocCursor {
            abs_dir: dir.to_path_buf(),
            dir: dir.to_path_buf(),
            toc_path: dir.join(TOC),
            ..TocCursor::default()
        };
        // The schema is unknown: nothing is there to split.
        Log::new(Arc::from(""), cursor)
    }
}

/// One dataset's table of contents, as the engine's reader follows it:
/// found again in the roots when the dataset is wiped, created anew or
/// moved.
#[derive(Debug)]
pub struct TocLog {
    roots: Vec<Root>,
    key: DatasetKey,
}

/// A read view of one dataset that follows its table of contents, and the
/// dataset itself when it is wiped (it becomes empty, then shows the new
/// dataset if one is created) or moved to another root.
pub type TocReader = LogReader<TocLog>;

/// A reader of the dataset `key` in `dir`, caught up.
///
/// # Errors
/// `NotFound` if it is not there (anymore); as [`TocLog::follow`].
pub(super) fn open_reader(roots: &[Root], dir: &Path, key: &DatasetKey) -> Result<TocReader> {
    let medium = TocLog {
        roots: roots.to_vec(),
        key: key.clone(),
    };
    LogReader::open(medium, TocCursor::open(dir, key)?)
}

/// Append one record to a dataset's table of contents in one `O_APPEND`
/// write, and sync it.
pub(super) fn append_record(dir: &Path, kind: u16, payload: &[u8]) -> Result<()> {
    let path = dir.join(TOC);
    let mut rec = Vec::new();
    format::frame(&mut rec, kind, payload);
    let mut toc = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| Error::io(path.display(), e))?;
    refuse_if_cut(&toc, &path)?;
    let n = toc
        .write(&rec)
        .map_err(|e| Error::io(format!("appending to {}", path.display()), e))?;
    if n != rec.len() {
        return Err(Error::new(
            ErrorKind::StorageFull,
            format!(
                "{}: short append ({n} of {} bytes); readers will report the partial record",
                path.display(),
                rec.len()
            ),
        ));
    }
    layout::sync_data(&toc, &path)?;
    mark_end(&toc);
    Ok(())
}

impl TocLog {
    /// Add the blocks of one FLUSH record, in order.
    fn apply_blocks(st: &mut ReaderLog, blocks: Vec<FlushBlock>) {
        for b in blocks {
            let p = &b.place;
            let end = st.cursor.log.index_ends.entry(p.file.clone()).or_default();
            *end = (*end).max(p.offset + u64::from(p.length));
            st.index.add_block(b.collocation, b.place, b.axes);
        }
    }

    /// Recover a damaged region as the FLUSH record it may have been, its
    /// frame checksums ignored, if what it names proves it: the index file
    /// is a writer's, the blocks start where that file's blocks named so far
    /// end and follow each other (so a damaged offset cannot point at an
    /// older or unnamed block), and each block's own frame checks whole and
    /// holds the record's collocation, entry count, length and axes. Its
    /// blocks are then applied and it is noted; whether it was.
    fn recover(st: &mut ReaderLog, region: &[u8], problem: &str) -> bool {
        let payload = region.get(fieldstore_core::record::HEADER..).unwrap_or(&[]);
        let blocks = decode_flush(payload, &String::new).unwrap_or_default();
        if blocks.is_empty() {
            return false;
        }
        let mut ends: HashMap<&str, u64> = HashMap::new();
        for b in &blocks {
            let file = b.place.file.as_str();
            let end = ends
                .entry(file)
                .or_insert_with(|| st.cursor.log.index_ends.get(file).copied().unwrap_or(0));
            if b.place.offset != *end || !block_proves(&st.cursor.dir, &st.cursor.abs_dir, b) {
                return false;
            }
            *end += u64::from(b.place.length);
        }
        let n = blocks.len();
        TocLog::apply_blocks(st, blocks);
        st.recovered.push(format!(
            "{problem}; recovered: a FLUSH record whose {n} index block{} check whole and match it",
            if n == 1 { "" } else { "s" }
        ));
        true
    }

    fn read_block(
        &self,
        st: &mut ReaderLog,
        b: &BlockPlace,
    ) -> Result<Vec<(ElementKey, FieldLocation)>> {
        let path = st.cursor.dir.join(&b.file);
        let file = match st.cursor.index_files.get(&b.file) {
            Some(f) => f.clone(),
            None => {
                let opened = match &st.cursor.open_dir {
                    Some(dir) => dir.open_read(&b.file),
                    None => File::open(&path),
                };
                let f = Arc::new(
                    opened.map_err(|e| Error::io(format!("index file {}", path.display()), e))?,
                );
                st.cursor.index_files.insert(b.file.clone(), f.clone());
                f
            }
        };
        let mut buf = vec![0u8; b.length as usize];
        file.read_exact_at(&mut buf, b.offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Error::corrupt(format!(
                    "{}: block at offset {} is cut short",
                    path.display(),
                    b.offset
                ))
            } else {
                Error::io(path.display(), e)
            }
        })?;
        let what = || format!("{} at offset {}", path.display(), b.offset);
        let payload = format::FRAMING.unframe_kind(&buf, format::BLOCK, "an index block", &what)?;
        Ok(block::decode(&DataFiles(&st.cursor.abs_dir), payload, &what)?.entries)
    }

    /// Catch up: follow the dataset if it was wiped, moved or created anew,
    /// read its lock state, then the records appended since the last time.
    fn follow_toc(&self, st: &mut ReaderLog) -> Result<()> {
        let mut carried = None;
        let meta = std::fs::metadata(&st.cursor.toc_path);
        let same = st.cursor.toc.is_some()
            && matches!(&meta, Ok(m) if layout::identity(m) == st.cursor.ident);
        let len = if same {
            meta.map(|m| m.len()).unwrap_or(0)
        } else {
            // Where the dataset is now; a wipe or move racing with this
            // may take it away between finding and opening it: look again.
            let mut opened = None;
            for _ in 0..3 {
                let Some(dir) = self
                    .renamed(st)
                    .or_else(|| layout::find_dataset(&self.roots, &self.key))
                else {
                    break;
                };
                match TocCursor::open(&dir, &self.key) {
                    Ok(new) => {
                        opened = Some(new);
                        break;
                    }
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
            }
            match opened {
                Some(new) => {
                    // The same log moved: its blocks keep the positions
                    // this reader gave them, so that `scan_since` (what
                    // `watch` reads) does not report them again. Blocks
                    // are read again from where the dataset is now.
                    if st.cursor.same_log(&new.cursor) {
                        carried = Some(st.index.positions());
                    }
                    *st = new;
                    let toc = st
                        .cursor
                        .toc
                        .as_ref()
                        .ok_or_else(|| Error::internal("table of contents not open"))?;
                    toc.metadata()
                        .map_err(|e| Error::io(st.cursor.toc_path.display(), e))?
                        .len()
                }
                None => {
                    if st.cursor.toc.is_some() {
                        *st = TocCursor::gone(&st.cursor.dir);
                    }
                    return Ok(());
                }
            }
        };
        if len <= st.cursor.pos {
            // Nothing new: the end is checked at a reader's first refresh
            // and once `LOOK_AGAIN` has passed (a cut back to where it
            // stopped would otherwise go unseen by it for good), and when
            // the `toc` is shorter than what this reader read.
            if st.cursor.looked_at.due() || len < st.cursor.pos {
                self.check_end(st, len);
            }
            return Ok(());
        }
        let mut buf = vec![0u8; (len - st.cursor.pos) as usize];
        {
            let toc = st
                .cursor
                .toc
                .as_ref()
                .ok_or_else(|| Error::internal("table of contents not open"))?;
            toc.read_exact_at(&mut buf, st.cursor.pos)
                .map_err(|e| Error::io(st.cursor.toc_path.display(), e))?;
        }
        st.damage_at_end = None;
        let start = st.cursor.pos;
        let used = framed::walk(st, &format::FRAMING, &buf, start, self)?;
        st.cursor.digest = crc32c::crc32c_append(st.cursor.digest, &buf[..used]);
        st.cursor.pos += used as u64;
        if let Some((blocks, log)) = carried {
            st.index.carry(&blocks, &log);
        }
        self.check_end(st, len);
        Ok(())
    }

    /// Whether the table of contents, `len` bytes when read, is shorter
    /// than an append that was synced left it (its end mark,
    /// `end_mark.rs`) or than what this reader read, and not because it
    /// grew since: its last records were cut off, a damaged region at the
    /// end of what was read. Looked at when a refresh read something new,
    /// at a reader's first, and by an idle refresh once `LOOK_AGAIN` has
    /// passed (one `fgetxattr`; else an idle refresh costs what it did).
    fn check_end(&self, st: &mut ReaderLog, len: u64) {
        st.cursor.looked_at.now();
        let Some(toc) = st.cursor.toc.as_ref().filter(|_| !st.cursor.cut) else {
            return;
        };
        // Shorter than what this reader read is cut, whatever the mark says
        // (a file system without user attributes keeps none).
        let end = match marked_end(toc).filter(|&end| end > len) {
            Some(end) => end,
            None if len < st.cursor.pos => st.cursor.pos,
            None => return,
        };
        if toc.metadata().map_or(true, |m| m.len() > len) {
            return;
        }
        st.cursor.cut = true;
        let problem = cut_off(&st.cursor.toc_path, len, end);
        let at = st.cursor.pos;
        self.damaged(st, at, problem);
    }

    /// Where the dataset directory this reader has open is now, if it was
    /// renamed into a visited root under its own name and still holds this
    /// reader's `toc` (a move within one file system): found through the
    /// open directory, without looking in every root (a look can miss a
    /// dataset renamed from a root not looked at yet into one already
    /// looked at).
    fn renamed(&self, st: &ReaderLog) -> Option<PathBuf> {
        let now = st.cursor.open_dir.as_ref()?.current_path()?;
        let name = now.file_name()?.to_string_lossy();
        if name.starts_with('.') {
            return None;
        }
        let parent = now.parent()?;
        let in_root = self
            .roots
            .iter()
            .filter(|r| r.visit)
            .any(|r| std::fs::canonicalize(&r.path).is_ok_and(|c| c == parent));
        let same =
            std::fs::metadata(now.join(TOC)).is_ok_and(|m| layout::identity(&m) == st.cursor.ident);
        (in_root && same).then_some(now)
    }
}

/// The records of a table of contents, as the engine's walk reads them.
impl FramedRecords<BlockPlace, TocCursor> for TocLog {
    fn what(&self, st: &ReaderLog, at: u64) -> String {
        format!("{} at offset {at}", st.cursor.toc_path.display())
    }

    fn flush(&self, st: &mut ReaderLog, payload: &[u8], at: u64) -> Result<()> {
        let blocks = decode_flush(payload, &|| self.what(st, at))?;
        TocLog::apply_blocks(st, blocks);
        Ok(())
    }

    /// Its units are data files named relative to the dataset; a
    /// RECLAIM's removed index files are closed, and blocks not loaded yet
    /// in them hold only entries in removed units: the index forgets them
    /// (loaded blocks stay; scans filter them).
    fn maintenance(&self, st: &mut ReaderLog, record: MaintenanceRecord, at: u64) {
        if let MaintenanceRecord::Reclaim(r) = &record {
            for f in r.index_files.iter().flatten() {
                st.cursor.index_files.remove(f);
                st.cursor.removed_index.insert(f.clone());
            }
        }
        let abs_dir = &st.cursor.abs_dir;
        let removed_index = &st.cursor.removed_index;
        st.index
            .apply_maintenance(at, record, &|u| data_uri(abs_dir, u), &|p: &BlockPlace| {
                removed_index.contains(&p.file)
            });
    }

    /// A torn append (no damage), or damage: recovered as the FLUSH record
    /// it was if every block it names proves it, else a region that may
    /// have held anything.
    fn skipped(&self, st: &mut ReaderLog, region: &[u8], at: u64, problem: String) {
        if is_torn_append(region) {
            st.torn.push(format!(
                "{}: {} bytes of an append cut short (a full disk: that flush failed and was \
                 never visible), skipped",
                self.what(st, at),
                region.len()
            ));
        } else if !TocLog::recover(st, region, &problem) {
            self.damaged(st, at, problem);
        }
    }

    /// A record cut short at the end is an append in progress (appends are
    /// whole `write(2)`s, one after the other), read again next time.
    /// Damage is recovered if it is one whole FLUSH record that its blocks
    /// prove; else it is looked at again at the next refresh
    /// ([`Log::damage_at_end`]).
    fn tail(&self, st: &mut ReaderLog, bytes: &[u8], _at: u64, tail: Tail) -> bool {
        let Tail::Damaged(e) = tail else {
            return false;
        };
        let problem = format!(
            "{e}; nothing readable after it yet (the last {} bytes)",
            bytes.len()
        );
        if TocLog::recover(st, bytes, &problem) {
            return true;
        }
        st.damage_at_end = Some(problem);
        false
    }
}

impl LogMedium for TocLog {
    type Place = BlockPlace;
    type Cursor = TocCursor;

    fn follow(&self, log: &mut ReaderLog) -> Result<()> {
        self.follow_toc(log)
    }

    /// An index file that is missing may have been reclaimed by a purge
    /// this reader has not read yet, or its dataset wiped or moved.
    fn read_blocks(&self, log: &mut ReaderLog, places: &[BlockPlace]) -> Result<Vec<Entries>> {
        Ok(places.iter().map(|p| self.read_block(log, p)).collect())
    }

    /// A damaged record named blocks written before it, in the dataset's
    /// index files: those no record read names ([`unnamed_blocks`]).
    fn damage_may_name(&self, log: &mut ReaderLog) -> Result<DamageMayName> {
        Ok(unnamed_blocks(log))
    }

    /// The CONTROL records' locks, and those of the dataset's root.
    fn locks(&self, log: &ReaderLog) -> Locks {
        let root =
            layout::root_of(&self.roots, &log.cursor.dir).map_or(Locks::NONE, Root::disabled);
        log.index.locks().union(root)
    }
}

/// CRC-32C of the first `len` bytes of `toc`; `None` if it is shorter.
fn prefix_digest(toc: &File, len: u64) -> std::io::Result<Option<u32>> {
    let mut buf = vec![0u8; 1 << 16];
    let (mut at, mut crc) = (0u64, 0u32);
    while at < len {
        let want = (len - at).min(buf.len() as u64) as usize;
        let n = toc.read_at(&mut buf[..want], at)?;
        if n == 0 {
            return Ok(None);
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        at += n as u64;
    }
    Ok(Some(crc))
}

/// Whether damaged bytes are only the beginning of a record: its magic,
/// a header (if all there) that checks but announces more bytes, and no
/// other record's start after it (a damaged record right after a torn
/// append reads as one region with it, and must not pass for part of it).
fn is_torn_append(region: &[u8]) -> bool {
    let magic = format::FRAMING.magic();
    region.starts_with(&magic)
        && !region[1..].windows(magic.len()).any(|w| w == magic)
        && matches!(
            format::FRAMING.unframe(region, &String::new),
            Ok(Framed::Incomplete)
        )
}

/// Whether the block a damaged FLUSH record names is there and is the one
/// it describes (see [`TocLog::recover`]). Lengths are checked
/// against the file before anything is allocated.
fn block_proves(dir: &Path, abs_dir: &Path, b: &FlushBlock) -> bool {
    let p = &b.place;
    if p.file.contains('/') || layout::classify(&p.file) != layout::FileKind::Index {
        return false;
    }
    let Ok(file) = File::open(dir.join(&p.file)) else {
        return false;
    };
    let fits = file.metadata().is_ok_and(|m| {
        p.offset
            .checked_add(u64::from(p.length))
            .is_some_and(|e| e <= m.len())
    });
    if !fits {
        return false;
    }
    let mut buf = vec![0u8; p.length as usize];
    if file.read_exact_at(&mut buf, p.offset).is_err() {
        return false;
    }
    let Ok((format::BLOCK, payload)) = format::FRAMING.unframe_exact(&buf, &String::new) else {
        return false;
    };
    let Ok(block) = block::decode(&DataFiles(abs_dir), payload, &String::new) else {
        return false;
    };
    let mut axes = Axes::new();
    for (k, _) in &block.entries {
        axes.add_key(k);
    }
    block.collocation == b.collocation.to_string()
        && block.entries.len() == b.count as usize
        && axes == b.axes
}
