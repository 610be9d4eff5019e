//! POSIX backend basics; the full contract is checked by fieldstore-testkit.

use fieldstore::{Config, ErrorKind, FieldStore, Key, Level, ListOptions, Request};

fn key(step: u32, param: u32) -> Key {
    format!(
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param={param}"
    )
    .parse()
    .unwrap()
}

fn req(s: &str) -> Request {
    s.parse().unwrap()
}

#[test]
fn archive_flush_list_retrieve_across_handles() {
    let dir = tempfile::tempdir().unwrap();
    let writer = FieldStore::open(Config::embedded(dir.path())).unwrap();
    let reader = FieldStore::open(Config::embedded(dir.path())).unwrap();
    for step in 0..4 {
        writer
            .archive(&key(step, 167), format!("field {step}").as_bytes())
            .unwrap();
    }
    // Invisible before flush, even to a reader opened earlier.
    assert!(reader
        .list(&req("class=od"), ListOptions::default())
        .unwrap()
        .is_empty());
    writer.flush().unwrap();
    let listed = reader
        .list(&req("class=od,step=1/to/2/by/1"), ListOptions::default())
        .unwrap();
    assert_eq!(
        listed.iter().map(|e| e.braced()).collect::<Vec<_>>(),
        // One flush: in key order, as FDB5 lists an index.
        [
            "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=1,param=167}",
            "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=2,param=167}",
        ]
    );
    let bytes = reader
        .retrieve(&req("class=od,expver=1,stream=oper,date=20231201,time=12,domain=g,type=fc,levtype=sfc,step=3/0/9,param=167"))
        .unwrap()
        .read_all()
        .unwrap();
    assert_eq!(bytes, b"field 3field 0");

    // Replacement: newest wins; --full shows both, newest first.
    writer.archive(&key(1, 167), b"field 1 v2").unwrap();
    writer.flush().unwrap();
    let one = req("class=od,expver=1,stream=oper,date=20231201,time=12,domain=g,type=fc,levtype=sfc,step=1,param=167");
    assert_eq!(
        reader.retrieve(&one).unwrap().read_all().unwrap(),
        b"field 1 v2"
    );
    let full = reader
        .list(
            &req("class=od,step=1"),
            ListOptions {
                depth: Level::Element,
                duplicates: true,
            },
        )
        .unwrap();
    assert_eq!(full.len(), 2);
    assert_eq!(full[0].location.as_ref().unwrap().length, 10);

    let axes = reader.axes(&req("class=od"), Level::Element).unwrap();
    assert_eq!(
        axes["step"].iter().collect::<Vec<_>>(),
        ["0", "1", "2", "3"]
    );
    assert_eq!(
        reader
            .list(
                &req("class=od"),
                ListOptions {
                    depth: Level::Dataset,
                    duplicates: false
                }
            )
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn damaged_data_is_reported_not_returned() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    fs.archive(&key(0, 167), b"precious bytes").unwrap();
    fs.flush().unwrap();
    let loc = fs.location(&key(0, 167)).unwrap().unwrap();
    let path = loc.path().to_string();
    let mut data = std::fs::read(&path).unwrap();
    data[3] ^= 0xff;
    std::fs::write(&path, data).unwrap();
    let e = fs
        .retrieve(&req("class=od,expver=1,stream=oper,date=20231201,time=12,domain=g,type=fc,levtype=sfc,step=0,param=167"))
        .unwrap()
        .read_all()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
}

#[test]
fn a_damaged_field_among_adjacent_ones_stops_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    for step in 0..6 {
        fs.archive(&key(step, 167), format!("field {step}!").as_bytes())
            .unwrap();
    }
    fs.flush().unwrap();
    let all = req("class=od,expver=1,stream=oper,date=20231201,time=12,domain=g,type=fc,levtype=sfc,step=0/to/5/by/1,param=167");
    // Back to back in one data file.
    assert_eq!(
        fs.retrieve(&all).unwrap().read_all().unwrap(),
        b"field 0!field 1!field 2!field 3!field 4!field 5!"
    );
    // Damage step 3: steps 0-2 still come back, in order, then the error
    // names step 3's location.
    let loc = fs.location(&key(3, 167)).unwrap().unwrap();
    let mut data = std::fs::read(loc.path()).unwrap();
    data[loc.offset as usize + 2] ^= 0xff;
    std::fs::write(loc.path(), data).unwrap();
    let mut reader = fs.retrieve(&all).unwrap();
    let mut buf = Vec::new();
    for step in 0..3 {
        let k = reader.next_field(&mut buf).unwrap().unwrap();
        assert_eq!(k.get("step"), Some(step.to_string().as_str()));
        assert_eq!(buf, format!("field {step}!").as_bytes());
    }
    let e = reader.next_field(&mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(
        e.to_string().starts_with(&format!(
            "{loc}: checksum mismatch (stored {:08x}, read ",
            loc.checksum.unwrap()
        )),
        "{e}"
    );
    assert!(
        e.to_string().ends_with("): the data file is damaged"),
        "{e}"
    );
}

#[test]
fn missing_root_is_a_clear_error() {
    let mut config = Config::embedded("/nonexistent/fieldstore-root");
    config.roots = vec![fieldstore::Root::new("/nonexistent/fieldstore-root")];
    let e = FieldStore::open(config).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(
        e.to_string(),
        "root /nonexistent/fieldstore-root does not exist or is not a directory"
    );
}

/// Issue 26, item 10: opening and reading never create the embedded
/// store's root (a mistyped `FIELDSTORE_ROOT` was created in silence and
/// read as empty); reading a missing one is `NotFound` naming it; the
/// first archive creates it.
#[test]
fn the_embedded_root_is_created_by_the_first_archive_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fieldstore-data");
    let config = Config::embedded(&root);
    assert!(!root.exists(), "making a config creates nothing");
    let fs = FieldStore::open(config).unwrap();
    assert!(!root.exists(), "opening creates nothing");
    let missing = format!(
        "root {} does not exist or is not a directory",
        root.display()
    );
    let e = fs
        .list(&req("class=od"), ListOptions::default())
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.to_string()),
        (ErrorKind::NotFound, missing.clone())
    );
    let e = fs
        .retrieve(&key(0, 167).to_string().parse().unwrap())
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.to_string()),
        (ErrorKind::NotFound, missing.clone())
    );
    let e = fs.axes(&req("class=od"), Level::Element).unwrap_err();
    assert_eq!((e.kind(), e.to_string()), (ErrorKind::NotFound, missing));
    assert!(!root.exists(), "reading creates nothing");
    fs.archive(&key(0, 167), b"first").unwrap();
    assert!(root.is_dir(), "the first archive creates it");
    fs.flush().unwrap();
    assert_eq!(
        fs.list(&req("class=od"), ListOptions::default())
            .unwrap()
            .len(),
        1
    );
}

