//! The hammer under a real MPI launcher: Open MPI's `mpirun` starts four
//! ranks of the hammer binary, which meet in the barrier directory; the
//! same workload with the local-process launcher must agree with it on
//! everything but the speed (barrier, per-rank timestamps, the global
//! timing bandwidth's arithmetic).
//!
//! Needs `mpirun` (Debian `openmpi-bin`, installed by
//! scripts/setup-bench.sh); without it the test says so and passes, except
//! under `CI=true`, where it fails.

use std::path::Path;
use std::process::Command;

use fieldstore_hammer::{run, HammerArgs, Report, Scenario};

const RANKS: u32 = 4;

fn mpirun() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("mpirun"))
            .find(|m| m.exists())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "mpirun not found: CI must install openmpi-bin (scripts/setup-bench.sh)"
        );
        eprintln!("mpirun not found: skipping (apt-get install openmpi-bin)");
    }
    found
}

/// The workload, as flags and as arguments of the library.
const FLAGS: &[&str] = &[
    "--scenario",
    "a",
    "--nsteps",
    "2",
    "--nlevels",
    "3",
    "--nparams",
    "4",
    "--field-size",
    "16384",
    "--full-check",
    "--no-drop-caches",
];

fn local(root: &Path) -> Report {
    let a = HammerArgs {
        root: Some(root.to_path_buf()),
        scenario: Some(Scenario::A),
        processes: RANKS,
        nsteps: 2,
        nlevels: 3,
        nparams: 4,
        field_size: 16384,
        full_check: true,
        no_drop_caches: true,
        worker_exe: Some(env!("CARGO_BIN_EXE_fieldstore-hammer").into()),
        ..HammerArgs::default()
    };
    run(&a).unwrap()
}

fn under_mpirun(mpirun: &Path, root: &Path, barrier: &Path) -> Report {
    let mut c = Command::new(mpirun);
    // Root in containers; more ranks than cores on small machines.
    c.args([
        "-np",
        &RANKS.to_string(),
        "--oversubscribe",
        "--allow-run-as-root",
    ])
    .arg(env!("CARGO_BIN_EXE_fieldstore-hammer"))
    .args(FLAGS)
    .arg("--json")
    .arg("--root")
    .arg(root)
    .arg("--barrier-dir")
    .arg(barrier)
    // mpirun passes its environment on: no other launcher's variables.
    .env_remove("SLURM_PROCID")
    .env_remove("SLURM_NTASKS")
    .env_remove("PMI_RANK")
    .env_remove("PMI_SIZE")
    .env_remove("FIELDSTORE_HAMMER_WORKER_EXE");
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "mpirun: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "one JSON report (rank 0's) expected: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Global timing bandwidth from the per-process timestamps, as the method
/// defines it: all bytes over (last end − first start).
fn gtb(row: &fieldstore_hammer::Row) -> f64 {
    let first = row
        .per_process
        .iter()
        .map(|p| p.t_first_io)
        .fold(f64::INFINITY, f64::min);
    let last = row
        .per_process
        .iter()
        .map(|p| p.t_last_io)
        .fold(0.0, f64::max);
    row.bytes as f64 / (last - first) / (1024.0 * 1024.0)
}

#[test]
fn mpirun_ranks_agree_with_local_processes() {
    let Some(mpirun) = mpirun() else { return };
    let dir = tempfile::tempdir().unwrap();
    let barrier = dir.path().join("barrier");
    let m = under_mpirun(&mpirun, &dir.path().join("mpi"), &barrier);
    let l = local(&dir.path().join("local"));
    assert!(m.launcher.starts_with("Open MPI ranks"), "{}", m.launcher);
    assert!(l.launcher.starts_with("local processes"), "{}", l.launcher);
    for r in [&m, &l] {
        assert!(r.problems.is_empty(), "{:?}", r.problems);
    }
    let (mr, lr) = (&m.repetitions[0].rows, &l.repetitions[0].rows);
    let phases =
        |rows: &[fieldstore_hammer::Row]| rows.iter().map(|r| r.phase.clone()).collect::<Vec<_>>();
    assert_eq!(phases(mr), ["write", "read", "list"]);
    assert_eq!(phases(mr), phases(lr));
    for (a, b) in mr.iter().zip(lr) {
        // The same work, split the same way over the same ranks.
        assert_eq!((a.procs, a.fields, a.bytes), (b.procs, b.fields, b.bytes));
        let mut ranks: Vec<u32> = a.per_process.iter().map(|p| p.rank).collect();
        ranks.sort_unstable();
        assert_eq!(ranks, (0..RANKS).collect::<Vec<_>>(), "{}", a.phase);
        let mut pids: Vec<u32> = a.per_process.iter().map(|p| p.pid).collect();
        pids.dedup();
        assert_eq!(pids.len(), RANKS as usize, "one process per rank");
        for row in [a, b] {
            // Every rank was released before its first I/O and after it
            // was ready; all were released within a few milliseconds.
            for p in &row.per_process {
                assert!(
                    p.t_ready <= p.t_release && p.t_release <= p.t_first_io,
                    "{p:?}"
                );
                assert!(p.t_first_io <= p.t_last_io, "{p:?}");
            }
            assert!(
                row.release_spread_ms < 100.0,
                "{} {}: released {:.1} ms apart",
                row.phase,
                if std::ptr::eq(row, a) {
                    "mpirun"
                } else {
                    "local"
                },
                row.release_spread_ms
            );
            // The reported bandwidth is the method's, from the timestamps.
            if let Some(g) = row.gtb_mib_s {
                assert!(
                    (g - gtb(row)).abs() <= 1e-6 * g,
                    "{}: {g} vs {}",
                    row.phase,
                    gtb(row)
                );
            }
        }
    }
    // The same ranks use the same members: process 2 writes member 3.
    let w = mr[0].per_process.iter().find(|p| p.rank == 2).unwrap();
    assert_eq!(w.fields, 2 * 3 * 4);
    assert!(
        !barrier.exists() || std::fs::read_dir(&barrier).unwrap().next().is_none(),
        "rank 0 removes the launch's barrier directory"
    );
}
