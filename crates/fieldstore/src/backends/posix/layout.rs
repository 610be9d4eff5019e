//! Where things live under a root: dataset directories and file names.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use fieldstore_core::engine::cut_long_name;
use fieldstore_core::{writer_id, CollocationKey, DatasetKey, Error, Locks, Operation, Result};

use crate::config::Root;
use crate::placement::Placement;

/// The table of contents' file name within a dataset directory.
pub(crate) const TOC: &str = "toc";
/// The lock state of a dataset: the names of the locked operations, one
/// per line; absent when nothing is locked.
pub(crate) const CONTROL: &str = "control";
/// Prefix of a dataset directory renamed by a wipe (in its root).
pub(crate) const TOMBSTONE: &str = ".wiped.";
/// Prefix of a dataset directory being copied in by a move (in its root).
pub(crate) const MOVING: &str = ".moving.";

/// In a dataset directory published by a move across file systems, until
/// the move is finished: two lines, the source directory and the name it is
/// retired under. While the source still exists, the copy is not the
/// dataset (readers, writers and listings use the source); once the source
/// is retired, the copy is. The mover holds an exclusive `flock` on it, so
/// that an interrupted move (nobody holds it) can be told from a live one.
pub(crate) const MOVED_FROM: &str = "moved-from";

/// Prefix of a move's source directory once retired (in its root), until
/// what writers appended to it meanwhile is copied.
pub(crate) const RETIRED: &str = ".moved.";

/// What a file in a dataset directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `toc`.
    Toc,
    /// `.toc.<writer>`: a new dataset's INIT before it was linked.
    TocTemp,
    /// `<writer>.index`, or `.<writer>.index.new` before it is published.
    Index,
    /// `<collocation>.<writer>.data` (or `<writer>.data`, as data files
    /// were named before), or `.<name>.data.new` before it is published.
    Data,
    /// `control`, or `.control.<writer>` before it replaces it.
    Control,
    /// Anything else: fieldstore did not create it.
    Unknown,
}

/// Whether `s` is a writer id (`fieldstore_core::writer_id`).
fn is_writer_id(s: &str) -> bool {
    writer_id::parse(s).is_some()
}

/// Whether the process that made the writer id `id` is gone: it ran on
/// this host and no process has its pid any more. `false` when unknown
/// (another host, or not a writer id).
pub(crate) fn writer_is_gone(id: &str) -> bool {
    let Some((host, pid)) = writer_id::parse(id) else {
        return false;
    };
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if host != writer_id::host() || pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 checks only that the process exists; no memory.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Classify a file name of a dataset directory.
pub(crate) fn classify(name: &str) -> FileKind {
    if name == TOC {
        return FileKind::Toc;
    }
    if name == CONTROL || name == MOVED_FROM {
        return FileKind::Control;
    }
    if name.strip_prefix(".toc.").is_some_and(is_writer_id) {
        return FileKind::TocTemp;
    }
    if name.strip_prefix(".control.").is_some_and(is_writer_id) {
        return FileKind::Control;
    }
    // Published, or a writer's private `.NAME.new`.
    let name = (name.strip_prefix('.').and_then(|n| n.strip_suffix(".new"))).unwrap_or(name);
    if name.strip_suffix(".index").is_some_and(is_writer_id) {
        return FileKind::Index;
    }
    if name.strip_suffix(".data").is_some_and(is_data_stem) {
        return FileKind::Data;
    }
    FileKind::Unknown
}

/// A data file's name without `.data`: a writer id, after the
/// collocation's name and a dot ([`data_file_prefix`]) or alone (the
/// names of data files written before collocations named them).
fn is_data_stem(stem: &str) -> bool {
    if is_writer_id(stem) {
        return true;
    }
    // The writer id is the last four dot-separated parts (its host has no
    // dots); the collocation's name before them may have dots.
    let Some(prefix) = stem.rsplitn(5, '.').nth(4) else {
        return false;
    };
    !prefix.is_empty() && is_writer_id(&stem[prefix.len() + 1..])
}

/// The start of a data file's name: the collocation's values joined by
/// `:`, as FDB5 names its data files (`an:pl` in
/// `od:0001:oper:20231201:1200:g/an:pl.<writer>.data`), escaped as
/// dataset directory names are; a long one is cut and ends in a hash, so
/// that the whole name stays within file systems' 255 bytes.
pub(crate) fn data_file_prefix(collocation: &CollocationKey) -> String {
    escaped_name(collocation.values(), true, 100, || collocation.to_string())
}

pub(crate) use crate::sync::flock;

/// Whether a writer still holds `path` open (its shared `flock`). If not,
/// returns the file opened and locked exclusively: no writer can take it
/// while it is held. `Ok(None)` if the file does not exist.
pub(crate) fn claim(path: &Path) -> Result<Option<Result<File, ()>>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path.display(), e)),
    };
    match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => Ok(Some(Ok(file))),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Some(Err(()))),
        Err(e) => Err(Error::io(format!("locking {}", path.display()), e)),
    }
}

