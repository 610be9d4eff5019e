#!/usr/bin/env bash
# rados-bench.sh — fieldstore hammer on RADOS next to `rados bench`, on one
# throwaway bluestore cluster, in one run (docs/benchmarks.md, "Ceph RADOS").
#
#   scripts/rados-bench.sh [PROCESSES] [NSTEPS] [ROUNDS]   defaults: 2 processes, 8 steps, 3 rounds
#
# Same concurrency: the hammer's PROCESSES together keep 16 writes in flight
# (rados.in_flight = 16 / PROCESSES), as `rados bench -t 16` does. Per round:
# `rados bench` 1 MiB objects for 20 s (-t 16, and -t PROCESSES), then the
# hammer with 1 MiB fields (each process NSTEPS x 10 levels x 10 params,
# flushing after every step: 100 MiB per flush; --no-randomise-data, as rados
# bench writes a fixed pattern: on 2 cores shared with the OSD, generating
# random bytes would bill client CPU to the store). Then 64 KiB fields next to
# `rados bench -b 64K -t 16`, and the store layout measurement (layout_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-ceph.sh
procs=${1:-2}
nsteps=${2:-8}
rounds=${3:-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/fieldstore-rados-bench.XXXXXX")
trap 'scripts/ceph-stop.sh "$dir/ceph"; rm -rf "$dir"' EXIT
CEPH_OBJECTSTORE=bluestore CEPH_OWNER_PID=$$ scripts/ceph-start.sh "$dir/ceph" >/dev/null
source "$dir/ceph/ceph.env"
cargo build --release -q -p fieldstore-hammer
cat >"$dir/config.yaml" <<EOF
engine: rados
store: rados
schema: $PWD/tests/fixtures/schema/hammer.schema
rados:
  conf: $CEPH_CONF
  pool: $CEPH_POOL
  namespace: hammer
  in_flight: $(( (16 + procs - 1) / procs ))
EOF
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ceph $(ceph --version | cut -d' ' -f3)"
bench() { # threads [object size]
    local size=${2:-1048576}
    rados -c "$CEPH_CONF" -p "$CEPH_POOL" bench 20 write -t "$1" -b "$size" 2>&1 |
        awk -v t="$1" -v s="$size" '/Bandwidth \(MB\/sec\)/ { bw = $3 } /Average IOPS/ { iops = $3 }
            END { printf "rados bench write %d KiB -t %s: %.0f MiB/s, %d objects/s\n", s / 1024, t, bw * 1000000 / 1048576, iops }'
    rados -c "$CEPH_CONF" -p "$CEPH_POOL" cleanup >/dev/null 2>&1 || true
}
hammer() { # field size, nsteps, tag
    ./target/release/fieldstore-hammer --config "$dir/config.yaml" --processes "$procs" \
        --nsteps "$2" --nlevels 10 --nparams 10 --field-size "$1" --expver "$3" --no-drop-caches --no-randomise-data 2>&1 |
        grep -E '^(phase|write) ' | head -20
}
for round in $(seq "$rounds"); do
    echo "== round $round"
    bench 16
    echo "-- fieldstore hammer, $procs processes, 1 MiB fields"
    hammer 1048576 "$nsteps" "r${round}mb"
    bench "$procs"
done
echo "== 64 KiB"
bench 16 65536
echo "-- fieldstore hammer, $procs processes, 64 KiB fields"
hammer 65536 $((nsteps * 4)) k064
if [ "${LAYOUT:-1}" = 1 ]; then
    echo "== store layout (one object per field vs per-writer objects)"
    cargo test --release -q -p fieldstore-rados --lib layout_bench -- --ignored --nocapture 2>&1 | grep '^|'
fi
