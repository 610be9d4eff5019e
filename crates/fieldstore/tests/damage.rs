//! Damage costs only what it damaged: a torn or damaged record in a
//! dataset's log, a damaged index block, a damaged INIT record. Each is
//! reported naming the file and offset; everything else stays readable;
//! a damaged dataset can be wiped.

use std::path::{Path, PathBuf};

use fieldstore::{Config, ErrorKind, FieldStore, Key, ListOptions, Request, WipeOptions};

const BASE: &str =
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc";

fn key(date: u32, step: u32) -> Key {
    BASE.replace("20231201", &date.to_string())
        .parse::<Key>()
        .map(|k| format!("{k},step={step},param=167").parse::<Key>().unwrap())
        .unwrap()
}

fn all() -> Request {
    "class=od".parse().unwrap()
}

fn get(fs: &FieldStore, k: &Key) -> fieldstore::Result<Option<Vec<u8>>> {
    let r = fs.retrieve(&Request::from_key(k))?;
    if r.is_empty() {
        return Ok(None);
    }
    r.read_all().map(Some)
}

/// Every element listed, and the error the listing ends with, if any.
fn listing(fs: &FieldStore) -> (usize, Option<fieldstore::Error>) {
    let mut n = 0;
    let r = fs.visit(&all(), ListOptions::default(), &mut |_| {
        n += 1;
        true
    });
    (n, r.err())
}

fn dir_of(root: &Path, date: u32) -> PathBuf {
    root.join(format!("od:0001:oper:{date}:1200:g"))
}

fn store(root: &Path) -> FieldStore {
    FieldStore::open(Config::embedded(root)).unwrap()
}

fn fill(root: &Path, date: u32, steps: std::ops::Range<u32>) {
    let fs = store(root);
    for step in steps {
        fs.archive(&key(date, step), format!("{date}/{step}").as_bytes())
            .unwrap();
        fs.flush().unwrap();
    }
}

