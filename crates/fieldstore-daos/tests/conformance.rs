//! The conformance suite on the DAOS catalogue and store, over the
//! stand-in's in-memory pools (each check on a fresh pool), plus the
//! damage check and the mixed pairs (DAOS catalogue with the POSIX file
//! store, POSIX catalogue with the DAOS store).

mod common;

use fieldstore::{Engine, FieldStore, StoreKind};
use fieldstore_testkit::{damaged_field_detected, run_all, support, Capabilities, Open};

fn with_daos(check: &dyn Fn(Open<'_>)) {
    check(&common::factory("conf"));
}

fieldstore_testkit::conformance_tests!(with_daos);

/// A fresh pool named after `what`, and a factory of handles onto it.
fn fresh(what: &str) -> (String, impl Fn() -> fieldstore::Result<FieldStore> + Sync) {
    let pool = common::standin().fresh_pool(what);
    let schema = support::schema();
    let open = {
        let pool = pool.clone();
        move || FieldStore::open(common::config(&pool, schema.clone()))
    };
    (pool, open)
}

#[test]
fn damaged_field_is_detected() {
    with_daos(&|open| damaged_field_detected(open, &common::corrupt));
}

/// A damaged log slot costs only itself (the engine's guarantee, as on
/// POSIX).
#[test]
fn damaged_log_record_costs_only_itself() {
    let (pool, open) = fresh("dmglog");
    fieldstore_testkit::damaged_log_record_costs_only_itself(&open, &|d, n| {
        common::damage_slot(&pool, d, n)
    });
}

/// A missing log slot (a gap: a later slot exists) is damage: lookups it
/// may answer fail, what follows it stays visible, purge refuses the
/// dataset (issue 38).
#[test]
fn missing_log_record_is_damage() {
    let (pool, open) = fresh("gaplog");
    fieldstore_testkit::missing_log_record_is_damage(&open, &|d, n| {
        common::remove_slot(&pool, d, n)
    });
}

/// A stale writer does not take a removed slot (in one process, its
/// writers know the end; `rpc_budget.rs` has one that others passed).
#[test]
fn stale_writer_leaves_a_removed_record_a_gap() {
    let (pool, open) = fresh("stale");
    fieldstore_testkit::stale_writer_leaves_a_removed_record_a_gap(&open, &|d, n| {
        common::remove_slot(&pool, d, n)
    });
}

/// A log slot removed right where an idle reader stopped: it reads past
/// it once `LOOK_AGAIN` has passed.
#[test]
fn idle_reader_sees_past_a_removed_record() {
    let (pool, open) = fresh("idlegap");
    fieldstore_testkit::idle_reader_sees_past_a_removed_record(&open, &|d, n| {
        common::remove_slot(&pool, d, n)
    });
}

/// Two missing log slots in a row: told past by what this process saw of
/// the log (`processes.rs` has the cold reader, told by the tail hint).
#[test]
fn gap_of_two_records_is_damage() {
    let (pool, open) = fresh("gap2log");
    fieldstore_testkit::gap_of_two_records_is_damage(&open, &|d, n| {
        common::remove_slot(&pool, d, n)
    });
}

/// The last two log slots removed, read in the process that wrote them:
/// it saw the last one, so the end its reader finds is a lost tail,
/// damage (`Corrupt`), not the older version of step 0 with success.
#[test]
fn lost_tail_seen_by_this_process_is_damage() {
    let pool = common::standin().fresh_pool("tail");
    let open = || FieldStore::open(common::config(&pool, support::schema())).expect("open");
    let w = open();
    let step = |s: u32| {
        support::Spec {
            step: s,
            ..support::PL
        }
        .key("tl1")
    };
    let mut flushed = Vec::new();
    for (s, version) in [(0, 1), (6, 1), (0, 2), (12, 1)] {
        flushed.push(support::archive_payload(&w, &step(s), version, 500, 3000));
        support::must(w.flush(), "flush");
    }
    drop(w);
    let dataset = support::schema().split(&step(0)).expect("a key").dataset;
    common::remove_tail(&pool, &dataset, 2);
    let r = open();
    match r
        .retrieve(&fieldstore::Request::from_key(&step(0)))
        .and_then(|h| h.read_all())
    {
        Err(e) => assert_eq!(e.kind(), fieldstore::ErrorKind::Corrupt, "step 0: {e}"),
        Ok(b) if b == flushed[0].data => {
            panic!("step 0 answered its older version with success: the lost tail went unseen")
        }
        Ok(b) => panic!("step 0 read {} bytes of no version", b.len()),
    }
}

/// The newest log slots removed, the tail hint's slot among them (this
/// process saw them too: both hints reach the lost tail).
#[test]
fn lost_tail_reaching_a_hint_is_damage() {
    let (pool, open) = fresh("tailhint");
    fieldstore_testkit::lost_tail_reaching_a_hint_is_damage(&open, &|d, n| {
        common::remove_tail(&pool, d, n)
    });
}

/// The same, and then a writer flushes once more: it does not fill the
/// removed slots (this process saw them, and the tail hint names one).
#[test]
fn lost_tail_then_appended_to_is_damage() {
    let (pool, open) = fresh("tailapp");
    fieldstore_testkit::lost_tail_then_appended_to_is_damage(&open, &|d, n| {
        common::remove_tail(&pool, d, n)
    });
}

fn mixed_pair(engine: Engine, store: StoreKind) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pool = common::standin().fresh_pool("mixed");
    let root = dir.path().to_path_buf();
    let open = move || {
        FieldStore::open(common::mixed(
            &pool,
            &root,
            support::schema(),
            engine,
            store,
        ))
    };
    run_all(&open, &Capabilities::default());
}

