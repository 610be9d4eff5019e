#!/usr/bin/env bash
# The S3 store's tests alone (crates/fieldstore-s3): the conformance suite
# with the POSIX catalogue over the S3 store, damage, bad input and the
# process tests, on a SeaweedFS each test binary starts on loopback
# (scripts/setup-seaweedfs.sh installs it). scripts/test-all.sh runs the same
# tests within `cargo test --workspace`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/setup-seaweedfs.sh
# Skipping for want of a server would be a failure here.
CI=true cargo test --locked -p fieldstore-s3 "$@"
