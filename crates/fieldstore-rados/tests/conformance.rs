//! The conformance suite on a real Ceph cluster: RADOS catalogue + RADOS
//! store (one namespace per check), the mixed pairs with the POSIX
//! catalogue or store, damage detection, and the errors of a missing pool
//! or an unreachable cluster.

mod common;

use fieldstore::{ErrorKind, FieldLocation, FieldStore, Request};
use fieldstore_testkit::support::{archive_payload, must, Spec, PL};
use fieldstore_testkit::{damaged_field_detected, run_all, Capabilities, Open};

fn with_rados(check: &dyn Fn(Open<'_>)) {
    let Some(c) = common::cluster() else { return };
    let config = common::config(c, "rados", "rados", &common::namespace("conf"), None);
    let open = move || FieldStore::open(config.clone());
    check(&open);
}

fieldstore_testkit::conformance_tests!(with_rados);

/// A fresh RADOS catalogue and store in a namespace of its own (`name`
/// and a number): `check` with the cluster, the namespace and a factory.
fn on_rados(name: &str, check: &dyn Fn(&common::Cluster, &str, Open<'_>)) {
    let Some(c) = common::cluster() else { return };
    let ns = common::namespace(name);
    let config = common::config(c, "rados", "rados", &ns, None);
    check(c, &ns, &move || FieldStore::open(config.clone()));
}

/// Flip one byte in the middle of the field at `loc`, with the `rados` tool.
fn corrupt(c: &common::Cluster, loc: &FieldLocation) {
    let rest = loc.uri.strip_prefix("rados://").expect("a RADOS location");
    let mut parts = rest.splitn(3, '/');
    let (_pool, ns, object) = (
        parts.next(),
        parts.next().unwrap_or(""),
        parts.next().expect("an object"),
    );
    let mut bytes = c.rados(ns, &["get", object, "-"]);
    let at = (loc.offset + loc.length / 2) as usize;
    bytes[at] ^= 0x10;
    let tmp = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(tmp.path(), &bytes).expect("writing the damaged copy");
    c.rados(ns, &["put", object, &tmp.path().display().to_string()]);
}

/// The dataset's log segment 0 (its object) and its bytes, and the offset
/// of record `n + 1` in them (record 0 is its INIT).
fn segment_0(
    c: &common::Cluster,
    ns: &str,
    open: Open<'_>,
    dataset: &fieldstore::DatasetKey,
    n: usize,
) -> (String, Vec<u8>, usize) {
    let fs = open().expect("a handle to find the dataset");
    let what = fs.catalogue().describe(dataset);
    let object = what
        .split('\'')
        .nth(1)
        .unwrap_or_else(|| panic!("no object name in {what:?}"))
        .to_string();
    let bytes = c.rados(ns, &["get", &object, "-"]);
    let at = record_offset(&bytes, n);
    (object, bytes, at)
}

/// The offset of record `n + 1` of a log's bytes (record 0 is its INIT;
/// 20-byte headers, the payload's length at bytes 8..12).
fn record_offset(bytes: &[u8], n: usize) -> usize {
    let mut at = 0usize;
    for _ in 0..=n {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        at += 20 + len as usize;
    }
    at
}

/// Cut the dataset's log segment 0 just before record `n + 1`, with the
/// `rados` tool (its omap stays).
fn cut_log(
    c: &common::Cluster,
    ns: &str,
    open: Open<'_>,
    dataset: &fieldstore::DatasetKey,
    n: usize,
) {
    let (object, _, at) = segment_0(c, ns, open, dataset, n);
    c.rados(ns, &["truncate", &object, &at.to_string()]);
}

/// Splice record `n + 1` out of the dataset's log segment 0 (the records
/// after it moved up), with the `rados` tool (its omap stays).
fn splice_record(
    c: &common::Cluster,
    ns: &str,
    open: Open<'_>,
    dataset: &fieldstore::DatasetKey,
    n: usize,
) {
    let (object, bytes, from) = segment_0(c, ns, open, dataset, n);
    let to = record_offset(&bytes, n + 1);
    put(c, ns, &object, &[&bytes[..from], &bytes[to..]].concat());
}

/// Replace the bytes of `object` with `bytes` (its omap stays), with the
/// `rados` tool.
fn put(c: &common::Cluster, ns: &str, object: &str, bytes: &[u8]) {
    let tmp = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(tmp.path(), bytes).expect("writing the new bytes");
    c.rados(ns, &["put", object, &tmp.path().display().to_string()]);
}

/// Flip a byte in the middle of record `n + 1` of the dataset's log
/// segment 0 (record 0 is its INIT), with the `rados` tool.
fn damage_record(
    c: &common::Cluster,
    ns: &str,
    open: Open<'_>,
    dataset: &fieldstore::DatasetKey,
    n: usize,
) {
    let (object, mut bytes, at) = segment_0(c, ns, open, dataset, n);
    let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
    bytes[at + 20 + len as usize / 2] ^= 0x08;
    put(c, ns, &object, &bytes);
}

/// The header's checksum of itself: flipped, the header does not check
/// but the payload still does at the length it states (the record can be
/// counted).
const HEADER_CHECKSUM: usize = 17;
/// The header's checksum of the payload: flipped, neither checks (the
/// record cannot be counted; its length is kept, so that the other hooks
/// still find the records).
const PAYLOAD_CHECKSUM: usize = 13;

/// Flip byte `byte` of the header of record `n + 1` of the dataset's log
/// segment 0 (record 0 is its INIT), with the `rados` tool.
fn damage_header(
    c: &common::Cluster,
    ns: &str,
    open: Open<'_>,
    dataset: &fieldstore::DatasetKey,
    n: usize,
    byte: usize,
) {
    let (object, mut bytes, at) = segment_0(c, ns, open, dataset, n);
    bytes[at + byte] ^= 0x08;
    put(c, ns, &object, &bytes);
}

/// A log cut at a record boundary is damage (the conformance check).
#[test]
fn cut_log_is_damage() {
    on_rados("cut", &|c, ns, open| {
        fieldstore_testkit::cut_log_is_damage(open, &|d, n| cut_log(c, ns, open, d, n));
    });
}

/// A record spliced out of a log segment is damage (the conformance check):
/// the segment's record count tells it.
#[test]
fn spliced_log_record_is_damage() {
    on_rados("splice", &|c, ns, open| {
        fieldstore_testkit::spliced_log_record_is_damage(open, &|d, n| {
            splice_record(c, ns, open, d, n)
        });
    });
}

/// A cut after a damaged record is still seen (the segment's record count
/// still compared).
#[test]
fn cut_after_a_damaged_record_is_damage() {
    on_rados("cutdmg", &|c, ns, open| {
        fieldstore_testkit::cut_after_a_damaged_record_is_damage(
            open,
            &|d, n| damage_record(c, ns, open, d, n),
            &|d, n| cut_log(c, ns, open, d, n),
        );
    });
}

/// A cut after a record whose header is damaged is still seen (its bytes
/// counted as one record, its payload checking).
#[test]
fn cut_after_a_damaged_header_is_damage() {
    on_rados("cuthdr", &|c, ns, open| {
        fieldstore_testkit::cut_after_a_damaged_header_is_damage(
            open,
            &|d, n| damage_header(c, ns, open, d, n, HEADER_CHECKSUM),
            &|d, n| cut_log(c, ns, open, d, n),
        );
    });
}

/// A cut after a record whose payload checksum is damaged is still seen:
/// its bytes cannot be counted as records, so a count above the records
/// read is damage all the same.
#[test]
fn cut_after_a_damaged_checksum_is_damage() {
    on_rados("cutsum", &|c, ns, open| {
        fieldstore_testkit::cut_after_a_damaged_header_is_damage(
            open,
            &|d, n| damage_header(c, ns, open, d, n, PAYLOAD_CHECKSUM),
            &|d, n| cut_log(c, ns, open, d, n),
        );
    });
}

/// A damaged log record costs only itself (the engine's guarantee, as on
/// POSIX and DAOS).
#[test]
fn damaged_log_record_costs_only_itself() {
    on_rados("dmglog", &|c, ns, open| {
        fieldstore_testkit::damaged_log_record_costs_only_itself(open, &|d, n| {
            damage_record(c, ns, open, d, n)
        });
    });
}

#[test]
fn damaged_field_is_detected() {
    let Some(c) = common::cluster() else { return };
    with_rados(&|open| damaged_field_detected(open, &|loc: &FieldLocation| corrupt(c, loc)));
}

/// Every check, with the POSIX catalogue over the RADOS store.
#[test]
fn toc_catalogue_with_rados_store() {
    let Some(c) = common::cluster() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = common::config(
        c,
        "toc",
        "rados",
        &common::namespace("mix1"),
        Some(dir.path()),
    );
    let open = move || FieldStore::open(config.clone());
    let corrupt = |loc: &FieldLocation| corrupt(c, loc);
    run_all(
        &open,
        &Capabilities {
            corrupt: Some(&corrupt),
            damage_record: None,
            remove_record: None,
            ..Capabilities::default()
        },
    );
}

/// The collocation wipe and purge checks with the POSIX catalogue over
/// the RADOS store, which packs a writer's fields of both collocations into
/// one object: a wipe of the collocation the damaged `toc` record cannot
/// hold must keep that object, which the record points into, and so must
/// a purge.
#[test]
fn toc_wipe_and_purge_keep_an_object_a_damaged_record_points_into() {
    let Some(c) = common::cluster() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = common::config(
        c,
        "toc",
        "rados",
        &common::namespace("mix3"),
        Some(dir.path()),
    );
    let open = move || FieldStore::open(config.clone());
    let damage = |d: &fieldstore::DatasetKey, n: usize| {
        let fs = open().expect("a handle to find the dataset");
        let toc = std::path::Path::new(&fs.catalogue().describe(d)).join("toc");
        let mut bytes = std::fs::read(&toc).expect("reading the toc");
        let at = record_offset(&bytes, n);
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        bytes[at + 20 + len as usize / 2] ^= 0x08;
        std::fs::write(&toc, &bytes).expect("writing the damaged toc");
    };
    fieldstore_testkit::collocation_wipe_over_a_damaged_record(&open, &damage, true);
    fieldstore_testkit::purge_around_a_damaged_record(&open, &damage, true);
}

/// Every check, with the RADOS catalogue over the POSIX store, and the
/// log-damage hooks.
#[test]
fn rados_catalogue_with_file_store() {
    let Some(c) = common::cluster() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ns = common::namespace("mix2");
    let config = common::config(c, "rados", "file", &ns, Some(dir.path()));
    let open = move || FieldStore::open(config.clone());
    let damage: fieldstore_testkit::DamageRecord<'_> = &|d, n| damage_record(c, &ns, &open, d, n);
    let header: fieldstore_testkit::DamageRecord<'_> =
        &|d, n| damage_header(c, &ns, &open, d, n, HEADER_CHECKSUM);
    let cut: fieldstore_testkit::DamageRecord<'_> = &|d, n| cut_log(c, &ns, &open, d, n);
    let splice: fieldstore_testkit::DamageRecord<'_> = &|d, n| splice_record(c, &ns, &open, d, n);
    let unregister = |d: &fieldstore::DatasetKey| {
        c.rados(&ns, &["rmomapkey", "fieldstore.root", &d.to_string()]);
    };
    run_all(
        &open,
        &Capabilities {
            damage_record: Some(damage),
            damage_header: Some(header),
            cut_log: Some(cut),
            splice_record: Some(splice),
            unregister: Some(&unregister),
            blocks_outlive_records: true,
            ..Capabilities::default()
        },
    );
}

/// Data objects roll over before the size limit: 40 fields of 100 KiB
/// through a 1 MiB object limit land in several objects, and all read back.
#[test]
fn data_objects_roll_over_at_the_size_limit() {
    let Some(c) = common::cluster() else { return };
    let ns = common::namespace("roll");
    let mut config = common::config(c, "rados", "rados", &ns, None);
    let mut section = config.backend("rados").clone();
    section["object_size"] = serde_json::json!(1 << 20);
    config.backends.insert("rados".into(), section);
    let fs = must(FieldStore::open(config), "open");
    let fields: Vec<_> = (0..40)
        .map(|step| {
            archive_payload(
                &fs,
                &Spec { step, ..PL }.key("roll"),
                1,
                100 << 10,
                100 << 10,
            )
        })
        .collect();
    // And one field larger than the limit is refused, naming the limit.
    let e = fs
        .archive(
            &Spec { step: 99, ..PL }.key("roll"),
            &vec![0u8; (1 << 20) + 1],
        )
        .expect_err("a field over the object size limit");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("object_size"), "{e}");
    must(fs.flush(), "flush");
    let mut objects = std::collections::BTreeSet::new();
    for f in &fields {
        let loc = must(fs.location(&f.key), "location").expect("flushed");
        assert!(
            loc.offset + loc.length <= 1 << 20,
            "{loc} passes the 1 MiB limit"
        );
        objects.insert(loc.uri.to_string());
        let got = must(
            fs.retrieve(&Request::from_key(&f.key))
                .and_then(|r| r.read_all()),
            "retrieve",
        );
        assert!(got == f.data, "field {} read back differently", f.key);
    }
    assert!(
        objects.len() >= 4,
        "4 MiB of fields in {} objects: {objects:?}",
        objects.len()
    );
}

/// A pool that does not exist is `NotFound`, naming the pool.
#[test]
fn missing_pool_is_named() {
    let Some(c) = common::cluster() else { return };
    let mut config = common::config(c, "rados", "rados", "x", None);
    let mut section = config.backend("rados").clone();
    section["pool"] = serde_json::json!("no-such-pool");
    config.backends.insert("rados".into(), section);
    let e = FieldStore::open(config).expect_err("a missing pool");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("no-such-pool"), "{e}");
}

