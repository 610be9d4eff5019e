//! List speed of the DAOS catalogue (over the stand-in's directory
//! backend) against the POSIX catalogue, same fields, same process, runs
//! interleaved; and the would-be RPCs of each DAOS list.
//!
//! ```text
//! cargo run --release -p fieldstore-daos --example daos_list_speed -- [FLUSHES] [FIELDS_PER_FLUSH] [REPS]
//! ```
//!
//! Both catalogues index fields of the POSIX file store (so only the
//! catalogues differ); `LIST_SPEED_STORE=daos` gives the DAOS catalogue
//! the DAOS store.
//!
//! "cold" is a new handle (it reads the dataset's log, or the POSIX `toc`
//! and index files); "warm" is the same handle listing again (one refresh).
//! The stand-in keeps each KV value in a file, so a DAOS `kv_get` costs a
//! file open and read here; on a real pool it is one RPC.

use std::ffi::{c_char, c_int, CString};
use std::path::Path;
use std::time::Instant;

use fieldstore::{Config, Engine, FieldStore, ListOptions, Request, Root, StoreKind};
use fieldstore_testkit::support::{schema, Spec};

fn standin_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("FIELDSTORE_DAOS_STANDIN") {
        return p.into();
    }
    let exe = std::env::current_exe().expect("this executable");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    for p in [
        profile.join("libdaos_standin.so"),
        profile.join("deps/libdaos_standin.so"),
    ] {
        if p.exists() {
            return p;
        }
    }
    panic!("build the stand-in first: cargo build --release -p daos-standin");
}

