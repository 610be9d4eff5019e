#!/usr/bin/env bash
# ab.sh — two builds of fieldstore-hammer (A: before a change, B: after) on
# one throwaway bluestore cluster, rounds interleaved A B A B …, 64 KiB and
# 1 MiB fields, 2 processes (docs/experiments/2026-11-rados-liveness.md).
#
#   bench/rados/ab.sh HAMMER_A HAMMER_B [ROUNDS]
#
# SCENARIO=a runs the hammer's scenario A (write, read, list) instead of the
# write phase alone; ORDER="B A" runs B first in each round (whichever runs
# second writes into a fuller OSD: run both orders and pool the pairs,
# docs/experiments/2026-11-engine-and-traits.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/setup-ceph.sh
A=$1; B=$2; rounds=${3:-3}; procs=2
dir=$(mktemp -d /tmp/ab-rados.XXXXXX)
trap 'scripts/ceph-stop.sh "$dir/ceph"; rm -rf "$dir"' EXIT
CEPH_OBJECTSTORE=bluestore CEPH_OWNER_PID=$$ scripts/ceph-start.sh "$dir/ceph" >/dev/null
source "$dir/ceph/ceph.env"
cat >"$dir/config.yaml" <<EOC
engine: rados
store: rados
schema: $PWD/tests/fixtures/schema/hammer.schema
rados:
  conf: $CEPH_CONF
  pool: $CEPH_POOL
  namespace: hammer
  in_flight: 8
EOC
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # binary tag size nsteps
  "$1" --config "$dir/config.yaml" ${SCENARIO:+--scenario "$SCENARIO"} --processes $procs --nsteps "$4" --nlevels 10 --nparams 10 \
     --field-size "$3" --expver "$2" --no-randomise-data 2>&1 | grep -E '^(phase|write|read|list) ' | head -8
}
for r in $(seq "$rounds"); do
  for v in ${ORDER:-A B}; do
    bin=$A; [ $v = B ] && bin=$B
    echo "-- round $r $v 64KiB"; run "$bin" "k${v}${r}" 65536 16
    echo "-- round $r $v 1MiB"; run "$bin" "m${v}${r}" 1048576 4
  done
done