/// The dataset's lock state, from its `control` file.
pub(crate) fn read_control(dir: &Path) -> Result<Locks> {
    let path = dir.join(CONTROL);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|l| Operation::from_name(l.trim()))
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Locks::NONE),
        Err(e) => Err(Error::io(path.display(), e)),
    }
}

/// Replace the dataset's lock state atomically (a private file renamed
/// over `control`; no file when nothing is locked).
pub(crate) fn write_control(dir: &Path, locks: Locks) -> Result<()> {
    let path = dir.join(CONTROL);
    if locks.is_empty() {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(path.display(), e)),
        }
    } else {
        let tmp = dir.join(format!(".control.{}", writer_id()));
        let mut text = String::new();
        for op in locks.iter() {
            text.push_str(op.name());
            text.push('\n');
        }
        let written = write_new_synced(&tmp, text.as_bytes());
        if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(path.display(), e));
        }
    }
    sync_dir(dir)
}

/// Create the file `path`, which must not exist, holding `bytes`, synced.
pub(crate) fn write_new_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    crate::failpoint::synced(path);
    Ok(())
}

/// `(device, inode)` of a file.
pub(crate) fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Remove a file; a missing one is fine.
pub(crate) fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
    }
}

/// A dataset directory's name: the key's values joined by `:` (FDB5's
/// naming, e.g. `od:0001:oper:20231201:1200:g`), with `%`, `/`, `:` and a
/// leading `.` percent-encoded; names too long for a file system end in a
/// hash.
///
/// # Invariant
/// Two keys with the same keywords have the same name only if they are
/// equal (short names), or if the CRC-32C of their canonical strings agree
/// (cut names): each value is escaped so that no `:` inside it can be
/// taken for the separator. Keys of different rules (other keywords) can
/// still share values, hence a name; the INIT record tells them apart, and
/// the second is refused at archive with an error naming both.
pub(crate) fn dataset_dir_name(key: &DatasetKey) -> String {
    name_with(key, true)
}

/// The name fieldstore gave `key` before `:` in values was escaped, if it
/// differs from [`dataset_dir_name`]: a dataset created then is still
/// found under it (see [`find_dataset`]).
fn legacy_dir_name(key: &DatasetKey) -> Option<String> {
    key.values()
        .any(|v| v.contains(':'))
        .then(|| name_with(key, false))
}

fn name_with(key: &DatasetKey, escape_colon: bool) -> String {
    escaped_name(key.values(), escape_colon, 200, || key.to_string())
}

/// `values` joined by `:` and escaped (see [`dataset_dir_name`]); longer
/// than `max` bytes: cut, ending in the CRC-32C of `canonical()`.
fn escaped_name<'a>(
    values: impl Iterator<Item = &'a str>,
    escape_colon: bool,
    max: usize,
    canonical: impl FnOnce() -> String,
) -> String {
    let mut name = String::new();
    for (i, v) in values.enumerate() {
        if i > 0 {
            name.push(':');
        }
        for c in v.chars() {
            match c {
                '%' => name.push_str("%25"),
                '/' => name.push_str("%2F"),
                ':' if escape_colon => name.push_str("%3A"),
                c => name.push(c),
            }
        }
    }
    if name.starts_with('.') {
        name.replace_range(0..1, "%2E");
    }
    if name.is_empty() {
        name.push_str("%00");
    }
    cut_long_name(&mut name, max, canonical);
    name
}

/// The values a dataset directory's name encodes (the inverse of
/// [`dataset_dir_name`]), or `None` for a name ending in a hash.
pub(crate) fn dataset_dir_values(name: &str) -> Option<Vec<String>> {
    if name.contains('~') {
        return None;
    }
    if name == "%00" {
        return Some(vec![String::new()]);
    }
    Some(name.split(':').map(unescape).collect())
}

