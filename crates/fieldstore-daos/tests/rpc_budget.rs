//! RPC budgets, measured with the stand-in's per-thread counters of
//! would-be RPCs (each test runs its operations on its own thread):
//!
//! - archive: at most one array write and one KV put per field, amortised
//!   (steady state: one array write per field, and per flush one KV put,
//!   the log insert, and one array write, the tail hint's byte; one OID
//!   allocation per `oids_per_alloc` fields);
//! - retrieve: at most one KV get and one array read per field (the get is
//!   the reader's refresh, once per retrieve call);
//! - list: no KV get per entry: one `kv_list` of the root KV, then one
//!   `kv_get` per flush the reader has not seen yet;
//! - a writer others passed: a few looks for the end, however many slots
//!   it missed.

mod common;

use common::standin;
use fieldstore::{FieldStore, ListOptions, Request};
use fieldstore_testkit::support::{archive_payload, must, schema, Spec, Stored, PL};

/// The conformance checks' pressure-level field on another day.
const BASE: Spec = Spec {
    date: 20240101,
    time: 0,
    ..PL
};

fn open(pool: &str) -> FieldStore {
    must(FieldStore::open(common::config(pool, schema())), "open")
}

/// `n` fields of member `number`, steps `first..first+n`.
fn archive(fs: &FieldStore, number: u32, first: u32, n: u32) -> Vec<Stored> {
    (first..first + n)
        .map(|step| {
            let spec = Spec {
                step,
                number: Some(number),
                ..BASE
            };
            archive_payload(fs, &spec.key("rpc1"), 1, 100, 2000)
        })
        .collect()
}

#[test]
fn archive_costs_one_array_write_per_field_and_one_put_and_one_write_per_flush() {
    let s = standin();
    let pool = s.fresh_pool("rpca");
    let w = open(&pool);
    // The first flush creates the dataset: container, meta, root entry.
    let (_, first) = s.measure(|| {
        archive(&w, 1, 0, 1);
        must(w.flush(), "flush");
    });
    println!("first field and flush of a new dataset: {first}");
    // cont_open (missing), cont_create, cont_open, meta get + insert, root
    // insert, the tail hint read (its array's size, 0, and the old `tail`
    // key), log insert, tail hint (an array write), alloc_oids + its lease
    // record, array write.
    assert!(first.total <= 13, "creating a dataset: {first}");
    const N: u32 = 200;
    let (_, steady) = s.measure(|| {
        archive(&w, 1, 1, N);
        must(w.flush(), "flush");
    });
    println!("{N} fields and one flush: {steady}");
    let n = u64::from(N);
    // One per field, and the tail hint's byte.
    assert_eq!(steady.rpc("daos_array_write"), n + 1, "{steady}");
    assert_eq!(steady.rpc("daos_kv_get"), 0, "{steady}");
    let ranges = steady.rpc("daos_cont_alloc_oids");
    assert!(ranges <= n.div_ceil(100) + 1, "{steady}");
    // One log insert, one lease record per range reserved, and perhaps
    // one renewal of the lease by the process's renewal thread (every
    // quarter lease: 7.5 s by default).
    let puts = steady.rpc("daos_kv_put");
    assert!(
        (1 + ranges..=2 + ranges).contains(&puts),
        "one log insert and {ranges} lease records: {steady}"
    );
    // The budget of the brief: at most 1 array write + 1 KV put per field.
    assert!(steady.total <= 2 * n, "{steady}");
    // Flushing with nothing archived costs nothing.
    let (_, idle) = s.measure(|| must(w.flush(), "flush"));
    assert_eq!(idle.total, 0, "an idle flush: {idle}");
}

