//! Gaps and lost pieces of a RADOS log are damage, never an older answer
//! or nothing with success (issue 38, second row), on a real cluster with
//! 4 KiB log segments (a dataset's log spans several): a sealed segment
//! whose `!sealed` key was removed, a sealed segment cut at a record
//! boundary (its SEAL record lost), a middle segment removed, segment 0
//! removed, a dataset's root entry removed. Each is done with the `rados`
//! tool, behind the backend's back.

mod common;

use fieldstore::{ErrorKind, FieldStore, Key, ListOptions};
use fieldstore_testkit::support::{archive_payload, must, request, Spec, Stored, PL, SFC};

/// A handle factory on a fresh namespace, with 4 KiB log segments.
fn setup(c: &'static common::Cluster, name: &str) -> (String, impl Fn() -> FieldStore) {
    let ns = common::namespace(name);
    let yaml = format!(
        "engine: rados\nstore: rados\n{}  log_segment_size: 4096\n",
        c.section(&ns)
    );
    let mut config = fieldstore::Config::from_yaml(&yaml, std::path::Path::new("/"), "test")
        .unwrap_or_else(|e| panic!("test config:\n{yaml}\n{e}"));
    config.schema = fieldstore_testkit::support::schema();
    (ns, move || must(FieldStore::open(config.clone()), "open"))
}

fn key(x: &str, step: u32) -> Key {
    Spec { step, ..PL }.key(x)
}

/// Flush steps `0..n` (version 1), one flush each, through one handle:
/// the log spans several segments. Returns the fields, the dataset
/// object's name and, per flush, the segment its record went to.
fn fill(
    open: &dyn Fn() -> FieldStore,
    c: &common::Cluster,
    ns: &str,
    x: &str,
    n: u32,
) -> (Vec<Stored>, String, Vec<u32>) {
    let w = open();
    let mut fields = Vec::new();
    for s in 0..n {
        fields.push(archive_payload(&w, &key(x, s), 1, 200, 400));
        must(w.flush(), format_args!("flush of step {s}"));
    }
    let datasets = must(
        w.list(
            &request(&format!("class=od,expver={x}")),
            ListOptions {
                depth: fieldstore::Level::Dataset,
                duplicates: false,
            },
        ),
        "list of the datasets",
    );
    let what = w.catalogue().describe(&datasets[0].dataset);
    let object = what.split('\'').nth(1).expect("an object name").to_string();
    drop(w);
    // Flush i's block keys end in `.<i + 1, 8 digits>.00000`.
    let mut segment_of = vec![u32::MAX; n as usize];
    for k in 0.. {
        let obj = if k == 0 {
            object.clone()
        } else {
            format!("{object}.{k}")
        };
        let listed = c.rados(ns, &["ls"]);
        if !String::from_utf8_lossy(&listed).lines().any(|l| l == obj) {
            break;
        }
        let bytes = c.rados(ns, &["get", &obj, "-"]);
        for (i, seg) in segment_of.iter_mut().enumerate() {
            let mark = format!(".{:08}.00000", i + 1);
            if bytes.windows(mark.len()).any(|w| w == mark.as_bytes()) {
                *seg = k;
            }
        }
    }
    assert!(segment_of.iter().all(|s| *s != u32::MAX), "{segment_of:?}");
    (fields, object, segment_of)
}

fn read(fs: &FieldStore, k: &Key) -> fieldstore::Result<Vec<u8>> {
    fs.retrieve(&fieldstore::Request::from_key(k))
        .and_then(|r| r.read_all())
}

