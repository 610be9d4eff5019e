#!/usr/bin/env bash
# ceph-start.sh — start a throwaway single-node Ceph cluster (one mon, one OSD
# by default, or CEPH_OSDS of them) for fieldstore's RADOS tests and benchmarks. No systemd, no cephadm, no
# auth; every daemon binds 127.0.0.1 only; everything lives in DIR.
#
#   scripts/ceph-start.sh DIR        DIR must be missing or empty
#
# Environment:
#   CEPH_OBJECTSTORE  memstore (default: data in the OSD's RAM, lost if the OSD
#                     dies) | bluestore (a sparse file in DIR: survives an OSD
#                     kill, for fault tests and volume benchmarks)
#   CEPH_POOL         pool to create (default fieldstore)
#   CEPH_OWNER_PID    if set, a watchdog stops the cluster (scripts/ceph-stop.sh)
#                     as soon as that process is gone: test binaries pass their
#                     own PID, so a crashed or killed test leaves no daemons
#   CEPH_OP_TIMEOUT   client op timeout written to ceph.conf (default 60 s)
#   CEPH_OSDS         number of OSDs (default 1). With 2 or more the pool is
#                     replicated across them (size min(N,3), min_size 2 from
#                     3 OSDs on, else 1) and the OSD failure detection is made
#                     quick for tests: heartbeat every 1 s, grace 6 s, one
#                     reporter is enough (Ceph's defaults: 6 s, 20 s, 2).
#                     Kill and restart one with scripts/ceph-osd.sh DIR kill|start ID.
#
# On success prints and writes DIR/ceph.env (CEPH_DIR, CEPH_CONF, CEPH_POOL)
# and DIR/pids ("name pid" per daemon). Stop with scripts/ceph-stop.sh DIR.
# Exit status: 0 ready; 1 usage or Ceph not installed; 2 the cluster did not start.
set -euo pipefail

say() { echo "[ceph-start] $*" >&2; }
fail() { say "ERROR: $1"; exit "${2:-2}"; }

[ $# -eq 1 ] || fail "usage: ceph-start.sh DIR" 1
for cmd in ceph-mon ceph-osd ceph monmaptool rados setsid; do
    command -v "$cmd" >/dev/null 2>&1 || fail "'$cmd' not found: install Ceph (Debian: apt-get install ceph-mon ceph-osd ceph-common), or run scripts/setup-ceph.sh" 1
done
store=${CEPH_OBJECTSTORE:-memstore}
case $store in memstore|bluestore) ;; *) fail "CEPH_OBJECTSTORE must be memstore or bluestore" 1 ;; esac
pool=${CEPH_POOL:-fieldstore}
nosds=${CEPH_OSDS:-1}
case $nosds in [1-9]) ;; *) fail "CEPH_OSDS must be 1 to 9" 1 ;; esac
size=$((nosds < 3 ? nosds : 3))
min_size=$((nosds < 3 ? 1 : 2))

mkdir -p "$1"
dir=$(cd "$1" && pwd -P)
[ -z "$(ls -A "$dir")" ] || fail "$dir is not empty" 1
conf=$dir/ceph.conf
mkdir -p "$dir/log" "$dir/run" "$dir/crash"
for ((i = 0; i < nosds; i++)); do mkdir -p "$dir/osd.$i"; done
touch "$dir/.fieldstore-ceph"   # ceph-stop.sh only touches directories with this mark
: >"$dir/pids"

