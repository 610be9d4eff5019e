#!/usr/bin/env bash
# ceph-stop.sh — stop a cluster started by scripts/ceph-start.sh and remove DIR.
#
#   scripts/ceph-stop.sh DIR
#
# Kills exactly the PIDs recorded in DIR/pids (SIGKILL: the data is thrown
# away), and only those whose command line still names DIR/ceph.conf, so a
# recycled PID is never hit. A missing DIR is fine. CEPH_KEEP_DIR=1 keeps the
# directory (logs).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: ceph-stop.sh DIR" >&2; exit 1; }
[ -d "$1" ] || exit 0
dir=$(cd "$1" && pwd -P)
[ -e "$dir/.fieldstore-ceph" ] || { echo "[ceph-stop] $dir was not made by ceph-start.sh; not touching it" >&2; exit 1; }
conf=$dir/ceph.conf

ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$conf"; }

if [ -f "$dir/pids" ]; then
    while read -r _ pid; do
        [ -n "${pid:-}" ] && ours "$pid" && kill -KILL "$pid" 2>/dev/null || true
    done <"$dir/pids"
    # Wait (bounded) until they are gone.
    for _ in $(seq 50); do
        alive=0
        while read -r _ pid; do [ -n "${pid:-}" ] && ours "$pid" && alive=1; done <"$dir/pids"
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
fi
if [ "${CEPH_KEEP_DIR:-0}" != 1 ]; then
    rm -rf -- "$dir"
fi
