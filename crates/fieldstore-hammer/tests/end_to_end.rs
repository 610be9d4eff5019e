//! Two worker processes on a temporary root, tiny fields, every byte
//! verified: the whole path of `fieldstore hammer --scenario a` and `wr`.

use std::path::PathBuf;

use fieldstore_hammer::{run, HammerArgs, Scenario};

fn args(root: PathBuf) -> HammerArgs {
    HammerArgs {
        root: Some(root),
        processes: 2,
        nsteps: 2,
        nlevels: 2,
        nparams: 3,
        nensembles: 1,
        field_size: 4096,
        full_check: true,
        no_drop_caches: true,
        worker_exe: Some(env!("CARGO_BIN_EXE_fieldstore-hammer").into()),
        ..HammerArgs::default()
    }
}

/// No file in `dir` has a name starting with `prefix` (a missing `dir`
/// has none).
fn assert_no_files_left(dir: &std::path::Path, prefix: &str) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.iter()
            .all(|n| !n.to_string_lossy().starts_with(prefix)),
        "{left:?}"
    );
}

#[test]
fn pattern_a_two_processes_full_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path().join("root"));
    a.scenario = Some(Scenario::A);
    a.repetitions = 2;
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.repetitions.len(), 2);
    for rep in &report.repetitions {
        let phases: Vec<_> = rep.rows.iter().map(|r| r.phase.as_str()).collect();
        assert_eq!(phases, ["write", "read", "list"]);
        for row in &rep.rows {
            assert_eq!(row.procs, 2);
            assert_eq!(row.fields, 2 * 2 * 2 * 3, "{}", row.phase);
            assert_eq!(row.missing, 0);
            for p in &row.per_process {
                assert!(p.t_first_io >= p.t_release && p.t_last_io >= p.t_first_io);
            }
        }
        let read = &rep.rows[1];
        assert_eq!(read.bytes, 24 * 4096);
        assert!(read.ops.contains_key("verify"));
    }
    let write = report.phase("write").unwrap();
    assert_eq!(write.gtb_mib_s.unwrap().n, 2);
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["scenario"], "a");
    assert!(report.table().contains("all fields found and verified"));
}

#[test]
fn contention_and_detailed_breakdown() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path().join("root"));
    a.scenario = Some(Scenario::Wr);
    a.read_multiplier = 2;
    a.detailed = true;
    a.processes = 1;
    a.readers = Some(1);
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let rows = &report.repetitions[0].rows;
    let phases: Vec<_> = rows.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(phases, ["populate", "write-alone", "wr-write", "wr-read"]);
    let read = &rows[3];
    assert_eq!(read.fields, 4 * 2 * 3, "readers read the populated steps");
    for op in ["catalogue.lookup", "store.read", "verify"] {
        assert!(read.ops.contains_key(op), "{op}: {:?}", read.ops.keys());
    }
    assert!(rows[0].ops.contains_key("catalogue.flush"));
}

#[test]
fn reading_what_was_never_written_reports_missing_fields() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path().join("root"));
    a.processes = 1;
    run(&a).unwrap();
    a.read = true;
    a.nsteps = 3; // step 2 was never written
    let report = run(&a).unwrap();
    assert_eq!(report.repetitions[0].rows[0].missing, 6);
    assert_eq!(report.exit_code(), 3);
}

#[test]
fn launcher_ranks_meet_in_a_barrier_directory() {
    // What mpirun/srun would do: start the same command twice with rank
    // variables set; rank 0 prints the report, rank 1 nothing.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let barrier = dir.path().join("barrier");
    let children: Vec<_> = (0..2)
        .map(|rank| {
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fieldstore-hammer"));
            for v in [
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "SLURM_PROCID",
                "SLURM_NTASKS",
                "PMIX_RANK",
                "PMIX_SIZE",
            ] {
                c.env_remove(v);
            }
            c.args([
                "--scenario",
                "a",
                "--nsteps",
                "1",
                "--nlevels",
                "2",
                "--nparams",
                "2",
            ])
            .args([
                "--field-size",
                "1024",
                "--full-check",
                "--no-drop-caches",
                "--json",
            ])
            .arg("--root")
            .arg(&root)
            .arg("--barrier-dir")
            .arg(&barrier)
            .env("PMI_RANK", rank.to_string())
            .env("PMI_SIZE", "2")
            .env("PMI_JOBID", "e2e")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for o in &outputs {
        assert!(o.status.success(), "{o:?}");
    }
    assert!(outputs[1].stdout.is_empty());
    let report: serde_json::Value = serde_json::from_slice(&outputs[0].stdout).unwrap();
    assert!(report["launcher"].as_str().unwrap().starts_with("PMI"));
    assert_eq!(report["problems"].as_array().unwrap().len(), 0);
    let rows = report["repetitions"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row["procs"], 2);
        assert_eq!(row["fields"], 2 * 2 * 2);
    }
    assert!(!barrier.join("e2e").exists(), "rank 0 cleans up");
}

#[test]
fn grib_template_fields_verify_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path().join("root"));
    a.processes = 1;
    a.scenario = Some(Scenario::A);
    a.template = Some(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/grib/template.grib"
        )
        .into(),
    );
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let read = &report.repetitions[0].rows[1];
    assert_eq!(read.bytes, 12 * 10800, "the template's size");
    // The fields are still GRIB messages: the header sits in the data section.
    let root = dir.path().join("root");
    let data = std::fs::read_dir(root.join("od:xxxx:enfo:20240101:0000"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "data"))
        .unwrap();
    let bytes = std::fs::read(data).unwrap();
    assert_eq!(&bytes[..4], b"GRIB");
}

