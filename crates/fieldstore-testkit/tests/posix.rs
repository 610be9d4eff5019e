//! The conformance suite on the POSIX backend (`engine: toc`, `store:
//! file`), each check on a fresh temporary root, plus the POSIX-specific
//! damage checks: damaged and truncated data files, damaged index files.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use fieldstore::{ErrorKind, FieldLocation, FieldStore, ListOptions, Request};
use fieldstore_testkit::support::{archive_payload, key, must, posix_config, schema, Spec, PL};
use fieldstore_testkit::{damaged_field_detected, Open};

fn with_posix(check: &dyn Fn(Open<'_>)) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().to_path_buf();
    let open = move || FieldStore::open(posix_config(&root, schema()));
    check(&open);
}

fieldstore_testkit::conformance_tests!(with_posix);

/// Every check on one root, one after the other, with the damage hook:
/// checks are not disturbed by the other datasets in the root.
#[test]
fn run_all_on_one_root() {
    with_posix(&|open| {
        let corrupt = |loc: &FieldLocation| flip(&data_file(loc), loc.offset + loc.length / 2);
        let damage_record = |d: &fieldstore::DatasetKey, n: usize| damage_toc_record(open, d, n);
        let damage_header = |d: &fieldstore::DatasetKey, n: usize| damage_toc_header(open, d, n);
        let cut: fieldstore_testkit::DamageRecord<'_> = &|d, n| cut_toc(open, d, n);
        let splice: fieldstore_testkit::DamageRecord<'_> = &|d, n| splice_toc(open, d, n);
        let attributes = keeps_user_attributes();
        fieldstore_testkit::run_all(
            open,
            &fieldstore_testkit::Capabilities {
                corrupt: Some(&corrupt),
                damage_record: Some(&damage_record),
                damage_header: Some(&damage_header),
                remove_record: None,
                splice_record: attributes.then_some(splice),
                cut_log: attributes.then_some(cut),
                unregister: None,
                blocks_outlive_records: true,
            },
        );
    });
}

/// The conformance suite's cut-log check on its own root, where the file
/// system keeps user extended attributes (a `toc`'s end mark).
#[test]
fn cut_log_is_damage() {
    with_posix_attributes("cut_log_is_damage", &|open| {
        fieldstore_testkit::cut_log_is_damage(open, &|d, n| cut_toc(open, d, n));
    });
}

/// A cut after a damaged record (the conformance check, on its own root,
/// where the `toc`'s end mark is kept).
#[test]
fn cut_after_a_damaged_record_is_damage() {
    with_posix_attributes("cut_after_a_damaged_record_is_damage", &|open| {
        fieldstore_testkit::cut_after_a_damaged_record_is_damage(
            open,
            &|d, n| damage_toc_record(open, d, n),
            &|d, n| cut_toc(open, d, n),
        );
    });
}

/// The conformance suite's cut-then-appended check on its own root: the
/// `toc`'s end mark is only raised, and writers refuse to append to a
/// `toc` shorter than it, so appends after a cut never hide it.
#[test]
fn cut_then_appended_to_is_damage() {
    with_posix_attributes("cut_then_appended_to_is_damage", &|open| {
        fieldstore_testkit::cut_then_appended_to_is_damage(open, &|d, n| cut_toc(open, d, n));
    });
}

/// The conformance suite's check of a `toc` cut at, past or below where
/// an idle reader stopped, on its own root.
#[test]
fn idle_reader_sees_a_cut_near_where_it_stopped() {
    with_posix_attributes("idle_reader_sees_a_cut_near_where_it_stopped", &|open| {
        fieldstore_testkit::idle_reader_sees_a_cut_near_where_it_stopped(open, &|d, n| {
            cut_toc(open, d, n)
        });
    });
}

/// A writer refuses to append to a cut `toc`: its flush fails `Corrupt`,
/// naming the file and its end mark, and the `toc` keeps the length the
/// cut left (so that appends cannot grow it past the mark and hide the
/// loss).
#[test]
fn a_writer_refuses_to_append_to_a_cut_toc() {
    with_posix_attributes("a_writer_refuses_to_append_to_a_cut_toc", &|open| {
        let w = must(open(), "writer");
        let first = Spec { step: 0, ..PL }.key("refu");
        let dataset = must(w.schema().split(&first), "splitting the key").dataset;
        for step in [0, 6, 12] {
            archive_payload(&w, &Spec { step, ..PL }.key("refu"), 1, 500, 3000);
            must(w.flush(), "flush before the cut");
        }
        drop(w);
        cut_toc(open, &dataset, 2);
        let toc = toc_of(open, &dataset);
        let cut_len = std::fs::metadata(&toc).expect("the toc").len();

        let w = must(open(), "writer after the cut");
        archive_payload(&w, &Spec { step: 18, ..PL }.key("refu"), 1, 500, 3000);
        let e = w.flush().expect_err("a flush appended to a cut toc");
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(&toc.display().to_string()) && msg.contains("user.fieldstore.end"),
            "the error names neither the toc nor its end mark: {msg}"
        );
        let len = std::fs::metadata(&toc).expect("the toc").len();
        assert_eq!(len, cut_len, "the refused flush changed the toc's length");
    });
}

