//! A writer's session with one dataset's table of contents
//! ([`TocWriter`]): its own index file, the flush protocol of
//! `catalogue.rs`'s module doc (blocks staged, synced, one FLUSH record
//! appended), and following its dataset through moves within one file
//! system under the shared append lock.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fieldstore_core::maintenance::{locked, wiped_while_writing};
use fieldstore_core::record::block;
use fieldstore_core::record::named::{self, NamedBlock};
use fieldstore_core::record::pending::PendingEntries;
use fieldstore_core::{DatasetKey, Error, ErrorKind, Locks, Operation, Result};

use super::catalogue::append_whole;
use super::end_mark::mark_end;
use super::format;
use super::layout::{self, TOC};
use super::open_dir::OpenDir;
use super::toc_reader::{data_name, DataFiles};
use crate::config::Root;

/// One writer's index file (shared-`flock`ed while open, like the data
/// files, so that purge can tell a live writer's file).
pub(super) struct IndexFile {
    pub(super) name: String,
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) len: u64,
    pub(super) synced_dir: bool,
}

/// One writer's session with one dataset's table of contents.
///
/// It follows the dataset, not a path: its `toc` and directory are open
/// descriptors, so a move within one file system (a rename of the
/// directory) takes them along, and its index file is created in the
/// directory it opened, wherever that is now.
pub struct TocWriter {
    pub(super) key: DatasetKey,
    pub(super) roots: Vec<Root>,
    /// Device and inode of the table of contents it appends to.
    pub(super) ident: (u64, u64),
    /// Where the dataset directory is (last seen).
    pub(super) dir: PathBuf,
    /// The directory's absolute path when opened: the base of the relative
    /// names of data files in blocks.
    pub(super) abs_dir: PathBuf,
    pub(super) open_dir: OpenDir,
    pub(super) toc: File,
    /// A second descriptor of `toc` (one open file description, so the
    /// same `flock`), made once per writer rather than once per flush: the
    /// append lock is taken on it, leaving `self` free to update while it
    /// is held.
    pub(super) toc_lock: Arc<File>,
    pub(super) toc_path: PathBuf,
    pub(super) index: Option<IndexFile>,
    /// Data file URIs under another path of the same directory, with their
    /// names in it (see [`DataFiles`]).
    pub(super) same_dir: HashMap<Arc<str>, String>,
    /// The last flush failed before its record could be visible
    /// (`CatalogueWriter::last_flush_invisible`, through `CatalogueMedium::invisible`).
    pub(super) invisible: bool,
}

/// A flush whose index blocks are written (their write-back started, not
/// yet synced) and named by no record yet.
pub struct StagedFlush {
    /// Where its blocks start in the index file: what a flush that fails
    /// before its record is in cuts the file back to.
    pub(super) base: u64,
    /// Its blocks, in file order, each placed by its framed length.
    pub(super) blocks: Vec<NamedBlock<u32>>,
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
    /// the dataset now) or wiped: the error of a flush refused then.
    fn whereabouts(&self) -> Result<PathBuf> {
        let same =
            |p: &Path| std::fs::metadata(p).is_ok_and(|m| layout::identity(&m) == self.ident);
        if same(&self.toc_path) {
            return Ok(self.dir.clone());
        }
        match layout::find_dataset(&self.roots, &self.key) {
            Some(dir) if same(&dir.join(TOC)) => Ok(dir),
            // Found elsewhere as a copy of the writer's (a move across file
            // systems retired the writer's).
            Some(dir) if dir.join(layout::MOVED_FROM).exists() || self.was_copied_to(&dir) => {
                Err(moved_while_writing(&self.key))
            }
            // Another dataset of that key is there, not known as the
            // writer's copy: wiped and created anew, or moved across file
            // systems and on since.
            Some(_) => Err(gone_while_writing(&self.key)),
            // Nowhere: wiped.
            None => Err(wiped_while_writing(&self.key)),
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
        let dir = self.whereabouts()?;
        self.toc_path = dir.join(TOC);
        self.dir = dir;
        Ok(())
    }

    /// After appending to the table of contents, with the append lock
    /// held: is it still the dataset's? A wipe renames the dataset
    /// directory away without the lock (the append then went to a
    /// tombstone: nothing of it is visible).
    fn check_still_there(&mut self) -> Result<()> {
        self.follow().map_err(|_| wiped_while_writing(&self.key))
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
    pub(super) fn cut_index(&mut self, base: u64) {
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
    pub(super) fn explain(&self, e: Error) -> Error {
        self.whereabouts().err().unwrap_or(e)
    }

    /// Steps 1 and 2 of a flush: the pending entries' index blocks, one
    /// write to the index file, their write-back started (not waited for:
    /// [`TocWriter::publish`] syncs them). Named by nothing yet.
    pub(super) fn write_blocks(&mut self, pending: PendingEntries) -> Result<StagedFlush> {
        if self.locks()?.contains(Operation::Archive) {
            return Err(locked(&self.key, Operation::Archive));
        }
        self.learn_data_files(
            pending
                .groups()
                .flat_map(|(_, entries)| entries.iter().map(|(_, l)| &l.uri)),
        );
        let files = DataFiles(&self.abs_dir, Some(&self.same_dir));
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
        super::staging::writeback(&idx.file, base, all.len(), false);
        Ok(StagedFlush { base, blocks })
    }

    /// Steps 2 (its sync) and 3 of a flush: the staged blocks synced, then
    /// one FLUSH record naming them appended to the table of contents,
    /// synced.
    pub(super) fn publish(&mut self, staged: &StagedFlush) -> Result<()> {
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
        // A short append is a start of a record and nothing else: not
        // visible, and not damage to anything visible (readers step over
        // it).
        append_whole(
            &self.toc,
            &self.toc_path,
            &rec,
            "this flush is not visible (readers step over the partial record it left)",
        )?;
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