#[test]
fn a_torn_append_costs_nothing_visible_and_later_flushes_are_read() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 20231201, 0..3);
    // What a short append on a full disk leaves: the first bytes of a
    // record (its magic and a little more) and nothing else.
    let toc = dir_of(dir.path(), 20231201).join("toc");
    let bytes = std::fs::read(&toc).unwrap();
    let torn_at = bytes.len();
    let mut f = std::fs::OpenOptions::new().append(true).open(&toc).unwrap();
    let last = bytes.windows(4).rposition(|w| w == b"FSR1").unwrap();
    std::io::Write::write_all(&mut f, &bytes[last..last + 7]).unwrap();
    drop(f);
    let fs = store(dir.path());
    // Before anything follows, the torn bytes look like an append in
    // progress: nothing is reported.
    assert_eq!(listing(&fs).0, 3);
    // The next flush appends after the torn bytes.
    fill(dir.path(), 20231201, 3..5);
    let reader = store(dir.path());
    let (n, err) = listing(&reader);
    assert_eq!(n, 5);
    assert!(err.is_none(), "a torn append is no damage to list: {err:?}");
    for step in 0..5 {
        assert_eq!(
            get(&reader, &key(20231201, step)).unwrap().unwrap(),
            format!("20231201/{step}").as_bytes()
        );
    }
    assert_eq!(reader.stats(&all()).unwrap()[0].fields, 5);
    // Status names it.
    let status = reader.status(&all()).unwrap();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].damage.len(), 1, "{:?}", status[0].damage);
    assert!(
        status[0].damage[0].contains(&format!("{} at offset {torn_at}", toc.display())),
        "{:?}",
        status[0].damage
    );
    // Purge is not refused for it: a third writer replaces steps 3 and 4,
    // whose data file then holds only replaced fields; stats and purge
    // agree that it goes, and it does.
    let third = store(dir.path());
    for step in 3..5 {
        third
            .archive(&key(20231201, step), format!("again {step}").as_bytes())
            .unwrap();
    }
    third.flush().unwrap();
    drop(third);
    let stats = reader.stats(&all()).unwrap();
    assert!(stats[0].reclaimable_bytes > 0, "{stats:?}");
    assert!(stats[0].damage.is_empty(), "{stats:?}");
    let purge = reader.purge(&all(), true).unwrap();
    let removed: u64 = purge.datasets[0].items.iter().filter_map(|i| i.bytes).sum();
    assert!(
        purge.datasets[0]
            .items
            .iter()
            .any(|i| i.name.ends_with(".data")),
        "{purge:?}"
    );
    assert!(removed >= stats[0].reclaimable_bytes, "{purge:?} {stats:?}");
    let after = store(dir.path());
    for step in 0..5 {
        let want = if step < 3 {
            format!("20231201/{step}")
        } else {
            format!("again {step}")
        };
        assert_eq!(
            get(&after, &key(20231201, step)).unwrap().unwrap(),
            want.as_bytes()
        );
    }
    assert_eq!(after.stats(&all()).unwrap()[0].reclaimable_bytes, 0);
    // Wipe works.
    reader
        .wipe(
            &all(),
            WipeOptions {
                doit: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(listing(&store(dir.path())).0, 0);
}

#[test]
fn a_damaged_record_in_the_middle_of_the_log_is_stepped_over_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 20231201, 0..3);
    let toc = dir_of(dir.path(), 20231201).join("toc");
    let mut bytes = std::fs::read(&toc).unwrap();
    let second_end = bytes.len();
    fill(dir.path(), 20231201, 3..4);
    let all_bytes = std::fs::read(&toc).unwrap();
    bytes.extend_from_slice(&all_bytes[second_end..]);
    // Flip one byte in the payload of the record of step 2 (the third
    // FLUSH), which ends at `second_end`.
    bytes[second_end - 10] ^= 0x40;
    std::fs::write(&toc, &bytes).unwrap();
    let reader = store(dir.path());
    let (n, err) = listing(&reader);
    assert_eq!(n, 3, "steps 0, 1 and 3");
    let err = err.expect("the damage is reported");
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string()
            .contains(&format!("{} at offset ", toc.display()))
            && err.to_string().contains("record payload checksum mismatch"),
        "{err}"
    );
    // A key found in a flush after the damage reads; any other may have
    // had its newest version in the damaged record (step 2 did; steps 0
    // and 1 might have): those lookups fail, naming the place.
    assert!(get(&reader, &key(20231201, 3)).unwrap().is_some());
    let damaged_at = format!("{} at offset {}", toc.display(), second_end - 10);
    for step in 0..3 {
        let err = get(&reader, &key(20231201, step)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "step {step}: {err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("{} at offset ", toc.display()))
                && msg.contains("may hold the newest version of")
                && !msg.contains(&damaged_at),
            "step {step}: {msg}"
        );
    }
}

/// A FLUSH record damaged where its content is not (its header, its
/// timestamp) is recovered: the index blocks it names check whole and
/// match it, so every key reads as before; status still reports it.
#[test]
fn a_damaged_flush_record_whose_blocks_prove_it_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 20231201, 0..4);
    let toc = dir_of(dir.path(), 20231201).join("toc");
    let pristine = std::fs::read(&toc).unwrap();
    let starts: Vec<usize> = pristine
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"FSR1")
        .map(|(i, _)| i)
        .collect();
    // INIT, then four FLUSH records; damage the third FLUSH (step 2) and
    // the last one (nothing whole after it): a bit of the header's length,
    // of its header checksum, of its payload checksum, of the timestamp.
    for (record, at) in [3, 4]
        .into_iter()
        .flat_map(|r| [9, 13, 17, 20].map(|b| (starts[r], starts[r] + b)))
    {
        let mut bytes = pristine.clone();
        bytes[at] ^= 0x04;
        std::fs::write(&toc, &bytes).unwrap();
        let reader = store(dir.path());
        for step in 0..4 {
            assert_eq!(
                get(&reader, &key(20231201, step)).unwrap().unwrap(),
                format!("20231201/{step}").as_bytes(),
                "byte {at}, step {step}"
            );
        }
        let (n, err) = listing(&reader);
        assert_eq!((n, err.map(|e| e.to_string())), (4, None), "byte {at}");
        let status = reader.status(&all()).unwrap();
        assert!(
            status[0].damage.iter().any(|d| d.contains("recovered")
                && d.contains(&format!("{} at offset {record}", toc.display()))),
            "byte {at}: {:?}",
            status[0].damage
        );
    }
}

