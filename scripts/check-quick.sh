#!/usr/bin/env bash
# The developer's quick check, about two minutes on a warm build (scripts/test-all.sh,
# what CI runs, takes 15-20): formatting, lints, the core's and the engine's
# unit tests, and the conformance suite on memory, POSIX and the DAOS stand-in.
# No Ceph, no Python, no C API.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== core and engine"
cargo test --locked -q -p fieldstore-core
echo "== conformance: memory, POSIX, select, mutants"
cargo test --locked -q -p fieldstore-testkit --test memory --test posix --test select --test mutants
echo "== conformance: the DAOS stand-in"
cargo test --locked -q -p fieldstore-daos --test conformance
