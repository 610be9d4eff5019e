#!/usr/bin/env bash
# radosgw-start.sh — Ceph's RADOS Gateway (S3) on a throwaway single-node Ceph
# (scripts/ceph-start.sh), for the S3 store's tests: loopback only, no cephx,
# one S3 identity (fieldstore / fieldstore-secret, as the tests' common module).
#
#   scripts/radosgw-start.sh DIR     DIR must be missing or empty
#
# CEPH_OWNER_PID and CEPH_OBJECTSTORE are passed on to ceph-start.sh (its
# watchdog stops the gateway too: it is listed in DIR/ceph/pids). Writes
# DIR/s3.env (FIELDSTORE_S3_ENDPOINT). Stop with scripts/ceph-stop.sh DIR/ceph.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: radosgw-start.sh DIR" >&2; exit 1; }
command -v radosgw >/dev/null 2>&1 || { echo "[radosgw-start] radosgw not found (Debian: apt-get install radosgw)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd -P)
mkdir -p "$1"
dir=$(cd "$1" && pwd -P)
"$here/ceph-start.sh" "$dir/ceph" >/dev/null
# shellcheck disable=SC1091
source "$dir/ceph/ceph.env"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Without cephx, radosgw's mon client offers no connection mode unless told
# (the mon then refuses it: EACCES); the pools it creates get 8 PGs each, so
# that one OSD holds them all.
rgw=(radosgw -f -c "$CEPH_CONF" -n client.rgw.fs --ms-mon-client-mode=crc --ms-client-mode=crc
    --osd-pool-default-pg-num=8 --osd-pool-default-pgp-num=8)
mkdir -p "$dir/rgw"
setsid "${rgw[@]}" --rgw-frontends="beast endpoint=127.0.0.1:$port" --rgw-data="$dir/rgw" \
    --log-file="$dir/rgw.log" </dev/null >"$dir/rgw.out" 2>&1 &
pid=$!
disown "$pid" 2>/dev/null || true
echo "radosgw $pid" >>"$dir/ceph/pids"
for _ in $(seq 120); do
    kill -0 "$pid" 2>/dev/null || { echo "[radosgw-start] radosgw died:" >&2; tail -5 "$dir/rgw.out" >&2; exit 2; }
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" = 200 ] && break
    sleep 0.5
done
radosgw-admin -c "$CEPH_CONF" -n client.rgw.fs --ms-mon-client-mode=crc --ms-client-mode=crc \
    user create --uid=fieldstore --display-name=fieldstore \
    --access-key=fieldstore --secret=fieldstore-secret >/dev/null
echo "export FIELDSTORE_S3_ENDPOINT='http://127.0.0.1:$port'" >"$dir/s3.env"
cat "$dir/s3.env"
