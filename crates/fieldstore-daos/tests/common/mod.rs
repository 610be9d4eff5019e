//! Shared by the DAOS tests: the stand-in library, pools, configurations.
#![allow(dead_code, unreachable_pub)]

use std::ffi::{c_char, c_int, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use fieldstore::{Config, Engine, FieldStore, Root, Schema, StoreKind};
use fieldstore_daos::client::Kv;
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

/// Where cargo put the stand-in: `target/<profile>/deps/libdaos_standin.so`
/// (it is a dev-dependency), next to the test executable.
pub fn standin_path() -> PathBuf {
    if let Some(p) = std::env::var_os("FIELDSTORE_DAOS_STANDIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the deps directory");
    for dir in [deps, deps.parent().unwrap_or(deps)] {
        let p = dir.join("libdaos_standin.so");
        if p.exists() {
            return p;
        }
    }
    panic!(
        "libdaos_standin.so not found next to {} (build it with cargo build -p daos-standin)",
        exe.display()
    );
}

type CountFn = unsafe extern "C" fn(*const c_char, c_int) -> u64;

/// The stand-in's extra functions (pools, counters, fault injection).
pub struct Standin {
    pub path: PathBuf,
    pool_create: unsafe extern "C" fn(*const c_char) -> c_int,
    configure: unsafe extern "C" fn(*const c_char, c_int) -> c_int,
    count: CountFn,
    rpc_count: CountFn,
    reset: unsafe extern "C" fn(c_int),
    inject: unsafe extern "C" fn(*const c_char, u64, c_int) -> c_int,
}

/// The stand-in, loaded once (the binding's dlopen of the same path gets
/// the same instance).
pub fn standin() -> &'static Standin {
    static S: OnceLock<Standin> = OnceLock::new();
    S.get_or_init(|| {
        let path = standin_path();
        // SAFETY: the stand-in's initialisers have no preconditions.
        let lib = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_LOCAL) }
            .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()));
        // SAFETY: the extras' prototypes, as daos-standin exports them.
        let s = unsafe {
            Standin {
                path: path.clone(),
                pool_create: *lib.get(b"daos_standin_pool_create\0").expect("pool_create"),
                configure: *lib.get(b"daos_standin_configure\0").expect("configure"),
                count: *lib.get(b"daos_standin_count\0").expect("count"),
                rpc_count: *lib.get(b"daos_standin_rpc_count\0").expect("rpc_count"),
                reset: *lib.get(b"daos_standin_reset\0").expect("reset"),
                inject: *lib.get(b"daos_standin_inject\0").expect("inject"),
            }
        };
        std::mem::forget(lib);
        s
    })
}

fn name_ptr(name: Option<&str>) -> (Option<CString>, *const c_char) {
    let c = name.map(|n| CString::new(n).expect("a name"));
    let p = c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    (c, p)
}

impl Standin {
    /// Use a directory backend (before anything else in this process).
    pub fn configure_dir(&self, dir: &Path) {
        let d = CString::new(dir.to_str().expect("a UTF-8 path")).expect("a path");
        // SAFETY: a valid C string.
        let rc = unsafe { (self.configure)(d.as_ptr(), 0) };
        assert_eq!(rc, 0, "daos_standin_configure({})", dir.display());
    }

    /// Create a pool.
    pub fn pool_create(&self, label: &str) {
        let l = CString::new(label).expect("a label");
        // SAFETY: a valid C string.
        let rc = unsafe { (self.pool_create)(l.as_ptr()) };
        assert_eq!(rc, 0, "creating pool {label}");
    }

    /// Calls of `name` (None: all) on this thread.
    pub fn calls(&self, name: Option<&str>) -> u64 {
        let (_c, p) = name_ptr(name);
        // SAFETY: null or a valid C string.
        unsafe { (self.count)(p, 1) }
    }

    /// Would-be RPCs of `name` (None: all) on this thread.
    pub fn rpcs(&self, name: Option<&str>) -> u64 {
        let (_c, p) = name_ptr(name);
        // SAFETY: null or a valid C string.
        unsafe { (self.rpc_count)(p, 1) }
    }

