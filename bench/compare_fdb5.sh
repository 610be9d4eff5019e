#!/usr/bin/env bash
# compare_fdb5.sh -- fieldstore and the real ECMWF FDB5 side by side, in one run, on the same
# file system: the hammer workload (explicit keys) with 1 MiB and 64 KiB fields, 1/2/4
# processes, pattern A (write, drop caches, read, list) and w+r contention (P = W writers +
# R readers, W = R = P/2). FDB5 runs through pyfdb (bench/fdb5_pyfdb_hammer.py), fieldstore
# through `fieldstore-hammer` (crates/fieldstore-hammer); both use the same process layout,
# barrier, keys and global-timing-bandwidth arithmetic. Prints ratios (fieldstore / FDB5),
# writes a CSV and a JSON of the medians, and a plot.
#
# Usage: bench/compare_fdb5.sh
# Knobs (environment) [defaults]:
#   FDB5_VENV   venv with pyfdb fdb5lib eccodes matplotlib, created if missing, OUTSIDE the repo
#               [${XDG_CACHE_HOME:-$HOME/.cache}/fieldstore-bench/venv-fdb5]
#   WORK        stores, configs, raw JSON reports   [${TMPDIR:-/tmp}/fieldstore-compare]
#   OUT         where the plot and the summary JSON go [<repo>/docs/bench]
#   REPS        repetitions per configuration, interleaved between the systems (medians reported) [4]
#   SIZES       "1m 64k"      PROCS "1 2 4"      PATTERNS "a wr scatter"
#               scatter = write WL_SCATTER, drop the page cache, then read only the first
#               parameter of every (step, level): one field in nparams, scattered through the
#               files (post-processing reading one variable), 1 MiB fields only
#   WL_SCATTER  "nsteps nlevels nparams" written per process for scatter ["8 20 10"]
#   WL_1M       "nsteps nlevels nparams" per process, 1 MiB fields  ["4 10 10"]  (400 fields)
#   WL_64K      same, 64 KiB fields                                  ["4 10 50"]  (2000 fields)
#   READ_MULT   w+r: readers read this many times the steps a writer writes [2]
#   BATCH       fields per retrieve, both systems: step | all [all]
#   PHYS_MIB    MiB per physical-limit test (dd-like, measured by fieldstore-hammer) [1024]
#   HAMMER      a fieldstore-hammer binary to use instead of building one
#   DROP_CACHES 1 = drop the page cache before read phases (needs root) [1]
#   FDB_HAMMER  1 = also run FDB5's own C++ fdb-hammer (pattern A; keys decoded from GRIB by
#               ecCodes, the wheel binary's start-up crash worked around) against fieldstore
#               archiving the same GRIB template with explicit keys [1]
#   HAMMER_REPS repetitions of those runs [2]        HAMMER_PROCS  processes ["1 2"]
#   BARE        1 = pattern A also writes its bytes with its fdatasyncs bare, no store
#               (`--scenario bare`): the disk's ceiling for the workload, same run [1]
#   QUIET_IDLE  before each pair of runs, wait until the machine was this % idle over 1 s ... [70]
#   QUIET_MAX   ... but at most this many seconds [3]  (others' CPU share is recorded per phase:
#               column "others' CPU %" of the results)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
FDB5_VENV=${FDB5_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/fieldstore-bench/venv-fdb5}
WORK=${WORK:-${TMPDIR:-/tmp}/fieldstore-compare}
OUT=${OUT:-$REPO/docs/bench}
REPS=${REPS:-4}
SIZES=${SIZES:-"1m 64k"}
PROCS=${PROCS:-"1 2 4"}
PATTERNS=${PATTERNS:-"a wr scatter"}
WL_1M=${WL_1M:-"4 10 10"}
WL_64K=${WL_64K:-"4 10 50"}
WL_SCATTER=${WL_SCATTER:-"8 20 10"}
READ_MULT=${READ_MULT:-2}
BATCH=${BATCH:-all}
PHYS_MIB=${PHYS_MIB:-1024}
DROP_CACHES=${DROP_CACHES:-1}
FDB_HAMMER=${FDB_HAMMER:-1}
HAMMER_REPS=${HAMMER_REPS:-2}
HAMMER_PROCS=${HAMMER_PROCS:-"1 2"}
BARE=${BARE:-1}
QUIET_IDLE=${QUIET_IDLE:-70}
QUIET_MAX=${QUIET_MAX:-3}

