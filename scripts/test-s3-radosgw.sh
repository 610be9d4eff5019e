#!/usr/bin/env bash
# The S3 store's and catalogue's conformance, damage, bad-input and process tests
# (crates/fieldstore-s3/tests) on a second real S3 server: Ceph's RADOS
# Gateway (radosgw 16.2, Debian's) on a throwaway single-node Ceph
# (scripts/radosgw-start.sh), the tests pointed at it by FIELDSTORE_S3_ENDPOINT.
# Installs radosgw when missing (Debian). ~3 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/setup-ceph.sh
if ! command -v radosgw >/dev/null 2>&1; then
    [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends radosgw >/dev/null
fi
[ -z "${FIELDSTORE_SETUP_ONLY:-}" ] || exit 0  # installs only (scripts/test-all.sh)
dir=$(mktemp -d "${TMPDIR:-/tmp}/fieldstore-radosgw.XXXXXX")
trap 'scripts/ceph-stop.sh "$dir/ceph" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
CEPH_OWNER_PID=$$ scripts/radosgw-start.sh "$dir" >/dev/null
source "$dir/s3.env"
export FIELDSTORE_S3_ENDPOINT
# The process scenarios with the S3 catalogue only: it drives the S3 store
# too, and the POSIX catalogue over the S3 store runs them on SeaweedFS.
export FIELDSTORE_S3_ENGINES=s3
# Two binaries at a time (bucket names carry the process id).
source scripts/debug-build.sh
fieldstore_run_tests fieldstore-s3 catalogue processes conformance format_v1
