//! Data management of the POSIX catalogue: inventory, wipe (whole datasets
//! and collocations), reclaim (purge's catalogue side) and move.
//!
//! - **Wipe of a dataset**: the directory is renamed, in its root, to a
//!   tombstone `.wiped.<id>` — one atomic `rename(2)`: readers and new
//!   writers no longer find it, and a reader that had it open notices at its
//!   next refresh (its `toc` path now names nothing, or a new dataset). Then
//!   the store deletes its part, then the tombstone is deleted, `toc` last.
//!   A crash leaves the directory or a tombstone holding its `toc`, which
//!   the next wipe of the dataset finds (`interrupted_wipes`) and deletes.
//! - **Wipe of collocations**: a WIPE record appended to `toc` (one
//!   `O_APPEND` write) hides them; readers drop them when they read it.
//! - **Reclaim**: a RECLAIM record names the data files the store removed
//!   and the index files this catalogue removes after appending it; readers
//!   drop entries and blocks in them. An index file goes when none of its
//!   visible blocks holds an entry in a data file that stays, and no live
//!   writer holds it (`flock`).
//! - **Move**: `rename(2)` into the other root when both are on one file
//!   system; else copy, publish with a rename, then retire the source with a
//!   rename and copy what writers appended meanwhile.
//!
//! Byte layout of the records: `docs/format/posix.md`.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use fieldstore_core::maintenance::{Item, ItemKind};
use fieldstore_core::record::maintenance as records;
use fieldstore_core::{CollocationKey, DatasetKey, Error, ErrorKind, Result};

use super::catalogue::{append_record, TocMedium};
use super::format;
use super::layout::{self, FileKind, MOVED_FROM, MOVING, RETIRED, TOC, TOMBSTONE};
use super::toc_reader::{data_name, open_reader, read_init};

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path.display(), e)
}

/// The dataset key in `dir/toc`, if readable.
fn stored_key(dir: &Path) -> Option<DatasetKey> {
    let path = dir.join(TOC);
    let f = File::open(&path).ok()?;
    read_init(&f, &path).ok().map(|(k, _)| k)
}

/// A directory's entries (none if it is gone) and their names, sorted.
pub(super) fn entries(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(dir.display(), e)),
    };
    for e in rd {
        let e = e.map_err(io_at(dir))?;
        out.push((e.file_name().to_string_lossy().into_owned(), e.path()));
    }
    out.sort();
    Ok(out)
}

fn size(path: &Path) -> Option<u64> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// Tombstones in the roots: their path and the dataset their `toc` names.
fn tombstones(cat: &TocMedium) -> Result<Vec<(PathBuf, Option<DatasetKey>)>> {
    let mut out = Vec::new();
    for root in &cat.roots {
        for (name, path) in entries(&root.path)? {
            if name.starts_with(TOMBSTONE) && path.is_dir() {
                out.push((path.clone(), stored_key(&path)));
            }
        }
    }
    Ok(out)
}

/// The dataset's directories (normally one), checked against their INIT.
fn dirs_of(cat: &TocMedium, dataset: &DatasetKey) -> Vec<PathBuf> {
    layout::dataset_dirs(&cat.roots, dataset)
        .into_iter()
        .filter(|d| stored_key(d).as_ref() == Some(dataset))
        .collect()
}

pub(super) fn inventory(cat: &TocMedium, dataset: &DatasetKey) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    // What fieldstore made in a tombstone is a leftover of a wipe.
    let mut add = |dir: &Path, dir_kind: ItemKind| -> Result<()> {
        for (name, path) in entries(dir)? {
            let kind = match layout::classify(&name) {
                FileKind::Unknown => ItemKind::Unknown,
                _ if dir_kind == ItemKind::Leftover => ItemKind::Leftover,
                FileKind::Toc | FileKind::TocTemp => ItemKind::Catalogue,
                FileKind::Index => ItemKind::Index,
                FileKind::Data => ItemKind::Data,
                FileKind::Control => ItemKind::Control,
            };
            items.push(Item::new(kind, path.display().to_string(), size(&path)));
        }
        items.push(Item::new(dir_kind, format!("{}/", dir.display()), None));
        Ok(())
    };
    for dir in dirs_of(cat, dataset) {
        add(&dir, ItemKind::Catalogue)?;
    }
    for (t, key) in tombstones(cat)? {
        if key.as_ref() == Some(dataset) {
            add(&t, ItemKind::Leftover)?;
        }
    }
    Ok(items)
}