    /// Zero this thread's counters.
    pub fn reset(&self) {
        // SAFETY: no pointers.
        unsafe { (self.reset)(1) }
    }

    /// Make the `nth` next call of `name` on this thread fail with `rc`.
    pub fn inject(&self, name: &str, nth: u64, rc: i32) {
        let n = CString::new(name).expect("a name");
        // SAFETY: a valid C string.
        let r = unsafe { (self.inject)(n.as_ptr(), nth, rc) };
        assert_eq!(r, 0, "inject {name}");
    }

    /// A fresh pool with a unique label.
    pub fn fresh_pool(&self, prefix: &str) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let label = format!(
            "{prefix}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        self.pool_create(&label);
        label
    }

    /// The counts of a closure's DAOS calls on this thread.
    pub fn measure<T>(&self, f: impl FnOnce() -> T) -> (T, Counts) {
        self.reset();
        let t = f();
        let mut c = Counts::default();
        for name in NAMES {
            c.rpcs.push((name, self.rpcs(Some(name))));
            c.calls.push((name, self.calls(Some(name))));
        }
        c.total = self.rpcs(None);
        (t, c)
    }
}

/// The functions the counts report.
pub const NAMES: &[&str] = &[
    "daos_pool_connect",
    "daos_pool_list_cont",
    "daos_cont_create_with_label",
    "daos_cont_open",
    "daos_cont_alloc_oids",
    "daos_kv_put",
    "daos_kv_get",
    "daos_kv_list",
    "daos_kv_remove",
    "daos_array_write",
    "daos_array_read",
    "daos_array_get_size",
];

/// Counts of one measured operation.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub rpcs: Vec<(&'static str, u64)>,
    pub calls: Vec<(&'static str, u64)>,
    pub total: u64,
}

impl Counts {
    /// RPCs of one function.
    pub fn rpc(&self, name: &str) -> u64 {
        self.rpcs
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} RPCs:", self.total)?;
        for (n, v) in &self.rpcs {
            if *v > 0 {
                write!(f, " {}={v}", n.trim_start_matches("daos_"))?;
            }
        }
        Ok(())
    }
}

/// The `daos:` section for a pool of the stand-in.
pub fn section(pool: &str) -> serde_json::Value {
    serde_json::json!({
        "pool": pool,
        "library": standin().path.to_str().expect("a UTF-8 path"),
        "oids_per_alloc": 100,
    })
}

/// A configuration: DAOS catalogue and store in `pool`.
pub fn config(pool: &str, schema: Schema) -> Config {
    let mut c = Config::memory(schema);
    c.engine = Engine::Daos;
    c.store = StoreKind::Daos;
    c.source = format!("DAOS stand-in pool {pool}");
    c.backends.insert("daos".into(), section(pool));
    c
}

/// A configuration with the given catalogue and store, POSIX parts under `root`.
pub fn mixed(pool: &str, root: &Path, schema: Schema, engine: Engine, store: StoreKind) -> Config {
    let mut c = config(pool, schema);
    c.engine = engine;
    c.store = store;
    c.roots = vec![Root::new(root)];
    c
}

/// A factory of handles onto one fresh pool.
pub fn factory(prefix: &str) -> impl Fn() -> fieldstore::Result<FieldStore> + Send + Sync {
    let pool = standin().fresh_pool(prefix);
    let schema = fieldstore_testkit::support::schema();
    move || FieldStore::open(config(&pool, schema.clone()))
}

/// Flip a byte in the middle of the field at `loc`, through libdaos itself
/// (behind the store's back).
pub fn corrupt(loc: &fieldstore::FieldLocation) {
    use fieldstore_daos::client::{parse_oid_hex, Daos};
    let path = loc.path();
    let mut parts = path.split('/');
    let (pool, cont, oid) = (
        parts.next().expect("pool"),
        parts.next().expect("container"),
        parts.next().expect("oid"),
    );
    let oid = parse_oid_hex(oid.split('?').next().expect("oid")).expect("an OID");
    let daos = Daos::get(Some(&standin().path)).expect("libdaos");
    let pool = Arc::new(daos.connect(pool).expect("pool"));
    let cont = pool.open(cont, true).expect("container");
    let arr = cont.array(oid, 1 << 20, true).expect("array");
    let at = loc.offset + loc.length / 2;
    let mut b = [0u8; 1];
    assert_eq!(arr.read(at, &mut b).expect("read"), 1);
    b[0] ^= 0x08;
    arr.write(at, &b).expect("write");
}