fn exact(fs: &FieldStore, what: &str, want: &Stored) {
    match read(fs, &want.key) {
        Ok(b) => assert!(
            b == want.data,
            "{what}: other bytes ({} of {})",
            b.len(),
            want.data.len()
        ),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Exact, or `Corrupt`: never other bytes, never nothing.
fn exact_or_corrupt(fs: &FieldStore, what: &str, want: &Stored) {
    match read(fs, &want.key) {
        Ok(b) => assert!(
            b == want.data,
            "{what}: {} bytes that are not its newest version",
            b.len()
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}"),
    }
}

fn damaged(fs: &FieldStore, x: &str) -> bool {
    must(
        fs.status(&request(&format!("class=od,expver={x}"))),
        "status",
    )
    .iter()
    .any(|s| !s.damage.is_empty())
}

/// `status` reports damage in dataset `x`, and purge (`--doit`) removes
/// nothing of it: the damage may reference any unit.
fn reported_and_kept(fs: &FieldStore, x: &str, what: &str) {
    assert!(damaged(fs, x), "{x}: status does not report {what}");
    let report = must(fs.purge(&dataset_request(x), true), "purge");
    assert!(
        report.datasets.iter().all(|d| d.items.is_empty()),
        "{x}: purge removed units of a dataset with {what}: {report:?}"
    );
}

/// Each field read back exactly if its record is in a segment after 0,
/// exactly or `Corrupt` if in segment 0 (where the damage is).
fn later_segments_exact(fs: &FieldStore, fields: &[Stored], segment_of: &[u32]) {
    for (f, seg) in fields.iter().zip(segment_of) {
        if *seg >= 1 {
            exact(fs, &format!("{} (segment {seg})", f.key), f);
        } else {
            exact_or_corrupt(fs, &format!("{} (segment 0)", f.key), f);
        }
    }
}

/// `!sealed` removed from sealed segment 0: a later writer must not append
/// after its SEAL record (where readers never look): its flush is visible.
#[test]
fn removed_seal_marker_loses_no_later_flush() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "unsealed");
    let x = "ldm1";
    let (fields, object, segment_of) = fill(&open, c, &ns, x, 40);
    assert!(
        segment_of.iter().any(|s| *s >= 1),
        "one segment only: {segment_of:?}"
    );
    c.rados(&ns, &["rmomapkey", &object, "!sealed"]);
    let w = open();
    let late: Vec<Stored> = (100..103)
        .map(|s| {
            let f = archive_payload(&w, &key(x, s), 1, 200, 400);
            must(
                w.flush(),
                format_args!("flush of step {s} after the key was removed"),
            );
            f
        })
        .collect();
    drop(w);
    let r = open();
    for f in &late {
        exact(
            &r,
            &format!("{} flushed after `!sealed` was removed", f.key),
            f,
        );
    }
    for f in &fields {
        exact(&r, &format!("{}", f.key), f);
    }
}

/// Sealed segment 0 cut just before its SEAL record: the reader must go on
/// in the next segment (its omap says it is sealed), and count the cut as
/// damage, not stop there answering older versions or nothing.
#[test]
fn sealed_segment_cut_short_is_damage() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "cut");
    let x = "ldm2";
    let (mut fields, object, segment_of) = fill(&open, c, &ns, x, 40);
    // A newer version of step 0, in the last segment.
    let w = open();
    let newer = archive_payload(&w, &key(x, 0), 2, 200, 400);
    must(w.flush(), "flush of step 0 again");
    drop(w);
    let bytes = c.rados(&ns, &["get", &object, "-"]);
    let mut at = 0usize;
    let mut seal_at = None;
    while at + 20 <= bytes.len() {
        let kind = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]);
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes")) as usize;
        if kind == 6 {
            seal_at = Some(at);
        }
        at += 20 + len;
    }
    let seal_at = seal_at.expect("segment 0 is sealed");
    c.rados(&ns, &["truncate", &object, &seal_at.to_string()]);

    let r = open();
    match read(&r, &newer.key) {
        Ok(b) if b == fields[0].data => {
            panic!("step 0 answered its older version: the reader stopped at the cut")
        }
        Ok(b) => assert!(b == newer.data, "step 0 read other bytes"),
        Err(e) => panic!("step 0, flushed after the cut segment: {e}"),
    }
    fields[0] = newer;
    later_segments_exact(&r, &fields, &segment_of);
    reported_and_kept(&r, x, "a cut segment");
}

