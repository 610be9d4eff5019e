//! The hammer over the DAOS stand-in (`daos-standin`, built with the
//! tests): the store's phases and the raw ones, with the RPCs each costs
//! counted by the stand-in and reported per field or transfer.

use std::path::{Path, PathBuf};

use fieldstore_hammer::{run, HammerArgs, Report, Scenario};

/// Where cargo put the stand-in (a dev-dependency): next to the test
/// executable, in `deps`.
fn standin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for d in [deps, deps.parent().unwrap()] {
        let p = d.join("libdaos_standin.so");
        if p.exists() {
            return p;
        }
    }
    panic!("libdaos_standin.so not found near {}", exe.display());
}

/// A pool directory of the stand-in shared by the worker processes, and a
/// config with DAOS catalogue and store in pool `pool`. The stand-in reads
/// `DAOS_STANDIN_DIR` at `daos_init`: set once for the test process (whose
/// workers inherit it) before anything loads the library.
fn config(dir: &Path, pool: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let pools = DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("hammer-daos-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::env::set_var("DAOS_STANDIN_DIR", &d);
        std::env::remove_var("FIELDSTORE_DAOS_LIBRARY");
        d
    });
    std::fs::create_dir_all(pools.join(pool)).unwrap();
    let path = dir.join(format!("{pool}.yaml"));
    std::fs::write(
        &path,
        format!(
            "engine: daos\nstore: daos\ndaos:\n  pool: {pool}\n  library: {}\n",
            standin().display()
        ),
    )
    .unwrap();
    path
}

fn args(config: PathBuf) -> HammerArgs {
    HammerArgs {
        config: Some(config),
        processes: 2,
        nsteps: 2,
        nlevels: 2,
        nparams: 3,
        field_size: 4096,
        full_check: true,
        no_drop_caches: true,
        worker_exe: Some(env!("CARGO_BIN_EXE_fieldstore-hammer").into()),
        ..HammerArgs::default()
    }
}

/// The container labels of a stand-in pool.
fn labels(pool: &str) -> Vec<String> {
    let pools = std::env::var_os("DAOS_STANDIN_DIR").unwrap();
    std::fs::read_dir(Path::new(&pools).join(pool).join("labels"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn row<'a>(report: &'a Report, phase: &str) -> &'a fieldstore_hammer::Row {
    report.repetitions[0]
        .rows
        .iter()
        .find(|r| r.phase == phase)
        .unwrap_or_else(|| panic!("no {phase} row"))
}

#[test]
fn raw_arrays_beside_the_store_with_rpcs_per_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(config(dir.path(), "raw"));
    a.scenario = Some(Scenario::A);
    a.raw = true;
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(
        report.raw_target.starts_with("DAOS byte arrays in raw/"),
        "{}",
        report.raw_target
    );
    // 2 processes x 12 fields: one array write per field, flushes and
    // OID allocations on top (docs/benchmarks.md, DAOS RPC budget).
    let write = row(&report, "write");
    let rpcs = write.rpcs.expect("the stand-in counts RPCs");
    assert!((24..=24 * 3).contains(&rpcs), "write: {rpcs} RPCs");
    let read = row(&report, "read");
    assert!(read.rpcs.is_some_and(|n| n >= 24), "{:?}", read.rpcs);
    // Raw: exactly one array write or read per transfer within a chunk
    // (easy: 48 KiB per process fits one 1 MiB transfer).
    let easy_w = row(&report, "raw-easy-write");
    assert_eq!((easy_w.fields, easy_w.rpcs), (2, Some(2)));
    let easy_r = row(&report, "raw-easy-read");
    assert_eq!(
        (easy_r.fields, easy_r.rpcs, easy_r.check_failures),
        (2, Some(2), 0)
    );
    let hard_w = row(&report, "raw-hard-write");
    let n = hard_w.fields;
    assert_eq!(n, 2 * (12 * 4096u64).div_ceil(47008));
    let hard_r = row(&report, "raw-hard-read");
    assert_eq!(
        (hard_r.fields, hard_r.missing, hard_r.check_failures),
        (n, 0, 0)
    );
    // A transfer that straddles a 1 MiB chunk costs two.
    assert!(
        hard_w.rpcs.is_some_and(|r| r >= n && r <= n + n / 20 + 1),
        "{:?}",
        hard_w.rpcs
    );
    let table = report.table();
    assert!(table.contains("DAOS RPCs inside the windows"), "{table}");
    assert!(
        !labels("raw").iter().any(|l| l.contains("hammer-raw")),
        "raw container left"
    );
    assert!(
        table.contains("raw-easy-write   rep 0: 2 RPCs, 1.00 per transfer"),
        "{table}"
    );
}

/// Field I/O beside the store on the same pool: the same fields, every
/// byte verified after reading them back through the KVs, three RPCs per
/// field each way (main KV get, array write or read, index KV put or get)
/// against the store's one and a little; its container is gone afterwards.
#[test]
fn fieldio_beside_the_store_costs_three_rpcs_per_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(config(dir.path(), "fio"));
    a.scenario = Some(Scenario::A);
    a.fieldio = true;
    a.nlevels = 5;
    a.nparams = 10;
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let fields = 2 * 2 * 5 * 10;
    let w = row(&report, "fieldio-write");
    let r = row(&report, "fieldio-read");
    assert_eq!((w.fields, w.bytes), (fields, fields * 4096));
    assert_eq!((r.fields, r.missing, r.check_failures), (fields, 0, 0));
    // The first write of each index key (one per member: it has no step)
    // also puts the new index KV's OID into the main KV.
    let members = 2;
    assert_eq!(w.rpcs, Some(3 * fields + members), "{:?}", w.rpcs);
    assert_eq!(r.rpcs, Some(3 * fields));
    assert_eq!(w.ops["main kv"].calls, fields);
    let store_write = row(&report, "write").rpcs.unwrap();
    assert!(
        store_write < 2 * fields,
        "the store: {store_write} RPCs for {fields} fields"
    );
    let pools = std::env::var_os("DAOS_STANDIN_DIR").unwrap();
    let labels = std::fs::read_dir(Path::new(&pools).join("fio").join("labels"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    assert!(
        !labels
            .iter()
            .any(|l| l.to_string_lossy().contains("fieldio")),
        "{labels:?}"
    );
}

/// Field I/O on a POSIX store is refused, naming what is missing.
#[test]
fn fieldio_needs_a_daos_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path().join("x.yaml"));
    a.config = None;
    a.root = Some(dir.path().join("root"));
    a.scenario = Some(Scenario::Fieldio);
    let e = run(&a).unwrap_err();
    assert_eq!(e.kind(), fieldstore::ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("store: daos"), "{e}");
}
