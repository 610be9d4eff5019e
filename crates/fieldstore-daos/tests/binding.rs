//! The binding: symbols, layouts, the "DAOS unavailable" errors, object
//! class checks and store errors, over the stand-in.

mod common;

use std::mem::size_of;
use std::path::Path;

use fieldstore::{ErrorKind, FieldLocation, FieldStore, Store};
use fieldstore_daos::client::Daos;
use fieldstore_daos::{ffi, DaosConfig, DaosStore};
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

#[test]
fn the_subset_resolves_and_the_legacy_symbol_is_never_needed() {
    let path = common::standin_path();
    // SAFETY: the stand-in's initialisers have no preconditions.
    let lib = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_LOCAL) }.expect("the stand-in");
    for s in ffi::SYMBOLS {
        // SAFETY: only checking that the symbol exists.
        let r = unsafe { lib.get::<*const ()>(s.as_bytes()) };
        assert!(r.is_ok(), "{s} is not exported by {}", path.display());
    }
    // The stand-in exports daos_obj_generate_oid2 only: a binding that
    // resolved the plain name (legacy semantics in DAOS 2.2) would not load.
    // SAFETY: as above.
    assert!(unsafe { lib.get::<*const ()>(b"daos_obj_generate_oid\0") }.is_err());
    assert!(!ffi::SYMBOLS.contains(&"daos_obj_generate_oid"));
    assert!(ffi::SYMBOLS.contains(&"daos_obj_generate_oid2"));
    std::mem::forget(lib);
    Daos::load(&path).expect("the binding loads the stand-in");
}

#[test]
fn layouts_agree_with_the_stand_in() {
    // Each side pins its own definitions to daos.md §2 at compile time;
    // this checks the two agree with each other as well.
    use daos_standin::types as s;
    assert_eq!(size_of::<ffi::DaosHandle>(), size_of::<s::DaosHandle>());
    assert_eq!(size_of::<ffi::DaosObjId>(), size_of::<s::DaosObjId>());
    assert_eq!(size_of::<ffi::DIov>(), size_of::<s::DIov>());
    assert_eq!(size_of::<ffi::DSgList>(), size_of::<s::DSgList>());
    assert_eq!(size_of::<ffi::DaosArrayIod>(), size_of::<s::DaosArrayIod>());
    assert_eq!(size_of::<ffi::DaosAnchor>(), size_of::<s::DaosAnchor>());
    assert_eq!(size_of::<ffi::DaosKeyDesc>(), size_of::<s::DaosKeyDesc>());
    assert_eq!(size_of::<ffi::DaosProp>(), size_of::<s::DaosProp>());
    assert_eq!(
        size_of::<ffi::DaosPropEntry>(),
        size_of::<s::DaosPropEntry>()
    );
    assert_eq!(ffi::DAOS_OT_ARRAY_BYTE, s::DAOS_OT_ARRAY_BYTE);
    assert_eq!(ffi::DAOS_OT_KV_HASHED, s::DAOS_OT_KV_HASHED);
    assert_eq!(ffi::DAOS_COND_KEY_INSERT, s::DAOS_COND_KEY_INSERT);
    assert_eq!(ffi::DAOS_OO_RW, s::DAOS_OO_RW);
    assert_eq!(ffi::DAOS_COO_RW, s::DAOS_COO_RW);
    assert_eq!(ffi::DAOS_PC_RW, s::DAOS_PC_RW);
    assert_eq!(ffi::der::NONEXIST, s::der::NONEXIST);
    assert_eq!(ffi::der::REC2BIG, s::der::REC2BIG);
    assert_eq!(ffi::der::KEY2BIG, s::der::KEY2BIG);
}