/// Undo the percent-encoding of [`dataset_dir_name`].
fn unescape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match code {
            Some(b) if b.is_ascii() => {
                out.push(char::from(b));
                rest = &rest[i + 3..];
            }
            _ => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The directory of `key` in `root`, if it exists there: under its name,
/// or under its legacy name ([`legacy_dir_name`]) when that directory's
/// INIT record names `key` itself (the legacy name is ambiguous: another
/// key may own it).
fn dataset_in(root: &Path, key: &DatasetKey) -> Option<PathBuf> {
    let dir = root.join(dataset_dir_name(key));
    if dir.join(TOC).exists() {
        return Some(dir);
    }
    let legacy = root.join(legacy_dir_name(key)?);
    let toc = legacy.join(TOC);
    let file = File::open(&toc).ok()?;
    let (stored, _) = super::toc_reader::read_init(&file, &toc).ok()?;
    (&stored == key).then_some(legacy)
}

/// The roots' namespace lock: a `flock` on each root directory itself (no
/// file is left in the root), taken in the order of their paths, so that
/// two holders never wait for each other.
///
/// *Exclusive* while a dataset directory is created (over every visited
/// root: a catalogue making its `toc`, or a store its data directory) or
/// moved between roots (over those two: the rename, or a copy's publish
/// and the source's retire). *Shared* while someone who found a dataset in
/// no root looks again ([`find_dataset`]): under it the namespace holds
/// still, so a miss is true, not a move renaming the dataset from a root
/// not looked at yet into one already looked at. Without it, a reader
/// could miss a dataset being moved (and see its fields vanish), and a
/// writer create a second dataset of the same key (which would hide the
/// first, and the flushes made to it). Creations, moves and misses are
/// rare; archives and reads of a dataset that exists never take it.
///
/// Lock order: a `toc`'s `flock` (a move's seal, a writer's append lock)
/// before this one, never the other way round.
pub(crate) struct NamespaceLock(#[allow(dead_code)] Vec<File>);

/// Take the [`NamespaceLock`] exclusively over the roots `dirs`. A root
/// that cannot be opened is skipped: nothing can be created or moved there.
pub(crate) fn namespace_lock<'a>(
    dirs: impl IntoIterator<Item = &'a Path>,
) -> Result<NamespaceLock> {
    lock_roots(dirs, libc::LOCK_EX)
}

fn lock_roots<'a>(
    dirs: impl IntoIterator<Item = &'a Path>,
    op: libc::c_int,
) -> Result<NamespaceLock> {
    let mut dirs: Vec<PathBuf> = dirs
        .into_iter()
        .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()))
        .collect();
    dirs.sort();
    dirs.dedup();
    let mut held = Vec::new();
    for dir in dirs {
        let Ok(file) = File::open(&dir) else {
            continue;
        };
        flock(&file, op).map_err(|e| Error::io(format!("locking root {}", dir.display()), e))?;
        held.push(file);
    }
    Ok(NamespaceLock(held))
}

/// Every visited root's path.
fn visited(roots: &[Root]) -> impl Iterator<Item = &Path> {
    roots.iter().filter(|r| r.visit).map(|r| r.path.as_path())
}

/// The directory of the dataset `key` in the visited `roots`, if it exists.
///
/// One look without a lock, then, if that found nothing, one under the
/// shared [`NamespaceLock`], where no move or creation is half done: a
/// dataset being moved is found in one root or the other. A move's copy is
/// skipped while its source exists (the source is the dataset until the
/// move retires it, under the exclusive lock).
///
/// Must not be called while holding the [`NamespaceLock`] (it would wait
/// for itself): use [`find_dataset_locked`] then.
pub(crate) fn find_dataset(roots: &[Root], key: &DatasetKey) -> Option<PathBuf> {
    if let Some(d) = look(roots, key) {
        return Some(d);
    }
    // A root that cannot be locked cannot be looked at either.
    let _shared = lock_roots(visited(roots), libc::LOCK_SH).ok()?;
    look(roots, key)
}

