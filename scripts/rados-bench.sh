#!/usr/bin/env bash
# rados-bench.sh — fieldstore hammer on RADOS next to `rados bench`, on one
# throwaway bluestore cluster, in one run (docs/benchmarks.md, "Ceph RADOS").
#
#   scripts/rados-bench.sh [PROCESSES] [NSTEPS]      defaults: 2 processes, 8 steps
#
# 1 MiB fields: each hammer process writes NSTEPS x 10 levels x 10 params
# fields, flushing after every step (100 MiB per flush); `rados bench` writes
# 1 MiB objects for 20 s with -t PROCESSES and with -t 16. Then 64 KiB
# fields, and the store layout measurement (layout_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
procs=${1:-2}
nsteps=${2:-8}
dir=$(mktemp -d "${TMPDIR:-/tmp}/fieldstore-rados-bench.XXXXXX")
trap 'scripts/ceph-stop.sh "$dir/ceph"' EXIT
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
EOF
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ceph $(ceph --version | cut -d' ' -f3)"
bench() { # threads
    rados -c "$CEPH_CONF" -p "$CEPH_POOL" bench 20 write -t "$1" -b 1048576 2>&1 |
        awk -v t="$1" '/Bandwidth \(MB\/sec\)/ { printf "rados bench write 1 MiB -t %s: %.0f MiB/s\n", t, $3 * 1000000 / 1048576 }'
    rados -c "$CEPH_CONF" -p "$CEPH_POOL" cleanup >/dev/null 2>&1 || true
}
hammer() { # field size, nsteps, tag
    ./target/release/fieldstore-hammer --config "$dir/config.yaml" --processes "$procs" \
        --nsteps "$2" --nlevels 10 --nparams 10 --field-size "$1" --expver "$3" --no-drop-caches 2>&1 |
        grep -E '^(phase|write) ' | head -20
}
for round in 1 2; do
    echo "== round $round"
    bench "$procs"
    echo "-- fieldstore hammer, $procs processes, 1 MiB fields"
    hammer 1048576 "$nsteps" "r${round}mb"
    bench 16
done
echo "-- fieldstore hammer, $procs processes, 64 KiB fields"
hammer 65536 $((nsteps * 4)) k064
if [ "${LAYOUT:-1}" = 1 ]; then
    echo "== store layout (one object per field vs per-writer objects)"
    cargo test --release -q -p fieldstore-rados --lib layout_bench -- --ignored --nocapture 2>&1 | grep '^|'
fi
