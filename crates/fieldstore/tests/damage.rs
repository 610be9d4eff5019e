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
    // Status names it; purge leaves the dataset alone (a record cut by
    // truncation looks the same); wipe works.
    let status = reader.status(&all()).unwrap();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].damage.len(), 1, "{:?}", status[0].damage);
    assert!(
        status[0].damage[0].contains(&format!("{} at offset {torn_at}", toc.display())),
        "{:?}",
        status[0].damage
    );
    let purge = reader.purge(&all(), true).unwrap();
    assert!(purge.datasets[0].items.is_empty());
    assert!(purge.datasets[0].kept[0]
        .reason
        .starts_with("damaged, not purged"));
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
    assert!(get(&reader, &key(20231201, 3)).unwrap().is_some());
    assert!(get(&reader, &key(20231201, 2)).unwrap().is_none());
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
    let mut stream = fieldstore::FieldStream::new(fresh, locations);
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