/// Sealed segment 0 rewritten without one of its FLUSH records, its SEAL
/// record and omap kept (the log reads as whole): its `!records` key
/// counts the record removed. The step only that record held fails
/// `Corrupt` (never "not found" with success), fields of later segments
/// read back, `status` reports it, purge removes nothing.
#[test]
fn sealed_segment_missing_a_record_is_damage() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "sealgap");
    let x = "ldm5";
    let (fields, object, segment_of) = fill(&open, c, &ns, x, 40);
    let in_zero = segment_of.iter().filter(|s| **s == 0).count();
    assert!(
        in_zero >= 3,
        "segment 0 holds {in_zero} flushes: {segment_of:?}"
    );
    // Records: INIT, then the flushes of steps 0, 1, ...: drop step 1's.
    let bytes = c.rados(&ns, &["get", &object, "-"]);
    let starts = record_starts(&bytes);
    let mut rewritten = bytes[..starts[2]].to_vec();
    rewritten.extend_from_slice(&bytes[starts[3]..]);
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), &rewritten).expect("writing the rewritten segment");
    c.rados(&ns, &["put", &object, &file.path().display().to_string()]);

    let r = open();
    match read(&r, &fields[1].key) {
        Ok(b) => panic!(
            "step 1, held only by the removed record, read back {} bytes with success",
            b.len()
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "step 1: {e}"),
    }
    later_segments_exact(&r, &fields, &segment_of);
    reported_and_kept(&r, x, "a record removed");
}

/// The start of each framed record of a log segment's bytes (20-byte
/// headers, the payload's length at bytes 8..12).
fn record_starts(bytes: &[u8]) -> Vec<usize> {
    let (mut at, mut starts) = (0usize, Vec::new());
    while at + 20 <= bytes.len() {
        starts.push(at);
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        at += 20 + len as usize;
    }
    starts
}

/// The last segment of a dataset log whose segment 0 is `object`.
fn last_segment(c: &common::Cluster, ns: &str, object: &str) -> String {
    let listed = String::from_utf8_lossy(&c.rados(ns, &["ls"])).into_owned();
    let mut last = object.to_string();
    for k in 1.. {
        let obj = format!("{object}.{k}");
        if !listed.lines().any(|l| l == obj) {
            return last;
        }
        last = obj;
    }
    unreachable!()
}

/// The last segment cut just before its last record (a flush of a newer
/// version of step 0), at a record boundary: the log reads as whole, but
/// its `!records` key counts the record cut off. Step 0 fails `Corrupt`
/// (never its older version with success), `status` reports it, purge
/// removes nothing, the other fields read back.
#[test]
fn lost_tail_is_damage() {
    cut_before_the_newest("tail", "ldm9", false);
}

/// As [`lost_tail_is_damage`], and then a writer flushes once more: the
/// log ends with a whole record again, and the cut is a gap before it.
/// Step 0 still fails `Corrupt`, never its older version with success.
#[test]
fn cut_then_appended_to_is_damage() {
    cut_before_the_newest("cutappend", "ldmb", true);
}

/// Twelve flushes of dataset `x` and a newer version of step 0; the last
/// segment cut just before that one's record, and (`then_flush`) one more
/// flush after the cut, into the same segment. Then what
/// [`lost_tail_is_damage`] says holds.
fn cut_before_the_newest(name: &str, x: &str, then_flush: bool) {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, name);
    let (fields, object, _) = fill(&open, c, &ns, x, 12);
    let w = open();
    let newer = archive_payload(&w, &key(x, 0), 2, 200, 400);
    must(w.flush(), "flush of step 0 again");
    drop(w);
    let last = last_segment(c, &ns, &object);
    let bytes = c.rados(&ns, &["get", &last, "-"]);
    let cut = *record_starts(&bytes).last().expect("records");
    c.rados(&ns, &["truncate", &last, &cut.to_string()]);
    let after = then_flush.then(|| {
        let w = open();
        let after = archive_payload(&w, &key(x, 50), 1, 200, 400);
        must(w.flush(), "flush after the cut");
        after
    });
    assert_eq!(
        last_segment(c, &ns, &object),
        last,
        "the flush after the cut went to another segment"
    );

    let r = open();
    match read(&r, &newer.key) {
        Ok(b) if b == fields[0].data => {
            panic!("step 0 answered its older version with success: the cut went unseen")
        }
        Ok(b) => panic!("step 0 answered {} bytes from a record cut off", b.len()),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "step 0: {e}"),
    }
    for f in after.iter().chain(&fields[1..]) {
        exact_or_corrupt(&r, &format!("{}", f.key), f);
    }
    reported_and_kept(&r, x, "a cut log");
}