pub(super) fn interrupted_wipes(cat: &TocMedium) -> Result<Vec<DatasetKey>> {
    let mut out = Vec::new();
    for (t, key) in tombstones(cat)? {
        match key {
            Some(k) => out.push(k),
            None => remove_nameless_tombstone(&t),
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// A tombstone whose `toc` is gone or unreadable names no dataset, so no
/// later wipe would ever finish it: a wipe killed between removing `toc`
/// and the directory, a writer's file created in it after the wipe listed
/// it (a path looked up before the rename), or a damaged dataset being
/// wiped. Everything in it was the dataset's, hidden for deletion: remove
/// what fieldstore created, and the directory once empty (best effort).
fn remove_nameless_tombstone(t: &Path) {
    let Ok(list) = entries(t) else {
        return;
    };
    if list
        .iter()
        .any(|(name, _)| layout::classify(name) == FileKind::Unknown)
    {
        return;
    }
    for (_, path) in list {
        let _ = layout::remove_file(&path);
    }
    let _ = std::fs::remove_dir(t);
}

/// Wipe a damaged dataset by its directory: hide it with a rename to a
/// tombstone, then delete what fieldstore created in it.
pub(super) fn wipe_damaged(cat: &TocMedium, place: &str) -> Result<()> {
    let dir = PathBuf::from(place);
    let is_damaged = cat
        .scan()?
        .1
        .iter()
        .any(|d| same_dir(Path::new(&d.place), &dir));
    if !is_damaged {
        return Err(Error::invalid_input(format!(
            "{place} is not a damaged dataset of this store"
        )));
    }
    let root = dir
        .parent()
        .ok_or_else(|| Error::internal("a dataset directory without a parent"))?;
    let t = root.join(format!("{TOMBSTONE}{}", layout::writer_id()));
    layout::rename(&dir, &t)?;
    layout::sync_dir(root)?;
    remove_nameless_tombstone(&t);
    if t.exists() {
        return Err(Error::invalid_input(format!(
            "wipe left {} in place: it holds files fieldstore did not create; delete by hand",
            t.display()
        )));
    }
    layout::sync_dir(root)
}

/// Delete a tombstone: everything but unknown files (unless
/// `unsafe_wipe_all`), then `toc`, then the directory.
fn delete_tombstone(t: &Path, unsafe_wipe_all: bool) -> Result<()> {
    let mut left = Vec::new();
    for (name, path) in entries(t)? {
        if name == TOC {
            continue;
        }
        if layout::classify(&name) == FileKind::Unknown && !unsafe_wipe_all {
            left.push(path.display().to_string());
            continue;
        }
        if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path).map_err(io_at(&path))?;
        } else {
            layout::remove_file(&path)?;
        }
    }
    if !left.is_empty() {
        return Err(Error::invalid_input(format!(
            "wipe left {} in place: fieldstore did not create {}; delete by hand, or wipe again with \
             unsafe_wipe_all (--unsafe-wipe-all)",
            t.display(),
            left.join(", ")
        )));
    }
    crate::failpoint::hit("wipe.tombstone_emptied");
    layout::remove_file(&t.join(TOC))?;
    // A writer that looked the dataset's path up just before the rename may
    // still create a file in the tombstone after it was listed: remove
    // those too. What is left after that (a writer still at it) names no
    // dataset, and the next wipe or status removes it
    // (`remove_nameless_tombstone`).
    for _ in 0..5 {
        match std::fs::remove_dir(t) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                remove_nameless_tombstone(t);
            }
            Err(e) => return Err(Error::io(format!("removing {}", t.display()), e)),
        }
    }
    if let Some(root) = t.parent() {
        layout::sync_dir(root)?;
    }
    Ok(())
}

pub(super) fn wipe(
    cat: &TocMedium,
    dataset: &DatasetKey,
    unsafe_wipe_all: bool,
    store_step: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    // 1. Hide: one rename per root holding the dataset.
    for dir in dirs_of(cat, dataset) {
        let Some(root) = dir.parent() else {
            continue;
        };
        let t = root.join(format!("{TOMBSTONE}{}", layout::writer_id()));
        layout::rename(&dir, &t)?;
        layout::sync_dir(root)?;
    }
    // 2. The store's part.
    store_step()?;
    // 3. The catalogue's part: every tombstone of this dataset (also those
    //    an interrupted wipe left), and empty ones whose `toc` is gone.
    for (t, key) in tombstones(cat)? {
        match key {
            Some(k) if &k == dataset => delete_tombstone(&t, unsafe_wipe_all)?,
            None => remove_nameless_tombstone(&t),
            _ => {}
        }
    }
    Ok(())
}