#[test]
fn a_damaged_index_block_costs_only_the_keys_it_may_hold() {
    let dir = tempfile::tempdir().unwrap();
    // One writer, one flush per step: one index block per step.
    fill(dir.path(), 20231201, 0..4);
    fill(dir.path(), 20231202, 0..2);
    let ds = dir_of(dir.path(), 20231201);
    let index = std::fs::read_dir(&ds)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "index"))
        .unwrap();
    // Damage the second block (step 1): blocks are framed records; find
    // the second magic.
    let mut bytes = std::fs::read(&index).unwrap();
    let starts: Vec<usize> = bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"FSR1")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 4);
    bytes[starts[1] + 25] ^= 0x01;
    std::fs::write(&index, &bytes).unwrap();
    let reader = store(dir.path());
    for step in [0, 2, 3] {
        assert_eq!(
            get(&reader, &key(20231201, step)).unwrap().unwrap(),
            format!("20231201/{step}").as_bytes(),
            "step {step} is in an intact block"
        );
    }
    let err = get(&reader, &key(20231201, 1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string()
            .contains(&format!("{} at offset {}", index.display(), starts[1])),
        "names file and offset: {err}"
    );
    // A request too large for point lookups is answered by walking what
    // is stored: it meets the damaged block too, and says so.
    let huge: Request = format!("{BASE},step=0/to/100000000,param=167")
        .parse()
        .unwrap();
    let err = reader.retrieve(&huge).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert!(
        err.to_string().contains(&index.display().to_string()),
        "{err}"
    );
    // The listing goes on to the other dataset, then reports the block.
    let (n, err) = listing(&reader);
    assert_eq!(n, 3 + 2);
    assert!(err
        .unwrap()
        .to_string()
        .contains(&index.display().to_string()));
    let stats = reader.stats(&all()).unwrap();
    assert_eq!(stats.len(), 2);
    // Purge does not take the damaged block's index file for unneeded.
    reader.purge(&all(), true).unwrap();
    assert!(index.exists());
}

#[test]
fn a_damaged_init_record_costs_only_its_dataset_and_wipe_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 20231201, 0..2);
    fill(dir.path(), 20231202, 0..2);
    let bad = dir_of(dir.path(), 20231201);
    let toc = bad.join("toc");
    let mut bytes = std::fs::read(&toc).unwrap();
    bytes[30] ^= 0x01;
    std::fs::write(&toc, &bytes).unwrap();
    let fs = store(dir.path());
    let (n, err) = listing(&fs);
    assert_eq!(n, 2, "the other dataset is listed");
    assert!(err
        .unwrap()
        .to_string()
        .contains(&toc.display().to_string()));
    assert!(fs.axes(&all(), fieldstore::Level::Element).is_ok());
    assert_eq!(fs.stats(&all()).unwrap().len(), 1);
    assert_eq!(fs.purge(&all(), true).unwrap().datasets.len(), 1);
    let status = fs.status(&all()).unwrap();
    assert_eq!(status.len(), 2);
    let damaged: Vec<_> = status.iter().filter(|s| !s.damage.is_empty()).collect();
    assert_eq!(damaged.len(), 1);
    assert_eq!(damaged[0].place, bad.display().to_string());
    assert_eq!(
        damaged[0].dataset.to_string(),
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g",
        "the key its directory's name spells"
    );
    // A wipe naming the other dataset leaves the damaged one alone; one
    // naming it removes it whole.
    let other: Request = "class=od,date=20231202".parse().unwrap();
    let dry = fs.wipe(&other, WipeOptions::default()).unwrap();
    assert_eq!(dry.datasets.len(), 1);
    assert!(dry.datasets[0].damaged.is_none());
    let it: Request = "class=od,date=20231201".parse().unwrap();
    let report = fs
        .wipe(
            &it,
            WipeOptions {
                doit: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(report.datasets.len(), 1);
    assert!(report.datasets[0].damaged.is_some());
    assert!(!bad.exists());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["od:0001:oper:20231202:1200:g"], "no tombstone left");
    let (n, err) = listing(&store(dir.path()));
    assert_eq!((n, err.is_none()), (2, true));
}