idle_pct() { # idle % of the machine over the next second
    local a b
    read -r -a a < <(head -1 /proc/stat)
    sleep 1
    read -r -a b < <(head -1 /proc/stat)
    local ta=0 tb=0 i
    for i in 1 2 3 4 5 6 7 8; do ta=$((ta + a[i])); tb=$((tb + b[i])); done
    local idle=$(((b[4] + b[5]) - (a[4] + a[5]))) tot=$((tb - ta))
    [ "$tot" -gt 0 ] && echo $((100 * idle / tot)) || echo 100
}
quiet_wait() {
    local t0=$SECONDS idle
    while :; do
        idle=$(idle_pct)
        [ "$idle" -ge "$QUIET_IDLE" ] && return
        [ $((SECONDS - t0)) -ge "$QUIET_MAX" ] && { log "machine only ${idle}% idle; going on"; return; }
    done
}
log() { printf '[compare %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---- the real FDB5, in a venv outside the repository ----------------------------------------
PY=$FDB5_VENV/bin/python
if ! "$PY" -c 'import pyfdb, matplotlib' 2>/dev/null; then
    log "installing FDB5 (pyfdb fdb5lib eccodes) and matplotlib into $FDB5_VENV"
    mkdir -p "$(dirname "$FDB5_VENV")"
    [ -x "$PY" ] || python3 -m venv "$FDB5_VENV"
    "$PY" -m pip install -q --upgrade pip
    "$PY" -m pip install -q pyfdb fdb5lib eccodes matplotlib
fi

# ---- fieldstore, release build ----------------------------------------------------------------
if [ -z "${HAMMER:-}" ]; then
    log "building fieldstore-hammer (release)"
    (cd "$REPO" && cargo build -q --release -p fieldstore-hammer)
    TARGET=${CARGO_TARGET_DIR:-$REPO/target}
    # A private copy: a build by someone else during the run must not swap the binary under us.
    mkdir -p "$WORK"
    cp "$TARGET/release/fieldstore-hammer" "$WORK/fieldstore-hammer"
    HAMMER=$WORK/fieldstore-hammer
fi
[ -x "$HAMMER" ] || die "no $HAMMER"

# ---- stores: both on the same file system -----------------------------------------------------
mkdir -p "$WORK"/{fdb5,results,fdbhome} "$OUT"
WORK=$(cd "$WORK" && pwd)
FS_ROOT=$WORK/fs-root
FDB_ROOT=$WORK/fdb5/root
cp "$REPO/crates/fieldstore-hammer/src/hammer.schema" "$WORK/fdb5/schema"
cat >"$WORK/fdb5/config.yaml" <<EOF
---
type: local
engine: toc
schema: $WORK/fdb5/schema
spaces:
- handler: Default
  roots:
  - path: $FDB_ROOT
EOF
# A private, empty FDB_HOME: system-wide FDB files (/etc/fdb) must not leak into libfdb5.
export FDB_HOME=$WORK/fdbhome
FDB_CONFIG=$WORK/fdb5/config.yaml
HELPER=$REPO/bench/fdb5_pyfdb_hammer.py
# One directory per run: a later (say, shortened) run must not delete this one's raw reports.
RES=$WORK/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RES"
wipe() { rm -rf "$FS_ROOT" "$FDB_ROOT"; mkdir -p "$FS_ROOT" "$FDB_ROOT"; }
wipe

# metkit rejects paramIds unknown for the stream/type/levtype on retrieve: use ones FDB5 accepts,
# and the very same ones for fieldstore.
PARAMS=$("$PY" "$HELPER" params --config "$FDB_CONFIG" --nparams 64 | tail -1)
[ -n "$PARAMS" ] || die "no valid params found"

# Cold reads (the method of docs/benchmarks.md): both harnesses drop the page
# cache only when asked.
DROP=(--drop-caches)
[ "$DROP_CACHES" = 1 ] || DROP=(--no-drop-caches)

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc: $(nproc)"
    free -g | sed -n 2p | awk '{print "memory GiB total/used/free/cache: "$2"/"$3"/"$4"/"$6}'
    echo "disk: $(df -hT "$WORK" | tail -1 | awk '{print $1" "$2" "$3}')"
    echo "kernel: $(uname -r)"
    echo "fieldstore: $(cd "$REPO" && git rev-parse --short HEAD)"
    echo "fdb5: $("$PY" -m pip list 2>/dev/null | grep -iE '^(pyfdb|fdb5lib) ' | tr -s ' ' | tr '\n' ' ')"
    echo "workloads: 1m=[$WL_1M] 64k=[$WL_64K] reps=$REPS batch=$BATCH read_mult=$READ_MULT"
} >"$RES/machine.txt"
cat "$RES/machine.txt" >&2