/// A record appended without counting it, as a writer of a version
/// before `!records` does (here: a copy of the FLUSH record before the
/// last, appended with the `rados` tool): not damage, every field reads
/// back.
#[test]
fn record_appended_without_count_is_not_damage() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "oldwriter");
    let x = "ldma";
    let (fields, object, _) = fill(&open, c, &ns, x, 6);
    let last = last_segment(c, &ns, &object);
    let bytes = c.rados(&ns, &["get", &last, "-"]);
    let starts = record_starts(&bytes);
    assert!(starts.len() >= 3, "{} records in {last}", starts.len());
    let (from, to) = (starts[starts.len() - 2], starts[starts.len() - 1]);
    let copy = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(copy.path(), &bytes[from..to]).expect("the record's copy");
    let path = copy.path().to_str().expect("a UTF-8 path");
    c.rados(&ns, &["append", &last, path]);

    let r = open();
    for f in &fields {
        exact(&r, &format!("{}", f.key), f);
    }
    assert!(
        !damaged(&r, x),
        "a record appended without its count is reported as damage"
    );
}

/// Segment 1 of three or more removed: fields whose newest version it held
/// fail `Corrupt` (never nothing with success), later segments are read.
#[test]
fn removed_log_segment_is_damage() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "gone");
    let x = "ldm3";
    let (fields, object, segment_of) = fill(&open, c, &ns, x, 70);
    assert!(
        segment_of.iter().any(|s| *s >= 2),
        "fewer than three segments: {segment_of:?}"
    );
    c.rados(&ns, &["rm", &format!("{object}.1")]);

    let r = open();
    for (f, seg) in fields.iter().zip(&segment_of) {
        match seg {
            1 => match read(&r, &f.key) {
                Ok(b) => panic!(
                    "{} (in the removed segment) answered {} bytes",
                    f.key,
                    b.len()
                ),
                Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {e}", f.key),
            },
            0 => exact_or_corrupt(&r, &format!("{} (segment 0)", f.key), f),
            _ => exact(
                &r,
                &format!("{} (segment {seg}, after the removed one)", f.key),
                f,
            ),
        }
    }
    assert!(damaged(&r, x), "status does not report the removed segment");
}

/// One flipped bit in a FLUSH record costs only the keys it may hold
/// (issue 38, third row): a lookup in a collocation nobody wrote answers
/// nothing, as without the damage, since the damaged record's index blocks
/// (intact in the omap) hold another collocation; a field flushed after
/// the damage reads back; one whose record may be the damaged one fails
/// `Corrupt` or reads back exactly.
#[test]
fn damaged_flush_record_costs_only_its_keys() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "bitflip");
    let x = "ldm4";
    let (fields, object, segment_of) = fill(&open, c, &ns, x, 6);
    assert!(segment_of.iter().all(|s| *s == 0), "{segment_of:?}");
    // Record 0 is INIT, record 1 the first flush (step 0): flip a bit in
    // the middle of the second flush's record (step 1).
    let mut bytes = c.rados(&ns, &["get", &object, "-"]);
    let mut at = 0usize;
    for _ in 0..2 {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        at += 20 + len as usize;
    }
    let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
    bytes[at + 20 + len as usize / 2] ^= 0x08;
    let tmp = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(tmp.path(), &bytes).expect("writing the damaged copy");
    c.rados(&ns, &["put", &object, &tmp.path().display().to_string()]);

    let r = open();
    let nobody = SFC.key(x);
    match read(&r, &nobody) {
        Ok(b) => assert!(
            b.is_empty(),
            "{nobody}: {} bytes of a field nobody wrote",
            b.len()
        ),
        Err(e) => panic!(
            "{nobody}, of a collocation nobody wrote and the damaged record's blocks do not \
             hold, failed: {e}"
        ),
    }
    for f in &fields[2..] {
        exact(
            &r,
            &format!("{} (flushed after the damaged record)", f.key),
            f,
        );
    }
    exact_or_corrupt(&r, "step 0 (before the damaged record)", &fields[0]);
    assert!(damaged(&r, x), "status does not report the damaged record");
}