/// [`find_dataset`] for a caller holding the [`NamespaceLock`] over the
/// visited roots: one look, which nothing can race.
pub(crate) fn find_dataset_locked(
    roots: &[Root],
    key: &DatasetKey,
    _held: &NamespaceLock,
) -> Option<PathBuf> {
    look(roots, key)
}

/// One pass over the visited roots.
fn look(roots: &[Root], key: &DatasetKey) -> Option<PathBuf> {
    for r in roots.iter().filter(|r| r.visit) {
        if let Some(d) = dataset_in(&r.path, key) {
            if !is_unfinished_copy(&d) {
                return Some(d);
            }
        }
        crate::failpoint::hit("find_dataset.missed_in_a_root");
    }
    None
}

/// Take the exclusive [`NamespaceLock`] over the visited `roots`, as one
/// must to create a dataset directory in one of them.
pub(crate) fn creation_lock(roots: &[Root]) -> Result<NamespaceLock> {
    namespace_lock(visited(roots))
}

/// The source, retired source and what is left to copy from it, that a
/// move's copy names, if `dir` is one. The mark's lines: the source, the
/// retired name, the `toc` length the bulk copy took, and, once the copy
/// was made whole under the seal, `sealed <length>`.
pub(crate) fn moved_from(dir: &Path) -> Option<(PathBuf, PathBuf, super::manage::Tail)> {
    use super::manage::Tail;
    let text = std::fs::read_to_string(dir.join(MOVED_FROM)).ok()?;
    let mut lines = text.lines();
    let src = PathBuf::from(lines.next()?);
    let retired = PathBuf::from(lines.next()?);
    let copied: u64 = lines.next()?.parse().ok()?;
    let tail = match lines.next() {
        Some(l) if l.starts_with("sealed ") => Tail::Sealed,
        _ => Tail::From(copied),
    };
    Some((src, retired, tail))
}

/// Whether `dir` is a move's copy whose source still exists: not the
/// dataset yet (its source is).
pub(crate) fn is_unfinished_copy(dir: &Path) -> bool {
    moved_from(dir).is_some_and(|(source, _, _)| source.join(TOC).exists())
}

/// Every root (visited or not) holding a dataset directory named for `key`
/// with a table of contents.
pub(crate) fn dataset_dirs(roots: &[Root], key: &DatasetKey) -> Vec<PathBuf> {
    roots
        .iter()
        .filter_map(|r| dataset_in(&r.path, key))
        .collect()
}

/// The directory where the dataset `key`, found in no root, is to be
/// created: in the root its space's handler chooses. The caller found it
/// nowhere under the [`creation_lock`] and holds that until it has created
/// the directory.
pub(crate) fn new_dataset_dir(
    roots: &[Root],
    placement: &Placement,
    key: &DatasetKey,
    _held: &NamespaceLock,
) -> Result<PathBuf> {
    super::create_missing(roots)?;
    let root = placement.root_for_new(key)?;
    if !root.is_dir() {
        return Err(super::missing(&root));
    }
    Ok(root.join(dataset_dir_name(key)))
}

/// The root of `roots` holding the dataset directory `dir`.
pub(crate) fn root_of<'a>(roots: &'a [Root], dir: &Path) -> Option<&'a Root> {
    let parent = dir.parent()?;
    roots.iter().find(|r| r.path == parent)
}

/// The operations the dataset in `dir` is locked against: its `control`
/// file's, and those its root's flags disable.
pub(crate) fn dataset_locks(roots: &[Root], dir: &Path) -> Result<Locks> {
    let root = root_of(roots, dir).map_or(Locks::NONE, Root::disabled);
    Ok(read_control(dir)?.union(root))
}

/// A name unique among all writers on all hosts sharing the file system
/// (`fieldstore_core::writer_id`).
pub(crate) fn writer_id() -> String {
    writer_id::next()
}

/// `fdatasync(2)`: the file's data (and size) on stable storage.
pub(crate) fn sync_data(file: &File, path: &Path) -> Result<()> {
    file.sync_data()
        .map_err(|e| Error::io(format!("syncing {}", path.display()), e))?;
    crate::failpoint::synced(path);
    Ok(())
}

/// `rename(2)` `from` to `to`; an error names both.
pub(crate) fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| {
        Error::io(
            format!("renaming {} to {}", from.display(), to.display()),
            e,
        )
    })
}