/// A WIPE record in the table of contents of the dataset in `dir`, its
/// units named relative to that directory.
pub(super) fn wipe_collocations(
    dir: &Path,
    collocations: &[CollocationKey],
    units: &[String],
) -> Result<()> {
    let abs = std::path::absolute(dir).map_err(io_at(dir))?;
    let names: Vec<String> = units.iter().map(|u| data_name(&abs, u)).collect();
    append_record(
        dir,
        format::WIPE,
        &records::encode_wipe(collocations, &names, records::now_ns()),
    )
}

fn not_found(dataset: &DatasetKey) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("no dataset {} in the roots", dataset.braced()),
    )
}

/// Record that `units` were removed, and remove the index files nothing
/// visible needs any more.
///
/// Safe against live writers by the same rule as the store's units: index
/// files are first held (an exclusive `flock`: their writer is gone, so no
/// flush can name them any more), then the table of contents is read, and
/// only held files that reading shows unneeded go. A reading taken before
/// the claim could miss the last flush of a writer that exited in between.
/// `hidden` collocations (a wipe being planned, before its WIPE record) do
/// not count as needing their files; once the WIPE record is in the table
/// of contents, blocks of those collocations that a reader still knows
/// came after it, and do.
pub(super) fn reclaim(
    cat: &TocMedium,
    dataset: &DatasetKey,
    dir: &Path,
    units: &[String],
    hidden: &[CollocationKey],
    dry_run: bool,
) -> Result<Vec<Item>> {
    // 1. Hold every index file no live writer holds: published ones, and
    //    the private `.new` name of a writer killed before publishing it.
    crate::failpoint::hit("reclaim.before_claim");
    let mut held = Vec::new();
    for (name, path) in entries(dir)? {
        if layout::classify(&name) != FileKind::Index {
            continue;
        }
        if let Some(Ok(lock)) = layout::claim(&path)? {
            held.push((name, path, lock));
        }
    }
    // 2. Read the table of contents now.
    let reader = open_reader(&cat.roots, dir, dataset)?;
    let st = reader.load_all()?;
    let gone: HashSet<&str> = st
        .index
        .removed()
        .iter()
        .map(|u| &**u)
        .chain(units.iter().map(String::as_str))
        .collect();
    // Index files a visible block with a surviving entry needs (a damaged
    // block counts as needed: what it holds is unknown).
    let mut needed = HashSet::new();
    for (key, blocks, loaded) in st.index.all_blocks() {
        if dry_run && hidden.contains(key) {
            continue;
        }
        for (i, b) in blocks.iter().enumerate() {
            let keep = match loaded.get(i).and_then(Option::as_ref) {
                Some(block) => {
                    block.damage.is_some()
                        || block.entries.iter().any(|(_, l)| !gone.contains(&*l.uri))
                }
                None => true,
            };
            if keep {
                needed.insert(b.place.file.clone());
            }
        }
    }
    // A skipped record may name any index file, and a recovered one names
    // files it needs to stay recoverable: keep them all. (A torn append
    // named nothing that became visible.)
    if st.index.has_damaged_regions() || !st.recovered.is_empty() || st.damage_at_end.is_some() {
        held.clear();
    }
    let abs = st.cursor.abs_dir.clone();
    drop(st);
    // 3. What goes: held and not needed.
    held.retain(|(name, _, _)| !needed.contains(name));
    let items: Vec<Item> = held
        .iter()
        .map(|(_, path, _)| Item::new(ItemKind::Index, path.display().to_string(), size(path)))
        .collect();
    if dry_run || (units.is_empty() && held.is_empty()) {
        return Ok(items);
    }
    let unit_names: Vec<String> = units.iter().map(|u| data_name(&abs, u)).collect();
    let index_names: Vec<String> = held
        .iter()
        .filter(|(n, _, _)| !n.starts_with('.'))
        .map(|(n, _, _)| n.clone())
        .collect();
    // Readers learn first; then the files go.
    append_record(
        dir,
        format::RECLAIM,
        &records::encode_reclaim(&unit_names, Some(&index_names), records::now_ns()),
    )?;
    for (_, path, _lock) in &held {
        layout::remove_file(path)?;
    }
    Ok(items)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

pub(super) fn move_dataset(cat: &TocMedium, dataset: &DatasetKey, root: &Path) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let target = cat
        .roots
        .iter()
        .find(|r| same_dir(&r.path, root))
        .ok_or_else(|| {
            let roots: Vec<String> = cat
                .roots
                .iter()
                .map(|r| r.path.display().to_string())
                .collect();
            Error::invalid_input(format!(
                "{} is not a root of this store (its roots: {})",
                root.display(),
                roots.join(", ")
            ))
        })?;
    let finished = finish_moves(cat)?;
    let src = layout::find_dataset(&cat.roots, dataset)
        .filter(|d| stored_key(d).as_ref() == Some(dataset))
        .ok_or_else(|| not_found(dataset))?;
    let src_root = src
        .parent()
        .ok_or_else(|| Error::internal("a dataset directory without a parent"))?
        .to_path_buf();
    if same_dir(&src_root, &target.path) {
        // Moving again is how an interrupted move is finished.
        if finished.iter().any(|f| same_dir(f, &src)) {
            return Ok(src.display().to_string());
        }
        return Err(Error::invalid_input(format!(
            "dataset {} is already in root {}",
            dataset.braced(),
            target.path.display()
        )));
    }
    let dst = target.path.join(layout::dataset_dir_name(dataset));
    // Refused early, before waiting for the seal; checked again under the
    // namespace lock, where no one creates anything there meanwhile.
    if dst.join(TOC).exists() {
        return Err(taken(&dst));
    }
    let src_dev = std::fs::metadata(&src).map_err(io_at(&src))?.dev();
    let dst_dev = std::fs::metadata(&target.path)
        .map_err(io_at(&target.path))?
        .dev();
    if src_dev == dst_dev {
        // One atomic rename: readers and writers holding files keep them
        // (the inodes move along) and find the dataset in its new root.
        // Sealed, so that no writer is between finding the dataset and
        // appending to it (see `seal`).
        let _seal = seal(&src)?;
        crate::failpoint::hit("move.sealed");
        let _namespace = layout::namespace_lock([src_root.as_path(), target.path.as_path()])?;
        vacate(&dst)?;
        layout::rename(&src, &dst)?;
        layout::sync_dir(&src_root)?;
        layout::sync_dir(&target.path)?;
    } else {
        copy_move(&src, &dst)?;
    }
    Ok(dst.display().to_string())
}

