#!/usr/bin/env bash
# docs/bench/rados-ab.sh BASE NEW [ROUNDS] -- the RADOS hammer with two
# builds side by side (docs/experiments/2026-11-engine-and-traits.md): two hammer binaries
# (BASE, NEW), one throwaway bluestore cluster, runs alternating
# base/new ROUNDS times, 1 MiB and 64 KiB fields, write+read+list
# (scenario a), 2 processes.
set -euo pipefail
BASE=$1 NEW=$2 ROUNDS=${3:-3}
cd "$(dirname "$0")/../.."
source scripts/setup-ceph.sh
dir=$(mktemp -d /tmp/rados-ab.XXXXXX)
trap 'scripts/ceph-stop.sh "$dir/ceph"; rm -rf "$dir"' EXIT
CEPH_OBJECTSTORE=bluestore CEPH_OWNER_PID=$$ scripts/ceph-start.sh "$dir/ceph" >/dev/null
source "$dir/ceph/ceph.env"
cat >"$dir/config.yaml" <<EOF2
engine: rados
store: rados
schema: $PWD/tests/fixtures/schema/hammer.schema
rados:
  conf: $CEPH_CONF
  pool: $CEPH_POOL
  namespace: hammer
  in_flight: 8
EOF2
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ceph $(ceph --version | cut -d' ' -f3)"
run() { # binary tag size nsteps
    "$1" --config "$dir/config.yaml" --scenario a --processes 2 --nsteps "$4" --nlevels 10 --nparams 10 \
        --field-size "$3" --expver "$2" --no-drop-caches --no-randomise-data 2>&1 | grep -E '^(phase|write|read|list) ' | head -8
}
for r in $(seq "$ROUNDS"); do
  for size in 1048576 65536; do
    n=4; [ "$size" = 65536 ] && n=16
    for which in ${ORDER:-base new}; do
      bin=$BASE; [ "$which" = new ] && bin=$NEW
      echo "-- round $r, $which, $size, load $(cut -d' ' -f1 /proc/loadavg)"
      run "$bin" "${which:0:1}$r$((size/65536))" "$size" "$n"
    done
  done
done