/// A field read straight into the caller's buffer (it fits whole: one
/// copy, `Store::read_into`) is verified there: a damaged one fails with
/// `Corrupt` and leaves none of its bytes in the buffer, through the
/// handle's `Read` and through the stream (Python, C); undamaged fields
/// read whole or in pieces give the same bytes.
#[test]
fn a_damaged_field_read_straight_into_the_callers_buffer_is_refused_and_not_left_there() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let fs = store(root);
    let payload = |step: u32| vec![b'a' + step as u8; 4096];
    for step in 0..3 {
        fs.archive(&key(20231201, step), &payload(step)).unwrap();
    }
    fs.flush().unwrap();
    let request: Request = format!("{BASE},step=0/1/2,param=167").parse().unwrap();
    // Whole fields and pieces agree.
    let mut whole = Vec::new();
    let mut r = fs.retrieve(&request).unwrap();
    // Room for one field and a bit: each read goes straight in.
    let mut buf = vec![0u8; 5000];
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert_eq!(n, 4096, "one whole field per read");
        whole.extend_from_slice(&buf[..n]);
    }
    let expected: Vec<u8> = (0..3).flat_map(payload).collect();
    assert_eq!(whole, expected);
    let mut pieces = Vec::new();
    fs.retrieve(&request)
        .unwrap()
        .read_to_end(&mut pieces)
        .unwrap();
    assert_eq!(pieces, expected);

    // Damage the second field's bytes in its data file.
    let location = fs.location(&key(20231201, 1)).unwrap().unwrap();
    let path = std::path::PathBuf::from(location.path());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[location.offset as usize + 100] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let fresh = store(root);
    let mut r = fresh.retrieve(&request).unwrap();
    let mut buf = vec![0u8; 4096];
    assert_eq!(r.read(&mut buf).unwrap(), 4096);
    assert_eq!(buf, payload(0));
    let e = r.read(&mut buf).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
    assert!(
        !buf.contains(&b'b'),
        "damaged bytes left in the caller's buffer"
    );
    // The same through the stream of the Python package and the C API.
    let fresh = std::sync::Arc::new(store(root));
    let locations: Vec<_> = fresh
        .retrieve(&request)
        .unwrap()
        .fields()
        .iter()
        .map(|(_, l)| l.clone())
        .collect();
    let mut stream = fieldstore::FieldStream::new(fresh.store().clone(), locations);
    // A field at a time (the C API's reads): straight in.
    let mut buf = vec![0u8; 4096];
    assert_eq!(stream.read(&mut buf).unwrap(), 4096);
    assert_eq!(buf[..4096], payload(0)[..]);
    let e = stream.read(&mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(
        !buf.contains(&b'b'),
        "damaged bytes left in the caller's buffer"
    );
    // Through the stream's own buffer (a large destination), the same.
    stream.seek(0);
    let mut big = vec![0u8; 3 * 4096];
    let e = stream.read(&mut big).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(
        !big[4096..].contains(&b'b'),
        "damaged bytes left in the caller's buffer"
    );
}

/// A small deterministic generator (splitmix64): the bit-flip trials are
/// the same on every run, so a failure can be replayed by its trial number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn typed_key(kind: &str, step: u32) -> Key {
    key(20231201, step)
        .to_string()
        .replace("type=fc", &format!("type={kind}"))
        .parse()
        .unwrap()
}