/// Make way for a dataset moved to `dst`, under the exclusive namespace
/// lock over its root: an empty directory there (left by a writer killed
/// before it linked its `toc`) is removed; anything else refuses the move.
fn vacate(dst: &Path) -> Result<()> {
    if dst.exists() && !dst.join(TOC).exists() {
        // `rmdir` fails if anything is in it: refused below.
        let _ = std::fs::remove_dir(dst);
    }
    if dst.exists() {
        return Err(taken(dst));
    }
    Ok(())
}

/// The refusal of a move to `dst`, which holds something already.
fn taken(dst: &Path) -> Error {
    Error::invalid_input(format!(
        "{} exists already: the dataset cannot be moved there",
        dst.display()
    ))
}

/// [`copy_tail`] of a file a listing named, where a file that is gone
/// since is no error when `may_vanish` says so: a writer's private file
/// (`.`-named) published under its own name or dropped meanwhile, or, before
/// the seal, any file (the pass under the seal lists the directory again).
fn copy_listed(name: &str, from: &Path, to: &Path, start: u64, may_vanish: bool) -> Result<()> {
    match copy_tail(from, to, start, None) {
        Err(e) if e.kind() == ErrorKind::NotFound && (may_vanish || name.starts_with('.')) => {
            Ok(())
        }
        r => r.map(drop),
    }
}

