//! The hammer's raw phases on a real single-node Ceph cluster
//! (scripts/ceph-start.sh, memstore, stopped by its watchdog when this test
//! process exits): RADOS objects striped over `object_size`, transfers
//! across stripe ends, every read checked, nothing left in the namespace.
//!
//! Without Ceph installed (scripts/setup.sh installs it) the test says so
//! and passes, except under `CI=true`, where it fails.

use fieldstore_hammer::{run, HammerArgs, Scenario};

#[test]
fn raw_phases_on_a_real_cluster_stripe_check_and_clean_up() {
    let Some(cluster) = fieldstore_testkit::ceph::start("memstore") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let namespace = fieldstore_testkit::ceph::namespace("hammer-raw");
    let config = tmp.path().join("rados.yaml");
    // 1 MiB objects (the smallest the config takes): 3 MiB per process in
    // 768 KiB transfers cross stripe ends.
    std::fs::write(
        &config,
        format!(
            "engine: rados\nstore: rados\n{}  object_size: 1048576\n",
            cluster.section(&namespace)
        ),
    )
    .unwrap();
    let a = HammerArgs {
        config: Some(config),
        scenario: Some(Scenario::Raw),
        processes: 2,
        raw_bytes: Some(3 << 20),
        raw_transfer: 768 << 10,
        no_drop_caches: true,
        worker_exe: Some(env!("CARGO_BIN_EXE_fieldstore-hammer").into()),
        ..HammerArgs::default()
    };
    let report = run(&a).unwrap();
    if !report.problems.is_empty() {
        cluster.stop();
        panic!("{:?}", report.problems);
    }
    assert!(
        report
            .raw_target
            .starts_with("RADOS objects in pool fieldstore"),
        "{}",
        report.raw_target
    );
    let rows = &report.repetitions[0].rows;
    for r in rows {
        assert_eq!((r.missing, r.check_failures), (0, 0), "{}", r.phase);
        let want = if r.phase.contains("easy") {
            2 * 4 * (768 << 10)
        } else {
            2 * (3u64 << 20).div_ceil(47008) * 47008
        };
        assert_eq!(r.bytes, want, "{}", r.phase);
    }
    let left = cluster.rados(&namespace, &["ls"]);
    cluster.stop();
    let left = String::from_utf8_lossy(&left);
    assert!(left.trim().is_empty(), "raw objects left: {left}");
}