/// The dataset of the bit-flip trials: two collocations (`type=fc`,
/// `type=an`), written by two writers in five flushes, several keys
/// replaced in later flushes (in the same and the other collocation's
/// flushes); and a third (`type=4v`) written by a third writer, wiped
/// (a WIPE record, and a RECLAIM record for its data file), then created
/// anew with one of its keys. Returns the newest bytes of every key, `None`
/// for the key wiped and not written again.
fn replaced_across_flushes(root: &Path) -> Vec<(Key, Option<Vec<u8>>)> {
    let flushes: [&[(&str, u32, u32)]; 5] = [
        &[("fc", 0, 1), ("fc", 1, 1), ("fc", 2, 1), ("fc", 3, 1)],
        &[("an", 0, 1), ("an", 1, 1), ("an", 2, 1)],
        &[("fc", 1, 2), ("fc", 4, 1), ("an", 0, 2)],
        &[("an", 1, 2), ("fc", 2, 2)],
        &[("fc", 0, 3), ("an", 3, 1), ("fc", 1, 3)],
    ];
    let mut newest = std::collections::BTreeMap::new();
    let first = store(root);
    for (i, flush) in flushes.iter().enumerate() {
        // The last flush comes from a second writer.
        let second;
        let fs = if i == 4 {
            second = store(root);
            &second
        } else {
            &first
        };
        for &(kind, step, version) in *flush {
            let bytes = format!("{kind} step {step} version {version}").into_bytes();
            fs.archive(&typed_key(kind, step), &bytes).unwrap();
            newest.insert((kind, step), bytes);
        }
        fs.flush().unwrap();
    }
    let third = store(root);
    for step in 0..2 {
        third.archive(&typed_key("4v", step), b"4v wiped").unwrap();
    }
    third.flush().unwrap();
    drop(third);
    let wiped = store(root)
        .wipe(
            &format!("{BASE},type=4v")
                .replace("type=fc,", "")
                .parse()
                .unwrap(),
            WipeOptions {
                doit: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(wiped.datasets.len(), 1, "{wiped:?}");
    let fourth = store(root);
    fourth.archive(&typed_key("4v", 1), b"4v anew").unwrap();
    fourth.flush().unwrap();
    let mut out: Vec<(Key, Option<Vec<u8>>)> = newest
        .into_iter()
        .map(|((kind, step), bytes)| (typed_key(kind, step), Some(bytes)))
        .collect();
    out.push((typed_key("4v", 0), None));
    out.push((typed_key("4v", 1), Some(b"4v anew".to_vec())));
    out
}

/// The record types of a `toc`, in order (found by their magic).
fn record_types(toc: &[u8]) -> Vec<u16> {
    toc.windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"FSR1")
        .map(|(i, _)| u16::from_le_bytes([toc[i + 6], toc[i + 7]]))
        .collect()
}

/// Copy the files of one directory into another (created).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Answers of the bit-flip trials, by kind.
#[derive(Debug, Default)]
struct Answers {
    correct: usize,
    corrupt: usize,
    /// Other bytes than the newest flushed (an older version, or a wiped
    /// field), without an error.
    stale: usize,
    /// Nothing, without an error, for a key that was flushed.
    missing: usize,
    /// An error of another kind than `Corrupt`.
    other: usize,
}

/// One bit flipped at random in one file of a dataset — its `toc`, an
/// index file or a data file — never gives a wrong answer in silence:
/// every key retrieves its newest flushed bytes, or fails `Corrupt`.
/// Hundreds of seeded trials, each on a fresh copy of the dataset.
#[test]
fn one_flipped_bit_anywhere_never_gives_a_wrong_answer_in_silence() {
    let pristine = tempfile::tempdir().unwrap();
    let newest = replaced_across_flushes(pristine.path());
    let name = "od:0001:oper:20231201:1200:g";
    let src = pristine.path().join(name);
    let files = |ext: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&src)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| {
                if ext == "toc" {
                    n == "toc"
                } else {
                    n.ends_with(ext)
                }
            })
            .collect();
        v.sort();
        v
    };
    let groups = [files("toc"), files(".index"), files(".data")];
    // INIT, 5 + 1 FLUSH records for fc and an, 4v's FLUSH, WIPE, RECLAIM,
    // FLUSH anew.
    assert_eq!(
        record_types(&std::fs::read(src.join("toc")).unwrap()),
        [1, 2, 2, 2, 2, 2, 2, 3, 4, 2]
    );
    let trials: usize = std::env::var("FIELDSTORE_BITFLIP_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(450);
    let mut rng = Rng(0x5eed_0026);
    let mut by_file = [Answers::default(), Answers::default(), Answers::default()];
    let mut silent = Vec::new();
    let mut recovered = 0;
    for trial in 0..trials {
        let work = tempfile::tempdir().unwrap();
        let dst = work.path().join(name);
        copy_dir(&src, &dst);
        let g = trial % 3;
        let file = dst.join(&groups[g][rng.below(groups[g].len())]);
        let mut bytes = std::fs::read(&file).unwrap();
        // In `toc`, past the INIT record (most of the file: it holds the
        // schema; a damaged INIT costs its dataset, tested above).
        let from = if g == 0 {
            bytes.windows(4).skip(1).position(|w| w == b"FSR1").unwrap() + 1
        } else {
            0
        };
        let bit = from * 8 + rng.below((bytes.len() - from) * 8);
        bytes[bit / 8] ^= 1 << (bit % 8);
        std::fs::write(&file, &bytes).unwrap();
        let fs = store(work.path());
        let answers = &mut by_file[g];
        for (k, want) in &newest {
            match get(&fs, k) {
                Ok(got) if &got == want => answers.correct += 1,
                Err(e) if e.kind() == ErrorKind::Corrupt => answers.corrupt += 1,
                r => {
                    match &r {
                        Ok(Some(_)) => answers.stale += 1,
                        Ok(None) => answers.missing += 1,
                        Err(_) => answers.other += 1,
                    }
                    silent.push(format!(
                        "trial {trial}: bit {bit} of {}: {k}: {:?}",
                        file.display(),
                        r.map(|o| o.map(|b| String::from_utf8_lossy(&b).into_owned()))
                    ));
                }
            }
        }
        let status = fs.status(&all()).unwrap_or_default();
        if status
            .iter()
            .flat_map(|s| &s.damage)
            .any(|d| d.contains("recovered"))
        {
            recovered += 1;
        }
    }
    eprintln!("{trials} trials; damaged toc records recovered whole in {recovered}");
    for (g, what) in ["toc", "index files", "data files"].iter().enumerate() {
        eprintln!("flips in {what}: {:?}", by_file[g]);
    }
    assert!(
        silent.is_empty(),
        "{} wrong answers without an error, e.g.:\n{}",
        silent.len(),
        silent[..silent.len().min(20)].join("\n")
    );
}