log "physical limits (before)"
"$HAMMER" --physical-only --root "$FS_ROOT" --physical-mib "$PHYS_MIB" --processes 2 \
    --repetitions 2 --json >"$RES/physical_before.json"

common_args() { # <size> -> ARGS shared by both systems
    local ns nl np bytes
    case $1 in
        1m) read -r ns nl np <<<"$WL_1M"; bytes=1048576 ;;
        64k) read -r ns nl np <<<"$WL_64K"; bytes=65536 ;;
        *) die "size $1" ;;
    esac
    ARGS=(--nsteps "$ns" --nlevels "$nl" --nparams "$np" --params "$PARAMS" --field-size "$bytes"
          --read-multiplier "$READ_MULT" --batch "$BATCH" "${DROP[@]}")
}

scatter_run() { # <system> <tag> <rep>: write the full shape, then read one parameter in nparams
    local ns nl np
    read -r ns nl np <<<"$WL_SCATTER"
    local W=(--nsteps "$ns" --nlevels "$nl" --params "$PARAMS" --field-size 1048576 --batch "$BATCH"
             "${DROP[@]}" "${PARGS[@]}")
    if [ "$1" = fdb5 ]; then
        "$PY" "$HELPER" run --config "$FDB_CONFIG" --scenario write --nparams "$np" "${W[@]}" \
            --json "$RES/scatterwrite_$1_$2_r$3.json" >/dev/null
        "$PY" "$HELPER" run --config "$FDB_CONFIG" --scenario read --nparams 1 "${W[@]}" \
            --json "$RES/fdb5_$2_r$3.json" >/dev/null
    else
        "$HAMMER" --root "$FS_ROOT" --no-randomise-data --nparams "$np" "${W[@]}" --json \
            >"$RES/scatterwrite_$1_$2_r$3.json"
        "$HAMMER" --root "$FS_ROOT" --read --nparams 1 "${W[@]}" --json \
            >"$RES/fieldstore_$2_r$3.json"
    fi
}

START=$(date +%s)
n=0
for size in $SIZES; do
    common_args "$size"
    for pattern in $PATTERNS; do
        for P in $PROCS; do
            if [ "$pattern" = scatter ]; then
                [ "$size" = 1m ] || continue
                PARGS=(--processes "$P")
            elif [ "$pattern" = wr ]; then
                [ "$P" -ge 2 ] || continue
                W=$((P / 2))
                PARGS=(--processes "$W" --readers "$W")
            else
                PARGS=(--processes "$P")
            fi
            tag="${size}_${pattern}_P${P}"
            # Repetitions are interleaved (fdb5, fieldstore, fieldstore, fdb5, ...) so that slow
            # drifts of the machine and other tenants' load hit both systems alike.
            for ((rep = 1; rep <= REPS; rep++)); do
                order="fdb5 fieldstore"; [ $((n % 2)) = 1 ] && order="fieldstore fdb5"
                # Pattern A also writes the same bytes with the same fdatasyncs bare (no store):
                # the disk's ceiling for this workload, in the same run. The three take turns
                # at going first: the run right after another one's files were removed reuses
                # their freed pages, the first of a repetition more often pays this VM's
                # page-touch cost (Method in docs/benchmarks.md).
                if [ "$pattern" = a ] && [ "$BARE" = 1 ]; then
                    case $((n % 3)) in
                        0) order="fdb5 fieldstore bare" ;;
                        1) order="fieldstore bare fdb5" ;;
                        2) order="bare fdb5 fieldstore" ;;
                    esac
                fi
                n=$((n + 1))
                [ "$QUIET_MAX" -gt 0 ] && quiet_wait
                for sys in $order; do
                    wipe
                    log "$sys $tag rep $rep (load $(cut -d' ' -f1-3 /proc/loadavg))"
                    if [ "$sys" = bare ]; then
                        "$HAMMER" --root "$FS_ROOT" --scenario bare "${ARGS[@]}" "${PARGS[@]}" \
                            --json >"$RES/bare_${tag}_r$rep.json"
                    elif [ "$pattern" = scatter ]; then
                        scatter_run "$sys" "$tag" "$rep"
                    elif [ "$sys" = fdb5 ]; then
                        "$PY" "$HELPER" run --config "$FDB_CONFIG" --scenario "$pattern" "${ARGS[@]}" \
                            "${PARGS[@]}" --json "$RES/fdb5_${tag}_r$rep.json" >/dev/null
                    else
                        "$HAMMER" --root "$FS_ROOT" --scenario "$pattern" --no-randomise-data \
                            "${ARGS[@]}" "${PARGS[@]}" --json >"$RES/fieldstore_${tag}_r$rep.json"
                    fi
                done
            done
        done
    done