/// A cluster nobody answers for is `Unavailable` within the timeout,
/// naming the cluster's configuration.
#[test]
fn unreachable_cluster_is_unavailable() {
    let Some(c) = common::cluster() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let conf = dir.path().join("ceph.conf");
    // The real cluster's settings, with a monitor address nobody listens on.
    let text = std::fs::read_to_string(&c.conf).expect("ceph.conf");
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("mon host") {
                "mon host = [v2:127.0.0.1:9]".to_string()
            } else {
                l.to_string()
            }
        })
        .map(|l| l + "\n")
        .collect();
    std::fs::write(&conf, text).expect("writing ceph.conf");
    let yaml = format!(
        "engine: rados\nstore: rados\nrados:\n  conf: {}\n  pool: fieldstore\n  timeout: 3\n",
        conf.display()
    );
    let config = fieldstore::Config::from_yaml(&yaml, dir.path(), "test").expect("config");
    let e = FieldStore::open(config).expect_err("no monitor");
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains(&conf.display().to_string()), "{e}");
}

/// A dataset created under a schema whose text is larger than the first
/// read of the INIT record (64 KiB) opens, lists and reads back.
#[test]
fn long_schema_text_in_init_record() {
    let Some(c) = common::cluster() else { return };
    let mut config = common::config(c, "rados", "rados", &common::namespace("long"), None);
    let text = format!(
        "{}\n{}",
        fieldstore_testkit::support::HAMMER_SCHEMA,
        "# a long comment line to pass 64 KiB of schema text\n".repeat(2000)
    );
    assert!(text.len() > 64 << 10);
    config.schema = fieldstore::Schema::parse("long.schema", &text).expect("the schema parses");
    let fs = must(FieldStore::open(config.clone()), "open");
    let f = archive_payload(&fs, &PL.key("long"), 1, 100, 100);
    must(fs.flush(), "flush");
    let r = must(FieldStore::open(config), "open a reader");
    let got = must(
        r.retrieve(&Request::from_key(&f.key))
            .and_then(|d| d.read_all()),
        "retrieve",
    );
    assert!(got == f.data, "the field read back differently");
}