#[test]
fn physical_limits_measure_every_test_and_leave_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path().join("root"));
    a.physical_only = true;
    a.physical_mib = 16;
    a.repetitions = 2;
    let report = run(&a).unwrap();
    assert_eq!(report.scenario, "physical");
    let p = report.physical.as_ref().expect("physical summary");
    assert_eq!(p.streams, 2);
    for (name, s) in [
        ("write + fdatasync", &p.write_fdatasync_mib_s),
        ("write streams", &p.write_streams_mib_s),
        ("cold buffered read", &p.read_buffered_mib_s),
        ("scattered read", &p.read_scattered_mib_s),
    ] {
        let s = s.unwrap_or_else(|| panic!("{name}: not measured"));
        assert_eq!(s.n, 2, "{name}");
        assert!(s.min > 0.0 && s.max.is_finite(), "{name}: {s:?}");
    }
    assert!(report.table().contains("cold buffered read, sequential: "));
    // The test files are removed; only the store's root (and the barrier
    // directory, if any) may remain.
    assert_no_files_left(&dir.path().join("root"), ".hammer-physical");
}

/// The page cache of a cold phase is dropped at the start barrier: the
/// hook runs once, after every worker said it was ready and before any
/// was released.
#[test]
fn before_release_runs_once_between_ready_and_release() {
    use fieldstore_hammer::launch::{run_local_group, WorkerCommand};
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path().join("root"));
    let groups = fieldstore_hammer::plan(&a, 0, 2, 0).unwrap();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_fieldstore-hammer"));
    let cmd = WorkerCommand::resolve(Some(exe)).unwrap();
    let mut calls = Vec::new();
    let (results, _) = run_local_group(&cmd, &groups[0].tasks, &mut || {
        calls.push(fieldstore_hammer::result::now());
    })
    .unwrap();
    assert_eq!(calls.len(), 1, "the hook ran {} times", calls.len());
    assert_eq!(results.len(), 2);
    for (i, r) in results.iter().enumerate() {
        assert!(
            r.t_ready <= calls[0] && calls[0] <= r.t_release,
            "worker {i}: ready {:.6}, hook {:.6}, released {:.6}",
            r.t_ready,
            calls[0],
            r.t_release
        );
    }
}

/// `--scenario bare` writes exactly the write phase's bytes, flushing
/// where it would, and removes its files.
#[test]
fn bare_writes_the_write_phases_bytes_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path().join("root"));
    a.scenario = Some(Scenario::Bare);
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.scenario, "bare");
    let rows = &report.repetitions[0].rows;
    let phases: Vec<_> = rows.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(phases, ["bare-write"]);
    let row = &rows[0];
    assert_eq!(row.procs, 2);
    assert_eq!(row.fields, 2 * 2 * 2 * 3);
    assert_eq!(row.bytes, 24 * 4096);
    // One fdatasync per (step, member) and process, as the write phase
    // flushes.
    assert_eq!(row.ops["fdatasync"].calls, 2 * 2, "{:?}", row.ops);
    assert!(row.ops.contains_key("write"));
    assert_no_files_left(&dir.path().join("root"), ".hammer-bare");
}

/// Bare writes need a directory: a store with no root on a file system
/// is refused, saying why.
#[test]
fn bare_on_a_store_without_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("daos.yaml");
    std::fs::write(
        &config,
        "type: local\nengine: daos\nstore: daos\ndaos:\n  pool: hammer\n",
    )
    .unwrap();
    let mut a = args(dir.path().join("unused"));
    a.root = None;
    a.config = Some(config);
    a.processes = 1;
    a.scenario = Some(Scenario::Bare);
    let err = run(&a).unwrap_err().to_string();
    assert_eq!(
        err,
        "--scenario bare writes to the store's directory: give --root or a config whose first \
         root is on a file system"
    );
}

