//! Bad input gets a clear error naming what is wrong and where, and never
//! harms what is stored.

use std::path::{Path, PathBuf};
use std::process::Command;

use fieldstore::{Config, ErrorKind, FieldStore, Key, Level, ListOptions, Request};

const BASE: &str =
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc";

fn key(step: u32) -> Key {
    format!("{BASE},step={step},param=167").parse().unwrap()
}

fn all() -> Request {
    "class=od".parse().unwrap()
}

fn count(fs: &FieldStore) -> usize {
    fs.list(&all(), ListOptions::default()).unwrap().len()
}

/// A tmpfs mounted for one test, unmounted when dropped. Mounting needs
/// root; CI runs as root, so there the test must not skip.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must be able to mount a tmpfs (runs as root)"
            );
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        Some(Tmpfs { path, _dir: dir })
    }

    fn remount_read_only(&self) {
        let s = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.path)
            .status()
            .unwrap();
        assert!(s.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

#[test]
fn full_disk_fails_the_archive_or_flush_and_keeps_what_was_flushed() {
    let Some(tmp) = Tmpfs::mount("512k") else {
        return;
    };
    let fs = FieldStore::open(Config::embedded(&tmp.path)).unwrap();
    fs.archive(&key(0), &[7u8; 1000]).unwrap();
    fs.flush().unwrap();
    let big = vec![1u8; 2 << 20];
    let err = fs
        .archive(&key(1), &big)
        .and_then(|()| fs.flush())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
    assert!(
        err.to_string().contains(tmp.path.to_str().unwrap()),
        "names the file: {err}"
    );
    // What was flushed before is intact; the failed field is not visible.
    let reader = FieldStore::open(Config::embedded(&tmp.path)).unwrap();
    assert_eq!(count(&reader), 1);
    let r: Request = format!("{BASE},step=0,param=167").parse().unwrap();
    assert_eq!(
        reader.retrieve(&r).unwrap().read_all().unwrap(),
        vec![7u8; 1000]
    );
}

#[test]
fn read_only_root_refuses_writes_and_still_serves_reads() {
    let Some(tmp) = Tmpfs::mount("4m") else {
        return;
    };
    {
        let fs = FieldStore::open(Config::embedded(&tmp.path)).unwrap();
        fs.archive(&key(0), b"before").unwrap();
        fs.flush().unwrap();
    }
    tmp.remount_read_only();
    let fs = FieldStore::open(Config::embedded(&tmp.path)).unwrap();
    let err = fs
        .archive(&key(1), b"after")
        .and_then(|()| fs.flush())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(
        err.to_string().contains(tmp.path.to_str().unwrap()),
        "{err}"
    );
    assert_eq!(count(&fs), 1);
}

fn toc_of(root: &Path) -> PathBuf {
    let dataset = std::fs::read_dir(root)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    dataset.join("toc")
}

#[test]
fn damaged_toc_is_reported_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    for step in 0..3 {
        fs.archive(&key(step), b"x").unwrap();
        fs.flush().unwrap();
    }
    let toc = toc_of(dir.path());
    let mut bytes = std::fs::read(&toc).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x55;
    std::fs::write(&toc, &bytes).unwrap();
    let reader = FieldStore::open(Config::embedded(dir.path())).unwrap();
    // Everything readable is listed; then the damage is reported.
    let mut listed = 0;
    let err = reader
        .visit(&all(), ListOptions::default(), &mut |_| {
            listed += 1;
            true
        })
        .unwrap_err();
    assert_eq!(listed, 2);
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("{} at offset ", toc.display())),
        "{msg}"
    );
    assert!(msg.contains(": record payload checksum mismatch"), "{msg}");
    // The damaged record is the last: it may hold a newer version of any
    // field, so a retrieve fails rather than answer with an older one.
    let err = reader.retrieve(&Request::from_key(&key(1))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string()
            .contains(&format!("{} at offset ", toc.display())),
        "{err}"
    );
}