/// The request naming dataset `x`.
fn dataset_request(x: &str) -> fieldstore::Request {
    request(&format!("class=od,expver={x}"))
}

/// The datasets a listing of dataset `x` shows.
fn listed(fs: &FieldStore, x: &str) -> fieldstore::Result<Vec<fieldstore::ListElement>> {
    fs.list(
        &dataset_request(x),
        ListOptions {
            depth: fieldstore::Level::Dataset,
            duplicates: false,
        },
    )
}

/// Segment 0 (the dataset object with its omap) removed behind
/// fieldstore's back, the dataset still registered: damage naming the
/// object, never an empty dataset with success. Fields flushed to later
/// segments read back; the others fail `Corrupt`; a listing of the fields
/// fails after listing what it can; `status` reports it; purge removes
/// nothing; a writer does not create the object anew under the old log;
/// a wipe removes what is left.
#[test]
fn removed_head_segment_is_damage() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "head");
    // One dataset whose log spans segments, one whose log is segment 0 only.
    let (long, long_object, segment_of) = fill(&open, c, &ns, "ldm5", 70);
    assert!(
        segment_of.iter().any(|s| *s >= 1),
        "one segment only: {segment_of:?}"
    );
    let (short, short_object, _) = fill(&open, c, &ns, "ldm6", 3);
    // A reader that knows the short dataset's records, not its blocks.
    let before = open();
    let cols = ListOptions {
        depth: fieldstore::Level::Collocation,
        duplicates: false,
    };
    must(
        before.list(&dataset_request("ldm6"), cols),
        "list of collocations",
    );
    c.rados(&ns, &["rm", &long_object]);
    c.rados(&ns, &["rm", &short_object]);

    let r = open();
    for (f, seg) in long.iter().zip(&segment_of) {
        if *seg >= 1 {
            exact(&r, &format!("{} (segment {seg})", f.key), f);
            continue;
        }
        match read(&r, &f.key) {
            Ok(b) => panic!(
                "{} (in the removed segment 0) answered {} bytes",
                f.key,
                b.len()
            ),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {e}", f.key);
                assert!(e.to_string().contains(&long_object), "{}: {e}", f.key);
            }
        }
    }
    for f in &short {
        match read(&r, &f.key) {
            Ok(b) => panic!(
                "{} (its dataset object removed) answered {} bytes",
                f.key,
                b.len()
            ),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {e}", f.key);
                assert!(e.to_string().contains(&short_object), "{}: {e}", f.key);
            }
        }
    }
    match read(&before, &short[0].key) {
        Ok(b) => panic!(
            "a reader opened before segment 0 was removed answered {} bytes",
            b.len()
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}"),
    }
    drop(before);
    for (x, object) in [("ldm5", &long_object), ("ldm6", &short_object)] {
        match r.list(&dataset_request(x), ListOptions::default()) {
            Ok(l) => panic!("{x}: listed {} fields with success", l.len()),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{x}: {e}");
                assert!(e.to_string().contains(object.as_str()), "{x}: {e}");
            }
        }
        reported_and_kept(&r, x, "segment 0 removed");
    }
    drop(r);

    // A writer must not start the log again in a new segment 0 (the old
    // segments would follow it, the lost records never reported).
    let w = open();
    let late = w
        .archive(&key("ldm6", 50), &[7u8; 100])
        .and_then(|()| w.flush());
    match late {
        Ok(()) => panic!("a flush to a dataset whose segment 0 is gone succeeded"),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}"),
    }
    drop(w);

    // A wipe removes what is left: no segment stays to be followed by a
    // dataset created anew under the name.
    let w = open();
    for x in ["ldm5", "ldm6"] {
        must(
            w.wipe(
                &dataset_request(x),
                fieldstore::WipeOptions {
                    doit: true,
                    unsafe_wipe_all: false,
                },
            ),
            format_args!("wipe of {x}"),
        );
        let l = must(listed(&w, x), "list after the wipe");
        assert!(l.is_empty(), "{x} still listed after its wipe: {l:?}");
    }
    let left = String::from_utf8_lossy(&c.rados(&ns, &["ls"])).into_owned();
    for object in [&long_object, &short_object] {
        assert!(
            !left.lines().any(|l| l.starts_with(object.as_str())
                && l[object.len()..]
                    .bytes()
                    .all(|b| b == b'.' || b.is_ascii_digit())),
            "log segments of {object} left after the wipe:\n{left}"
        );
    }
    drop(w);
    // And the name serves a new dataset, which reads exactly.
    let w = open();
    let again = archive_payload(&w, &key("ldm6", 0), 3, 200, 400);
    must(w.flush(), "flush to the dataset created anew");
    drop(w);
    exact(&open(), "the dataset created anew", &again);
}