#[test]
fn a_missing_or_foreign_library_is_unavailable() {
    let e = Daos::load(Path::new("/nonexistent/libdaos.so.2")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    let msg = e.to_string();
    assert!(
        msg.starts_with("DAOS unavailable: cannot load /nonexistent/libdaos.so.2"),
        "{msg}"
    );
    assert!(msg.contains("FIELDSTORE_DAOS_LIBRARY"), "{msg}");
    // A library that is not libdaos: the first missing symbol is named.
    let e = Daos::load(Path::new("libm.so.6")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.to_string().contains("has no daos_init"), "{e}");
}

#[test]
fn a_class_weaker_than_the_container_redundancy_is_a_config_error() {
    let pool = common::standin().fresh_pool("rf");
    let mut section = common::section(&pool);
    section["container_redundancy"] = 1.into();
    let mut config = common::config(&pool, fieldstore_testkit::support::schema());
    config.backends.insert("daos".into(), section.clone());
    let fs = FieldStore::open(config.clone()).expect("open: no object is touched yet");
    let e = fs
        .list(&"class=od".parse().expect("a request"), Default::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{e}");
    assert!(e.to_string().contains("kv_class"), "{e}");
    // A replicated class fits.
    section["kv_class"] = "RP_2G1".into();
    section["array_class"] = "RP_2G1".into();
    config.backends.insert("daos".into(), section);
    let fs = FieldStore::open(config).expect("open");
    let key = "class=od,expver=rf01,stream=enfo,date=20240101,time=0000,type=pf,levtype=pl,step=0,number=1,levelist=500,param=130"
        .parse()
        .expect("a key");
    fs.archive(&key, b"GRIB....7777").expect("archive");
    fs.flush().expect("flush");
    let got = fs
        .retrieve(&fieldstore::Request::from_key(&key))
        .and_then(|r| r.read_all())
        .expect("retrieve");
    assert_eq!(got, b"GRIB....7777");
}

#[test]
fn store_reads_report_what_is_wrong() {
    let pool = common::standin().fresh_pool("st");
    let store =
        DaosStore::with_config(DaosConfig::from_value(&common::section(&pool)).expect("a section"))
            .expect("the store");
    let mut buf = Vec::new();
    let cases = [
        ("file:///x/y.data", ErrorKind::InvalidInput),
        ("daos://p/c", ErrorKind::InvalidInput),
        (
            "daos://p/c/0d01000100000000000000000000002a?x=1",
            ErrorKind::InvalidInput,
        ),
        (
            &*format!("daos://{pool}/nocontainer/0d01000100000000000000000000002a"),
            ErrorKind::NotFound,
        ),
        (
            "daos://nopool/c/0d01000100000000000000000000002a",
            ErrorKind::NotFound,
        ),
    ];
    for (uri, kind) in cases {
        let e = store
            .read(&FieldLocation::new(uri, 0, 10), &mut buf)
            .unwrap_err();
        assert_eq!(e.kind(), kind, "{uri}: {e}");
    }
    // A location in an existing container naming an array never written.
    let fs = FieldStore::open(common::config(&pool, fieldstore_testkit::support::schema()))
        .expect("open");
    let key = "class=od,expver=st01,stream=enfo,date=20240101,time=0000,type=pf,levtype=pl,step=0,number=1,levelist=500,param=130"
        .parse()
        .expect("a key");
    fs.archive(&key, b"0123456789").expect("archive");
    fs.flush().expect("flush");
    let loc = fs.location(&key).expect("location").expect("flushed");
    assert_eq!(loc.scheme(), "daos");
    assert_eq!(loc.length, 10);
    let ghost = FieldLocation::new(
        format!(
            "{}{}",
            &loc.uri[..loc.uri.len() - 32],
            "0d010001000000000000000000abcdef"
        ),
        0,
        10,
    );
    let e = store.read(&ghost, &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    // A location claiming more bytes than were written: cut short.
    let long = FieldLocation::new(loc.uri.clone(), 0, 20);
    let e = store.read(&long, &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("cut short"), "{e}");
    store.read(&loc, &mut buf).expect("the real location");
    assert_eq!(buf, b"0123456789");
}

/// The stand-in's RPC counter, as benchmarks read it through the binding:
/// process-wide, growing by what each call would cost on a real pool; a
/// real libdaos has no counter (`Daos::load` of the stand-in has one).
#[test]
fn standin_rpcs_count_what_the_binding_sends() {
    let pool = common::standin().fresh_pool("rpc");
    let path = common::standin().path.clone();
    let daos = Daos::get(Some(&path)).expect("the stand-in");
    let before = daos.standin_rpcs().expect("the stand-in counts RPCs");
    let p = std::sync::Arc::new(daos.connect(&pool).expect("connect"));
    p.create("rpcs", None).expect("create");
    let c = p.open("rpcs", true).expect("open");
    let oid = c
        .generate_oid(0, 7, ffi::DAOS_OT_KV_HASHED, fieldstore_daos::config::OC_S1)
        .expect("oid");
    let kv = c.kv(oid, true).expect("kv");
    let mid = daos.standin_rpcs().unwrap();
    kv.put("k", b"v").expect("put");
    // Other tests run on other threads meanwhile: at least our one put.
    assert!(daos.standin_rpcs().unwrap() > mid);
    assert!(
        mid >= before + 3,
        "connect, create, open: {before} -> {mid}"
    );
}

/// A store writer dropped before its flush destroys the arrays it wrote
/// (nothing can point to them), so a long-lived process leaves no orphans
/// for a purge to find after its lease; flushed arrays stay.
#[test]
fn a_writer_dropped_unflushed_destroys_its_arrays() {
    use fieldstore::Store as _;
    let pool = common::standin().fresh_pool("drop");
    let store =
        DaosStore::with_config(DaosConfig::from_value(&common::section(&pool)).expect("a section"))
            .expect("the store");
    let dataset: fieldstore::DatasetKey =
        "class=od,expver=drp1,stream=enfo,date=20240101,time=0000"
            .parse()
            .expect("a dataset key");
    let collocation: fieldstore::CollocationKey = "type=pf,levtype=pl".parse().expect("a key");
    let mut w = store.writer(&dataset).expect("a writer");
    let kept = w.archive(&collocation, b"flushed").expect("archive");
    w.flush().expect("flush");
    let dropped: Vec<FieldLocation> = (0..3)
        .map(|i| w.archive(&collocation, format!("unflushed {i}").as_bytes()))
        .collect::<Result<_, _>>()
        .expect("archive");
    let mut buf = Vec::new();
    store
        .read(&dropped[2], &mut buf)
        .expect("written before the drop");
    drop(w);
    for loc in &dropped {
        let e = store.read(loc, &mut buf).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{loc}: {e}");
    }
    store
        .read(&kept, &mut buf)
        .expect("the flushed field stays");
    assert_eq!(buf, b"flushed");
}
