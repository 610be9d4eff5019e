//! Damage in the middle of a dataset's life, read by readers that were
//! there before it and by readers that come after: random histories of
//! flushes by two writers into two collocations of one POSIX dataset,
//! readers following in between, and damage behind fieldstore's back at
//! random points (a bit flipped in the `toc` or in an index file, the `toc`
//! cut short, an index file removed), `purge`, collocations wiped and the
//! dataset moved between two roots, then more flushes. After every step
//! a reader that followed from the start, and at the end a new one,
//! answer every key with its newest acknowledged version (a flush that
//! returned `Ok`) or fail `Corrupt`: never an older version, a version of a
//! flush that failed, or nothing, with success (a reader whose log was cut
//! back to exactly where it stopped is asked after `LOOK_AGAIN`, when it
//! looks past its end again). (`damage.rs` flips one bit in a finished
//! dataset, read by new readers only.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::time::Duration;

use fieldstore::engine::LOOK_AGAIN;
use fieldstore::{Config, ErrorKind, FieldStore, Key, Request, Root, WipeOptions};
use proptest::prelude::*;

const KINDS: [&str; 2] = ["fc", "an"];

fn key(kind: usize, step: u32) -> Key {
    format!(
        "{DATASET},type={},levtype=sfc,step={step},param=167",
        KINDS[kind]
    )
    .parse()
    .expect("a key")
}

/// The dataset's keys.
const DATASET: &str = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g";

fn dataset_request() -> Request {
    DATASET.parse().expect("a request")
}

/// A handle on the two roots.
fn open(roots: &[PathBuf; 2]) -> FieldStore {
    let mut config = Config::embedded(&roots[0]);
    config.roots = roots.iter().map(Root::new).collect();
    FieldStore::open(config).expect("open")
}

/// The dataset's directory, in whichever root holds it.
fn dataset_dir(roots: &[PathBuf; 2]) -> PathBuf {
    let name = "od:0001:oper:20231201:1200:g";
    roots
        .iter()
        .map(|r| r.join(name))
        .find(|d| d.exists())
        .unwrap_or_else(|| roots[0].join(name))
}

/// One step of a history.
#[derive(Debug, Clone)]
enum Step {
    /// Writer 0 or 1 archives these (collocation, step) fields and flushes.
    Flush(usize, Vec<(usize, u32)>),
    /// The reader that was there from the start answers every key.
    Follow,
    /// A bit of the `toc` flipped, past its INIT record.
    FlipToc(prop::sample::Index, u8),
    /// The `toc` cut short, past its INIT record: at a record boundary
    /// (what reads as a whole log) or anywhere.
    CutToc(prop::sample::Index, bool),
    /// A bit of an index file flipped.
    FlipIndex(prop::sample::Index, prop::sample::Index, u8),
    /// An index file removed.
    RemoveIndex(prop::sample::Index),
    /// `purge --doit` of the dataset (replaced versions' data removed).
    Purge,
    /// `wipe --doit` of one collocation.
    Wipe(usize),
    /// The dataset moved to the other root.
    Move,
}

fn step() -> impl Strategy<Value = Step> {
    let fields = prop::collection::vec((0usize..2, 0u32..4), 1..5);
    prop_oneof![
        8 => (0usize..2, fields).prop_map(|(w, f)| Step::Flush(w, f)),
        3 => Just(Step::Follow),
        1 => (any::<prop::sample::Index>(), 0u8..8).prop_map(|(i, b)| Step::FlipToc(i, b)),
        2 => (any::<prop::sample::Index>(), any::<bool>()).prop_map(|(i, b)| Step::CutToc(i, b)),
        1 => (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0u8..8)
            .prop_map(|(f, i, b)| Step::FlipIndex(f, i, b)),
        1 => any::<prop::sample::Index>().prop_map(Step::RemoveIndex),
        1 => Just(Step::Purge),
        1 => (0usize..2).prop_map(Step::Wipe),
        1 => Just(Step::Move),
    ]
}

/// Where the `toc`'s INIT record ends (the offset of its second record's
/// magic, or its length).
fn init_end(toc: &[u8]) -> usize {
    toc.windows(4)
        .skip(1)
        .position(|w| w == b"FSR1")
        .map_or(toc.len(), |p| p + 1)
}

fn index_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "index"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn flip(path: &Path, at: prop::sample::Index, bit: u8, from: usize) {
    let Ok(mut bytes) = std::fs::read(path) else {
        return;
    };
    if bytes.len() <= from {
        return;
    }
    let i = from + at.index(bytes.len() - from);
    bytes[i] ^= 1 << bit;
    std::fs::write(path, bytes).expect("rewrite");
}

/// Every key's answer from `fs` is its newest acknowledged version, or
/// `Corrupt`.
fn check(
    fs: &FieldStore,
    newest: &BTreeMap<(usize, u32), Vec<u8>>,
    who: &str,
) -> Result<(), TestCaseError> {
    for (kind, name) in KINDS.iter().enumerate() {
        for s in 0..4 {
            let want = newest.get(&(kind, s));
            let got = fs
                .retrieve(&Request::from_key(&key(kind, s)))
                .and_then(|r| {
                    if r.is_empty() {
                        Ok(None)
                    } else {
                        r.read_all().map(Some)
                    }
                });
            match got {
                Ok(got) => prop_assert_eq!(
                    got.as_ref(),
                    want,
                    "{}: {} step {}: {:?}",
                    who,
                    name,
                    s,
                    got.as_ref()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                ),
                Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {}", who, e),
            }
        }
    }
    Ok(())
}