#[test]
fn a_partial_record_at_the_end_of_the_toc_is_not_visible_yet() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    fs.archive(&key(0), b"x").unwrap();
    fs.flush().unwrap();
    // What a writer mid-append (or a torn append after power loss) leaves.
    let toc = toc_of(dir.path());
    let mut bytes = std::fs::read(&toc).unwrap();
    let one_record = bytes.len();
    fs.archive(&key(1), b"y").unwrap();
    fs.flush().unwrap();
    let full = std::fs::read(&toc).unwrap();
    bytes.extend_from_slice(&full[one_record..full.len() - 5]);
    std::fs::write(&toc, &bytes).unwrap();
    // As before the second append was synced: the `toc`'s end attribute
    // says where the first one ended (a `toc` shorter than it says is cut).
    let path = std::ffi::CString::new(toc.as_os_str().as_encoded_bytes()).unwrap();
    let end = (one_record as u64).to_le_bytes();
    // SAFETY: NUL-terminated path and name, 8 readable bytes.
    let set = unsafe {
        libc::setxattr(
            path.as_ptr(),
            c"user.fieldstore.end".as_ptr(),
            end.as_ptr().cast(),
            end.len(),
            0,
        )
    };
    assert!(
        set == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOTSUP),
        "setxattr: {}",
        std::io::Error::last_os_error()
    );
    let reader = FieldStore::open(Config::embedded(dir.path())).unwrap();
    assert_eq!(count(&reader), 1);
}

#[test]
fn keys_and_requests_that_do_not_fit_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    let bad: Key = format!("{BASE},step=0,param=167,foo=1").parse().unwrap();
    let err = fs.archive(&bad, b"x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        err.to_string(),
        "unknown keyword 'foo': no rule of the schema uses it"
    );
    let missing: Key = format!("{BASE},step=0").parse().unwrap();
    assert_eq!(
        fs.archive(&missing, b"x").unwrap_err().to_string(),
        "missing keyword 'param' required by rule [ class, expver, stream=oper, date, time, domain?g \
         [ type=fc, levtype=sfc, timespan?none [ step, param, frequency?, direction? ]]] (line 384)"
    );
    fs.flush().unwrap();
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing created on disk"
    );
    let err = fs
        .list(&"class=od,stepp=1".parse().unwrap(), ListOptions::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        err.to_string(),
        "unknown keyword 'stepp' in request: the schema has no rule using it"
    );
    let err = fs
        .axes(&"class=od,time=25".parse().unwrap(), Level::Element)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "keyword 'time' in request: '25' is not a valid Time: hour must be 0..23 and minute 0..59"
    );
}