/// Make a directory's entries durable (after creating or renaming files).
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(|e| Error::io(dir.display(), e))?;
    f.sync_all()
        .map_err(|e| Error::io(format!("syncing directory {}", dir.display()), e))?;
    crate::failpoint::synced(dir);
    Ok(())
}

/// `mkdir`, where an existing directory is fine.
pub(crate) fn ensure_dir(dir: &Path) -> Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(Error::io(
            format!("creating dataset directory {}", dir.display()),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_is_gone_only_when_its_process_on_this_host_is() {
        assert!(!writer_is_gone(&writer_id()), "this process lives");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(writer_is_gone(&format!("{}.{pid}.1.0", writer_id::host())));
        assert!(!writer_is_gone(&format!("elsewhere.{pid}.1.0")));
        assert!(!writer_is_gone("not-a-writer-id"));
    }

    #[test]
    fn files_are_classified_by_name() {
        let id = "vm-1.123.456789.0";
        assert!(is_writer_id(id));
        assert!(!is_writer_id("vm.1.2"));
        assert!(!is_writer_id("a.b.1.2.3"));
        assert_eq!(classify("toc"), FileKind::Toc);
        assert_eq!(classify(&format!(".toc.{id}")), FileKind::TocTemp);
        assert_eq!(classify(&format!("{id}.index")), FileKind::Index);
        assert_eq!(classify(&format!("{id}.data")), FileKind::Data);
        assert_eq!(classify(&format!(".{id}.data.new")), FileKind::Data);
        assert_eq!(classify(&format!(".{id}.index.new")), FileKind::Index);
        // FDB5's shape: the collocation's values first (which may hold
        // dots), then the writer id.
        assert_eq!(classify(&format!("an:pl.{id}.data")), FileKind::Data);
        assert_eq!(classify(&format!("fc:0.5.{id}.data")), FileKind::Data);
        assert_eq!(classify(&format!(".an:pl.{id}.data.new")), FileKind::Data);
        assert_eq!(classify("control"), FileKind::Control);
        assert_eq!(classify(&format!(".control.{id}")), FileKind::Control);
        for other in [
            "notes.txt",
            "x.data",
            "an:pl.x.data",
            &format!(".{id}.data"),
            &format!("an:pl.{id}.index"),
            &format!("{id}.data.gribjump"),
            "toc.bak",
        ] {
            assert_eq!(classify(other), FileKind::Unknown, "{other}");
        }
    }

    #[test]
    fn names_follow_fdb5_and_escape() {
        let k: DatasetKey = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain="
            .parse()
            .unwrap();
        assert_eq!(dataset_dir_name(&k), "od:0001:oper:20231201:1200:");
        let k: DatasetKey = "a=.x/y%z".parse().unwrap();
        assert_eq!(dataset_dir_name(&k), "%2Ex%2Fy%25z");
        // `:` in a value is not the separator: these two keys once shared
        // the name `od:x:1200:1200`.
        let a: DatasetKey = "class=od,date=x:1200,time=1200".parse().unwrap();
        let b: DatasetKey = "class=od,date=x,time=1200:1200".parse().unwrap();
        assert_eq!(dataset_dir_name(&a), "od:x%3A1200:1200");
        assert_eq!(dataset_dir_name(&b), "od:x:1200%3A1200");
        assert_eq!(legacy_dir_name(&a).as_deref(), Some("od:x:1200:1200"));
        assert_eq!(legacy_dir_name(&k), None);
        let long: DatasetKey = format!("a={}", "x".repeat(300)).parse().unwrap();
        let n = dataset_dir_name(&long);
        assert!(n.len() < 200 && n.contains('~'), "{n}");
    }

    #[test]
    fn data_files_are_named_by_collocation_as_fdb5_does() {
        let c: CollocationKey = "type=an,levtype=pl".parse().unwrap();
        assert_eq!(data_file_prefix(&c), "an:pl");
        let c: CollocationKey = "type=a/b,levtype=x:y".parse().unwrap();
        assert_eq!(data_file_prefix(&c), "a%2Fb:x%3Ay");
        let long: CollocationKey = format!("type={}", "x".repeat(300)).parse().unwrap();
        let p = data_file_prefix(&long);
        assert!(p.len() <= 100 && p.contains('~'), "{p}");
        let name = format!(".{p}.{}.data.new", writer_id());
        assert!(name.len() < 255, "{}", name.len());
        assert_eq!(classify(&name), FileKind::Data);
    }
}