#[test]
fn retrieve_costs_one_get_and_one_read_per_field() {
    let s = standin();
    let pool = s.fresh_pool("rpcr");
    let w = open(&pool);
    let stored = archive(&w, 2, 0, 50);
    must(w.flush(), "flush");
    let r = open(&pool);
    // The reader's first operation reads the dataset's meta and its log.
    let req = Request::from_key(&stored[0].key);
    let (_, cold) = s.measure(|| must(r.retrieve(&req).and_then(|d| d.read_all()), "retrieve"));
    println!("first retrieve of a reader: {cold}");
    let (bytes, one) = s.measure(|| {
        must(
            r.retrieve(&Request::from_key(&stored[7].key))
                .and_then(|d| d.read_all()),
            "retrieve",
        )
    });
    assert_eq!(bytes, stored[7].data);
    println!("retrieve of one field: {one}");
    assert_eq!(one.rpc("daos_kv_get"), 1, "{one}");
    assert_eq!(one.rpc("daos_array_read"), 1, "{one}");
    assert_eq!(one.total, 2, "{one}");
    // A request naming all 50 fields: one refresh, 50 reads.
    let all: Request = "class=od,expver=rpc1,stream=enfo,date=20240101,time=0000,type=pf,levtype=pl,step=0/to/49/by/1,number=2,levelist=500,param=130"
        .parse()
        .expect("a request");
    let (bytes, many) = s.measure(|| must(r.retrieve(&all).and_then(|d| d.read_all()), "retrieve"));
    let want: usize = stored.iter().map(|s| s.data.len()).sum();
    assert_eq!(bytes.len(), want);
    println!("retrieve of 50 fields: {many}");
    assert_eq!(many.rpc("daos_kv_get"), 1, "{many}");
    assert_eq!(many.rpc("daos_array_read"), 50, "{many}");
    assert_eq!(many.total, 51, "{many}");
    // A missing field costs the refresh only.
    let mut missing = stored[0].key.clone();
    missing.set("param", "999").expect("a key");
    let (got, none) = s.measure(|| {
        must(
            r.retrieve(&Request::from_key(&missing))
                .and_then(|d| d.read_all()),
            "retrieve",
        )
    });
    assert!(got.is_empty());
    assert_eq!(none.total, 1, "{none}");
}

#[test]
fn list_costs_no_get_per_entry() {
    let s = standin();
    let pool = s.fresh_pool("rpcl");
    let w = open(&pool);
    const FLUSHES: u32 = 4;
    const PER: u32 = 100;
    for f in 0..FLUSHES {
        archive(&w, 3, f * PER, PER);
        must(w.flush(), "flush");
    }
    let req: Request = "class=od,expver=rpc1".parse().expect("a request");
    let r = open(&pool);
    let (listed, cold) = s.measure(|| must(r.list(&req, ListOptions::default()), "list"));
    assert_eq!(listed.len(), (FLUSHES * PER) as usize);
    println!(
        "first list of {} fields ({FLUSHES} flushes): {cold}",
        listed.len()
    );
    // One kv_list of the root KV and one list of the pool's containers
    // (which finds datasets whose root KV entry was lost); one kv_get per
    // flush plus the one that finds the end of the log (+ the dataset's
    // meta, once per process), and the size of the tail hint array, which
    // tells the end from a gap of two or more slots.
    assert_eq!(cold.rpc("daos_kv_list"), 1, "{cold}");
    assert!(cold.rpc("daos_kv_get") <= u64::from(FLUSHES) + 2, "{cold}");
    assert_eq!(cold.rpc("daos_array_get_size"), 1, "{cold}");
    let (listed, warm) = s.measure(|| must(r.list(&req, ListOptions::default()), "list"));
    assert_eq!(listed.len(), (FLUSHES * PER) as usize);
    println!("list again: {warm}");
    assert_eq!(
        warm.total, 3,
        "root kv_list + the pool's container list + one refresh get: {warm}"
    );
    assert_eq!(warm.rpc("daos_pool_list_cont"), 1, "{warm}");
    // Axes need no more than list.
    let (_, axes) = s.measure(|| must(r.axes(&req, fieldstore::Level::Element), "axes"));
    assert_eq!(axes.total, 3, "{axes}");
}