/// Histories per run: `FIELDSTORE_HISTORY_CASES` (as the testkit's
/// histories on every medium), 120 by default; a hunt sets thousands.
fn cases() -> u32 {
    std::env::var("FIELDSTORE_HISTORY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn damage_mid_life_never_gives_a_wrong_answer_in_silence(
        history in prop::collection::vec(step(), 1..16),
    ) {
        let top = tempfile::tempdir().expect("a directory");
        let roots = [top.path().join("a"), top.path().join("b")];
        for r in &roots {
            std::fs::create_dir_all(r).expect("a root");
        }
        let mut writers = [Some(open(&roots)), Some(open(&roots))];
        let warm = open(&roots);
        let mut newest: BTreeMap<(usize, u32), Vec<u8>> = BTreeMap::new();
        let mut version = 0;
        // The `toc`'s length when the warm reader last read it, and whether
        // it was cut back to exactly that since.
        let (mut warm_read, mut cut_where_warm_stopped) = (None, false);
        for (n, s) in history.iter().enumerate() {
            let dir = dataset_dir(&roots);
            match s {
                Step::Flush(w, fields) => {
                    let fs = writers[*w].get_or_insert_with(|| open(&roots));
                    let mut these = Vec::new();
                    let mut archived = Ok(());
                    for &(kind, st) in fields {
                        version += 1;
                        let bytes = format!("{} step {st} version {version}", KINDS[kind]).into_bytes();
                        archived = archived.and_then(|()| fs.archive(&key(kind, st), &bytes));
                        these.push(((kind, st), bytes));
                    }
                    match archived.and_then(|()| fs.flush()) {
                        Ok(()) => newest.extend(these),
                        // Refused (a cut `toc`): nothing of it is visible;
                        // the handle goes, as an application would drop it.
                        Err(_) => writers[*w] = None,
                    }
                }
                Step::Follow => {
                    if std::mem::take(&mut cut_where_warm_stopped) {
                        std::thread::sleep(LOOK_AGAIN + Duration::from_millis(100));
                    }
                    check(&warm, &newest, &format!("the warm reader at step {n}"))?;
                    warm_read = std::fs::metadata(dir.join("toc")).map(|m| m.len()).ok();
                }
                Step::FlipToc(at, bit) => {
                    let toc = dir.join("toc");
                    let from = std::fs::read(&toc).map(|b| init_end(&b)).unwrap_or(0);
                    flip(&toc, *at, *bit, from);
                }
                Step::CutToc(at, boundary) => {
                    let toc = dir.join("toc");
                    if let Ok(bytes) = std::fs::read(&toc) {
                        let from = init_end(&bytes);
                        if bytes.len() > from {
                            let len = if *boundary {
                                let starts: Vec<usize> = (from..bytes.len())
                                    .filter(|&i| bytes[i..].starts_with(b"FSR1"))
                                    .collect();
                                starts.get(at.index(starts.len().max(1))).copied().unwrap_or(from)
                            } else {
                                from + at.index(bytes.len() - from)
                            };
                            let f = std::fs::OpenOptions::new().write(true).open(&toc).expect("toc");
                            f.set_len(len as u64).expect("cut");
                            // Cut back to exactly where the warm reader
                            // stopped: it looks again only after a while.
                            cut_where_warm_stopped |= warm_read == Some(len as u64);
                        }
                    }
                }
                Step::FlipIndex(file, at, bit) => {
                    let files = index_files(&dir);
                    if !files.is_empty() {
                        flip(&files[file.index(files.len())], *at, *bit, 0);
                    }
                }
                Step::Purge => {
                    // Refused where damage may reference what it would
                    // remove; what it removes must never be needed.
                    let _ = warm.purge(&dataset_request(), true);
                }
                Step::Wipe(kind) => {
                    let request = format!("{DATASET},type={},levtype=sfc", KINDS[*kind]);
                    let options = WipeOptions { doit: true, ..WipeOptions::default() };
                    if open(&roots).wipe(&request.parse().expect("a request"), options).is_ok() {
                        newest.retain(|(k, _), _| k != kind);
                    }
                }
                Step::Move => {
                    let to = if dir.starts_with(&roots[0]) { &roots[1] } else { &roots[0] };
                    // Refused where the dataset is damaged or locked.
                    let _ = open(&roots).move_datasets(&dataset_request(), to);
                }
                Step::RemoveIndex(file) => {
                    let files = index_files(&dir);
                    if !files.is_empty() {
                        std::fs::remove_file(&files[file.index(files.len())]).expect("remove");
                    }
                }
            }
        }
        if cut_where_warm_stopped {
            std::thread::sleep(LOOK_AGAIN + Duration::from_millis(100));
        }
        check(&warm, &newest, "the warm reader at the end")?;
        check(&open(&roots), &newest, "a new reader")?;
    }
}