/// A damaged index block (an omap value) is `Corrupt`, naming the object
/// and the omap key, for retrieve and list at the element level; never
/// wrong fields.
#[test]
fn damaged_index_block_is_detected() {
    let Some(c) = common::cluster() else { return };
    let ns = common::namespace("idx");
    let config = common::config(c, "rados", "rados", &ns, None);
    let fs = must(FieldStore::open(config.clone()), "open");
    let f = archive_payload(&fs, &PL.key("idx1"), 1, 100, 300);
    must(fs.flush(), "flush");
    let object = "od:idx1:enfo:20231201:1200.catalogue";
    let keys = String::from_utf8(c.rados(&ns, &["listomapkeys", object])).expect("UTF-8 keys");
    // Keys beginning with `!` are the segment's own (`!records`).
    let key = keys
        .lines()
        .find(|k| !k.starts_with('!'))
        .expect("one index block")
        .to_string();
    c.rados(&ns, &["setomapval", object, &key, "not a block"]);
    let r = must(FieldStore::open(config), "open after the damage");
    let results = [
        (
            "retrieve",
            r.retrieve(&Request::from_key(&f.key))
                .and_then(|d| d.read_all())
                .map(|b| b.len()),
        ),
        (
            "list",
            r.list(
                &"class=od,expver=idx1".parse().expect("request"),
                Default::default(),
            )
            .map(|l| l.len()),
        ),
    ];
    for (op, result) in results {
        match result {
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{op}: {e}");
                assert!(
                    e.to_string().contains(&key) && e.to_string().contains(object),
                    "{op}: {e}"
                );
            }
            Ok(n) => panic!("{op} over a damaged index block succeeded ({n})"),
        }
    }
}