#[test]
fn daos_catalogue_with_file_store() {
    mixed_pair(Engine::Daos, StoreKind::File);
}

#[test]
fn toc_catalogue_with_daos_store() {
    mixed_pair(Engine::Toc, StoreKind::Daos);
}

/// A damaged log slot (a flush record) is `Corrupt`, naming the dataset's
/// container and the slot, for the operations that read it; never wrong
/// fields.
#[test]
fn damaged_log_slot_is_detected() {
    use fieldstore::{ErrorKind, ListOptions, Request};
    use fieldstore_daos::client::Daos;
    use fieldstore_daos::ffi::DAOS_OT_KV_HASHED;
    let pool = common::standin().fresh_pool("dmg");
    let open = || FieldStore::open(common::config(&pool, support::schema()));
    let w = open().expect("open");
    let key = support::key("class=od,expver=dls1,stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=0,number=1,levelist=500,param=130");
    w.archive(&key, b"GRIB-field-7777").expect("archive");
    w.flush().expect("flush");
    drop(w);
    // Flip a bit in the middle of slot 0's value, through libdaos.
    let daos = Daos::get(Some(&common::standin().path)).expect("libdaos");
    let p = std::sync::Arc::new(daos.connect(&pool).expect("pool"));
    let label = "od:dls1:enfo:20231201:1200";
    let cont = p.open(label, true).expect("the dataset's container");
    let oid = cont
        .generate_oid(0, 1, DAOS_OT_KV_HASHED, fieldstore_daos::config::OC_S1)
        .expect("the dataset KV's OID");
    let kv = cont.kv(oid, true).expect("the dataset KV");
    let mut value = kv.get("f.0").expect("get").expect("slot 0 exists");
    let mid = value.len() / 2;
    value[mid] ^= 0x08;
    kv.put("f.0", &value).expect("put");
    drop(kv);
    let r = open().expect("open after the damage");
    let results = [
        (
            "list",
            r.list(
                &"class=od,expver=dls1".parse().expect("a request"),
                ListOptions::default(),
            )
            .map(|l| l.len()),
        ),
        (
            "retrieve",
            r.retrieve(&Request::from_key(&key))
                .and_then(|d| d.read_all())
                .map(|b| b.len()),
        ),
    ];
    for (op, result) in results {
        match result {
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{op}: {e}");
                assert!(
                    e.to_string().contains(label) && e.to_string().contains("f.0"),
                    "{op}: {e}"
                );
            }
            Ok(n) => panic!("{op} over a damaged log slot succeeded ({n})"),
        }
    }
}
