#!/usr/bin/env bash
# pygribjump and Polytope on fieldstore's libgribjump against FDB5 +
# GribJump 0.13 (docs/benchmarks.md, "pygribjump and Polytope"): the same
# N CCSDS fields on the 0.25° grid (bench/extract/make_fields.py) archived
# into FDB5 (GribJump's jump info by gribjump-scan) and fieldstore; then,
# warm, the same pygribjump client and Polytope's requests on both
# libraries, interleaved request by request (interleaved.py: wall time and
# time inside the library, medians and quartiles over REPS). Both sides:
# GRIBJUMP_THREADS=4, OPENBLAS_NUM_THREADS=1 (NumPy's spinning BLAS threads
# take a core of this 2-core machine from whichever side runs). Python
# packages: scripts/test-gribjump-python.sh's cache.
#
#   bench/gribjump/run.sh              # N=1000, REPS=15
#   N=200 REPS=3 bench/gribjump/run.sh
#   SAME_HEAP=0 bench/gribjump/run.sh  # without the second pass (same malloc state)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
N=${N:-1000}
REPS=${REPS:-15}
WORK=${WORK:-${TMPDIR:-/tmp}/fieldstore-gribjump-bench}
cache=${FIELDSTORE_CACHE:-$HOME/.cache/fieldstore}/gribjump-python
cd "$REPO"
source scripts/setup.sh >/dev/null
# The venv (and the libraries): the test's setup, without its tests.
bash scripts/test-gribjump-python.sh --collect-only -q >/dev/null
cargo build --release --locked -p fieldstore-gribjump -p fieldstore-cli
target=${CARGO_TARGET_DIR:-target}
bash scripts/install-gribjump.sh --from "$target/release" "$WORK/prefix" 2>/dev/null
PY=$cache/venv/bin/python
SP=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$WORK/fdb5" "$WORK/fieldstore" && mkdir -p "$WORK/fdb5"
echo "== writing $N fields with ecCodes" >&2
"$PY" bench/extract/make_fields.py "$WORK/fields.grib" "$N"
MD5=$("$PY" -c 'import eccodes, sys
f = open(sys.argv[1], "rb"); h = eccodes.codes_grib_new_from_file(f); print(eccodes.codes_get(h, "md5GridSection"))' "$WORK/fields.grib")
cat >"$WORK/fdb5.yaml" <<YAML
type: local
engine: toc
schema: $REPO/tests/fixtures/schema/ecmwf.schema
spaces:
  - handler: Default
    roots:
      - path: $WORK/fdb5
YAML
echo "type: local" >"$WORK/gribjump.yaml"
(cd "$WORK" && "$PY" "$REPO/bench/gribjump/polytope_cases.py" "$N" "$MD5" >cases.json)
clean_env=(env -u FIELDSTORE_CONFIG -u FIELDSTORE_ROOT -u FDB_HOME -u FDB5_HOME -u FDB5_CONFIG_FILE
    -u FDB_CONFIG_FILE -u GRIBJUMP_CONFIG_FILE -u GRIBJUMP_DIR -u PYTHONPATH GRIBJUMP_THREADS=4 OPENBLAS_NUM_THREADS=1)
oracle=("${clean_env[@]}" PYTHONPATH="$cache/oracle" FDB5_CONFIG_FILE="$WORK/fdb5.yaml"
    GRIBJUMP_CONFIG_FILE="$WORK/gribjump.yaml")
ours=("${clean_env[@]}" GRIBJUMP_DIR="$WORK/prefix" FIELDSTORE_ROOT="$WORK/fieldstore")
echo "== FDB5 archive and gribjump-scan" >&2
t0=$(date +%s.%N)
"${oracle[@]}" "$PY" -c "import pyfdb, sys; f = pyfdb.FDB(); f.archive(open(sys.argv[1], 'rb').read()); f.flush()" \
    "$WORK/fields.grib"
t1=$(date +%s.%N)
"${oracle[@]}" LD_LIBRARY_PATH="$cache/oracle/gribjumplib/lib64:$SP/fdb5lib/lib64:$SP/eckitlib/lib64:$SP/metkitlib/lib64:$SP/eccodeslib/lib64" \
    "$cache/oracle/gribjumplib/bin/gribjump-scan" \
    "class=od,expver=0001,stream=oper,date=20240101,time=0000,domain=g,type=fc,levtype=sfc,param=167,step=0/to/$((N - 1))" >/dev/null
t2=$(date +%s.%N)
echo "== fieldstore archive" >&2
"${ours[@]}" "$target/release/fieldstore" archive -q "$WORK/fields.grib"
t3=$(date +%s.%N)
python3 -c "import json, sys; a = [float(x) for x in sys.argv[1:]]; print(json.dumps({'what': 'archive', 'fdb5_s': round(a[1]-a[0], 3), 'gribjump_scan_s': round(a[2]-a[1], 3), 'fieldstore_s': round(a[3]-a[2], 3)}))" \
    "$t0" "$t1" "$t2" "$t3" >"$WORK/results.jsonl"
# Identical answers first: Polytope's CoverageJSON on both (compared in
# summary.py), pygribjump's values (checked per repetition below).
for side in oracle ours; do
    eval "run=(\"\${${side}[@]}\")"
    echo "== Polytope on $side (answers)" >&2
    (cd "$WORK" && "${run[@]}" "$PY" "$REPO/crates/fieldstore-gribjump/tests/python/polytope_run.py" cases.json hashes.json \
        "polytope-$side.json" >/dev/null 2>&1)
done
# Then the measurements, interleaved request by request (interleaved.py).
echo "== pygribjump and Polytope, interleaved, $REPS repetitions (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
env_words() { local skip=1; for w in "$@"; do [ "$w" = env ] && continue; case "$w" in -u) skip=2; continue;; esac
    if [ "$skip" = 2 ]; then skip=1; continue; fi; [[ "$w" == *=* ]] && printf '%s\n' "$w"; done; }
mapfile -t oracle_env < <(env_words "${oracle[@]}")
mapfile -t ours_env < <(env_words "${ours[@]}")
"$PY" bench/gribjump/interleaved.py "$REPS" "$N" "$MD5" "$WORK/cases.json" "$WORK/hashes.json" \
    -- "${oracle_env[@]}" -- "${ours_env[@]}" >>"$WORK/results.jsonl"
# Again with both processes in the same glibc malloc state: the block
# metkit's static initialiser frees in GribJump's process (15,659,008
# bytes, which raises glibc's mmap and trim thresholds there) freed on both
# sides first (interleaved.py's worker). SAME_HEAP=0 skips it.
if [ "${SAME_HEAP:-1}" = 1 ]; then
    echo "== again, both processes in the same malloc state (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    bump=FIELDSTORE_BENCH_HEAP_BUMP=15659008
    "$PY" bench/gribjump/interleaved.py "$REPS" "$N" "$MD5" "$WORK/cases.json" "$WORK/hashes.json" \
        -- "${oracle_env[@]}" "$bump" -- "${ours_env[@]}" "$bump" >>"$WORK/results.jsonl"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$PY" bench/gribjump/summary.py "$WORK"