#[test]
fn follow_reads_every_flushed_field_and_measures_its_latency() {
    use fieldstore_hammer::args::FollowMode;
    for mode in [FollowMode::Watch, FollowMode::Poll] {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path().join("root"));
        a.scenario = Some(Scenario::Follow);
        a.readers = Some(2);
        a.nsteps = 3;
        a.follow = mode;
        let report = run(&a).unwrap();
        assert!(
            report.problems.is_empty(),
            "{mode:?}: {:?}",
            report.problems
        );
        let rows = &report.repetitions[0].rows;
        let phases: Vec<_> = rows.iter().map(|r| r.phase.as_str()).collect();
        assert_eq!(phases, ["write-alone", "follow-write", "follow-read"]);
        let read = &rows[2];
        // Each reader reads every field of every writer, verified.
        let per_writer = 3 * 2 * 3;
        assert_eq!(read.fields, 2 * 2 * per_writer, "{mode:?}");
        assert_eq!((read.missing, read.check_failures), (0, 0), "{mode:?}");
        let latency = read.latency.expect("latency");
        // One sample per (flush, reader): 3 steps × 2 writers × 2 readers.
        assert_eq!(latency.samples, 3 * 2 * 2, "{mode:?}");
        assert!(latency.p50_ms <= latency.p99_ms && latency.p99_ms <= latency.max_ms);
        for p in &rows[1].per_process {
            assert_eq!(p.flushed_at.len(), 3, "one flush per step");
        }
        let text = report.table();
        assert!(text.contains("flush-to-visible latency"), "{text}");
        assert!(text.contains("writers with followers keep"), "{text}");
    }
}

/// With no set-up: the default embedded store (no --root, no config) and a
/// config whose schema is ECMWF's (which the hammer's keys do not fit) both
/// work, because the hammer brings its own schema, and the report says so.
#[test]
fn runs_on_the_default_store_and_on_a_config_with_another_schema() {
    let dir = tempfile::tempdir().unwrap();
    // A config without a schema (ECMWF's, embedded) on a root of its own.
    let root = dir.path().join("configured");
    std::fs::create_dir(&root).unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "type: local\nengine: toc\nspaces:\n- roots:\n  - path: {}\n",
            root.display()
        ),
    )
    .unwrap();
    let mut a = args(root.clone());
    a.root = None;
    a.config = Some(config);
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(
        report.store.contains("the hammer's own schema"),
        "{}",
        report.store
    );
    assert_eq!(report.repetitions[0].rows[0].fields, 2 * 2 * 2 * 3);
    // No config at all: the embedded default, here through FIELDSTORE_ROOT
    // (the workers inherit the environment).
    let mut a = args(dir.path().join("unused"));
    a.root = None;
    let default_root = dir.path().join("default");
    // No other test of this binary leaves the store to the environment.
    std::env::set_var("FIELDSTORE_ROOT", &default_root);
    let report = run(&a);
    std::env::remove_var("FIELDSTORE_ROOT");
    let report = report.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(default_root.is_dir());
}

/// `--raw` after pattern A on POSIX: the four IOR-style phases move the
/// write phase's bytes (rounded up to whole transfers), every read gets
/// another process's transfers back at the right offsets, and no raw file
/// is left behind.
#[test]
fn raw_phases_move_the_write_phases_bytes_and_read_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let mut a = args(root.clone());
    a.scenario = Some(Scenario::A);
    a.raw = true;
    a.raw_transfer = 8192;
    let report = run(&a).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(
        report.raw_target.starts_with("POSIX files in"),
        "{}",
        report.raw_target
    );
    let rows = &report.repetitions[0].rows;
    let phases: Vec<_> = rows.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(
        phases,
        [
            "write",
            "read",
            "list",
            "raw-easy-write",
            "raw-hard-write",
            "raw-easy-read",
            "raw-hard-read"
        ]
    );
    let store_bytes = rows[0].bytes;
    assert_eq!(store_bytes, 2 * 12 * 4096);
    let easy = 2 * (12 * 4096u64).div_ceil(8192) * 8192;
    let hard = 2 * (12 * 4096u64).div_ceil(47008) * 47008;
    for r in &rows[3..] {
        let want = if r.phase.contains("easy") { easy } else { hard };
        assert_eq!(r.bytes, want, "{}", r.phase);
        assert_eq!(r.procs, 2);
        assert!(r.gtb_mib_s.is_some_and(|g| g > 0.0), "{}", r.phase);
        assert_eq!((r.missing, r.check_failures), (0, 0), "{}", r.phase);
    }
    // Writes are made durable once per process (IOR -e).
    assert_eq!(rows[3].ops["sync"].calls, 2);
    assert_eq!(rows[3].ops["write"].calls, easy / 8192);
    assert_eq!(rows[4].ops["write"].calls, hard / 47008);
    assert_no_files_left(&root, ".hammer-raw");
    // The table shows the raw phases beside the store's.
    let table = report.table();
    assert!(table.contains("raw-hard-read"), "{table}");
    assert!(
        table.contains("raw phases (IOR-style, no store): POSIX files"),
        "{table}"
    );
}

/// Raw phases on a store that keeps its bytes in memory are refused,
/// saying why, before any process starts.
#[test]
fn raw_on_a_memory_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("memory.yaml");
    std::fs::write(&config, "engine: memory\nstore: memory\n").unwrap();
    let mut a = args(dir.path().join("unused"));
    a.root = None;
    a.config = Some(config);
    a.scenario = Some(Scenario::Raw);
    let e = run(&a).unwrap_err();
    assert_eq!(e.kind(), fieldstore::ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("keeps them in memory"), "{e}");
}
