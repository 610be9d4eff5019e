#!/usr/bin/env bash
# profile.sh -- where fieldstore's time goes on the archive, flush, retrieve and list paths:
# `perf record` (DWARF call graphs) of fieldstore-hammer workloads on an embedded POSIX store,
# flame graphs (SVG) and the heaviest functions (self time) per path.
#
# Usage: bench/profile.sh            (needs perf: apt-get install linux-perf; run as root or with
#                                    kernel.perf_event_paranoid <= 1)
# Knobs: WORK [${TMPDIR:-/tmp}/fieldstore-profile]  OUT [<repo>/docs/bench/profile]  FREQ [2999]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/fieldstore-profile}
OUT=${OUT:-$REPO/docs/bench/profile}
FREQ=${FREQ:-2999}
command -v perf >/dev/null || { echo "perf not found (apt-get install linux-perf)" >&2; exit 1; }
(cd "$REPO" && cargo build -q --release -p fieldstore-hammer)
H=${CARGO_TARGET_DIR:-$REPO/target}/release/fieldstore-hammer
FG="python3 $REPO/bench/flamegraph.py --comm fieldstore-hamm"
mkdir -p "$WORK" "$OUT"
ROOT=$WORK/root

prof() { # prof <name> <title> -- hammer args
    local name=$1 title=$2; shift 3
    echo "== $name: $title (load $(cut -d' ' -f1-3 /proc/loadavg))"
    perf record -q -F "$FREQ" -g --call-graph dwarf,16384 -o "$WORK/$name.data" -- "$H" --root "$ROOT" "$@" \
        | sed -n '/^phase/,/^$/p;/^time per operation/,/^$/p'
    perf script -i "$WORK/$name.data" 2>/dev/null >"$WORK/$name.script"
    $FG --svg "$OUT/$name.svg" --title "fieldstore $title" --top 12 <"$WORK/$name.script" | tee "$OUT/$name.top.txt"
    rm -f "$WORK/$name.data" "$WORK/$name.script"
}

rm -rf "$ROOT"
prof write-64k "archive+flush, 64 KiB fields, 1 process, 10000 fields" -- \
    --nsteps 20 --nlevels 10 --nparams 50 --field-size 65536 --no-randomise-data
prof read-64k "retrieve+read, 64 KiB fields, right after writing (no cache drop)" -- \
    --nsteps 20 --nlevels 10 --nparams 50 --field-size 65536 --read --batch all --no-drop-caches
rm -rf "$ROOT"
prof write-1m "archive+flush, 1 MiB fields, 1 process, 1000 fields" -- \
    --nsteps 10 --nlevels 10 --nparams 10 --no-randomise-data
sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(not root: the read below is warm)"
prof read-1m-cold "retrieve+read, 1 MiB fields, cold" -- \
    --nsteps 10 --nlevels 10 --nparams 10 --read --batch all --no-drop-caches
rm -rf "$ROOT"
# list: a large index (50 000 entries of 64-byte fields), 100 lists of 500 entries each
"$H" --root "$ROOT" --nsteps 100 --nlevels 10 --nparams 50 --field-size 64 --no-randomise-data >/dev/null
prof list "list, 50000 entries in one collocation, 100 lists of 500" -- \
    --nsteps 100 --nlevels 10 --nparams 50 --list
rm -rf "$ROOT"
echo "flame graphs and top lists in $OUT"