/// Copy `from[start..]` (a file only ever appended to) onto the end of
/// `to`, creating it; returns the bytes copied.
fn copy_tail(from: &Path, to: &Path, start: u64, end: Option<u64>) -> Result<u64> {
    let mut src = File::open(from).map_err(io_at(from))?;
    let len = match end {
        Some(e) => e,
        None => src.metadata().map_err(io_at(from))?.len(),
    };
    if len <= start && to.exists() {
        return Ok(0);
    }
    src.seek(SeekFrom::Start(start)).map_err(io_at(from))?;
    let mut buf = Vec::new();
    src.take(len.saturating_sub(start))
        .read_to_end(&mut buf)
        .map_err(io_at(from))?;
    let mut dst = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(to)
        .map_err(io_at(to))?;
    // One write: for `toc`, readers see the tail whole or not at all.
    dst.write_all(&buf).map_err(io_at(to))?;
    dst.sync_data().map_err(io_at(to))?;
    Ok(buf.len() as u64)
}

/// How long a move waits for writers' appends in progress to end.
const SEAL_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Seal the dataset at `dir` against appends: an exclusive `flock` on its
/// `toc`, which every writer holds shared from before it checks where its
/// dataset is until its record is appended, synced and checked. While the
/// seal is held no append is in progress and none starts; a writer
/// waiting for it then finds the dataset moved (renamed: it follows;
/// copied and retired: its flush fails, nothing of it visible). Released
/// when the returned file is dropped.
///
/// # Errors
/// `NotFound` if the dataset is not there any more; `Unavailable` if
/// writers kept it busy for [`SEAL_WAIT`].
fn seal(dir: &Path) -> Result<File> {
    let toc = dir.join(TOC);
    let file = File::open(&toc).map_err(io_at(&toc))?;
    let start = std::time::Instant::now();
    loop {
        match layout::flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() > SEAL_WAIT {
                    return Err(Error::new(
                        fieldstore_core::ErrorKind::Unavailable,
                        format!(
                            "{}: writers kept appending for {SEAL_WAIT:?}; the move did not start, \
                             try again",
                            toc.display()
                        ),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            Err(e) => return Err(Error::io(format!("locking {}", toc.display()), e)),
        }
    }
    // Wiped or moved by someone else while this waited.
    let here = std::fs::metadata(&toc).map_err(io_at(&toc))?;
    let held = file.metadata().map_err(io_at(&toc))?;
    if layout::identity(&here) != layout::identity(&held) {
        return Err(Error::new(
            fieldstore_core::ErrorKind::NotFound,
            format!("{} was moved or wiped meanwhile", dir.display()),
        ));
    }
    Ok(file)
}

/// Move across file systems: copy into a hidden directory of the target
/// root while writers go on, seal the source (no append in progress or
/// starting), copy what was appended meanwhile, publish the copy (marked
/// as a copy, see [`layout::MOVED_FROM`]), retire the source with a rename,
/// unseal, then delete the retired source and unmark the copy.
///
/// Until the source is retired, readers, writers and listings use the
/// source and ignore the copy; afterwards, the copy, which then holds
/// every record of the source: readers see no gap. A writer whose flush
/// was appended before the seal has it in the copy; one that waited for
/// the seal finds its dataset retired and reports its flush failed, and
/// nothing of it is in the copy. A move interrupted at any step is
/// finished, or undone, by [`finish_moves`].
pub(crate) fn copy_move(src: &Path, dst: &Path) -> Result<()> {
    let dst_root = dst
        .parent()
        .ok_or_else(|| Error::internal("a target without a parent"))?;
    let src_root = src
        .parent()
        .ok_or_else(|| Error::internal("a source without a parent"))?;
    let id = layout::writer_id();
    let tmp = dst_root.join(format!("{MOVING}{id}"));
    let retired = src_root.join(format!("{RETIRED}{id}"));
    let src_abs = std::path::absolute(src).map_err(io_at(src))?;
    let retired_abs = std::path::absolute(&retired).map_err(io_at(&retired))?;
    std::fs::create_dir(&tmp).map_err(io_at(&tmp))?;
    crate::failpoint::hit("move.dir_made");
    let marker = tmp.join(MOVED_FROM);
    let result = (|| -> Result<(File, File)> {
        let mut m = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .map_err(io_at(&marker))?;
        let lock = layout::claim(&marker)?
            .and_then(|r| r.ok())
            .ok_or_else(|| Error::internal("a new move marker is held by someone else"))?;
        // The table of contents' length first: everything it names is in
        // the other files by then (writers sync before appending to it).
        let toc_len = std::fs::metadata(src.join(TOC)).map_err(io_at(src))?.len();
        writeln!(
            m,
            "{}\n{}\n{toc_len}",
            src_abs.display(),
            retired_abs.display()
        )
        .map_err(io_at(&marker))?;
        m.sync_all().map_err(io_at(&marker))?;
        for (name, path) in entries(src)? {
            if name == TOC || !path.is_file() {
                continue;
            }
            copy_listed(&name, &path, &tmp.join(&name), 0, true)?;
        }
        copy_tail(&src.join(TOC), &tmp.join(TOC), 0, Some(toc_len))?;
        crate::failpoint::hit("move.before_seal");
        let seal = seal(src)?;
        let sealed_len = copy_appended(src, &tmp, toc_len)?;
        // The copy is whole: a move finished after a crash from here on
        // copies nothing more (later appends to the source are flushes
        // that failed).
        writeln!(m, "sealed {sealed_len}").map_err(io_at(&marker))?;
        m.sync_all().map_err(io_at(&marker))?;
        layout::sync_dir(&tmp)?;
        Ok((seal, lock))
    })();
    let (seal, _lock) = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = remove_copy(&tmp);
            return Err(e);
        }
    };
    crate::failpoint::hit("move.before_publish");
    // Publish and retire under the namespace lock: a writer that found the
    // dataset in neither root (looking at one before the publish and at the
    // other after the retire) looks again under it before creating one.
    let _namespace = layout::namespace_lock([src_root, dst_root])?;
    if let Err(e) = vacate(dst) {
        let _ = remove_copy(&tmp);
        return Err(e);
    }
    layout::rename(&tmp, dst)?;
    layout::sync_dir(dst_root)?;
    crate::failpoint::hit("move.before_retire");
    layout::rename(src, &retired)?;
    layout::sync_dir(src_root)?;
    drop(seal);
    crate::failpoint::hit("move.before_cleanup");
    finish_copy(dst, &retired, Tail::Sealed)
}

