#!/usr/bin/env bash
# bare_pairs.sh -- the POSIX store's write phase against bare writes of the same bytes and
# fdatasyncs (`--scenario bare`), and one build against another, in one interleaved run: each
# round runs bare and every given binary once, in an order that rotates from round to round,
# each into a fresh root on the same file system. Prints one line per run (fields/s, window,
# CPU, load average, other tenants' CPU share), then medians and paired ratios (each round's
# runs divided), which a loaded machine's drifts hit alike. Pattern A's write phase of
# bench/compare_fdb5.sh, without FDB5 (docs/benchmarks.md, POSIX section).
#
# Usage: bench/bare_pairs.sh LABEL=HAMMER [LABEL=HAMMER ...]
#   e.g. bench/bare_pairs.sh before=/tmp/hammer-main after=target/release/fieldstore-hammer
#   One build given twice (a=H b=H) shows the run's own noise: on this VM such pairs had
#   medians of 0.95-1.05 and single rounds of 0.68-1.36 (2026-11-30, docs/benchmarks.md).
#   Two builds: check that the binaries differ (cmp) before believing a ratio.
# Knobs (environment) [defaults]:
#   PROCS   processes per run, one run set each        ["1 2"]
#   REPS    rounds                                      [20]
#   WL      "nsteps nlevels nparams" per process        ["4 10 50"]  (2000 fields)
#   SIZE    field bytes                                 [65536]
#   ROOT    the store's root (removed and made again before every run) [/tmp/fieldstore-bare-pairs]
#   BARE    the binary whose `--scenario bare` is the ceiling [the first one given]
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 LABEL=HAMMER [LABEL=HAMMER ...]" >&2; exit 2; }
PROCS=${PROCS:-"1 2"}
REPS=${REPS:-20}
WL=${WL:-"4 10 50"}
SIZE=${SIZE:-65536}
ROOT=${ROOT:-/tmp/fieldstore-bare-pairs}
first=${1#*=}
BARE=${BARE:-$first}
for spec in "$@"; do
    [ -x "${spec#*=}" ] || { echo "not an executable: ${spec#*=}" >&2; exit 2; }
done
read -r ns nl np <<<"$WL"
W=(--nsteps "$ns" --nlevels "$nl" --nparams "$np" --field-size "$SIZE" --no-randomise-data --json)
OUT=$(mktemp)
trap 'rm -rf "$OUT" "$ROOT"' EXIT

one() { # <label> <P> <binary> [args]: one run, one JSON line
    local label=$1 procs=$2 bin=$3
    shift 3
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    "$bin" --root "$ROOT" "${W[@]}" --processes "$procs" "$@" 2>/dev/null |
        LABEL=$label LOAD="$(cut -d' ' -f1 /proc/loadavg)" python3 -c '
import json, os, sys
row = json.load(sys.stdin)["repetitions"][0]["rows"][0]
print(json.dumps({"label": os.environ["LABEL"], "procs": row["procs"],
    "fps": row["fields_per_s"], "window_ms": 1000 * row["window_s"],
    "cpu_ms": 1000 * row["cpu_s"], "others_pct": row.get("others_cpu_pct"),
    "load": float(os.environ["LOAD"])}))'
}

specs=("bare=$BARE" "$@")
for procs in $PROCS; do
    for ((round = 0; round < REPS; round++)); do
        for ((k = 0; k < ${#specs[@]}; k++)); do
            spec=${specs[$(((k + round) % ${#specs[@]}))]}
            label=${spec%%=*}
            if [ "$label" = bare ]; then
                one bare "$procs" "${spec#*=}" --scenario bare
            else
                one "$label" "$procs" "${spec#*=}"
            fi
        done | tee -a "$OUT"
    done
done

python3 - "$OUT" <<'EOF'
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
labels = list(dict.fromkeys(r["label"] for r in runs))
def spread(xs):
    xs = sorted(xs)
    return f"{st.median(xs):.3f} ({xs[0]:.3f}-{xs[-1]:.3f})"
for procs in sorted({r["procs"] for r in runs}):
    rs = [r for r in runs if r["procs"] == procs]
    rounds = [rs[i:i + len(labels)] for i in range(0, len(rs), len(labels))]
    by = {l: [next(r for r in rd if r["label"] == l) for rd in rounds] for l in labels}
    loads = [r["load"] for r in rs]
    print(f"\nP={procs}: {len(rounds)} rounds, load average {min(loads):.2f}-{max(loads):.2f}")
    for l in labels:
        xs = by[l]
        others = [x["others_pct"] for x in xs if x["others_pct"] is not None]
        print(f"  {l:8s} fields/s {st.median(x['fps'] for x in xs):8.0f}   window ms "
              f"{st.median(x['window_ms'] for x in xs):6.1f}   CPU ms {st.median(x['cpu_ms'] for x in xs):6.1f}"
              + (f"   others' CPU {st.median(others):.0f} %" if others else ""))
    for i, a in enumerate(labels):
        for b in labels[:i]:
            print(f"  {a} / {b} (paired, median and range): "
                  + spread([x["fps"] / y["fps"] for x, y in zip(by[a], by[b])]))
EOF
