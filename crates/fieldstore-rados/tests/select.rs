//! `type: select` over sub-stores of different backends, on a real Ceph:
//! `class=od` datasets in a POSIX sub-store, `class=rd` in a RADOS one,
//! `class=ea` in a RADOS catalogue with a POSIX store. Archive routes each
//! dataset to its sub-store; list, axes, retrieve, stats and wipe go
//! through all of them. Skips without Ceph, except under `CI=true`.

mod common;

use std::path::Path;

use fieldstore::{Config, FieldStore, Key, Level, ListOptions, Request, WipeOptions};

fn key(class: &str, step: u32) -> Key {
    format!(
        "class={class},expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167"
    )
    .parse()
    .unwrap()
}

fn dataset(class: &str) -> String {
    format!("{class}:0001:oper:20231201:1200:g")
}

fn open(yaml: &str) -> FieldStore {
    FieldStore::open(Config::from_yaml(yaml, Path::new("/"), "select test").unwrap()).unwrap()
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

#[test]
fn posix_and_rados_sub_stores_in_one_select_config() {
    let Some(cluster) = common::cluster() else {
        return;
    };
    let ns = common::namespace("select");
    let tmp = tempfile::tempdir().unwrap();
    let (od, ea) = (tmp.path().join("od"), tmp.path().join("ea"));
    std::fs::create_dir_all(&od).unwrap();
    std::fs::create_dir_all(&ea).unwrap();
    let rados = format!(
        "{{conf: {}, pool: {}, namespace: {ns}, timeout: 60}}",
        cluster.conf, cluster.pool
    );
    let yaml = format!(
        "type: select\n\
         fdbs:\n\
         - select: class=^od$\n  engine: toc\n  spaces: [{{roots: [{{path: {}}}]}}]\n\
         - select: class=^rd$\n  engine: rados\n  store: rados\n  rados: {rados}\n\
         - select: class=^ea$\n  engine: rados\n  store: file\n  rados: {rados}\n  spaces: [{{roots: [{{path: {}}}]}}]\n",
        od.display(),
        ea.display()
    );
    let fs = open(&yaml);
    for class in ["od", "rd", "ea"] {
        for step in [0, 6] {
            fs.archive(&key(class, step), format!("{class} {step}").as_bytes())
                .unwrap();
        }
    }
    fs.flush().unwrap();

    // Each dataset is where its sub-store keeps it.
    assert!(od.join(dataset("od")).join("toc").exists());
    assert_eq!(std::fs::read_dir(&od).unwrap().count(), 1);
    let objects = String::from_utf8(cluster.rados(&ns, &["ls"])).unwrap();
    assert!(!objects.is_empty(), "nothing in the RADOS namespace");

    // Another handle reads all three through one config.
    let reader = open(&yaml);
    assert_eq!(
        datasets(&reader),
        [dataset("ea"), dataset("od"), dataset("rd")]
    );
    let fields = reader
        .list(&Request::default(), ListOptions::default())
        .unwrap();
    assert_eq!(fields.len(), 6);
    let scheme = |class: &str| {
        let e = fields
            .iter()
            .find(|e| e.dataset.get("class") == Some(class))
            .unwrap();
        e.location.as_ref().unwrap().scheme().to_string()
    };
    assert_eq!(scheme("od"), "file");
    assert_eq!(scheme("rd"), "rados");
    assert_eq!(scheme("ea"), "file");
    let request: Request = "class=od/rd/ea,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step=6/0,param=167"
        .parse()
        .unwrap();
    assert_eq!(
        reader.retrieve(&request).unwrap().read_all().unwrap(),
        b"od 6od 0rd 6rd 0ea 6ea 0"
    );
    let axes = reader.axes(&Request::default(), Level::Element).unwrap();
    let classes: Vec<&str> = axes["class"].iter().map(String::as_str).collect();
    assert_eq!(classes, ["ea", "od", "rd"]);
    assert_eq!(reader.stats(&Request::default()).unwrap().len(), 3);

    // Wipe reaches the RADOS sub-store.
    reader
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
    assert_eq!(datasets(&open(&yaml)), [dataset("ea"), dataset("od")]);
}
