//! A POSIX store written by format version 1 (`docs/format/posix.md`),
//! checked in under `tests/fixtures/store-v1`, stays readable: every
//! change to the catalogue or its engine must still list and retrieve it
//! exactly. (Regenerate it only with a new format version, keeping the old
//! one: `FIELDSTORE_WRITE_FIXTURE=1 cargo test -p fieldstore --test
//! format_v1 -- --ignored write_fixture`.)

use std::path::{Path, PathBuf};

use fieldstore::{Config, FieldStore, Key, ListOptions, Request};

const SCHEMA: &str = "[ class, expver, stream, date, time [ type, levtype [ step, param ]]]";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v1")
}

/// The fields of the fixture: three steps of two params, the last step
/// archived twice (the second flush replaces it), and a wiped collocation.
fn fields() -> Vec<(Key, Vec<u8>)> {
    let mut out = Vec::new();
    for step in [0, 6, 12] {
        for param in [130, 167] {
            let key: Key = format!(
                "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,step={step},param={param}"
            )
            .parse()
            .unwrap();
            let version = if step == 12 { 2 } else { 1 };
            out.push((
                key.clone(),
                format!("field {key} version {version}").into_bytes(),
            ));
        }
    }
    out
}

fn open(root: &Path) -> FieldStore {
    let mut c = Config::memory(fieldstore::Schema::parse("fixture", SCHEMA).unwrap());
    c.engine = fieldstore::Engine::Toc;
    c.store = fieldstore::StoreKind::File;
    c.roots = vec![fieldstore::Root::new(root)];
    FieldStore::open(c).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

#[test]
#[ignore = "writes the fixture; run by hand for a new format version"]
fn write_fixture() {
    if std::env::var_os("FIELDSTORE_WRITE_FIXTURE").is_none() {
        return;
    }
    let root = fixture();
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let fs = open(&root);
    // Step 12 first with version 1 bytes, replaced by a later flush.
    for (key, data) in fields() {
        let first = String::from_utf8(data.clone())
            .unwrap()
            .replace("version 2", "version 1");
        fs.archive(&key, first.as_bytes()).unwrap();
    }
    fs.flush().unwrap();
    for (key, data) in fields()
        .into_iter()
        .filter(|(k, _)| k.get("step") == Some("12"))
    {
        fs.archive(&key, &data).unwrap();
    }
    fs.flush().unwrap();
    // A collocation archived, then wiped.
    let gone: Key = "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc,step=0,param=130"
        .parse()
        .unwrap();
    fs.archive(&gone, b"wiped").unwrap();
    fs.flush().unwrap();
    let request: Request =
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc"
            .parse()
            .unwrap();
    fs.wipe(
        &request,
        fieldstore::WipeOptions {
            doit: true,
            ..Default::default()
        },
    )
    .unwrap();
}

#[test]
fn a_version_1_store_lists_and_retrieves_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), tmp.path());
    let fs = open(tmp.path());
    let listed = fs
        .list(&"class=od".parse().unwrap(), ListOptions::default())
        .unwrap();
    let want = fields();
    assert_eq!(listed.len(), want.len(), "{listed:?}");
    for (key, data) in &want {
        let got = fs
            .retrieve(&Request::from_key(key))
            .unwrap()
            .read_all()
            .unwrap();
        assert_eq!(got, *data, "{key}");
    }
    let wiped: Key = "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc,step=0,param=130"
        .parse()
        .unwrap();
    assert!(fs
        .retrieve(&Request::from_key(&wiped))
        .unwrap()
        .read_all()
        .unwrap()
        .is_empty());
}

#[test]
fn its_toc_starts_with_the_version_1_header() {
    let dir = std::fs::read_dir(fixture())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("toc").exists())
        .expect("a dataset directory in the fixture");
    let toc = std::fs::read(dir.join("toc")).unwrap();
    assert_eq!(&toc[..4], b"FSR1", "magic");
    assert_eq!(u16::from_le_bytes([toc[4], toc[5]]), 1, "format version");
}

/// A store of a later version is refused by name, not misread.
#[test]
fn a_later_version_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), tmp.path());
    let dir = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("toc").exists())
        .unwrap();
    let mut toc = std::fs::read(dir.join("toc")).unwrap();
    toc[4] = 2;
    // The header's own checksum, so that only the version differs.
    let crc = crc32c::crc32c(&toc[..16]);
    toc[16..20].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(dir.join("toc"), &toc).unwrap();
    let fs = open(tmp.path());
    let e = fs
        .list(&"class=od".parse().unwrap(), ListOptions::default())
        .and_then(|_| {
            fs.retrieve(&Request::from_key(&fields()[0].0))
                .and_then(|r| r.read_all())
        })
        .map(|b| b.len());
    let text = match (e, fs.status(&"class=od".parse().unwrap())) {
        (Err(e), _) => e.to_string(),
        (Ok(_), Ok(status)) => format!("{status:?}"),
        (Ok(n), Err(e)) => panic!("read {n} bytes; status failed: {e}"),
    };
    assert!(text.contains("version 2"), "{text}");
}