/// The implicit default root (no configuration, no `FIELDSTORE_ROOT`)
/// reads as empty while missing, and is not created by reading.
#[test]
fn the_implicit_default_root_reads_as_empty_until_archived_into() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fieldstore-data");
    let mut config = Config::embedded(&root);
    config.roots[0].implicit = true;
    let fs = FieldStore::open(config).unwrap();
    assert!(fs
        .list(&req("class=od"), ListOptions::default())
        .unwrap()
        .is_empty());
    assert!(fs
        .retrieve(&key(0, 167).to_string().parse().unwrap())
        .unwrap()
        .read_all()
        .unwrap()
        .is_empty());
    assert!(!root.exists(), "reading creates nothing");
    fs.archive(&key(0, 167), b"first").unwrap();
    fs.flush().unwrap();
    assert!(root.is_dir());
}

#[test]
fn discard_drops_pending_fields() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    fs.archive(&key(0, 167), b"never").unwrap();
    fs.discard().unwrap();
    fs.flush().unwrap();
    drop(fs);
    let reader = FieldStore::open(Config::embedded(dir.path())).unwrap();
    assert!(reader
        .list(&req("class=od"), ListOptions::default())
        .unwrap()
        .is_empty());
}

/// Lists read only the index blocks whose axes meet the request: with the
/// first flush's block damaged, the other steps are still listed; the
/// damage is reported by what needs that block (a list of everything, after
/// listing the rest, and lookups of keys that block may hold).
#[test]
fn lists_read_only_the_index_blocks_their_request_needs() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    for step in 0..3 {
        fs.archive(&key(step, 167), format!("field {step}").as_bytes())
            .unwrap();
        fs.flush().unwrap();
    }
    let dataset = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("toc").exists())
        .unwrap();
    let index = std::fs::read_dir(&dataset)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "index"))
        .unwrap();
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[30] ^= 0xff; // inside the first block (step 0)
    std::fs::write(&index, bytes).unwrap();

    let reader = FieldStore::open(Config::embedded(dir.path())).unwrap();
    for step in [1, 2] {
        let listed = reader
            .list(
                &req(&format!("class=od,step={step}")),
                ListOptions::default(),
            )
            .unwrap();
        assert_eq!(listed.len(), 1, "step {step}");
    }
    let err = reader
        .list(&req("class=od"), ListOptions::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    // Damage costs only the keys the damaged block may hold: step 2 is in
    // an intact block, step 0 in the damaged one.
    let one = |step: u32| {
        req(&format!(
            "class=od,expver=1,stream=oper,date=20231201,time=12,domain=g,type=fc,levtype=sfc,step={step},param=167"
        ))
    };
    assert_eq!(reader.retrieve(&one(2)).unwrap().len(), 1);
    let err = reader.retrieve(&one(0)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
}

/// The `file:` section chooses how data files are written; a bad key or
/// value is refused at open, naming it.
#[test]
fn the_file_section_chooses_how_data_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let open = |section: &str| {
        let text = format!(
            "engine: toc\nstore: file\n{section}spaces:\n- roots:\n  - path: {}\n",
            dir.path().display()
        );
        Config::from_yaml(&text, dir.path(), "c.yaml").and_then(FieldStore::open)
    };
    for (section, want) in [
        (
            "file:\n  dataWrites: fast\n",
            "file.dataWrites must be buffered, drop-behind or direct, not \"fast\"",
        ),
        (
            "file:\n  datawrites: direct\n",
            "file: unknown key 'datawrites' (expected dataWrites)",
        ),
        ("file: direct\n", "the 'file:' section must be a mapping"),
    ] {
        let e = open(section).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{section}");
        assert_eq!(e.to_string(), want);
    }
    // Buffered: the data file holds exactly the field. Direct: a flush pads
    // the file to 4 KiB, unless the file system refuses O_DIRECT.
    for (i, (mode, sizes)) in [
        ("buffered", &[14u64][..]),
        ("drop-behind", &[14]),
        ("direct", &[14, 4096]),
    ]
    .into_iter()
    .enumerate()
    {
        let fs = open(&format!("file:\n  dataWrites: {mode}\n")).unwrap();
        let k = key(i as u32, 167);
        fs.archive(&k, b"precious bytes").unwrap();
        fs.flush().unwrap();
        let loc = fs.location(&k).unwrap().unwrap();
        let size = std::fs::metadata(loc.path()).unwrap().len();
        assert!(sizes.contains(&size), "{mode}: data file of {size} bytes");
        assert_eq!(
            fs.retrieve(&req(&format!("class=od,expver=1,stream=oper,date=20231201,time=12,domain=g,type=fc,levtype=sfc,step={i},param=167")))
                .unwrap()
                .read_all()
                .unwrap(),
            b"precious bytes"
        );
    }
}

