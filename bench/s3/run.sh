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
source scripts/setup-seaweedfs.sh
procs=${1:-2}
nsteps=${2:-4}
dir=$(mktemp -d "${TMPDIR:-/tmp}/fieldstore-s3-bench.XXXXXX")
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
p=(); for _ in 1 2 3 4 5 6 7 8; do p+=("$(port)"); done
mkdir -p "$dir/data" "$dir/root"
cat >"$dir/s3.json" <<EOF2
{"identities":[{"name":"bench","credentials":[{"accessKey":"bench","secretKey":"bench-secret"}],"actions":["Admin","Read","Write","List","Tagging"]}]}
EOF2
"$FIELDSTORE_WEED" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port="${p[0]}" -master.port.grpc="${p[1]}" -volume.port="${p[2]}" -volume.port.grpc="${p[3]}" \
    -filer -filer.port="${p[4]}" -filer.port.grpc="${p[5]}" -s3 -s3.port="${p[6]}" -s3.port.grpc="${p[7]}" \
    -s3.config="$dir/s3.json" -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false -master.volumeSizeLimitMB=256 -volume.max=1000 \
    >"$dir/weed.log" 2>&1 &
weed=$!
trap 'kill $weed 2>/dev/null; sleep 2; kill -9 $weed 2>/dev/null; rm -rf "$dir"; for q in "${p[@]}"; do rm -f /tmp/seaweedfs-*-$q.sock; done' EXIT
cargo build --release -q -p fieldstore-hammer
cargo build --release -q -p fieldstore-s3 --example s3_list_speed
for engine in toc s3; do
cat >"$dir/config-$engine.yaml" <<EOF2
engine: $engine
store: s3
schema: $PWD/tests/fixtures/schema/hammer.schema
spaces:
- roots:
  - path: $dir/root
s3:
  endpoint: http://127.0.0.1:${p[6]}
  bucket: hammer
  credentials: {access_key_id: bench, secret_access_key: bench-secret}
EOF2
done
for _ in $(seq 120); do
    curl -s -o /dev/null "http://127.0.0.1:${p[6]}/" && break
    sleep 0.5
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
S3_ENDPOINT="http://127.0.0.1:${p[6]}" S3_ACCESS=bench S3_SECRET=bench-secret \
    "${CARGO_TARGET_DIR:-target}/release/examples/s3_list_speed" "${LIST_FLUSHES:-100}" 100 5