/// Every check with 4 KiB log segments, so that datasets' logs are sealed
/// and continued in new segment objects all the time, under concurrent
/// writers and readers; the logs did roll over.
#[test]
fn every_check_with_tiny_log_segments() {
    let Some(c) = common::cluster() else { return };
    let ns = common::namespace("seg");
    let mut config = common::config(c, "rados", "rados", &ns, None);
    let mut section = config.backend("rados").clone();
    section["log_segment_size"] = serde_json::json!(4096);
    config.backends.insert("rados".into(), section);
    let open = move || FieldStore::open(config.clone());
    run_all(&open, &Capabilities::default());
    let objects = String::from_utf8(c.rados(&ns, &["ls"])).expect("UTF-8 names");
    let segments = objects
        .lines()
        .filter(|o| {
            o.rsplit_once(".catalogue.")
                .is_some_and(|(_, n)| n.parse::<u32>().is_ok())
        })
        .count();
    assert!(
        segments >= 5,
        "only {segments} continued log segments:\n{objects}"
    );
}

/// Wait with `waiter` until a wait returns for `want` (other returns —
/// polls every 50 ms — are allowed meanwhile), at most 20 s in all; each
/// wait is given 30 s, so only a notification or a watch made that wait
/// return with `want`.
fn wait_for(waiter: &mut fieldstore_rados::RadosWaiter, want: fieldstore_rados::Wake) -> bool {
    wait_for_any(waiter, &[want]).is_some()
}