/// Copy onto the copy `to` what was appended to `from` since the bulk
/// copy (the source sealed: nothing is being appended): the tails of data
/// and index files, the `control` file whole, and `toc` from `toc_len`.
/// Returns the length of `toc` copied.
fn copy_appended(from: &Path, to: &Path, toc_len: u64) -> Result<u64> {
    for (name, path) in entries(from)? {
        if name == TOC || !path.is_file() {
            continue;
        }
        if layout::classify(&name) == FileKind::Control {
            let _ = std::fs::remove_file(to.join(&name));
            copy_tail(&path, &to.join(&name), 0, None)?;
            continue;
        }
        let have = std::fs::metadata(to.join(&name)).map_or(0, |m| m.len());
        copy_listed(&name, &path, &to.join(&name), have, false)?;
    }
    if !from.join(layout::CONTROL).exists() {
        layout::remove_file(&to.join(layout::CONTROL))?;
    }
    let len = std::fs::metadata(from.join(TOC))
        .map_err(io_at(from))?
        .len();
    copy_tail(&from.join(TOC), &to.join(TOC), toc_len, Some(len))?;
    Ok(toc_len.max(len))
}

/// What the end of a move still has to copy from the retired source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Nothing: the copy was made whole under the seal; what was appended
    /// to the retired source after it are failed flushes.
    Sealed,
    /// A move of an earlier version (no seal): what writers appended to
    /// the retired source from this `toc` length.
    From(u64),
}

/// Whether the copy's table of contents already holds `from[start..end]`
/// (a finish that crashed after copying it): looked for after `start`.
fn toc_holds_tail(to: &Path, from: &Path, start: u64, end: u64) -> Result<bool> {
    let tail = {
        let f = File::open(from).map_err(io_at(from))?;
        let mut buf = vec![0u8; (end - start) as usize];
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, start).map_err(io_at(from))?;
        buf
    };
    let have = std::fs::read(to).map_err(io_at(to))?;
    Ok(have
        .get(start as usize..)
        .is_some_and(|rest| rest.windows(tail.len()).any(|w| w == tail.as_slice())))
}