/// The dataset's entry in the root object's omap removed behind
/// fieldstore's back: `status` finds the dataset (one listing of the
/// namespace) and registers it again, as a writer's next flush would;
/// listings show it from then on.
#[test]
fn removed_root_entry_is_found_again() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "rootkey");
    let x = "ldm7";
    let (fields, _, _) = fill(&open, c, &ns, x, 3);
    let w = open();
    let before = must(listed(&w, x), "list");
    assert_eq!(before.len(), 1, "{before:?}");
    let dataset = before[0].dataset.clone();
    drop(w);
    c.rados(&ns, &["rmomapkey", "fieldstore.root", &dataset.to_string()]);

    let r = open();
    let status = must(r.status(&dataset_request(x)), "status");
    assert!(
        status
            .iter()
            .any(|s| s.dataset == dataset && !s.interrupted),
        "status does not show {dataset}, whose root entry was removed: {status:?}"
    );
    let after = must(listed(&r, x), "list after status");
    assert!(
        after.iter().any(|e| e.dataset == dataset),
        "{dataset} not listed after status: {after:?}"
    );
    for f in &fields {
        exact(&r, &format!("{}", f.key), f);
    }
}

/// The dataset's entry in the root object's omap removed behind
/// fieldstore's back, nothing else done: a request naming the dataset
/// fully (every dataset keyword given) opens it directly, as `retrieve`
/// of one field does, so `list` at every depth shows every field, `axes`
/// and a walked retrieve give what they gave before, all without error;
/// a listing of the datasets (the root's) finds it too, as the root counts
/// one entry more than it holds, and registers it again (the count then
/// matches); once wiped, it is gone for them, and the count is back to 0.
#[test]
fn removed_root_entry_is_seen_by_a_pinned_request() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "rootpinned");
    let x = "ldm9";
    let (fields, _, _) = fill(&open, c, &ns, x, 3);
    let pinned = format!("class=od,expver={x},stream=enfo,date=20231201,time=1200");
    let answers = |fs: &FieldStore| -> String {
        let mut out = String::new();
        for depth in [
            fieldstore::Level::Dataset,
            fieldstore::Level::Collocation,
            fieldstore::Level::Element,
        ] {
            let options = ListOptions {
                depth,
                duplicates: false,
            };
            for e in must(
                fs.list(&request(&pinned), options),
                format_args!("list {pinned}"),
            ) {
                out.push_str(&format!("{} {:?}\n", e.braced(), e.location));
            }
            let axes = must(
                fs.axes(&request(&pinned), depth),
                format_args!("axes {pinned}"),
            );
            out.push_str(&format!("{axes:?}\n"));
        }
        out
    };
    let walked = request(&format!(
        "{pinned},type=pf,levtype=pl,step=0/to/100000000/by/1,number=1,levelist=500,param=130"
    ));
    let w = open();
    let before = answers(&w);
    let bytes = must(w.retrieve(&walked).and_then(|r| r.read_all()), "retrieve");
    let dataset = must(listed(&w, x), "list")[0].dataset.clone();
    drop(w);
    assert_eq!(
        before.lines().filter(|l| l.contains("step=")).count(),
        fields.len(),
        "{before}"
    );
    assert_eq!(
        bytes,
        fields
            .iter()
            .flat_map(|f| f.data.clone())
            .collect::<Vec<u8>>()
    );
    c.rados(&ns, &["rmomapkey", "fieldstore.root", &dataset.to_string()]);

    let count = || {
        let out = c.rados(&ns, &["getomapval", "fieldstore.root", "!datasets"]);
        let text = String::from_utf8_lossy(&out).into_owned();
        // `rados getomapval` prints a hex dump: the digits are the value.
        text.lines()
            .filter_map(|l| l.split('|').nth(1))
            .collect::<String>()
            .trim()
            .parse::<f64>()
            .unwrap_or_else(|e| panic!("the root's count: {text:?}: {e}"))
    };
    assert_eq!(count(), 1.0, "the root counts its one dataset");

    let r = open();
    let l = must(listed(&r, x), "list of the datasets");
    assert!(
        l.iter().any(|e| e.dataset == dataset),
        "a listing of the datasets left out {dataset}, whose root entry was removed: {l:?}"
    );
    assert_eq!(answers(&r), before);
    let again = must(r.retrieve(&walked).and_then(|r| r.read_all()), "retrieve");
    assert!(again == bytes, "a walked retrieve gave other bytes");
    for f in &fields {
        exact(&r, &format!("{}", f.key), f);
    }

    // Wiped by another handle (which finds it by listing the namespace):
    // gone for `r` too, though `r` keeps a reader of it.
    must(
        open().wipe(
            &request(&pinned),
            fieldstore::WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        ),
        "wipe",
    );
    let gone = answers(&r);
    assert_eq!(gone, "{}\n{}\n{}\n", "{dataset} still seen after its wipe");
    assert_eq!(
        count(),
        0.0,
        "the wipe took its dataset from the root's count"
    );
}