/// As [`wait_for`]; what the wait that returned for `want` said changed.
fn wait_for_changes(
    waiter: &mut fieldstore_rados::RadosWaiter,
    want: fieldstore_rados::Wake,
) -> Option<fieldstore::Changes> {
    use fieldstore::ChangeWaiter;
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        let changes = must(waiter.wait(std::time::Duration::from_secs(30)), "wait");
        if waiter.last_wake() == want {
            return Some(changes);
        }
    }
    None
}

/// As [`wait_for`], for any of `wants`; which one.
fn wait_for_any(
    waiter: &mut fieldstore_rados::RadosWaiter,
    wants: &[fieldstore_rados::Wake],
) -> Option<fieldstore_rados::Wake> {
    use fieldstore::ChangeWaiter;
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        must(waiter.wait(std::time::Duration::from_secs(30)), "wait");
        if wants.contains(&waiter.last_wake()) {
            return Some(waiter.last_wake());
        }
    }
    None
}

fn rados_catalogue(config: &fieldstore::Config) -> fieldstore_rados::RadosMedium {
    must(
        fieldstore_rados::RadosMedium::from_config(config.backend("rados")),
        "open the RADOS catalogue",
    )
}

/// The RADOS catalogue's waiter is woken by writers' notifications: a
/// flush by another handle wakes a 30 s wait by a notify of the dataset's
/// head object (also after the log continued in new segment objects); a
/// dataset registered later is watched (the root's notify, then a watch
/// added), and so is a dataset wiped and created anew.
#[test]
fn flushes_wake_watchers_by_notify() {
    use fieldstore::ChangeWaiter;
    use fieldstore_rados::Wake;
    let Some(c) = common::cluster() else { return };
    let ns = common::namespace("notify");
    let mut config = common::config(c, "rados", "rados", &ns, None);
    let mut section = config.backend("rados").clone();
    section["log_segment_size"] = serde_json::json!(4096);
    config.backends.insert("rados".into(), section);
    let catalogue = rados_catalogue(&config);
    // Made before anything exists: no root object to watch yet.
    let mut early = must(catalogue.change_waiter(), "a waiter on nothing");
    assert_eq!(early.watched(), 0);
    let writer = must(FieldStore::open(config.clone()), "open the writer");
    archive_payload(&writer, &PL.key("not1"), 1, 100, 100);
    must(writer.flush(), "flush");
    assert!(
        wait_for(&mut early, Wake::Added),
        "the root, once it exists"
    );
    assert_eq!(early.watched(), 2, "the root and the new dataset");
    drop(early);
    let mut waiter = must(catalogue.change_waiter(), "a waiter");
    assert_eq!(waiter.mechanism(), "rados watch/notify");
    assert_eq!(
        waiter.watched(),
        2,
        "the root and the dataset's head object"
    );
    // The waiter from `Catalogue::waiter` is this one too.
    let fs = must(FieldStore::open(config.clone()), "open the watcher");
    assert_eq!(
        must(fs.catalogue().waiter(), "waiter").mechanism(),
        "rados watch/notify"
    );

    // Flushes of a watched dataset, many segments on; what the notify
    // wakes the waiter with names that dataset (polls, a full look, are
    // made rare for this).
    waiter.set_unknown_every(std::time::Duration::from_secs(3600));
    let not1 = must(fs.schema().split(&PL.key("not1")), "split").dataset;
    for step in 1..=40u32 {
        let before = waiter.notifies();
        archive_payload(&writer, &Spec { step, ..PL }.key("not1"), 1, 100, 100);
        must(writer.flush(), "flush");
        let changes = wait_for_changes(&mut waiter, Wake::Notified);
        assert_eq!(
            changes,
            Some(fieldstore::Changes::Datasets([not1.clone()].into())),
            "flush {step}: a notification naming the dataset within 20 s"
        );
        assert!(waiter.notifies() > before);
    }
    let segments = String::from_utf8(c.rados(&ns, &["ls"])).expect("UTF-8 names");
    assert!(
        segments.contains(".catalogue.1"),
        "the log continued in new segments:\n{segments}"
    );

    // A new dataset: the root's notification (unknown), then its watch.
    archive_payload(&writer, &PL.key("not2"), 1, 100, 100);
    must(writer.flush(), "flush of a new dataset");
    assert_eq!(
        wait_for_changes(&mut waiter, Wake::Added),
        Some(fieldstore::Changes::Unknown),
        "the new dataset watched"
    );
    assert_eq!(waiter.watched(), 3);
    archive_payload(&writer, &Spec { step: 6, ..PL }.key("not2"), 1, 100, 100);
    must(writer.flush(), "flush");
    assert!(wait_for(&mut waiter, Wake::Notified));

    // Wiped (its watch breaks with the object) and created anew: watched
    // again, notified again.
    let wiper = must(FieldStore::open(config.clone()), "open the wiper");
    must(
        wiper.wipe(
            &"class=od,expver=not2".parse().expect("request"),
            fieldstore::WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        ),
        "wipe",
    );
    drop(writer);
    let writer = must(FieldStore::open(config.clone()), "open a writer again");
    archive_payload(&writer, &PL.key("not2"), 2, 100, 100);
    must(writer.flush(), "flush into the dataset created anew");
    // Its broken watch is made again, or it is added as a new dataset,
    // depending on whether the waiter saw the wipe before the creation.
    let how = wait_for_any(&mut waiter, &[Wake::Added, Wake::Rewatched]);
    assert!(how.is_some(), "the dataset created anew watched again");
    assert_eq!(waiter.watched(), 3);
    let before = waiter.notifies();
    archive_payload(&writer, &Spec { step: 6, ..PL }.key("not2"), 2, 100, 100);
    must(writer.flush(), "flush");
    assert!(
        wait_for_notify_after(&mut waiter, before),
        "the flush into the dataset created anew notified no watcher within 20 s"
    );
}