/// Containers of a pool shared with other data: a listing of datasets
/// opens each once (to find it holds no dataset's `meta`), not at every
/// listing, and lists only the datasets.
#[test]
fn foreign_containers_are_opened_once() {
    use fieldstore_daos::client::Daos;
    let s = standin();
    let pool = s.fresh_pool("rpcf");
    let w = open(&pool);
    archive(&w, 8, 0, 3);
    must(w.flush(), "flush");
    const FOREIGN: u64 = 5;
    let daos = Daos::get(Some(&s.path)).expect("libdaos");
    let p = daos.connect(&pool).expect("the pool");
    for i in 0..FOREIGN {
        p.create(&format!("not-ours-{i}"), None)
            .expect("a foreign container");
    }
    let r = open(&pool);
    let req: Request = "class=od,expver=rpc1".parse().expect("a request");
    let (listed, first) = s.measure(|| must(r.list(&req, ListOptions::default()), "list"));
    assert_eq!(listed.len(), 3);
    let (listed, second) = s.measure(|| must(r.list(&req, ListOptions::default()), "list"));
    assert_eq!(listed.len(), 3);
    println!("first list: {first}; second: {second}");
    assert!(
        first.rpc("daos_cont_open") >= FOREIGN,
        "the first listing looks into the {FOREIGN} foreign containers: {first}"
    );
    assert_eq!(
        second.rpc("daos_cont_open"),
        0,
        "the second listing does not open them again: {second}"
    );
}

#[test]
fn concurrent_flushes_find_the_next_slot_cheaply() {
    let s = standin();
    let pool = s.fresh_pool("rpcc");
    let a = open(&pool);
    archive(&a, 4, 0, 1);
    must(a.flush(), "flush");
    // Writers in other processes: simulate by a second handle whose
    // process-wide knowledge of the log is the same; the slot search is
    // exercised by the multi-process tests and measured by the hammer.
    let b = open(&pool);
    const ROUNDS: u32 = 20;
    let (_, c) = s.measure(|| {
        for i in 0..ROUNDS {
            archive(&a, 4, 1 + 2 * i, 1);
            archive(&b, 5, 1 + 2 * i, 1);
            must(a.flush(), "flush a");
            must(b.flush(), "flush b");
        }
    });
    println!("{} flushes of one field by two writers: {c}", 2 * ROUNDS);
    let flushes = u64::from(2 * ROUNDS);
    // A field and the tail hint's byte a flush.
    assert_eq!(c.rpc("daos_array_write"), 2 * flushes, "{c}");
    // A log insert a flush (no slot lost to the other).
    assert!(c.rpc("daos_kv_put") <= flushes + 1, "{c}");
    // Each writer starts where the other left the log, reading the locks
    // first (a CONTROL record may be among the slots it skips): one get.
    assert!(c.rpc("daos_kv_get") <= flushes, "{c}");
    let r = open(&pool);
    let listed = must(
        r.list(
            &"class=od,expver=rpc1".parse().expect("a request"),
            ListOptions::default(),
        ),
        "list",
    );
    assert_eq!(listed.len() as u64, flushes + 1);
}