/// A log that ends WIPED whose root entry is gone (a wipe interrupted
/// once its entry was removed behind its back): `status` reports an
/// interrupted wipe without registering it again, and `wipe` finishes it.
#[test]
fn unregistered_wiped_log_is_an_interrupted_wipe() {
    let Some(c) = common::cluster() else { return };
    let (ns, open) = setup(c, "rootwiped");
    let x = "ldm8";
    let (_, object, segment_of) = fill(&open, c, &ns, x, 2);
    assert!(segment_of.iter().all(|s| *s == 0), "{segment_of:?}");
    let w = open();
    let dataset = must(listed(&w, x), "list")[0].dataset.clone();
    drop(w);
    // What a wipe's first step does: `!sealed` → `wiped` and a WIPED
    // record (type 7, a timestamp), appended to the last segment.
    let payload = 1u64.to_le_bytes();
    let mut rec = b"FSRR".to_vec();
    rec.extend_from_slice(&2u16.to_le_bytes());
    rec.extend_from_slice(&7u16.to_le_bytes());
    rec.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    rec.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    let head = crc32c::crc32c(&rec);
    rec.extend_from_slice(&head.to_le_bytes());
    rec.extend_from_slice(&payload);
    let tmp = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(tmp.path(), &rec).expect("writing the record");
    c.rados(&ns, &["append", &object, &tmp.path().display().to_string()]);
    c.rados(&ns, &["setomapval", &object, "!sealed", "wiped"]);
    c.rados(&ns, &["rmomapkey", "fieldstore.root", &dataset.to_string()]);

    let r = open();
    let status = must(r.status(&dataset_request(x)), "status");
    assert!(
        status.iter().any(|s| s.dataset == dataset && s.interrupted),
        "status does not report the interrupted wipe of {dataset}: {status:?}"
    );
    let l = must(listed(&r, x), "list after status");
    assert!(l.is_empty(), "a wiped dataset registered again: {l:?}");
    must(
        r.wipe(
            &dataset_request(x),
            fieldstore::WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        ),
        "wipe",
    );
    let left = String::from_utf8_lossy(&c.rados(&ns, &["ls"])).into_owned();
    assert!(
        !left.lines().any(|l| l == object),
        "{object} left after the wipe:\n{left}"
    );
}
