//! The engine's reader on a table of contents ([`TocLog`], a
//! [`LogMedium`]): it follows the dataset when it is wiped, created anew or
//! moved, tells a `toc` cut below its end mark, recovers a damaged FLUSH
//! record that its index blocks prove, and reads those blocks from the
//! writers' index files.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fieldstore_core::catalogue::{Axes, DamageMayName};
use fieldstore_core::engine::framed::{self, FramedRecords, Tail};
use fieldstore_core::engine::{EndLook, Entries, Log, LogMedium, LogReader};
use fieldstore_core::record::block::{self, BlockFormat, ValueLen};
use fieldstore_core::record::maintenance::MaintenanceRecord;
use fieldstore_core::record::named::{self, NamedBlock};
use fieldstore_core::{
    AxesExt, DatasetKey, ElementKey, Error, ErrorKind, FieldLocation, Locks, Result,
};

use super::end_mark::{cut_off, marked_end};
use super::format::{self, Framed};
use super::layout::{self, TOC};
use super::open_dir::OpenDir;
use crate::config::Root;

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

/// The dataset directory `dir` open, and the device and inode of its table
/// of contents `toc` (at `path`), opened before it.
///
/// # Errors
/// `NotFound` if a move between opening the two left them naming different
/// datasets.
pub(super) fn open_dir_of(dir: &Path, toc: &File, path: &Path) -> Result<(OpenDir, (u64, u64))> {
    let ident = layout::identity(&toc.metadata().map_err(|e| Error::io(path.display(), e))?);
    let open_dir = OpenDir::open(dir)?;
    if open_dir.identity_of(TOC)? != Some(ident) {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("{} moved while it was opened", dir.display()),
        ));
    }
    Ok((open_dir, ident))
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
/// with a `u16` length, data files named by [`data_name`]. A writer's
/// (`toc_writer.rs`) also names a data file whose directory is the
/// dataset's own under another path (a move came between the catalogue's
/// and the store's writer opening it) by its name in the dataset directory:
/// the second field, data file URIs in the dataset directory under another
/// path, with their relative names (`None` for a reader).
pub(super) struct DataFiles<'a>(
    pub(super) &'a Path,
    pub(super) Option<&'a HashMap<Arc<str>, String>>,
);

impl BlockFormat for DataFiles<'_> {
    const VALUES: ValueLen = ValueLen::U16;
    const UNIT: &'static str = "data file";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        let same_dir = self.1.and_then(|same_dir| same_dir.get(uri));
        Cow::Owned(same_dir.cloned().unwrap_or_else(|| data_name(self.0, uri)))
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(data_uri(self.0, name))
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
    pub(super) toc: Option<File>,
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
                let b = block::decode(&DataFiles(abs_dir, None), payload, &String::new).ok();
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
/// `Dec`).
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
        let (stored, pos, schema) = read_init_with_schema(&toc, &toc_path)?;
        if &stored != key {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                format!("{} holds dataset {stored}, not {key}", dir.display()),
            ));
        }
        let (open_dir, ident) = open_dir_of(dir, &toc, &toc_path)?;
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
            ident,
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

    /// `f` on the open table of contents, its I/O errors naming it.
    fn on_toc<T>(&self, f: impl FnOnce(&File) -> std::io::Result<T>) -> Result<T> {
        let toc =
            (self.toc.as_ref()).ok_or_else(|| Error::internal("table of contents not open"))?;
        f(toc).map_err(|e| Error::io(self.toc_path.display(), e))
    }

    /// The state of a dataset that is gone: nothing in it.
    pub(super) fn gone(dir: &Path) -> ReaderLog {
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
    pub(super) roots: Vec<Root>,
    pub(super) key: DatasetKey,
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
        Ok(block::decode(&DataFiles(&st.cursor.abs_dir, None), payload, &what)?.entries)
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
                    st.cursor.on_toc(|toc| toc.metadata())?.len()
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
        let pos = st.cursor.pos;
        st.cursor.on_toc(|toc| toc.read_exact_at(&mut buf, pos))?;
        st.damage_at_end = None;
        let used = framed::walk(st, &format::FRAMING, &buf, pos, self)?;
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
    let Ok(block) = block::decode(&DataFiles(abs_dir, None), payload, &String::new) else {
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
