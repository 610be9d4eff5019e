//! `type: select`: datasets routed to sub-stores by their key, read back
//! through every sub-store. (Mixed POSIX and RADOS sub-stores:
//! `crates/fieldstore-rados/tests/select.rs`.)

use std::path::Path;

use fieldstore::{Config, ErrorKind, FieldStore, Key, Level, ListOptions, Request, WipeOptions};

fn key(class: &str, expver: &str, step: u32) -> Key {
    format!(
        "class={class},expver={expver},stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167"
    )
    .parse()
    .unwrap()
}

fn dir(class: &str, expver: &str) -> String {
    format!("{class}:{expver}:oper:20231201:1200:g")
}

const SELECT: &str = "\
type: select
fdbs:
- select: class=^od$
  excludes: ['expver=^x']
  type: local
  engine: toc
  spaces: [{roots: [{path: od}]}]
- select: class=^(od|rd)$
  spaces: [{roots: [{path: rest}]}]
";

fn open(base: &Path, yaml: &str) -> FieldStore {
    FieldStore::open(Config::from_yaml(yaml, base, "test.yaml").unwrap()).unwrap()
}

fn datasets(fs: &FieldStore) -> Vec<String> {
    let options = ListOptions {
        depth: Level::Dataset,
        duplicates: false,
    };
    fs.list(&Request::default(), options)
        .unwrap()
        .iter()
        .map(|e| e.dataset.fingerprint())
        .collect()
}

fn get(fs: &FieldStore, k: &Key) -> Vec<u8> {
    fs.retrieve(&Request::from_key(k))
        .unwrap()
        .read_all()
        .unwrap()
}

#[test]
fn datasets_go_to_the_first_sub_store_that_selects_them() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    for r in ["od", "rest"] {
        std::fs::create_dir_all(base.join(r)).unwrap();
    }
    // A dataset the first sub-store would hold, put in the second one's
    // root beforehand: held by both, it is the first's.
    let rest = open(base, "spaces: [{roots: [{path: rest}]}]\n");
    rest.archive(&key("od", "0001", 0), b"older, in rest")
        .unwrap();
    rest.flush().unwrap();
    drop(rest);

    let fs = open(base, SELECT);
    fs.archive(&key("od", "0001", 0), b"od 0001").unwrap();
    fs.archive(&key("od", "xxxx", 0), b"od xxxx").unwrap();
    fs.archive(&key("rd", "0001", 0), b"rd 0001").unwrap();
    let e = fs.archive(&key("ea", "0001", 0), b"nowhere").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidConfig);
    assert_eq!(
        e.message(),
        "no sub-store of the select configuration takes dataset \
         {class=ea,expver=0001,stream=oper,date=20231201,time=1200,domain=g}: \
         fdbs[0].select 'class=^od$' (excludes[0] 'expver=^x'), fdbs[1].select 'class=^(od|rd)$'"
    );
    fs.flush().unwrap();
    let held = |root: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(base.join(root))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(held("od"), [dir("od", "0001")]);
    assert_eq!(
        held("rest"),
        [dir("od", "0001"), dir("od", "xxxx"), dir("rd", "0001")]
    );

    // Every sub-store is read; the duplicate is the first sub-store's.
    let other = open(base, SELECT);
    assert_eq!(
        datasets(&other),
        [dir("od", "0001"), dir("od", "xxxx"), dir("rd", "0001")]
    );
    assert_eq!(get(&other, &key("od", "0001", 0)), b"od 0001");
    assert_eq!(get(&other, &key("od", "xxxx", 0)), b"od xxxx");
    assert_eq!(get(&other, &key("rd", "0001", 0)), b"rd 0001");
    let all = other
        .list(&Request::default(), ListOptions::default())
        .unwrap();
    assert_eq!(all.len(), 3);
    let axes = other
        .axes(&"class=od".parse().unwrap(), Level::Dataset)
        .unwrap();
    let expvers: Vec<&str> = axes["expver"].iter().map(String::as_str).collect();
    assert_eq!(expvers, ["0001", "xxxx"]);
    let stats = other.stats(&"class=rd".parse().unwrap()).unwrap();
    assert_eq!(stats.len(), 1);
    // Wipe reaches the sub-store holding the dataset.
    other
        .wipe(
            &"class=rd,expver=0001,stream=oper,date=20231201,time=1200,domain=g"
                .parse()
                .unwrap(),
            WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        )
        .unwrap();
    assert_eq!(held("rest"), [dir("od", "0001"), dir("od", "xxxx")]);
    assert_eq!(datasets(&other), [dir("od", "0001"), dir("od", "xxxx")]);
}