/// The index files of the dataset of `date`.
fn index_files(root: &Path, date: u32) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir_of(root, date))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "index"))
        .collect();
    v.sort();
    v
}

/// Purge leaves a dataset with a damaged index block alone: the data file
/// that block points into looks unused (no readable entry names it), but
/// holds the newest versions. Status shows the damage, stats calls nothing
/// reclaimable, purge removes nothing.
#[test]
fn purge_leaves_a_dataset_with_a_damaged_index_block_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fill(root, 20231201, 0..2);
    let first = index_files(root, 20231201);
    // A second writer replaces both fields, in one block of its own.
    let fs = store(root);
    for step in 0..2 {
        fs.archive(&key(20231201, step), format!("newer {step}").as_bytes())
            .unwrap();
    }
    fs.flush().unwrap();
    drop(fs);
    let second = index_files(root, 20231201)
        .into_iter()
        .find(|p| !first.contains(p))
        .unwrap();
    let mut bytes = std::fs::read(&second).unwrap();
    bytes[25] ^= 0x01;
    std::fs::write(&second, &bytes).unwrap();
    let files = || {
        let mut v: Vec<String> = std::fs::read_dir(dir_of(root, 20231201))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = files();
    let fs = store(root);
    let status = fs.status(&all()).unwrap();
    assert!(
        status[0]
            .damage
            .iter()
            .any(|d| d.contains(&second.display().to_string())),
        "status names the damaged block: {:?}",
        status[0].damage
    );
    let stats = fs.stats(&all()).unwrap();
    assert_eq!(stats[0].reclaimable_bytes, 0, "{stats:?}");
    assert!(!stats[0].damage.is_empty(), "{stats:?}");
    let purge = fs.purge(&all(), true).unwrap();
    assert!(purge.datasets[0].items.is_empty(), "{purge:?}");
    assert!(
        purge.datasets[0]
            .kept
            .iter()
            .any(|k| k.reason.starts_with("damaged, not purged")),
        "{purge:?}"
    );
    assert_eq!(files(), before, "purge removed nothing");
    // The keys the damaged block may hold fail; none reads older bytes.
    for step in 0..2 {
        let err = get(&store(root), &key(20231201, step)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    }
}

/// A torn append whose header is whole announces more bytes than follow
/// it; if the record after it is damaged too, the two read as one region.
/// That region is not a torn append (it holds another record's start):
/// lookups it may answer fail rather than lose that record in silence.
#[test]
fn a_damaged_record_right_after_a_torn_append_is_not_taken_for_part_of_it() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 20231201, 0..3);
    let toc = dir_of(dir.path(), 20231201).join("toc");
    let head = std::fs::read(&toc).unwrap();
    fill(dir.path(), 20231201, 3..5);
    let all_bytes = std::fs::read(&toc).unwrap();
    let records: Vec<usize> = all_bytes[head.len()..]
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"FSR1")
        .map(|(i, _)| head.len() + i)
        .collect();
    let (fourth, fifth) = (records[0], records[1]);
    // The start of a long record (header whole, announcing 4 KiB): what a
    // short append on a full disk leaves.
    let long = flush_frame(&vec![0u8; 4096]);
    let mut bytes = head.clone();
    bytes.extend_from_slice(&long[..40]);
    let mut damaged = all_bytes[fourth..fifth].to_vec();
    let n = damaged.len();
    damaged[n - 10] ^= 0x40;
    bytes.extend_from_slice(&damaged);
    bytes.extend_from_slice(&all_bytes[fifth..]);
    std::fs::write(&toc, &bytes).unwrap();
    let reader = store(dir.path());
    let err = get(&reader, &key(20231201, 3)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(
        get(&reader, &key(20231201, 4)).unwrap().unwrap(),
        b"20231201/4"
    );
}

