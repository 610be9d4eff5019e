# bench/s3/weed.sh — sourced by the S3 benchmarks: one SeaweedFS
# (`weed server -s3`) on loopback ports, with a `bench`/`bench-secret`
# identity, its data under "$dir/data", and a Prometheus metrics port.
#
#   dir=$(mktemp -d); source bench/s3/weed.sh; weed_start
#
# `weed_start` sets `s3_port` and `metrics_port`, installs an EXIT trap
# that stops the server and removes "$dir", and returns once the S3 port
# answers.
# shellcheck shell=bash

weed_start() {
    source scripts/setup-seaweedfs.sh
    local p=()
    port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
    for _ in 1 2 3 4 5 6 7 8 9; do p+=("$(port)"); done
    s3_port=${p[6]}
    metrics_port=${p[8]}
    mkdir -p "$dir/data"
    cat >"$dir/s3.json" <<EOF2
{"identities":[{"name":"bench","credentials":[{"accessKey":"bench","secretKey":"bench-secret"}],"actions":["Admin","Read","Write","List","Tagging"]}]}
EOF2
    "$FIELDSTORE_WEED" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -master.port="${p[0]}" -master.port.grpc="${p[1]}" -volume.port="${p[2]}" -volume.port.grpc="${p[3]}" \
        -filer -filer.port="${p[4]}" -filer.port.grpc="${p[5]}" -s3 -s3.port="${p[6]}" -s3.port.grpc="${p[7]}" \
        -s3.config="$dir/s3.json" -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false \
        -metricsPort="$metrics_port" -master.volumeSizeLimitMB=256 -volume.max=1000 \
        >"$dir/weed.log" 2>&1 &
    weed_pid=$!
    weed_ports=("${p[@]}")
    trap 'kill $weed_pid 2>/dev/null; sleep 2; kill -9 $weed_pid 2>/dev/null; rm -rf "$dir"; for q in "${weed_ports[@]}"; do rm -f /tmp/seaweedfs-*-$q.sock; done' EXIT
    for _ in $(seq 120); do
        curl -s -o /dev/null "http://127.0.0.1:$s3_port/" && return 0
        sleep 0.5
    done
    echo "SeaweedFS did not answer on port $s3_port: $dir/weed.log" >&2
    return 1
}

# A fieldstore config: catalogue engine $1 (`s3`, `toc`), the S3 store,
# bucket $2, the hammer's schema, its root (for `toc`) "$dir/root".
weed_config() {
    mkdir -p "$dir/root"
    cat <<EOF2
engine: $1
store: s3
schema: $PWD/tests/fixtures/schema/hammer.schema
spaces:
- roots:
  - path: $dir/root
s3:
  endpoint: http://127.0.0.1:$s3_port
  bucket: $2
  credentials: {access_key_id: bench, secret_access_key: bench-secret}
EOF2
}

# The server's S3 request counters (SeaweedFS_s3_request_total, by method
# and status), one `series value` per line.
weed_requests() {
    curl -s "http://127.0.0.1:$metrics_port/metrics" | grep '^SeaweedFS_s3_request_total' || true
}