/// Wait until a notify counted after `before` arrived. A `Notified` wake
/// alone is not enough: a notify of the flush before (the creation's, on
/// the dataset's new head object) may still be queued when `before` is
/// read, and wake the waiter first.
fn wait_for_notify_after(waiter: &mut fieldstore_rados::RadosWaiter, before: u64) -> bool {
    use fieldstore::ChangeWaiter;
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        if waiter.notifies() > before {
            return true;
        }
        must(waiter.wait(std::time::Duration::from_secs(1)), "wait");
    }
    waiter.notifies() > before
}

/// A lost notification costs latency only: flushes by a writer that does
/// not notify (`rados.notify: false`) are found by the waiter's poll, and
/// a watch reports them.
#[test]
fn lost_notifies_are_covered_by_polling() {
    use fieldstore::ChangeWaiter;
    use fieldstore_rados::Wake;
    let Some(c) = common::cluster() else { return };
    let ns = common::namespace("lost");
    let config = common::config(c, "rados", "rados", &ns, None);
    let mut silent = config.clone();
    let mut section = silent.backend("rados").clone();
    section["notify"] = serde_json::json!(false);
    silent.backends.insert("rados".into(), section);
    let writer = must(FieldStore::open(silent), "open a silent writer");
    archive_payload(&writer, &PL.key("lost"), 1, 100, 100);
    must(writer.flush(), "flush");
    let catalogue = rados_catalogue(&config);
    let mut waiter = must(catalogue.change_waiter(), "a waiter");
    let watcher = must(FieldStore::open(config), "open the watcher");
    let request: Request = "class=od,expver=lost".parse().expect("request");
    let watch = must(
        watcher.watch(
            &request,
            fieldstore::WatchOptions {
                since: fieldstore::Since::Now,
                count: Some(3),
                timeout: Some(std::time::Duration::from_secs(60)),
                ..Default::default()
            },
        ),
        "watch",
    );
    assert_eq!(watch.mechanism(), "rados watch/notify");
    let reported = std::thread::scope(|scope| {
        let t = scope.spawn(move || {
            watch
                .map(|e| must(e, "a watch event").element.full_key().to_string())
                .collect::<Vec<_>>()
        });
        for step in 1..=3u32 {
            archive_payload(&writer, &Spec { step, ..PL }.key("lost"), 1, 100, 100);
            must(writer.flush(), "flush");
        }
        t.join().expect("the watcher thread")
    });
    assert_eq!(
        reported.len(),
        3,
        "every flush of the silent writer reported: {reported:?}"
    );
    for step in 1..=3 {
        assert!(
            reported
                .iter()
                .any(|k| k.contains(&format!("step={step},"))),
            "step {step} reported: {reported:?}"
        );
    }
    // The waiter saw no notification: only polls.
    for _ in 0..5 {
        must(waiter.wait(std::time::Duration::from_secs(30)), "wait");
        assert_eq!(waiter.last_wake(), Wake::Polled);
    }
    assert_eq!(waiter.notifies(), 0);
}

