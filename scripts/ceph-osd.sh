#!/usr/bin/env bash
# ceph-osd.sh — kill or restart the OSD of a cluster started by
# scripts/ceph-start.sh (fault tests).
#
#   scripts/ceph-osd.sh DIR kill [ID]    SIGKILL osd.ID (default 0; by its recorded PID)
#   scripts/ceph-osd.sh DIR start [ID]   start osd.ID again and record its new PID
#   scripts/ceph-osd.sh DIR stop [ID]    SIGSTOP osd.ID: a hung OSD, noticed only
#                                        by the heartbeat grace (a killed one is
#                                        noticed at once: its peers' connections
#                                        are refused)
#   scripts/ceph-osd.sh DIR cont [ID]    SIGCONT it
#
# Only a bluestore OSD keeps its data across a kill.
set -euo pipefail

[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: ceph-osd.sh DIR kill|start|stop|cont [ID]" >&2; exit 1; }
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
stop | cont)
    if [ -n "$pid" ] && ours "$pid"; then
        kill "-${2^^}" "$pid"
    else
        echo "[ceph-osd] osd.$id is not running" >&2
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
    echo "usage: ceph-osd.sh DIR kill|start|stop|cont [ID]" >&2
    exit 1
    ;;
esac