/// A FLUSH record (type 2) of `payload`, framed as `toc` records are.
fn flush_frame(payload: &[u8]) -> Vec<u8> {
    let mut out = b"FSR1".to_vec();
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    let hcrc = crc32c::crc32c(&out[..16]);
    out.extend_from_slice(&hcrc.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// A short append that wrote a whole header announces more bytes than
/// follow it: readers took it for an append in progress and stopped there,
/// so flushes made after it stayed invisible (silently missing) until the
/// file grew past what it announced. An append in progress is the last
/// thing in the file: whole records after it are read, and it is a torn
/// append (no damage).
#[test]
fn flushes_after_a_torn_append_with_a_whole_header_are_read() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 20231201, 0..3);
    let toc = dir_of(dir.path(), 20231201).join("toc");
    let long = flush_frame(&vec![0u8; 4096]);
    let mut f = std::fs::OpenOptions::new().append(true).open(&toc).unwrap();
    std::io::Write::write_all(&mut f, &long[..40]).unwrap();
    drop(f);
    fill(dir.path(), 20231201, 3..5);
    let reader = store(dir.path());
    let (n, err) = listing(&reader);
    assert_eq!((n, err.map(|e| e.to_string())), (5, None));
    for step in 0..5 {
        assert_eq!(
            get(&reader, &key(20231201, step)).unwrap().unwrap(),
            format!("20231201/{step}").as_bytes()
        );
    }
    let status = reader.status(&all()).unwrap();
    assert!(
        status[0].damage.iter().any(|d| d.contains("cut short")),
        "{:?}",
        status[0].damage
    );
}

/// A reader that follows its dataset moved to another root keeps knowing
/// where the damage of its log lies among its blocks: a key flushed after
/// a damaged record still reads, one before it still fails.
#[test]
fn a_reader_following_a_moved_dataset_keeps_the_place_of_its_damage() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let config = || {
        let mut c = Config::embedded(&a);
        c.roots = vec![fieldstore::Root::new(&a), fieldstore::Root::new(&b)];
        c
    };
    let w = FieldStore::open(config()).unwrap();
    for step in 0..3 {
        w.archive(&key(20231201, step), format!("20231201/{step}").as_bytes())
            .unwrap();
        w.flush().unwrap();
    }
    drop(w);
    // Damage the second FLUSH record's axes (not recoverable).
    let toc = dir_of(&a, 20231201).join("toc");
    let mut bytes = std::fs::read(&toc).unwrap();
    let starts: Vec<usize> = bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"FSR1")
        .map(|(i, _)| i)
        .collect();
    bytes[starts[3] - 10] ^= 0x40;
    std::fs::write(&toc, &bytes).unwrap();
    let reader = FieldStore::open(config()).unwrap();
    let check = |when: &str| {
        assert_eq!(
            get(&reader, &key(20231201, 2)).unwrap().unwrap(),
            b"20231201/2",
            "{when}: flushed after the damage"
        );
        let err = get(&reader, &key(20231201, 0)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{when}: {err}");
    };
    check("before the move");
    FieldStore::open(config())
        .unwrap()
        .move_datasets(&all(), &b)
        .unwrap();
    check("after the move");
}