/// [`with_posix`], where the file system of the temporary directory keeps
/// user extended attributes (a `toc`'s end mark needs them); else the
/// test `name` says it is skipped.
fn with_posix_attributes(name: &str, check: &dyn Fn(Open<'_>)) {
    if !keeps_user_attributes() {
        eprintln!("{name}: the temporary directory keeps no user attributes; skipped");
        return;
    }
    with_posix(check);
}

/// Whether the file system of the temporary directory keeps user
/// extended attributes: the POSIX catalogue tells a `toc` cut at a record
/// boundary by one (`user.fieldstore.end`, `docs/format/posix.md`).
fn keeps_user_attributes() -> bool {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let probe = dir.path().join("probe");
    std::fs::write(&probe, b"").expect("a probe file");
    let path = std::ffi::CString::new(probe.as_os_str().as_encoded_bytes()).expect("a path");
    // SAFETY: NUL-terminated path and name, one readable byte.
    let rc = unsafe {
        libc::setxattr(
            path.as_ptr(),
            c"user.fieldstore.probe".as_ptr(),
            b"1".as_ptr().cast(),
            1,
            0,
        )
    };
    rc == 0
}

/// The table of contents of `dataset`, found through a handle.
fn toc_of(open: Open<'_>, dataset: &fieldstore::DatasetKey) -> PathBuf {
    let fs = must(open(), "a handle to find the dataset");
    Path::new(&fs.catalogue().describe(dataset)).join("toc")
}

/// The offset of record `n + 1` of a table of contents' bytes (record 0
/// is its INIT; 20-byte headers, the payload's length at bytes 8..12).
fn record_offset(bytes: &[u8], n: usize) -> usize {
    let mut at = 0usize;
    for _ in 0..=n {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        at += 20 + len as usize;
    }
    at
}

/// Cut the dataset's table of contents just before record `n + 1`, in
/// place (its end mark stays).
fn cut_toc(open: Open<'_>, dataset: &fieldstore::DatasetKey, n: usize) {
    let toc = toc_of(open, dataset);
    let bytes = std::fs::read(&toc).unwrap_or_else(|e| panic!("reading {}: {e}", toc.display()));
    OpenOptions::new()
        .write(true)
        .open(&toc)
        .and_then(|f| f.set_len(record_offset(&bytes, n) as u64))
        .unwrap_or_else(|e| panic!("cutting {}: {e}", toc.display()));
}

/// Splice record `n + 1` out of the dataset's table of contents, in place
/// (the records after it moved up, the file shortened; its end mark stays).
fn splice_toc(open: Open<'_>, dataset: &fieldstore::DatasetKey, n: usize) {
    let toc = toc_of(open, dataset);
    let bytes = std::fs::read(&toc).unwrap_or_else(|e| panic!("reading {}: {e}", toc.display()));
    let (from, to) = (record_offset(&bytes, n), record_offset(&bytes, n + 1));
    let spliced = [&bytes[..from], &bytes[to..]].concat();
    let f = OpenOptions::new().write(true).open(&toc);
    f.and_then(|f| {
        f.write_all_at(&spliced, 0)?;
        f.set_len(spliced.len() as u64)
    })
    .unwrap_or_else(|e| panic!("splicing {}: {e}", toc.display()));
}

/// A cut after a record whose header is damaged (the conformance check, on
/// its own root, where the `toc`'s end mark is kept).
#[test]
fn cut_after_a_damaged_header_is_damage() {
    with_posix_attributes("cut_after_a_damaged_header_is_damage", &|open| {
        fieldstore_testkit::cut_after_a_damaged_header_is_damage(
            open,
            &|d, n| damage_toc_header(open, d, n),
            &|d, n| cut_toc(open, d, n),
        );
    });
}

/// A record spliced out of the table of contents (the conformance check,
/// on its own root, where the `toc`'s end mark is kept).
#[test]
fn spliced_log_record_is_damage() {
    with_posix_attributes("spliced_log_record_is_damage", &|open| {
        fieldstore_testkit::spliced_log_record_is_damage(open, &|d, n| splice_toc(open, d, n));
    });
}

/// The conformance suite's log-damage check on its own root.
#[test]
fn damaged_log_record_costs_only_itself() {
    with_posix(&|open| {
        fieldstore_testkit::damaged_log_record_costs_only_itself(open, &|d, n| {
            damage_toc_record(open, d, n)
        });
    });
}

/// A wipe of a collocation only a damaged record names (the conformance
/// check, on its own root).
#[test]
fn collocation_wipe_over_a_damaged_record() {
    with_posix(&|open| {
        fieldstore_testkit::collocation_wipe_over_a_damaged_record(
            open,
            &|d, n| damage_toc_record(open, d, n),
            true,
        );
    });
}

/// Purge around a damaged record (the conformance check, on its own root).
#[test]
fn purge_around_a_damaged_record() {
    with_posix(&|open| {
        fieldstore_testkit::purge_around_a_damaged_record(
            open,
            &|d, n| damage_toc_record(open, d, n),
            true,
        );
    });
}

/// Flip a byte in the middle of the payload of record `n + 1` of the
/// dataset's table of contents (record 0 is its INIT).
fn damage_toc_record(open: Open<'_>, dataset: &fieldstore::DatasetKey, n: usize) {
    let toc = toc_of(open, dataset);
    let bytes = std::fs::read(&toc).unwrap_or_else(|e| panic!("reading {}: {e}", toc.display()));
    let at = record_offset(&bytes, n);
    let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
    flip(&toc, (at + 20 + len as usize / 2) as u64);
}

/// Flip a byte of the header checksum of record `n + 1` of the dataset's
/// table of contents (record 0 is its INIT): bytes that are no record
/// whose header checks, its payload intact.
fn damage_toc_header(open: Open<'_>, dataset: &fieldstore::DatasetKey, n: usize) {
    let toc = toc_of(open, dataset);
    let bytes = std::fs::read(&toc).unwrap_or_else(|e| panic!("reading {}: {e}", toc.display()));
    flip(&toc, (record_offset(&bytes, n) + 17) as u64);
}

/// A dataset keeps the schema it was created under (its INIT record) when
/// the configured schema changes.
#[test]
fn datasets_keep_their_schema() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    fieldstore_testkit::datasets_keep_their_schema(&|text: &str| {
        let schema = fieldstore::Schema::parse("schema", text)?;
        FieldStore::open(posix_config(dir.path(), schema))
    });
}

