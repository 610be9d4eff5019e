//! Power loss, not only SIGKILL: crash images of the POSIX store.
//!
//! A workload of flushes runs on a real store while every `fsync` and
//! `fdatasync` the backend makes is recorded ([`failpoint::synced`]). At
//! each sync — the only instants where what is on stable storage changes
//! in a way the code relies on — the store's files are snapshotted with
//! what the sync made durable: per inode, the length synced last; per
//! directory, the names present at its last sync. A power cut just after
//! that sync leaves, for each file, any length from the durable one to the
//! current one (writes not synced may be dropped or torn), and a name not
//! yet made durable by its directory's sync may be gone. Each crash point
//! is rebuilt as several images — unsynced bytes all dropped, all kept,
//! torn halfway, and seeded per-file mixes — into a fresh directory, and
//! every image must
//!
//! - open and list without error;
//! - read back exactly every field whose flush returned before the cut;
//! - show the flush in progress at the cut whole or not at all, in each
//!   dataset (a handle's flush flushes its datasets one after the other);
//! - take a new flush and read it back.
//!
//! (The model keeps the bytes a file held: a file system that exposes
//! zeros in a tail it never wrote is not modelled.)

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::Config;
use crate::failpoint;
use crate::handle::FieldStore;
use crate::list::ListOptions;
use fieldstore_core::{Key, Request};

/// One file as a crash point saw it.
#[derive(Clone)]
struct FileImage {
    inode: u64,
    bytes: Vec<u8>,
}

/// What stable storage held at one crash point.
#[derive(Clone)]
struct CrashPoint {
    /// Every file of the store (relative path → its inode and bytes now).
    files: BTreeMap<PathBuf, FileImage>,
    /// Per inode, the bytes a sync made durable.
    durable: HashMap<u64, u64>,
    /// Names made durable by a sync of their directory.
    durable_names: HashSet<PathBuf>,
    /// Flushes that had returned.
    acknowledged: usize,
    /// What was synced (for messages).
    what: String,
}

/// The recorder's state while the workload runs.
#[derive(Default)]
struct Recorder {
    durable: HashMap<u64, u64>,
    durable_names: HashSet<PathBuf>,
    acknowledged: usize,
    points: Vec<CrashPoint>,
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, FileImage>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            walk(root, &path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            out.insert(
                rel,
                FileImage {
                    inode: meta.ino(),
                    bytes,
                },
            );
        }
    }
}

impl Recorder {
    /// `path` was synced: note what is durable now, and snapshot.
    fn synced(&mut self, root: &Path, path: &Path) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        let Ok(abs_root) = std::fs::canonicalize(root) else {
            return;
        };
        let Ok(abs) = std::fs::canonicalize(path) else {
            return;
        };
        if meta.is_dir() {
            // Every name now in the directory is durable (a directory
            // outside the store, such as the root's parent, names nothing
            // of it).
            if let Ok(entries) = std::fs::read_dir(&abs) {
                for e in entries.flatten() {
                    if let Ok(rel) = e.path().strip_prefix(&abs_root) {
                        self.durable_names.insert(rel.to_path_buf());
                    }
                }
            }
        } else {
            self.durable.insert(meta.ino(), meta.len());
        }
        let mut files = BTreeMap::new();
        walk(root, root, &mut files);
        self.points.push(CrashPoint {
            files,
            durable: self.durable.clone(),
            durable_names: self.durable_names.clone(),
            acknowledged: self.acknowledged,
            what: abs
                .strip_prefix(&abs_root)
                .unwrap_or(&abs)
                .display()
                .to_string(),
        });
    }
}

/// How an image treats bytes and names not made durable.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// Unsynced bytes and names are gone.
    Dropped,
    /// Everything written reached the disk.
    Kept,
    /// Each file keeps half of its unsynced bytes (a torn write).
    Torn,
    /// Each file, with this seed, drops, keeps or tears its own.
    Mixed(u64),
}

/// Rebuild the store as a power cut at `p` with `cut` left it, in `into`.
fn image(p: &CrashPoint, cut: Cut, into: &Path) {
    let mut seed = match cut {
        Cut::Mixed(s) => s,
        _ => 0,
    };
    for (rel, f) in &p.files {
        let durable = p.durable.get(&f.inode).copied().unwrap_or(0) as usize;
        let len = f.bytes.len();
        let durable = durable.min(len);
        let named = p.durable_names.contains(rel);
        let choice = match cut {
            Cut::Mixed(_) => {
                // xorshift: repeatable per seed.
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % 3
            }
            Cut::Dropped => 0,
            Cut::Kept => 1,
            Cut::Torn => 2,
        };
        let (keep_name, keep_len) = match choice {
            0 => (named, durable),
            1 => (true, len),
            _ => (true, durable + (len - durable) / 2),
        };
        if !keep_name {
            continue;
        }
        let dest = into.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, &f.bytes[..keep_len]).unwrap();
    }
}