/// Run `f` on the KV of user bits `lo` (class S1) in container `label` of
/// `pool`, through libdaos itself (behind the catalogue's back).
fn with_kv<T>(pool: &str, label: &str, lo: u64, f: impl FnOnce(&Kv<'_>) -> T) -> T {
    use fieldstore_daos::client::Daos;
    let daos = Daos::get(Some(&standin().path)).expect("libdaos");
    let pool = Arc::new(daos.connect(pool).expect("pool"));
    let cont = pool
        .open(label, true)
        .unwrap_or_else(|e| panic!("container {label}: {e}"));
    let oid = cont
        .generate_oid(
            0,
            lo,
            fieldstore_daos::ffi::DAOS_OT_KV_HASHED,
            fieldstore_daos::config::OC_S1,
        )
        .expect("a KV's OID");
    let kv = cont.kv(oid, true).expect("a KV");
    f(&kv)
}

/// Run `f` on `dataset`'s KV (its log slots) in `pool`.
fn with_dataset_kv<T>(
    pool: &str,
    dataset: &fieldstore::DatasetKey,
    f: impl FnOnce(&Kv<'_>) -> T,
) -> T {
    with_kv(pool, &fieldstore_daos::layout::dataset_label(dataset), 1, f)
}

/// Flip a byte in the middle of log slot `n` of `dataset`'s KV in `pool`,
/// through libdaos itself (behind the catalogue's back).
pub fn damage_slot(pool: &str, dataset: &fieldstore::DatasetKey, n: usize) {
    with_dataset_kv(pool, dataset, |kv| {
        let key = format!("f.{n}");
        let mut value = kv
            .get(&key)
            .expect("reading the slot")
            .unwrap_or_else(|| panic!("no slot {key} of {dataset}"));
        let at = value.len() / 2;
        value[at] ^= 0x08;
        kv.put(&key, &value).expect("writing the damaged slot");
    });
}

/// Remove log slot `n` of `dataset`'s KV in `pool` (the slots after it
/// stay), through libdaos itself (behind the catalogue's back).
pub fn remove_slot(pool: &str, dataset: &fieldstore::DatasetKey, n: usize) {
    remove_slots(pool, dataset, n, false);
}

/// Remove log slots `n`, `n + 1`, … to the end of `dataset`'s log: a lost
/// tail.
pub fn remove_tail(pool: &str, dataset: &fieldstore::DatasetKey, n: usize) {
    remove_slots(pool, dataset, n, true);
}

fn remove_slots(pool: &str, dataset: &fieldstore::DatasetKey, n: usize, to_the_end: bool) {
    with_dataset_kv(pool, dataset, |kv| {
        let slot = |n: usize| format!("f.{n}");
        let there = |n: usize| kv.get(&slot(n)).expect("reading a slot").is_some();
        assert!(there(n), "no slot {} of {dataset}", slot(n));
        if !to_the_end {
            assert!(
                there(n + 1),
                "no slot after {} of {dataset}: removing it would not leave a gap",
                slot(n)
            );
            kv.remove(&slot(n)).expect("removing the slot");
            return;
        }
        let mut k = n;
        while there(k) {
            kv.remove(&slot(k)).expect("removing a slot");
            k += 1;
        }
    });
}

/// Remove `dataset`'s entry from the root KV (in the root container
/// `fieldstore_root` of `pool`): a lost registration.
pub fn unregister(pool: &str, dataset: &fieldstore::DatasetKey) {
    with_kv(pool, "fieldstore_root", 0, |kv| {
        let key = dataset.to_string();
        assert!(
            kv.get(&key).expect("reading the root KV").is_some(),
            "no root KV entry {key}"
        );
        kv.remove(&key).expect("removing the root KV entry");
    });
}