/// CPU time of this thread, seconds (robust to a loaded machine).
fn cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let flushes = args.first().copied().unwrap_or(100);
    let per = args.get(1).copied().unwrap_or(100);
    let reps = args.get(2).copied().unwrap_or(5);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let lib_path = standin_path();
    // SAFETY: the stand-in's initialisers have no preconditions.
    let lib = unsafe { libloading::os::unix::Library::new(&lib_path) }.expect("the stand-in");
    // SAFETY: the stand-in's extras, with their prototypes.
    let (configure, pool_create, rpcs, reset) = unsafe {
        (
            *lib.get::<unsafe extern "C" fn(*const c_char, c_int) -> c_int>(
                b"daos_standin_configure\0",
            )
            .expect("configure"),
            *lib.get::<unsafe extern "C" fn(*const c_char) -> c_int>(b"daos_standin_pool_create\0")
                .expect("pool_create"),
            *lib.get::<unsafe extern "C" fn(*const c_char, c_int) -> u64>(
                b"daos_standin_rpc_count\0",
            )
            .expect("rpc_count"),
            *lib.get::<unsafe extern "C" fn(c_int)>(b"daos_standin_reset\0")
                .expect("reset"),
        )
    };
    let pools = dir.path().join("pools");
    std::fs::create_dir_all(&pools).expect("pools");
    let c = |s: &str| CString::new(s).expect("a C string");
    // SAFETY: valid C strings; before any daos_init.
    unsafe {
        assert_eq!(configure(c(pools.to_str().expect("UTF-8")).as_ptr(), 0), 0);
        assert_eq!(pool_create(c("bench").as_ptr()), 0);
    }
    let mut daos = Config::memory(schema());
    daos.engine = Engine::Daos;
    daos.store = StoreKind::Daos;
    daos.backends.insert(
        "daos".into(),
        serde_json::json!({"pool": "bench", "library": lib_path.to_str().expect("UTF-8")}),
    );
    let posix_root = dir.path().join("posix");
    std::fs::create_dir_all(&posix_root).expect("posix root");
    let mut posix = Config::embedded(&posix_root);
    posix.schema = schema();
    posix.roots = vec![Root::new(&posix_root)];
    // The catalogues compared on the same store: by default both index
    // POSIX data files; LIST_SPEED_STORE=daos puts the DAOS catalogue's
    // fields in DAOS arrays instead (one URI per field).
    if std::env::var("LIST_SPEED_STORE").as_deref() != Ok("daos") {
        let data_root = dir.path().join("data");
        std::fs::create_dir_all(&data_root).expect("data root");
        daos.store = StoreKind::File;
        daos.roots = vec![Root::new(&data_root)];
    }

    // The same fields into both: `flushes` flushes of `per` fields (steps
    // of members, as model output).
    for config in [&daos, &posix] {
        let fs = FieldStore::open(config.clone()).expect("open");
        for f in 0..flushes {
            for i in 0..per {
                let spec = Spec {
                    date: 20240101,
                    time: 0,
                    ty: "pf",
                    levtype: "pl",
                    step: f as u32,
                    number: Some((i / 10) as u32),
                    levelist: Some(100 * (i % 10) as u32),
                    param: 130,
                };
                fs.archive(&spec.key("lst1"), b"GRIB-0123456789-7777")
                    .expect("archive");
            }
            fs.flush().expect("flush");
        }
    }
    let req: Request = "class=od,expver=lst1".parse().expect("a request");
    let n = flushes * per;
    // (backend, cold or warm, (wall, CPU) seconds per repetition)
    type Times = Vec<(f64, f64)>;
    let mut results: Vec<(&str, &str, Times)> = Vec::new();
    for name in ["daos", "posix"] {
        results.push((name, "cold", Vec::new()));
        results.push((name, "warm", Vec::new()));
    }
    if let Ok(which) = std::env::var("LIST_SPEED_PROFILE") {
        // Profiling aid: list `reps` times with one handle of one backend.
        let config = if which == "daos" { &daos } else { &posix };
        let fs = FieldStore::open(config.clone()).expect("open");
        for _ in 0..reps {
            assert_eq!(
                fs.list(&req, ListOptions::default()).expect("list").len() as u64,
                n
            );
        }
        return;
    }
    let mut daos_rpcs = (0, 0);
    for _ in 0..reps {
        for (k, (name, config)) in [("daos", &daos), ("posix", &posix)].iter().enumerate() {
            // SAFETY: no arguments.
            unsafe { reset(1) };
            let (t, c0) = (Instant::now(), cpu());
            let fs = FieldStore::open((*config).clone()).expect("open");
            let listed = fs.list(&req, ListOptions::default()).expect("list");
            let cold = (t.elapsed().as_secs_f64(), cpu() - c0);
            // SAFETY: a null name: every function, this thread.
            let cold_rpcs = unsafe { rpcs(std::ptr::null(), 1) };
            assert_eq!(listed.len() as u64, n, "{name}");
            // SAFETY: no arguments.
            unsafe { reset(1) };
            let (t, c0) = (Instant::now(), cpu());
            let listed = fs.list(&req, ListOptions::default()).expect("list");
            let warm = (t.elapsed().as_secs_f64(), cpu() - c0);
            // SAFETY: as above.
            let warm_rpcs = unsafe { rpcs(std::ptr::null(), 1) };
            assert_eq!(listed.len() as u64, n);
            if *name == "daos" {
                daos_rpcs = (cold_rpcs, warm_rpcs);
            }
            results[2 * k].2.push(cold);
            results[2 * k + 1].2.push(warm);
        }
    }
    println!("list of {n} fields ({flushes} flushes of {per}), {reps} repetitions, medians:");
    for (name, kind, times) in results {
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let wall = median(times.iter().map(|t| t.0).collect());
        let cpu = median(times.iter().map(|t| t.1).collect());
        println!(
            "  {name:6} {kind}: wall {:8.2} ms ({:>9.0} fields/s), CPU {:8.2} ms ({:>9.0} fields/s)",
            wall * 1e3,
            n as f64 / wall,
            cpu * 1e3,
            n as f64 / cpu
        );
    }
    println!(
        "  daos would-be RPCs: cold {} (kv_list of the root KV, meta, one kv_get per flush + 1), warm {}",
        daos_rpcs.0, daos_rpcs.1
    );
    std::mem::forget(lib);
}