/// A store whose dataset keywords are plain text, so values may hold `:`.
fn text_store(root: &std::path::Path) -> FieldStore {
    let mut config = Config::embedded(root);
    config.schema = "[ class, stream, date, time [ type [ step, param ]]]"
        .parse()
        .unwrap();
    FieldStore::open(config).unwrap()
}

/// Two keys whose values joined by `:` are the same (`od:oper:x:1200:1200`).
const COLON_A: &str = "class=od,stream=oper,date=x:1200,time=1200,type=fc,step=0,param=167";
const COLON_B: &str = "class=od,stream=oper:x,date=1200,time=1200,type=fc,step=0,param=167";

fn names(root: &std::path::Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

#[test]
fn keys_whose_values_hold_colons_get_datasets_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let fs = text_store(dir.path());
    fs.archive(&COLON_A.parse().unwrap(), b"a").unwrap();
    fs.archive(&COLON_B.parse().unwrap(), b"b").unwrap();
    fs.flush().unwrap();
    assert_eq!(
        names(dir.path()),
        ["od:oper%3Ax:1200:1200", "od:oper:x%3A1200:1200"]
    );
    let reader = text_store(dir.path());
    assert_eq!(
        reader
            .list(&req("class=od"), ListOptions::default())
            .unwrap()
            .len(),
        2
    );
    for (k, bytes) in [(COLON_A, b"a"), (COLON_B, b"b")] {
        assert_eq!(
            reader.retrieve(&req(k)).unwrap().read_all().unwrap(),
            bytes,
            "{k}"
        );
    }
}