/// Flip one bit of the byte at `offset` of `path`, in place.
fn flip(path: &Path, offset: u64) {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("opening {} to damage it: {e}", path.display()));
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, offset)
        .unwrap_or_else(|e| panic!("reading {}@{offset}: {e}", path.display()));
    b[0] ^= 0x08;
    f.write_all_at(&b, offset)
        .unwrap_or_else(|e| panic!("damaging {}@{offset}: {e}", path.display()));
}

/// The data file of a `file://` location.
fn data_file(loc: &FieldLocation) -> PathBuf {
    assert_eq!(loc.scheme(), "file", "a POSIX location: {loc}");
    PathBuf::from(loc.path())
}

#[test]
fn damaged_data_file_is_detected() {
    with_posix(&|open| {
        damaged_field_detected(open, &|loc: &FieldLocation| {
            flip(&data_file(loc), loc.offset + loc.length / 2);
        });
    });
}

/// A data file cut short (a lost tail) is `Corrupt` for the fields it no
/// longer holds, never short data; the fields before the cut still read.
#[test]
fn truncated_data_file_is_detected() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let open = || FieldStore::open(posix_config(dir.path(), schema()));
    let w = must(open(), "open");
    let fields: Vec<_> = [0, 6]
        .iter()
        .map(|&step| archive_payload(&w, &Spec { step, ..PL }.key("trn1"), 1, 500, 900))
        .collect();
    must(w.flush(), "flush");
    drop(w);
    let r = must(open(), "open");
    let last = must(r.location(&fields[1].key), "location").expect("flushed");
    let file = data_file(&last);
    OpenOptions::new()
        .write(true)
        .open(&file)
        .and_then(|f| f.set_len(last.offset + last.length / 2))
        .unwrap_or_else(|e| panic!("truncating {}: {e}", file.display()));
    let r = must(open(), "open after the truncation");
    match r
        .retrieve(&Request::from_key(&fields[1].key))
        .and_then(|d| d.read_all())
    {
        Err(e) => {
            assert_eq!(
                e.kind(),
                ErrorKind::Corrupt,
                "reading a field cut short: {e}"
            );
            assert!(
                e.to_string().contains(&*file.to_string_lossy()),
                "the error does not name the data file {}: {e}",
                file.display()
            );
        }
        Ok(bytes) => panic!(
            "a field cut short read back as {} bytes of data",
            bytes.len()
        ),
    }
    let first = r
        .retrieve(&Request::from_key(&fields[0].key))
        .and_then(|d| d.read_all());
    assert_eq!(
        must(first, "retrieve of the field before the cut"),
        fields[0].data,
        "the field before the cut"
    );
}