started=()
cleanup_on_error() {
    local rc=$?
    if [ "$rc" -ne 0 ]; then
        for pid in "${started[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
        for f in "$dir"/log/*.out; do
            [ -s "$f" ] && { say "--- tail of $f"; tail -n 5 "$f" >&2; }
        done
    fi
}
trap cleanup_on_error EXIT

# The mon's port: outside the ephemeral range (no client socket can hold it)
# and outside the OSDs' 6800-7300, free in every TCP state.
free_port() {
    local lo hi p
    read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
    for _ in $(seq 100); do
        p=$((10000 + RANDOM % 22000))
        if [ "$p" -ge "$lo" ] && [ "$p" -le "$hi" ]; then continue; fi
        if [ "$p" -ge 6800 ] && [ "$p" -le 7300 ]; then continue; fi
        ss -Htan "( sport = :$p )" 2>/dev/null | grep -q . && continue
        echo "$p"
        return 0
    done
    return 1
}

write_conf() { # port
    cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$1]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $dir/run
crash dir = $dir/crash
osd pool default size = $size
osd pool default min size = $min_size
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false
mon data avail warn = 2
mon data avail crit = 1
mon cluster log file = $dir/log/cluster.log
mgr initial modules = iostat
$(if [ "$nosds" -gt 1 ]; then printf '%s\n' \
    '# several OSDs: notice a hung one in seconds, not 20+ s (tests). In [global]:' \
    '# the mon reads them too. One reporter: all OSDs share this host, and the' \
    '# mon counts reporters per host (mon osd reporter subtree level).' \
    'osd heartbeat interval = 1' 'osd heartbeat grace = 6' \
    'mon osd min down reporters = 1'
fi)

[mon]
# map changes commit every 0.1 s instead of 1 s: startup in ~1.5 s, not ~5 s
paxos propose interval = 0.1
mon data = $dir/\$name
log file = $dir/log/\$name.log

[osd]
osd data = $dir/\$name
log file = $dir/log/\$name.log
osd objectstore = $store
osd crush initial weight = 1
memstore device bytes = 8G
bluestore block create = true
bluestore block size = 20G
osd memory target = 1G
# bluestore device closes wait one poll (250 ms by default) each at startup
bdev aio poll ms = 10

[client]
# a client op that cannot complete fails with ETIMEDOUT instead of hanging
rados osd op timeout = ${CEPH_OP_TIMEOUT:-60}
rados mon op timeout = ${CEPH_OP_TIMEOUT:-60}
EOF
}

# daemon NAME CMD...: run in the foreground of its own session, record its PID
daemon() {
    local name=$1
    shift
    setsid "$@" -f -c "$conf" </dev/null >"$dir/log/$name.out" 2>&1 &
    local pid=$!
    disown "$pid" 2>/dev/null || true
    started+=("$pid")
    echo "$name $pid" >>"$dir/pids"
}

# until_ok SECONDS DESCRIPTION CMD...: retry CMD while the daemons live
until_ok() {
    local deadline=$(($(date +%s) + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        for pid in "${started[@]}"; do
            kill -0 "$pid" 2>/dev/null || fail "a daemon (pid $pid) died while waiting for $what"
        done
        [ "$(date +%s)" -lt "$deadline" ] || fail "timed out waiting for $what"
        sleep 0.2
    done
}

fsid=$(cat /proc/sys/kernel/random/uuid)
export CEPH_CONF=$conf
unset CEPH_ARGS || true
ceph=(ceph -c "$conf" --connect-timeout 10)

# mon (a port taken meanwhile makes it exit: try another, three times)
for attempt in 1 2 3; do
    port=$(free_port) || fail "no free port for the mon"
    write_conf "$port"
    rm -rf "$dir/mon.a" "$dir/monmap"
    monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$dir/monmap" >/dev/null
    ceph-mon --mkfs -i a -c "$conf" --monmap "$dir/monmap" >"$dir/log/mon.a.mkfs" 2>&1 ||
        fail "ceph-mon --mkfs failed (see $dir/log/mon.a.mkfs)"
    daemon mon.a ceph-mon -i a
    mon_pid=${started[-1]}
    deadline=$(($(date +%s) + 30))
    while kill -0 "$mon_pid" 2>/dev/null && ! grep -q 'Address already in use' "$dir/log/mon.a.out"; do
        timeout 10 "${ceph[@]}" mon stat >/dev/null 2>&1 && break 2
        [ "$(date +%s)" -lt "$deadline" ] || fail "the mon did not answer within 30 s"
        sleep 0.2
    done
    kill -KILL "$mon_pid" 2>/dev/null || true
    started=()
    : >"$dir/pids"
    [ "$attempt" -lt 3 ] || fail "the mon could not start (see $dir/log/mon.a.out)"
    say "mon could not use port $port; trying another"
done

# osds
for ((i = 0; i < nosds; i++)); do
    osd_uuid=$(cat /proc/sys/kernel/random/uuid)
    id=$(timeout 30 "${ceph[@]}" osd new "$osd_uuid") || fail "'ceph osd new' failed"
    [ "$id" = "$i" ] || fail "expected OSD id $i, got '$id'"
    ceph-osd -i "$i" --mkfs --osd-uuid "$osd_uuid" -c "$conf" >"$dir/log/osd.$i.mkfs" 2>&1 ||
        fail "ceph-osd --mkfs failed (see $dir/log/osd.$i.mkfs)"
    daemon "osd.$i" ceph-osd -i "$i"
done

# pool, then wait until the OSD is up and a write goes through
timeout 30 "${ceph[@]}" osd pool create "$pool" 8 8 replicated >/dev/null 2>&1 ||
    fail "could not create pool $pool"
timeout 30 "${ceph[@]}" osd pool application enable "$pool" rados >/dev/null 2>&1 || true
osd_up() { timeout 15 "${ceph[@]}" osd stat -f json | grep -q "\"num_up_osds\": *$nosds[,}]"; }
until_ok $((60 * nosds)) "$nosds OSD(s) to come up" osd_up
probe() { echo x | timeout 5 rados -c "$conf" -p "$pool" put .probe - && rados -c "$conf" -p "$pool" rm .probe; }
until_ok $((60 * nosds)) "pool $pool to take a write" probe

cat >"$dir/ceph.env" <<EOF
export CEPH_DIR='$dir'
export CEPH_CONF='$conf'
export CEPH_POOL='$pool'
EOF
if [ -n "${CEPH_OWNER_PID:-}" ]; then
    # Watchdog: stop the cluster once the owner is gone. It holds no
    # descriptor of the caller's, so a caller reading our output sees EOF.
    here=$(cd "$(dirname "$0")" && pwd -P)
    # (A zombie owner counts as gone: this sandbox's init reaps late.)
    setsid bash -c 'alive() { s=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${s#Z}" = "$s" ]; }
        while alive "$1" && [ -e "$2/.fieldstore-ceph" ]; do sleep 1; done; exec "$3/ceph-stop.sh" "$2"' \
        watchdog "$CEPH_OWNER_PID" "$dir" "$here" </dev/null >/dev/null 2>&1 &
    disown $! 2>/dev/null || true
fi
trap - EXIT
say "ready: $store, $nosds OSD(s), mon on 127.0.0.1:$port, pool $pool, in $dir"
cat "$dir/ceph.env"