done
wipe

if [ "$FDB_HAMMER" = 1 ]; then
    # FDB5's own benchmark tool. It derives keys from the GRIB message (ecCodes), which adds
    # `domain`: its schema has `domain?` in the dataset rule.
    HSET=$WORK/fdb-hammer
    log "fdb-hammer (C++): runnable copy and GRIB templates in $HSET"
    "$PY" "$HELPER" hammer-setup --out "$HSET" >&2
    sed 's/\[ class, expver, stream, date, time$/[ class, expver, stream, date, time, domain?/' \
        "$REPO/crates/fieldstore-hammer/src/hammer.schema" >"$HSET/schema"
    sed "s#schema: .*#schema: $HSET/schema#" "$FDB_CONFIG" >"$HSET/config.yaml"
    for size in $SIZES; do
        common_args "$size"
        for P in $HAMMER_PROCS; do
            tag="${size}_a_P${P}"
            for ((rep = 1; rep <= HAMMER_REPS; rep++)); do
                order="fdbhammer fieldstoretmpl"; [ $((n % 2)) = 1 ] && order="fieldstoretmpl fdbhammer"
                n=$((n + 1))
                [ "$QUIET_MAX" -gt 0 ] && quiet_wait
                for sys in $order; do
                    wipe
                    log "$sys $tag rep $rep (load $(cut -d' ' -f1-3 /proc/loadavg))"
                    if [ "$sys" = fdbhammer ]; then
                        "$PY" "$HELPER" hammer-run --setup "$HSET" --config "$HSET/config.yaml" \
                            --template "$HSET/tmpl_$size.grib" --processes "$P" "${ARGS[@]:0:6}" \
                            "${DROP[@]}" --json "$RES/fdbhammer_${tag}_r$rep.json" >/dev/null
                    else
                        "$HAMMER" --root "$FS_ROOT" --scenario a --no-randomise-data \
                            --template "$HSET/tmpl_$size.grib" --processes "$P" "${ARGS[@]:0:6}" \
                            --batch "$BATCH" "${DROP[@]}" --json >"$RES/fieldstoretmpl_${tag}_r$rep.json"
                    fi
                done
            done
        done
    done
    wipe
fi

log "physical limits (after)"
"$HAMMER" --physical-only --root "$FS_ROOT" --physical-mib "$PHYS_MIB" --processes 2 \
    --repetitions 2 --json >"$RES/physical_after.json"
rm -rf "$FS_ROOT" "$FDB_ROOT"

log "benchmark took $(($(date +%s) - START)) s"
"$PY" "$HELPER" summarise --csv "$RES/summary.csv" --out-json "$OUT/compare.json" \
    --plot "$OUT/compare.png" "$RES"/fieldstore_*.json "$RES"/fdb5_*.json \
    $(ls "$RES"/fdbhammer_*.json "$RES"/fieldstoretmpl_*.json "$RES"/bare_*.json 2>/dev/null)
"$PY" - "$RES" "$OUT/compare.json" <<'PYEOF'
import json, sys, glob, statistics
res, out = sys.argv[1], sys.argv[2]
vals = {"write_fdatasync_mib_s": [], "write_streams_mib_s": [], "write_odirect_mib_s": [],
        "read_odirect_mib_s": [], "read_buffered_mib_s": [], "read_scattered_mib_s": []}
for p in ("physical_before", "physical_after"):
    r = json.load(open(f"{res}/{p}.json"))
    for rep in r["repetitions"]:
        ph = rep.get("physical") or {}
        for k in vals:
            if ph.get(k) is not None:
                vals[k].append(ph[k])
phys = {k: statistics.median(v) for k, v in vals.items() if v}
print("\nphysical limits, same file system, same run (median of 4, MiB/s): "
      + ", ".join(f"{k} {v:.0f}" for k, v in phys.items()))
doc = json.load(open(out))
doc["physical"] = phys
doc["machine"] = open(f"{res}/machine.txt").read()
json.dump(doc, open(out, "w"), indent=1)
PYEOF
cp "$RES/summary.csv" "$OUT/compare.csv"
log "results: $OUT/compare.csv, $OUT/compare.json, $OUT/compare.png (raw reports: $RES)"