#[test]
fn unreadable_and_malformed_configs_are_named() {
    let err = Config::from_file(Path::new("/nonexistent/fieldstore.yaml")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(
        err.to_string(),
        "config /nonexistent/fieldstore.yaml: No such file or directory (os error 2)"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.yaml");
    std::fs::write(
        &path,
        "engine: toc\nschema: ./missing.schema\nspaces: [{roots: [{path: .}]}]\n",
    )
    .unwrap();
    let err = Config::from_file(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    assert_eq!(
        err.to_string(),
        format!(
            "{}: schema {}/./missing.schema: No such file or directory (os error 2)",
            path.display(),
            dir.path().display()
        )
    );
    std::fs::write(dir.path().join("bad.schema"), "[ class [ type [ step ]]\n").unwrap();
    std::fs::write(
        &path,
        "engine: toc\nschema: bad.schema\nspaces: [{roots: [{path: .}]}]\n",
    )
    .unwrap();
    let err = Config::from_file(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    assert_eq!(
        err.to_string(),
        format!(
            "{}/bad.schema:2:1: unclosed '[' opened at line 1",
            dir.path().display()
        )
    );
}

/// A key value too long for the index's encoding (element values are
/// stored with a 16-bit length) is refused at archive, naming the keyword;
/// what was stored before stays readable.
#[test]
fn an_overlong_key_value_is_refused_and_harms_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    fs.archive(&key(0), b"kept").unwrap();
    fs.flush().unwrap();
    let long = "x".repeat(70_000);
    let bad: Key = format!("{BASE},step=1,param={long}").parse().unwrap();
    let e = fs.archive(&bad, b"never").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        e.to_string(),
        "keyword 'param': a value of 70000 bytes is too long (at most 65535)"
    );
    fs.flush().unwrap();
    assert_eq!(count(&fs), 1);
    let again = FieldStore::open(Config::embedded(dir.path())).unwrap();
    assert_eq!(count(&again), 1);
}

#[test]
fn values_no_request_could_name_are_refused_at_archive_naming_keyword_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::embedded(dir.path());
    config.schema = "[ class, stream [ type [ step, param ]]]".parse().unwrap();
    let fs = FieldStore::open(config).unwrap();
    fs.archive(
        &"class=od,stream=oper,type=fc,step=0,param=167"
            .parse()
            .unwrap(),
        b"kept",
    )
    .unwrap();
    fs.flush().unwrap();
    for (k, message) in [
        (
            "class=od,stream=a/b,type=fc,step=0,param=167",
            "value 'a/b' of keyword 'stream' cannot be archived: '/' separates values in requests, so no request could name it",
        ),
        (
            "class=od,stream=oper,type=to,step=0,param=167",
            "value 'to' of keyword 'type' cannot be archived: requests read it as a word ('all', 'to', 'by'), so no request could name it",
        ),
        (
            "class=od,stream=oper,type=fc,step=0,param=ALL",
            "value 'all' of keyword 'param' cannot be archived: requests read it as a word ('all', 'to', 'by'), so no request could name it",
        ),
    ] {
        let e = fs.archive(&k.parse().unwrap(), b"x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{k}");
        assert_eq!(e.to_string(), message);
    }
    fs.flush().unwrap();
    // Characters the canonical form `k=v,k=v` could not carry never get
    // into a key at all.
    for v in ["a\0b", "a\nb", "a,b", "a=b", "a b", "{a}"] {
        let e = fieldstore::Key::from_pairs([("stream", v)]).unwrap_err();
        assert!(e.to_string().contains("keyword 'stream'"), "{v:?}: {e}");
    }
    assert_eq!(count_in(&fs), 1);
}

fn count_in(fs: &FieldStore) -> usize {
    fs.list(&all(), ListOptions::default()).unwrap().len()
}

/// Bytes in use on the file system holding `path` (`df`).
fn used_bytes(path: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-B1", "--output=used"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A full disk costs only the flush that hit it: the bytes of fields whose
/// flush failed before anything became visible are given back by the
/// writer (its data file is cut back to its last visible flush), so once
/// the space is freed (a filler file deleted) and purge has run, the file
/// system holds the live data again, and archiving works.
#[test]
fn after_a_full_disk_purge_brings_the_store_back_to_its_live_data() {
    let Some(tmp) = Tmpfs::mount("16m") else {
        return;
    };
    let root = tmp.path.join("root");
    std::fs::create_dir(&root).unwrap();
    {
        let first = FieldStore::open(Config::embedded(&root)).unwrap();
        first.archive(&key(0), &[7u8; 1000]).unwrap();
        first.flush().unwrap();
    }
    let live = used_bytes(&tmp.path);
    // A writer flushes a small field, then, with about 2 MiB left free (a
    // filler file takes the rest), archives 7 MiB: blocks are written as
    // they fill (into space preallocated for the data file while there
    // was some), the rest at the flush; an archive or the flush hits the
    // full disk, and if an archive did, the flush fails too.
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    fs.archive(&key(1), &[8u8; 1000]).unwrap();
    fs.flush().unwrap();
    let filler = tmp.path.join("filler");
    let avail = 16 * 1024 * 1024 - used_bytes(&tmp.path);
    std::fs::write(&filler, vec![0u8; (avail - 2 * 1024 * 1024) as usize]).unwrap();
    let archived = (2..38).try_for_each(|step| fs.archive(&key(step), &[step as u8; 200 * 1024]));
    let flushed = fs.flush();
    if let Err(e) = &archived {
        assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
    }
    let err = flushed.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
    // The failed fields are not visible; the earlier ones read back.
    let reader = FieldStore::open(Config::embedded(&root)).unwrap();
    assert_eq!(count(&reader), 2);
    for (step, byte) in [(0, 7u8), (1, 8)] {
        let r: Request = format!("{BASE},step={step},param=167").parse().unwrap();
        assert_eq!(
            reader.retrieve(&r).unwrap().read_all().unwrap(),
            vec![byte; 1000]
        );
    }
    std::fs::remove_file(&filler).unwrap();
    reader.purge(&all(), true).unwrap();
    let after = used_bytes(&tmp.path);
    eprintln!("{live} bytes used before the second writer, {after} after the purge");
    assert!(
        after <= live + 64 * 1024,
        "{after} bytes used after purge, {live} before the second writer"
    );
    // Archiving works again.
    fs.archive(&key(1), b"after").unwrap();
    fs.flush().unwrap();
    assert_eq!(
        count(&FieldStore::open(Config::embedded(&root)).unwrap()),
        2
    );
}