#[test]
fn a_dataset_named_before_colons_were_escaped_is_still_found_and_used() {
    let dir = tempfile::tempdir().unwrap();
    {
        let fs = text_store(dir.path());
        fs.archive(&COLON_A.parse().unwrap(), b"a").unwrap();
        fs.flush().unwrap();
    }
    // The name the dataset had before `:` in values was escaped.
    std::fs::rename(
        dir.path().join("od:oper:x%3A1200:1200"),
        dir.path().join("od:oper:x:1200:1200"),
    )
    .unwrap();
    let fs = text_store(dir.path());
    assert_eq!(
        fs.retrieve(&req(COLON_A)).unwrap().read_all().unwrap(),
        b"a"
    );
    assert!(fs.location(&COLON_A.parse().unwrap()).unwrap().is_some());
    // New fields of that key go to it; the other key, whose old name was
    // the same, is not taken for it (its INIT names another key).
    let a2 = COLON_A.replace("step=0", "step=6");
    fs.archive(&a2.parse().unwrap(), b"a2").unwrap();
    fs.archive(&COLON_B.parse().unwrap(), b"b").unwrap();
    fs.flush().unwrap();
    assert_eq!(
        names(dir.path()),
        ["od:oper%3Ax:1200:1200", "od:oper:x:1200:1200"]
    );
    let reader = text_store(dir.path());
    assert_eq!(
        reader.retrieve(&req(&a2)).unwrap().read_all().unwrap(),
        b"a2"
    );
    assert_eq!(
        reader.retrieve(&req(COLON_B)).unwrap().read_all().unwrap(),
        b"b"
    );
    assert_eq!(
        reader
            .list(&req("class=od"), ListOptions::default())
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn a_root_listed_twice_is_refused_naming_both_entries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::symlink(&root, dir.path().join("link")).unwrap();
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    fs.archive(&key(0, 167), b"kept").unwrap();
    fs.flush().unwrap();
    drop(fs);
    for other in ["root/", "./root/.", "link", "x/../root"] {
        let yaml =
            format!("spaces:\n- roots:\n  - path: root\n  - path: other\n  - path: {other}\n");
        std::fs::create_dir_all(dir.path().join("other")).unwrap();
        std::fs::create_dir_all(dir.path().join("x")).unwrap();
        // The same spelling but for `.` and slashes is refused with the
        // config; other spellings when the store opens the roots.
        let e = match Config::from_yaml(&yaml, dir.path(), "test.yaml") {
            Ok(config) => FieldStore::open(config).unwrap_err(),
            Err(e) => {
                assert!(
                    other.starts_with("root/") || other.starts_with("./root"),
                    "{e}"
                );
                assert!(
                    e.to_string().starts_with(&format!(
                        "test.yaml: spaces[0].roots[2].path: {}/{other} is also spaces[0].roots[0].path: list each root once",
                        dir.path().display()
                    )),
                    "{e}"
                );
                continue;
            }
        };
        assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{other}: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains("(entry 1) and ")
                && msg.contains(&format!("{other} (entry 3) are the same directory"))
                && msg.ends_with(": list each root once"),
            "{msg}"
        );
    }
    // Nothing stored was harmed.
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    assert_eq!(
        fs.list(&req("class=od"), ListOptions::default())
            .unwrap()
            .len(),
        1
    );
}

/// The POSIX waiter (inotify) says which datasets changed: a flush names
/// the datasets it appended to and no other; a dataset created (a root and
/// a dataset directory changed) makes it `Unknown`, and once watched that
/// dataset is named too; a wait with nothing happening says nothing
/// changed.
#[test]
fn inotify_waiter_names_the_datasets_flushed_into() {
    use fieldstore::{ChangeWaiter, Changes, DatasetKey};
    use std::time::Duration;
    let on = |date: u32, step: u32| -> Key {
        format!(
            "class=od,expver=0001,stream=oper,date={date},time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167"
        )
        .parse()
        .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    let dataset = |date: u32| -> DatasetKey { fs.schema().split(&on(date, 0)).unwrap().dataset };
    fs.archive(&on(20231201, 0), b"a").unwrap();
    fs.archive(&on(20231202, 0), b"b").unwrap();
    fs.flush().unwrap();
    let mut waiter = fs.catalogue().waiter().unwrap();
    assert_eq!(waiter.mechanism(), "inotify");
    // What the waits say until one says nothing (the events of a flush
    // are queued when it returns, so the first wait drains them).
    let settle = |waiter: &mut Box<dyn ChangeWaiter>| {
        let mut all = Changes::none();
        loop {
            let c = waiter.wait(Duration::from_millis(100)).unwrap();
            if c.is_none() {
                return all;
            }
            all.merge(c);
        }
    };
    assert_eq!(settle(&mut waiter), Changes::none(), "nothing happened");
    fs.archive(&on(20231201, 6), b"a6").unwrap();
    fs.flush().unwrap();
    assert_eq!(
        settle(&mut waiter),
        Changes::Datasets([dataset(20231201)].into()),
        "a flush into one dataset names it alone"
    );
    fs.archive(&on(20231201, 12), b"a12").unwrap();
    fs.archive(&on(20231202, 12), b"b12").unwrap();
    fs.flush().unwrap();
    assert_eq!(
        settle(&mut waiter),
        Changes::Datasets([dataset(20231201), dataset(20231202)].into()),
        "a flush into two datasets names both"
    );
    fs.archive(&on(20231203, 0), b"c").unwrap();
    fs.flush().unwrap();
    assert_eq!(
        settle(&mut waiter),
        Changes::Unknown,
        "a dataset created: unknown"
    );
    fs.archive(&on(20231203, 6), b"c6").unwrap();
    fs.flush().unwrap();
    assert_eq!(
        settle(&mut waiter),
        Changes::Datasets([dataset(20231203)].into()),
        "the new dataset, once watched, is named"
    );
}