/// The end of a move whose source is retired: for a move of an earlier
/// version, copy what writers appended to the retired source after the
/// copy (from the length the mark keeps); then delete the retired source
/// and unmark the copy. Run again after a crash, it copies only what is
/// missing (data and index files by their lengths; the table of contents'
/// tail is one write, so either all there or not at all).
fn finish_copy(dst: &Path, retired: &Path, tail: Tail) -> Result<()> {
    if let (Tail::From(start), true) = (tail, retired.join(TOC).exists()) {
        let new_len = std::fs::metadata(retired.join(TOC))
            .map_err(io_at(retired))?
            .len();
        if new_len > start {
            for (name, path) in entries(retired)? {
                if name == TOC || !path.is_file() || layout::classify(&name) == FileKind::Control {
                    continue;
                }
                let have = std::fs::metadata(dst.join(&name)).map_or(0, |m| m.len());
                copy_tail(&path, &dst.join(&name), have, None)?;
            }
            if !toc_holds_tail(&dst.join(TOC), &retired.join(TOC), start, new_len)? {
                copy_tail(&retired.join(TOC), &dst.join(TOC), start, Some(new_len))?;
            }
        }
        layout::sync_dir(dst)?;
    }
    // The retired source goes before the mark: until the mark is gone, a
    // later `finish_moves` finds the move and completes this.
    remove_retired(retired)?;
    if let Some(root) = retired.parent() {
        layout::sync_dir(root)?;
    }
    layout::remove_file(&dst.join(MOVED_FROM))?;
    layout::sync_dir(dst)
}

/// Delete a move's retired source. Writers that held it open may still
/// create a file in it (through their directory descriptor) before they
/// find it retired and fail: such a file makes the directory not empty
/// again between `remove_dir_all`'s listing and its `rmdir`, so it is
/// tried again; once the directory is gone, nothing can be created in it.
fn remove_retired(retired: &Path) -> Result<()> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match std::fs::remove_dir_all(retired) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty && attempt < 20 => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(Error::io(format!("removing {}", retired.display()), e)),
        }
    }
}

/// Delete a move's copy that is not the dataset (its move failed or was
/// undone), so that a deletion cut short leaves nothing a reader could
/// take for the dataset: a published copy is first hidden by a rename to
/// a `.moving.` name, then its files go, its marker last (a hidden copy
/// with its marker is an interrupted move the next `finish_moves` deletes
/// again; without it, it is empty, and deleted as such).
fn remove_copy(dir: &Path) -> Result<()> {
    let root = dir
        .parent()
        .ok_or_else(|| Error::internal("a copy without a parent"))?;
    let hidden = if dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(MOVING))
    {
        dir.to_path_buf()
    } else {
        let hidden = root.join(format!("{MOVING}{}", layout::writer_id()));
        layout::rename(dir, &hidden)?;
        layout::sync_dir(root)?;
        hidden
    };
    for (name, path) in entries(&hidden)? {
        if name != MOVED_FROM {
            layout::remove_file(&path)?;
        }
    }
    layout::remove_file(&hidden.join(MOVED_FROM))?;
    match std::fs::remove_dir(&hidden) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("removing {}", hidden.display()), e)),
    }
    layout::sync_dir(root)
}

/// Moves that are not running any more (nobody holds their marker) and
/// were interrupted: as `(copy, what is wrong)`.
pub(super) fn interrupted_moves(cat: &TocMedium) -> Result<Vec<(PathBuf, String)>> {
    let mut out = Vec::new();
    for root in &cat.roots {
        for (name, dir) in entries(&root.path)? {
            if !dir.join(MOVED_FROM).exists() {
                // Killed between making its directory and its marker (the
                // marker is made before anything is copied): empty, and its
                // mover is gone (a live one is about to make its marker).
                if name
                    .strip_prefix(MOVING)
                    .is_some_and(layout::writer_is_gone)
                    && dir.read_dir().is_ok_and(|mut d| d.next().is_none())
                {
                    out.push((
                        dir,
                        "a move interrupted before it began copying".to_string(),
                    ));
                }
                continue;
            }
            // A live move holds the marker.
            if !matches!(layout::claim(&dir.join(MOVED_FROM))?, Some(Ok(_))) {
                continue;
            }
            let what = if name.starts_with(MOVING) {
                "a move interrupted while copying".to_string()
            } else {
                match layout::moved_from(&dir) {
                    Some((src, _, _)) if src.join(TOC).exists() => format!(
                        "a move from {} interrupted before it retired the source",
                        src.display()
                    ),
                    _ => "a move interrupted before it copied the last appends".to_string(),
                }
            };
            out.push((dir, what));
        }
    }
    Ok(out)
}

