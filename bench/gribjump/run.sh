#!/usr/bin/env bash
# pygribjump and Polytope on fieldstore's libgribjump against FDB5 +
# GribJump 0.13 (docs/benchmarks.md, "pygribjump and Polytope"): the same
# N CCSDS fields on the 0.25° grid (bench/extract/make_fields.py) archived
# into FDB5 (GribJump's jump info by gribjump-scan) and fieldstore; then,
# warm, the same pygribjump client on both libraries
# (pygribjump_bench.py), and Polytope's requests end to end with the time
# spent inside the library (polytope_run.py --time). GRIBJUMP_THREADS=4 for
# both. Python packages: scripts/test-gribjump-python.sh's cache.
#
#   bench/gribjump/run.sh              # N=1000, REPS=3
#   N=200 REPS=2 bench/gribjump/run.sh
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
N=${N:-1000}
REPS=${REPS:-3}
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
    -u FDB_CONFIG_FILE -u GRIBJUMP_CONFIG_FILE -u GRIBJUMP_DIR -u PYTHONPATH GRIBJUMP_THREADS=4)
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
for side in oracle ours; do
    eval "run=(\"\${${side}[@]}\")"
    echo "== pygribjump on $side" >&2
    "${run[@]}" "$PY" bench/gribjump/pygribjump_bench.py "$N" "$MD5" "$REPS" | sed "s/^{/{\"side\": \"$side\", /" >>"$WORK/results.jsonl"
    echo "== Polytope on $side" >&2
    (cd "$WORK" && "${run[@]}" "$PY" "$REPO/crates/fieldstore-gribjump/tests/python/polytope_run.py" cases.json hashes.json \
        "polytope-$side.json" --time "$REPS" >/dev/null 2>&1)
done
"$PY" bench/gribjump/summary.py "$WORK"