/// What a writer's notify costs per flush: flushes of one small field,
/// without notifies, with notifies and no watcher, and with notifies and
/// two watchers following the dataset. Prints the mean flush time of each.
/// Run: `cargo test -p fieldstore-rados --release --test conformance
/// notify_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement"]
fn notify_cost() {
    use fieldstore::ChangeWaiter;
    let Some(c) = common::cluster() else { return };
    let n = 400u32;
    let mut results = Vec::new();
    for (label, notify, watchers) in [
        ("notify: false", false, 0),
        ("notify, no watcher", true, 0),
        ("notify, 2 watchers", true, 2),
        ("notify: false, 2 watchers", false, 2),
    ] {
        let ns = common::namespace("cost");
        let mut config = common::config(c, "rados", "rados", &ns, None);
        let mut section = config.backend("rados").clone();
        section["notify"] = serde_json::json!(notify);
        config.backends.insert("rados".into(), section);
        let writer = must(FieldStore::open(config.clone()), "open the writer");
        archive_payload(&writer, &PL.key("cost"), 1, 100, 100);
        must(writer.flush(), "flush");
        let stop = std::sync::atomic::AtomicBool::new(false);
        let wakes = std::sync::atomic::AtomicU64::new(0);
        let mean = std::thread::scope(|scope| {
            for _ in 0..watchers {
                let catalogue = rados_catalogue(&config);
                let (stop, wakes) = (&stop, &wakes);
                scope.spawn(move || {
                    let mut w = must(catalogue.change_waiter(), "a waiter");
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        must(w.wait(std::time::Duration::from_secs(1)), "wait");
                        wakes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            let t = std::time::Instant::now();
            for step in 1..=n {
                archive_payload(&writer, &Spec { step, ..PL }.key("cost"), 1, 100, 100);
                must(writer.flush(), "flush");
            }
            let mean = t.elapsed() / n;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            mean
        });
        let t = std::time::Instant::now();
        drop(writer);
        results.push(format!(
            "{label}: {mean:?} per flush (archive + flush of one 100-byte field), \
             closing the writer {:?}, watchers' wakes {}",
            t.elapsed(),
            wakes.load(std::sync::atomic::Ordering::Relaxed)
        ));
    }
    for r in results {
        eprintln!("{r}");
    }
}