/// Interrupted moves, by dataset.
pub(super) fn unfinished(cat: &TocMedium) -> Result<Vec<(DatasetKey, String)>> {
    Ok(interrupted_moves(cat)?
        .into_iter()
        .filter_map(|(dir, what)| {
            let key = stored_key(&dir)?;
            Some((
                key,
                format!("{what}, at {} (move it again to finish)", dir.display()),
            ))
        })
        .collect())
}

/// Finish or undo every interrupted move: a copy still being made, or
/// published while its source still exists, is deleted (the source is the
/// dataset); a copy whose source was retired gets the retired source's
/// last appends, then is unmarked.
/// Returns the copies it finished.
pub(super) fn finish_moves(cat: &TocMedium) -> Result<Vec<PathBuf>> {
    let mut finished = Vec::new();
    for (dir, _) in interrupted_moves(cat)? {
        let marker = dir.join(MOVED_FROM);
        if !marker.exists() {
            // Empty, its mover gone: `rmdir` fails if anything is in it.
            let _ = std::fs::remove_dir(&dir);
            continue;
        }
        let Some(Ok(_lock)) = layout::claim(&marker)? else {
            continue;
        };
        let copying = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(MOVING));
        match layout::moved_from(&dir) {
            Some((src, retired, tail)) if !copying && !src.join(TOC).exists() => {
                finish_copy(&dir, &retired, tail)?;
                finished.push(dir.clone());
            }
            _ => remove_copy(&dir)?,
        }
    }
    Ok(finished)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::handle::FieldStore;
    use crate::root::Root;
    use fieldstore_core::{ErrorKind, Request};

    fn key(step: u32) -> fieldstore_core::Key {
        format!(
            "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167"
        )
        .parse()
        .unwrap()
    }

    fn get(fs: &FieldStore, step: u32) -> Option<Vec<u8>> {
        let r = fs.retrieve(&Request::from_key(&key(step))).unwrap();
        (!r.is_empty()).then(|| r.read_all().unwrap())
    }

    /// The copy protocol (used across file systems), run within one.
    #[test]
    fn copy_move_publishes_a_whole_copy_and_retires_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let config = || {
            let mut c = Config::embedded(&a);
            c.roots = vec![Root::new(&a), Root::new(&b)];
            c
        };
        let w = FieldStore::open(config()).unwrap();
        let r = FieldStore::open(config()).unwrap();
        for step in 0..3 {
            w.archive(&key(step), format!("field {step}").as_bytes())
                .unwrap();
            w.flush().unwrap();
        }
        assert_eq!(get(&r, 1).as_deref(), Some(&b"field 1"[..]));
        let name = "od:0001:oper:20231201:1200:g";
        copy_move(&a.join(name), &b.join(name)).unwrap();
        assert!(!a.join(name).exists());
        let names: Vec<String> = std::fs::read_dir(&a)
            .unwrap()
            .chain(std::fs::read_dir(&b).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [name], "no temporary directory or tombstone left");
        for step in 0..3 {
            let want = format!("field {step}");
            assert_eq!(
                get(&r, step).as_deref(),
                Some(want.as_bytes()),
                "old reader"
            );
            let fresh = FieldStore::open(config()).unwrap();
            assert_eq!(get(&fresh, step).as_deref(), Some(want.as_bytes()));
        }
        // A writer that appends to the retired source is told its flush
        // did not make it; its next one goes to the copy.
        w.archive(&key(3), b"late").unwrap();
        assert_eq!(w.flush().unwrap_err().kind(), ErrorKind::NotFound);
        w.archive(&key(3), b"again").unwrap();
        w.flush().unwrap();
        assert_eq!(get(&r, 3).as_deref(), Some(&b"again"[..]));
    }

    #[test]
    fn copy_tail_appends_only_what_is_new() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("s"), dir.path().join("d"));
        std::fs::write(&src, b"0123456789").unwrap();
        assert_eq!(copy_tail(&src, &dst, 0, Some(4)).unwrap(), 4);
        assert_eq!(copy_tail(&src, &dst, 4, None).unwrap(), 6);
        assert_eq!(copy_tail(&src, &dst, 10, None).unwrap(), 0);
        assert_eq!(std::fs::read(&dst).unwrap(), b"0123456789");
    }
}