#[test]
fn bad_select_configs_are_named_by_their_key_path() {
    let cases = [
        (
            "type: select\nfdbs:\n- select: param=167\n  spaces: [{roots: [{path: a}]}]\n",
            "t.yaml: fdbs[0].select: 'param' is not a first-level (dataset) keyword of the schema: fieldstore routes whole datasets",
        ),
        (
            "type: select\nfdbs:\n- select: class=od\n  spaces: [{roots: [{path: a}]}]\n- select: class=(\n  spaces: [{roots: [{path: b}]}]\n",
            "t.yaml: fdbs[1].select: the regex of 'class', '(', does not compile:",
        ),
        (
            "type: select\nfdbs:\n- excludes: [expver]\n  spaces: [{roots: [{path: a}]}]\n",
            "t.yaml: fdbs[0].excludes[0]: 'expver' is not keyword=regex",
        ),
        (
            "type: select\nfdbs:\n- schema: [other]\n  spaces: [{roots: [{path: a}]}]\n",
            "t.yaml: fdbs[0].schema: expected a path",
        ),
        (
            "type: select\nfdbs:\n- spaces: [{handler: Clever, roots: [{path: a}]}]\n",
            "t.yaml: fdbs[0]: spaces[0].handler: unknown handler 'Clever'",
        ),
        (
            "type: select\nspaces: []\nfdbs: []\n",
            "t.yaml: spaces: not read in a select configuration",
        ),
        ("type: select\n", "t.yaml: fdbs: a select configuration needs sub-stores"),
    ];
    for (text, want) in cases {
        let e = Config::from_yaml(text, Path::new("/r"), "t.yaml").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{text}");
        assert!(
            e.to_string().starts_with(want),
            "{text}\n{e}\nwanted {want}"
        );
    }
}

/// Two schemas that name datasets alike and split them differently below.
const OD_SCHEMA: &str =
    "[ class, expver, stream, date, time, domain [ type, levtype [ step, param ]]]\n";
const RD_SCHEMA: &str =
    "[ class, expver, stream, date, time, domain [ type [ levtype, step, param ]]]\n";

/// `type: select` with a schema per sub-store, as FDB5 configurations
/// write it (issue 28): each sub-store splits its datasets' keys with its
/// own schema; no top-level schema needed (the first sub-store's names
/// datasets).
#[test]
fn sub_stores_split_with_their_own_schemas() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    std::fs::write(base.join("od.schema"), OD_SCHEMA).unwrap();
    std::fs::write(base.join("rd.schema"), RD_SCHEMA).unwrap();
    for r in ["od", "rd"] {
        std::fs::create_dir_all(base.join(r)).unwrap();
    }
    let yaml = "\
type: select
fdbs:
- select: class=od
  schema: od.schema
  spaces: [{roots: [{path: od}]}]
- select: class=rd
  schema: rd.schema
  spaces: [{roots: [{path: rd}]}]
";
    let fs = open(base, yaml);
    fs.archive(&key("od", "0001", 6), b"od").unwrap();
    fs.archive(&key("rd", "0001", 6), b"rd").unwrap();
    fs.flush().unwrap();
    let listed: Vec<String> = fs
        .list(&Request::default(), ListOptions::default())
        .unwrap()
        .iter()
        .map(|e| e.braced())
        .collect();
    assert_eq!(
        listed,
        [
            "{class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc,levtype=sfc}{step=6,param=167}",
            "{class=rd,expver=0001,stream=oper,date=20231201,time=1200,domain=g}{type=fc}{levtype=sfc,step=6,param=167}",
        ]
    );
    assert_eq!(get(&fs, &key("od", "0001", 6)), b"od");
    assert_eq!(get(&fs, &key("rd", "0001", 6)), b"rd");
    // Each dataset keeps its sub-store's schema, whoever opens it.
    drop(fs);
    let fs = open(base, yaml);
    assert_eq!(get(&fs, &key("rd", "0001", 6)), b"rd");

    // The same schema in every sub-store: as one at the top.
    let same = "type: select\nfdbs:\n- select: class=od\n  schema: od.schema\n  spaces: [{roots: [{path: a}]}]\n- schema: od.schema\n  spaces: [{roots: [{path: b}]}]\n";
    let config = Config::from_yaml(same, base, "same.yaml").unwrap();
    assert_eq!(config.schema.text(), OD_SCHEMA);

    // A sub-store naming datasets otherwise is refused, naming both.
    std::fs::write(
        base.join("other.schema"),
        "[ class, expver, stream, date [ time, domain, type, levtype [ step, param ]]]\n",
    )
    .unwrap();
    let other = "type: select\nfdbs:\n- schema: od.schema\n  spaces: [{roots: [{path: a}]}]\n- schema: other.schema\n  spaces: [{roots: [{path: b}]}]\n";
    let e = Config::from_yaml(other, base, "t.yaml").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidConfig);
    assert!(
        e.to_string().starts_with(
            "t.yaml: fdbs[1].schema: its first-level rules [class, expver, stream, date] differ \
             from those naming the select configuration's datasets [class, expver, stream, date, \
             time, domain]"
        ),
        "{e}"
    );
}

/// Watch behind `select` waits on its lanes' own notifications (inotify
/// on each POSIX root), not on polling, and a flush into the second lane
/// wakes it.
#[test]
fn watch_through_select_uses_each_lanes_notifications() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    for r in ["od", "rest"] {
        std::fs::create_dir(base.join(r)).unwrap();
    }
    let fs = open(base, SELECT);
    let request: Request = "class=rd,expver=0001".parse().unwrap();
    let options = fieldstore::WatchOptions {
        since: fieldstore::Since::Now,
        count: Some(1),
        timeout: Some(std::time::Duration::from_secs(30)),
        ..Default::default()
    };
    let mut watch = fs.watch(&request, options).unwrap();
    assert_eq!(watch.mechanism(), "inotify + inotify");
    let writer = std::thread::spawn({
        let base = base.to_path_buf();
        move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let fs = open(&base, SELECT);
            fs.archive(&key("rd", "0001", 6), b"rd field").unwrap();
            fs.flush().unwrap();
        }
    });
    let event = watch
        .next()
        .expect("an event before the time-out")
        .expect("a field, not an error");
    writer.join().unwrap();
    assert_eq!(event.element.full_key(), key("rd", "0001", 6), "{event:?}");
}
