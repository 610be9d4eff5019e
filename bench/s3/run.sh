#!/usr/bin/env bash
# bench/s3/run.sh — fieldstore hammer on the S3 store with each catalogue
# (engine: toc, then engine: s3) next to raw S3 PUT/GET of the same sizes
# and concurrency (the hammer's --raw, one object per transfer), then list
# of LIST_FLUSHES x 100 fields cold and warm on the S3 catalogue beside
# the POSIX one (examples/s3_list_speed.rs), on one SeaweedFS started on
# loopback, in one run (docs/benchmarks.md, "S3").
#
#   bench/s3/run.sh [PROCESSES] [NSTEPS]   defaults: 2 processes, 4 steps
#
# Per field size (1 MiB, then 64 KiB with 4x the steps): the hammer's
# scenario A (write, then read, each process NSTEPS x 10 levels x 10 params,
# flushing after every step) and its raw phases with --raw-transfer set to
# the field size (raw-easy: PUT/GET of one object per transfer; raw-hard:
# 47 008-byte objects). --no-randomise-data, as the raw phases write a
# fixed pattern. The POSIX catalogue lives in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
procs=${1:-2}
nsteps=${2:-4}
dir=$(mktemp -d "${TMPDIR:-/tmp}/fieldstore-s3-bench.XXXXXX")
source bench/s3/weed.sh
weed_start
cargo build --release -q -p fieldstore-hammer
cargo build --release -q -p fieldstore-s3 --example s3_list_speed
for engine in toc s3; do
    weed_config "$engine" hammer >"$dir/config-$engine.yaml"
done
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$FIELDSTORE_WEED" version | head -1); fieldstore $(git rev-parse --short HEAD)"
hammer() { # field size, nsteps, tag, engine
    "${CARGO_TARGET_DIR:-target}/release/fieldstore-hammer" --config "$dir/config-$4.yaml" --scenario a --raw \
        --raw-transfer "$1" --processes "$procs" --nsteps "$2" --nlevels 10 --nparams 10 \
        --field-size "$1" --expver "$3" --no-drop-caches --no-randomise-data 2>&1
}
for engine in toc s3; do
    echo "-- engine: $engine, $procs processes, 1 MiB fields"
    hammer 1048576 "$nsteps" "mb${engine:0:1}1" "$engine"
    echo "-- engine: $engine, $procs processes, 64 KiB fields"
    hammer 65536 $((nsteps * 4)) "kb${engine:0:1}1" "$engine"
done
echo "-- list, engine: s3 against engine: toc"
S3_ENDPOINT="http://127.0.0.1:$s3_port" S3_ACCESS=bench S3_SECRET=bench-secret \
    "${CARGO_TARGET_DIR:-target}/release/examples/s3_list_speed" "${LIST_FLUSHES:-100}" 100 5
