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
    // Version 2 is read (index blocks with entry extensions); 3 is not.
    toc[4] = 3;
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
    assert!(text.contains("version 3"), "{text}");
}

/// Version 2 appears only where it is needed: an index block holding an
/// entry extension (which a version-1 reader would misread) is stamped
/// version 2, so that builds reading version 1 refuse it by name; every
/// other record this build writes stays version 1.
#[test]
fn only_blocks_with_an_extension_are_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let fs = open(dir.path());
    let (fields, plain) = (fields(), b"plain".to_vec());
    let split = |k: &Key| fs.schema().split(k).unwrap();
    fs.archive(&fields[0].0, &plain).unwrap();
    fs.flush().unwrap();
    let extension: std::sync::Arc<[u8]> = std::sync::Arc::from(&b"Jx"[..]);
    fs.archive_extended(&split(&fields[1].0), &plain, Some(extension.clone()))
        .unwrap();
    fs.flush().unwrap();
    let loc = fs.location(&fields[1].0).unwrap().expect("flushed");
    assert_eq!(loc.extension.as_deref(), Some(&extension[..]));
    // Every record header (magic, then version) in the dataset's files.
    let mut versions = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().ends_with(".data") {
                let bytes = std::fs::read(&p).unwrap();
                for (i, w) in bytes.windows(8).enumerate() {
                    if &w[..4] == b"FSR1" {
                        let name = p.file_name().unwrap().to_string_lossy().into_owned();
                        versions.push((
                            name,
                            i,
                            u16::from_le_bytes([w[4], w[5]]),
                            u16::from_le_bytes([w[6], w[7]]),
                        ));
                    }
                }
            }
        }
    }
    let v2: Vec<_> = versions.iter().filter(|v| v.2 == 2).collect();
    assert_eq!(v2.len(), 1, "one version-2 record: {versions:?}");
    assert_eq!(v2[0].3, 10, "a BLOCK: {versions:?}");
    assert!(
        versions.iter().all(|v| v.2 == 1 || v.2 == 2),
        "{versions:?}"
    );
    assert!(
        versions.len() >= 5,
        "INIT, 2 FLUSH, 2 BLOCK at least: {versions:?}"
    );
}
