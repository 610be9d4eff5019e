#!/usr/bin/env bash
# follow_fdb5.sh -- post-processing following the writers, fieldstore against the real FDB5, in
# one run on one file system: W writer processes flush one step at a time (one flush per step and
# member) while R reader processes read every member's fields of each step as soon as it is
# flushed. fieldstore's readers watch (`fieldstore hammer --scenario follow --follow watch`) or,
# as a baseline, poll `list` (`--follow poll`); FDB5's readers poll `list` through pyfdb at the
# best rate it allows (no pause; FDB5 has no way to wait). Reports per system the flush-to-visible
# latency (writer's flush returned -> reader has the list element; one clock), the readers'
# bandwidth and the writers' share of their bandwidth alone; medians over REPS interleaved runs.
#
# Usage: bench/follow_fdb5.sh
# Knobs (environment) [defaults]:
#   FDB5_VENV  venv with pyfdb fdb5lib [target/fdb5/venv, from scripts/setup-fdb5.sh]
#   WORK       stores and raw reports [${TMPDIR:-/tmp}/fieldstore-follow]
#   OUT        summary JSON [<repo>/docs/bench/follow.json]
#   REPS [3]   W [4] writers   R [4] readers   SIZES ["64k 1m"]
#   WL         "nsteps nlevels nparams" per writer ["20 10 2"]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/fieldstore-follow}
OUT=${OUT:-$REPO/docs/bench/follow.json}
REPS=${REPS:-3}
W=${W:-4}
R=${R:-4}
SIZES=${SIZES:-"64k 1m"}
read -r NS NL NP <<<"${WL:-20 10 2}"
PY=${FDB5_VENV:+$FDB5_VENV/bin/python}
PY=${PY:-$(bash "$REPO/scripts/setup-fdb5.sh")}
(cd "$REPO" && source scripts/setup.sh >/dev/null && cargo build --release -q -p fieldstore-hammer)
HAMMER=$REPO/target/release/fieldstore-hammer
HELPER=$REPO/bench/fdb5_pyfdb_hammer.py
rm -rf "$WORK"; mkdir -p "$WORK"/{fdb5,fdbhome,results}
cp "$REPO/crates/fieldstore-hammer/src/hammer.schema" "$WORK/fdb5/schema"
cat >"$WORK/fdb5/config.yaml" <<YAML
---
type: local
engine: toc
schema: $WORK/fdb5/schema
spaces:
- handler: Default
  roots:
  - path: $WORK/fdb5/root
YAML
export FDB_HOME=$WORK/fdbhome
fresh() { rm -rf "$WORK/fs-root" "$WORK/fdb5/root"; mkdir -p "$WORK/fs-root" "$WORK/fdb5/root"; }
fresh
# metkit refuses paramIds unknown for the stream/type/levtype: the same valid ones for both.
PARAMS=$("$PY" "$HELPER" params --config "$WORK/fdb5/config.yaml" --nparams "$NP" | tail -1)
[ -n "$PARAMS" ] || { echo "follow_fdb5: no paramIds FDB5 accepts" >&2; exit 1; }
for size in $SIZES; do
    case $size in 64k) bytes=65536 ;; 1m) bytes=1048576 ;; *) echo "size $size?" >&2; exit 2 ;; esac
    ARGS=(--processes "$W" --readers "$R" --nsteps "$NS" --nlevels "$NL" --nparams "$NP"
          --params "$PARAMS" --field-size "$bytes")
    for rep in $(seq 1 "$REPS"); do
        for sys in fs-watch fs-poll fdb5-poll; do
            fresh
            out=$WORK/results/$sys-$size-$rep.json
            case $sys in
                fs-watch) "$HAMMER" --root "$WORK/fs-root" --scenario follow --follow watch \
                              --no-drop-caches --json "${ARGS[@]}" >"$out" ;;
                fs-poll) "$HAMMER" --root "$WORK/fs-root" --scenario follow --follow poll \
                              --no-drop-caches --json "${ARGS[@]}" >"$out" ;;
                fdb5-poll) "$PY" "$HELPER" run --config "$WORK/fdb5/config.yaml" --scenario follow \
                               --no-drop-caches --json "$out" "${ARGS[@]}" >/dev/null ;;
            esac
        done
    done
done
"$PY" - "$WORK/results" "$OUT" <<'PYEOF'
import json, statistics, sys, glob, os, datetime, platform
res, out = sys.argv[1], sys.argv[2]
rows = {}
for f in sorted(glob.glob(os.path.join(res, "*.json"))):
    sysname, size, rep = os.path.basename(f)[:-5].rsplit("-", 2)
    r = json.load(open(f))
    for rw in r["repetitions"][0]["rows"]:
        rows.setdefault((size, sysname), []).append(rw)
def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
summary = []
print(f"{'size':<5} {'system':<10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'readers MiB/s':>14} {'writers kept %':>15}")
for (size, sysname), rws in sorted(rows.items()):
    by = lambda ph: [x for x in rws if x["phase"] == ph]
    lat = [x.get("latency") for x in by("follow-read")]
    lat = [l for l in lat if l]
    alone = med([x["gtb_mib_s"] for x in by("write-alone")])
    wfol = med([x["gtb_mib_s"] for x in by("follow-write")])
    s = {"size": size, "system": sysname,
         "p50_ms": med([l["p50_ms"] for l in lat]), "p99_ms": med([l["p99_ms"] for l in lat]),
         "max_ms": med([l["max_ms"] for l in lat]),
         "readers_mib_s": med([x["gtb_mib_s"] for x in by("follow-read")]),
         "writers_alone_mib_s": alone, "writers_following_mib_s": wfol,
         "writers_kept_pct": wfol / alone * 100 if alone and wfol else None,
         "reader_cpu_s": med([x["cpu_s"] for x in by("follow-read")]),
         "runs": len(lat)}
    summary.append(s)
    f = lambda v, d=2: "-" if v is None else f"{v:.{d}f}"
    print(f"{size:<5} {sysname:<10} {f(s['p50_ms']):>8} {f(s['p99_ms']):>8} {f(s['max_ms']):>8} "
          f"{f(s['readers_mib_s'],1):>14} {f(s['writers_kept_pct'],0):>15}")
json.dump({"date": datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z",
           "machine": f"{platform.node()} {os.cpu_count()} cpus", "summary": summary},
          open(out, "w"), indent=1)
PYEOF