/// The workload: flushes of small and larger fields into two datasets, a
/// replacement among them. Each flush's fields, in order.
fn flushes() -> Vec<Vec<(Key, Vec<u8>)>> {
    let key = |expver: &str, ty: &str, step: u32, param: u32| -> Key {
        format!(
            "class=od,expver={expver},stream=oper,date=20231201,time=1200,domain=g,type={ty},levtype=sfc,step={step},param={param}"
        )
        .parse()
        .unwrap()
    };
    let data = |k: &Key, version: u8, len: usize| -> Vec<u8> {
        let mut d = format!("{k} v{version} ").into_bytes();
        d.resize(len, version);
        d
    };
    let mut out = Vec::new();
    let f1: Vec<Key> = (0..3).map(|s| key("0001", "fc", s * 6, 167)).collect();
    out.push(f1.iter().map(|k| (k.clone(), data(k, 1, 3000))).collect());
    let f2 = [key("0001", "fc", 0, 167), key("0001", "fc", 24, 167)];
    out.push(f2.iter().map(|k| (k.clone(), data(k, 2, 70_000))).collect());
    let f3: Vec<Key> = (0..4).map(|s| key("0001", "an", s, 130)).collect();
    out.push(f3.iter().map(|k| (k.clone(), data(k, 3, 500))).collect());
    let f4 = [key("0002", "fc", 0, 167), key("0001", "fc", 6, 167)];
    out.push(
        f4.iter()
            .map(|k| (k.clone(), data(k, 4, 1 << 20)))
            .collect(),
    );
    out
}

fn read(fs: &FieldStore, key: &Key) -> Option<Vec<u8>> {
    let r = fs.retrieve(&Request::from_key(key)).unwrap();
    (!r.is_empty()).then(|| r.read_all().unwrap())
}

/// Check one image of crash point `p`.
fn check(image_root: &Path, p: &CrashPoint, cut: Cut, all: &[Vec<(Key, Vec<u8>)>]) {
    let at = format!(
        "after the sync of {} ({cut:?}, {} flushes acknowledged)",
        p.what, p.acknowledged
    );
    let fs = FieldStore::open(Config::embedded(image_root))
        .unwrap_or_else(|e| panic!("{at}: the store does not open: {e}"));
    fs.list(&"class=od".parse().unwrap(), ListOptions::default())
        .unwrap_or_else(|e| panic!("{at}: list fails: {e}"));
    // The newest acknowledged bytes of each key.
    let mut want: HashMap<&Key, &Vec<u8>> = HashMap::new();
    for flush in &all[..p.acknowledged] {
        for (k, d) in flush {
            want.insert(k, d);
        }
    }
    if let Some(next) = all.get(p.acknowledged) {
        // The flush in progress: whole or not at all.
        let visible: Vec<bool> = next
            .iter()
            .map(|(k, d)| {
                let got = read(&fs, k);
                match want.get(k) {
                    _ if got.as_ref() == Some(d) => true,
                    Some(old) => {
                        assert!(
                            got.as_ref() == Some(*old),
                            "{at}: {k} reads neither its acknowledged nor its new bytes"
                        );
                        false
                    }
                    None => {
                        assert!(got.is_none(), "{at}: {k} reads bytes never archived");
                        false
                    }
                }
            })
            .collect();
        // Atomic per dataset (a handle's flush flushes its datasets one
        // after the other, as FDB5's does).
        let mut per_dataset: HashMap<&str, Vec<bool>> = HashMap::new();
        for ((k, _), v) in next.iter().zip(&visible) {
            per_dataset
                .entry(k.get("expver").unwrap_or(""))
                .or_default()
                .push(*v);
        }
        for (dataset, v) in &per_dataset {
            assert!(
                v.iter().all(|v| *v) || v.iter().all(|v| !*v),
                "{at}: the flush in progress is partly visible in expver={dataset}: {v:?}"
            );
        }
        for ((k, d), v) in next.iter().zip(&visible) {
            if *v {
                want.insert(k, d);
            }
        }
    }
    for (k, d) in &want {
        let got = read(&fs, k);
        assert!(
            got.as_ref() == Some(*d),
            "{at}: {k}, acknowledged, reads {} bytes, not its {}",
            got.map_or(0, |g| g.len()),
            d.len()
        );
    }
    // The store takes writes after the cut.
    let late: Key = "class=od,expver=0003,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step=0,param=167"
        .parse()
        .unwrap();
    fs.archive(&late, b"after the power cut")
        .unwrap_or_else(|e| panic!("{at}: archive after the cut: {e}"));
    fs.flush()
        .unwrap_or_else(|e| panic!("{at}: flush after the cut: {e}"));
    let again = FieldStore::open(Config::embedded(image_root)).unwrap();
    assert_eq!(
        read(&again, &late).as_deref(),
        Some(&b"after the power cut"[..]),
        "{at}"
    );
}

#[test]
fn every_power_cut_at_a_sync_leaves_an_openable_store_that_lost_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let recorder = Arc::new(Mutex::new(Recorder::default()));
    {
        let (r, root) = (recorder.clone(), root.clone());
        failpoint::set_synced(move |path| r.lock().unwrap().synced(&root, path));
    }
    let all = flushes();
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    for flush in &all {
        for (k, d) in flush {
            fs.archive(k, d).unwrap();
        }
        fs.flush().unwrap();
        recorder.lock().unwrap().acknowledged += 1;
    }
    drop(fs);
    failpoint::clear();
    let points = std::mem::take(&mut recorder.lock().unwrap().points);
    assert!(
        points.len() >= 4 * all.len(),
        "only {} syncs were recorded for {} flushes: the hooks are not reached",
        points.len(),
        all.len()
    );
    let mut images = 0;
    for (i, p) in points.iter().enumerate() {
        for cut in [
            Cut::Dropped,
            Cut::Kept,
            Cut::Torn,
            Cut::Mixed(i as u64 * 7919 + 1),
            Cut::Mixed(i as u64 * 104_729 + 3),
        ] {
            let img = tempfile::tempdir().unwrap();
            image(p, cut, img.path());
            check(img.path(), p, cut, &all);
            images += 1;
        }
    }
    println!("{} crash points, {images} images checked", points.len());
}