/// A damaged index file is reported as `Corrupt`, naming the file, by the
/// operations that need it (list at the element level, retrieve); it never
/// yields wrong fields.
#[test]
fn damaged_index_file_is_detected() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let open = || FieldStore::open(posix_config(dir.path(), schema()));
    let w = must(open(), "open");
    let fields: Vec<_> = [0, 6, 12]
        .iter()
        .map(|&step| archive_payload(&w, &Spec { step, ..PL }.key("idx1"), 1, 100, 300))
        .collect();
    must(w.flush(), "flush");
    drop(w);
    let index = find_files(dir.path(), ".index");
    assert_eq!(index.len(), 1, "one writer, one index file: {index:?}");
    let len = std::fs::metadata(&index[0]).expect("index file").len();
    // Past the record header: inside the block's entries.
    flip(&index[0], len - 10);
    let r = must(open(), "open after the damage");
    let name = index[0]
        .file_name()
        .expect("a file name")
        .to_string_lossy()
        .into_owned();
    let req: Request = "class=od,expver=idx1".parse().expect("request");
    let results = [
        (
            "list",
            r.list(&req, ListOptions::default()).map(|l| l.len()),
        ),
        (
            "retrieve",
            r.retrieve(&Request::from_key(&fields[1].key))
                .and_then(|d| d.read_all())
                .map(|b| b.len()),
        ),
    ];
    for (op, result) in results {
        match result {
            Err(e) => {
                assert_eq!(
                    e.kind(),
                    ErrorKind::Corrupt,
                    "{op} over a damaged index: {e}"
                );
                assert!(
                    e.to_string().contains(&name),
                    "{op}: the error does not name {name}: {e}"
                );
            }
            Ok(n) => panic!("{op} over a damaged index file succeeded ({n}), want a Corrupt error"),
        }
    }
    // A key that is not in the damaged dataset is still simply absent.
    let other = key("class=od,expver=idx2,stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=0,number=1,levelist=500,param=130");
    assert_eq!(
        must(r.location(&other), "location in another dataset"),
        None
    );
}

fn find_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("reading {}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out
}
