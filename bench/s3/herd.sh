#!/usr/bin/env bash
# bench/s3/herd.sh — W hammer writer processes into one dataset on one
# SeaweedFS (engine: s3, store: s3), a flush per step, for one or more
# builds in turn (before/after pairs, interleaved), with the S3 requests
# each run made per flush, by method and status, from the server's own
# counters (docs/experiments/2026-11-rados-slots.md).
#
#   bench/s3/herd.sh LABEL=HAMMER [LABEL=HAMMER ...]
#   e.g. bench/s3/herd.sh before=/tmp/hammer-main after=target/release/fieldstore-hammer
#
# Knobs (environment) [defaults]: WS writer counts ["2 4 8"], REPS rounds
# [2], STEPS flushes per writer [20]. Each writer archives 4 fields of
# 4 KiB per flush. Prints per run: the write window (s), the flush call's
# mean, and requests per flush (e.g. `PUT:412` is a conditional PUT that
# lost its race for a log slot).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 LABEL=HAMMER [LABEL=HAMMER ...]" >&2; exit 2; }
for spec in "$@"; do
    [ -x "${spec#*=}" ] || { echo "not an executable: ${spec#*=}" >&2; exit 2; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/fieldstore-s3-herd.XXXXXX")
source bench/s3/weed.sh
weed_start
weed_config s3 herd >"$dir/config.yaml"
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$FIELDSTORE_WEED" version | head -1)"
steps=${STEPS:-20}
n=0
for rep in $(seq "${REPS:-2}"); do
    for w in ${WS:-2 4 8}; do
        for spec in "$@"; do
            n=$((n + 1))
            rm -rf "$dir/barrier" && mkdir -p "$dir/barrier"
            weed_requests >"$dir/before"
            "${spec#*=}" --config "$dir/config.yaml" --processes "$w" --nsteps "$steps" --nlevels 2 \
                --nparams 2 --field-size 4096 --barrier-dir "$dir/barrier" --expver "$(printf 'h%03d' "$n")" \
                --no-randomise-data >"$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
            weed_requests >"$dir/after"
            window=$(awk '/^write / {print $6}' "$dir/out")
            flush=$(grep -o 'flush [0-9.]*s [0-9]*% ([0-9.]*us/call)' "$dir/out" | grep -o '[0-9.]*us/call' || true)
            per_flush=$(FLUSHES=$((w * steps)) python3 -c '
import os, re, sys
def counts(path):
    out = {}
    for line in open(path):
        m = re.match(r"\S+\{(.*)\}\s+(\S+)", line)
        if m:
            labels = dict(re.findall(r"(\w+)=\"([^\"]*)\"", m.group(1)))
            out[labels.get("type"), labels.get("code")] = float(m.group(2))
    return out
before, after = counts(sys.argv[1]), counts(sys.argv[2])
flushes = int(os.environ["FLUSHES"])
print(" ".join(f"{t}:{c}={(v - before.get((t, c), 0)) / flushes:.2f}"
               for (t, c), v in sorted(after.items()) if v > before.get((t, c), 0)))
' "$dir/before" "$dir/after")
            echo "round $rep W=$w ${spec%%=*}: window ${window} s, flush ${flush}; per flush: $per_flush"
        done
    done
done