/// A writer that others passed by many flushes since its last one (the
/// hammer's writers, each step): it reads the tail hint before its flush
/// and goes straight past it, losing no race and looking at no slot it
/// missed (a gallop and a bisection over them were ~10 looks for 30).
#[test]
fn a_writer_far_behind_finds_the_end_through_the_hint() {
    use fieldstore_core::engine::slot_catalogue::SlotMedium;
    let s = standin();
    let pool = s.fresh_pool("rpcb");
    let a = open(&pool);
    archive(&a, 6, 0, 1);
    must(a.flush(), "flush");
    // Thirty flushes of writers in other processes, as their medium writes
    // them (slots and tail hints that this process never learns of): copies
    // of slot 0, which change nothing a reader sees.
    let key = schema()
        .split(&BASE.key("rpc1"))
        .expect("a key of the schema")
        .dataset;
    let cfg = fieldstore_daos::DaosConfig::from_value(&common::section(&pool)).expect("a config");
    let medium = fieldstore_daos::DaosMedium::with_config(cfg).expect("the DAOS medium");
    let cont = must(SlotMedium::open(&medium, &key), "open").expect("the dataset exists");
    let log = must(medium.slots(&cont), "the slot log");
    let mut first = Vec::new();
    assert!(must(log.get(0, &mut first), "slot 0"));
    for n in 1..=30 {
        assert!(must(log.insert(n, &first), "insert"), "slot {n} was free");
        must(log.set_hint(n), "hint");
    }
    let (_, c) = s.measure(|| {
        archive(&a, 6, 1, 1);
        must(a.flush(), "flush");
    });
    println!("a flush 30 slots behind: {c}");
    assert_eq!(c.rpc("daos_kv_put"), 1, "slot 31 at once: {c}");
    // The hint, and the locks (a CONTROL record may be among the slots
    // passed).
    let looks = c.rpc("daos_kv_get") + c.rpc("daos_array_get_size");
    assert!(looks <= 2, "{looks} looks: {c}");
    let listed = must(
        open(&pool).list(
            &"class=od,expver=rpc1".parse().expect("a request"),
            ListOptions::default(),
        ),
        "list",
    );
    assert_eq!(listed.len(), 2, "both fields, each once");

    // Others go on appending (slots 32–40), and slot 32 is removed behind
    // fieldstore's back. The writer, which lost a race last time, starts
    // past the tail hint: no race lost, and the removed slot stays a gap
    // (taking it would hide the loss from every reader).
    for n in 32..=40 {
        assert!(must(log.insert(n, &first), "insert"), "slot {n} was free");
        must(log.set_hint(n), "hint");
    }
    common::remove_slot(&pool, &key, 32);
    let (_, c) = s.measure(|| {
        archive(&a, 6, 2, 1);
        must(a.flush(), "flush");
    });
    println!("a flush 9 slots behind, after a lost race: {c}");
    assert_eq!(c.rpc("daos_kv_put"), 1, "slot 41 at once: {c}");
    // The hint and the locks.
    assert_eq!(
        c.rpc("daos_kv_get") + c.rpc("daos_array_get_size"),
        2,
        "{c}"
    );
    assert!(
        !must(log.exists(32), "slot 32"),
        "the removed slot was taken"
    );
    assert!(
        must(log.exists(41), "slot 41"),
        "the flush is not at slot 41"
    );
}

#[test]
fn a_flush_too_large_to_inline_goes_to_an_array() {
    let s = standin();
    let pool = s.fresh_pool("rpcs");
    let w = open(&pool);
    archive(&w, 6, 0, 1);
    must(w.flush(), "flush");
    // ~4 000 entries of ~90 bytes: more than the 256 KiB a log slot holds.
    const N: u32 = 4000;
    let stored = archive(&w, 7, 0, N);
    let (_, c) = s.measure(|| must(w.flush(), "flush"));
    println!("one flush of {N} entries: {c}");
    // The flush record spilled, and the tail hint's byte.
    assert_eq!(
        c.rpc("daos_array_write"),
        2,
        "the flush record spilled: {c}"
    );
    // The pointer's insert into the log.
    assert_eq!(c.rpc("daos_kv_put"), 1, "{c}");
    let r = open(&pool);
    let req: Request = "class=od,expver=rpc1,number=7".parse().expect("a request");
    let (listed, cold) = s.measure(|| must(r.list(&req, ListOptions::default()), "list"));
    assert_eq!(listed.len(), N as usize);
    assert_eq!(
        cold.rpc("daos_array_read"),
        1,
        "the spilled record is read back: {cold}"
    );
    let got = must(
        r.retrieve(&Request::from_key(&stored[1234].key))
            .and_then(|d| d.read_all()),
        "retrieve",
    );
    assert_eq!(got, stored[1234].data);
}
