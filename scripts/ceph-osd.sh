#!/usr/bin/env bash
# ceph-osd.sh — kill or restart the OSD of a cluster started by
# scripts/ceph-start.sh (fault tests).
#
#   scripts/ceph-osd.sh DIR kill [ID]    SIGKILL osd.ID (default 0; by its recorded PID)
#   scripts/ceph-osd.sh DIR start [ID]   start osd.ID again and record its new PID
#
# Only a bluestore OSD keeps its data across a kill.
set -euo pipefail

[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: ceph-osd.sh DIR kill|start [ID]" >&2; exit 1; }
id=${3:-0}
case $id in [0-9]) ;; *) echo "[ceph-osd] bad OSD id '$id'" >&2; exit 1 ;; esac
dir=$(cd "$1" && pwd -P)
[ -e "$dir/.fieldstore-ceph" ] || { echo "[ceph-osd] $dir was not made by ceph-start.sh" >&2; exit 1; }
conf=$dir/ceph.conf
ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$conf"; }
pid=$(awk -v n="osd.$id" '$1 == n { p = $2 } END { print p }' "$dir/pids")

case $2 in
kill)
    if [ -n "$pid" ] && ours "$pid"; then
        kill -KILL "$pid"
        for _ in $(seq 50); do ours "$pid" || exit 0; sleep 0.1; done
        echo "[ceph-osd] osd.$id (pid $pid) did not die" >&2
        exit 2
    fi
    ;;
start)
    if [ -n "$pid" ] && ours "$pid"; then
        echo "[ceph-osd] osd.$id is already running (pid $pid)" >&2
        exit 0
    fi
    setsid ceph-osd -i "$id" -f -c "$conf" </dev/null >>"$dir/log/osd.$id.out" 2>&1 &
    new=$!
    disown "$new" 2>/dev/null || true
    echo "osd.$id $new" >>"$dir/pids"
    ;;
*)
    echo "usage: ceph-osd.sh DIR kill|start [ID]" >&2
    exit 1
    ;;
esac
