#!/usr/bin/env bash
# The extraction benchmark (issue 29, docs/benchmarks.md "Extraction"): the
# same CCSDS-packed fields on a 1,038,240-point grid, written with ecCodes,
# archived into FDB5 + GribJump and into fieldstore, side by side in one
# run; then the same extractions on both, warm. Needs scripts/setup.sh's
# ecCodes and a venv with pygribjump/gribjumplib 0.13.1.33, pyfdb, eccodes
# and numpy (made here under target/gribjump/venv if missing).
#
#   bench/extract/run.sh            # N=1000 fields, BIG=10000 small fields
#   N=200 BIG=0 bench/extract/run.sh
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
N=${N:-1000}
BIG=${BIG:-10000}
REPS=${REPS:-3}
WORK=${WORK:-${TMPDIR:-/tmp}/fieldstore-extract-bench}
VENV=${VENV:-$REPO/target/gribjump/venv}
cd "$REPO"
source scripts/setup.sh >/dev/null
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q pygribjump==0.13.1.33 gribjumplib==0.13.1.33 pyfdb==5.25.0.33 eccodes numpy
fi
PY=$VENV/bin/python
SP=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$WORK" && mkdir -p "$WORK/fdb5" "$WORK/fieldstore"
echo "== writing $N fields (and $BIG small ones) with ecCodes" >&2
"$PY" bench/extract/make_fields.py "$WORK/fields.grib" "$N"
if [ "$BIG" -gt 0 ]; then "$PY" bench/extract/make_fields.py "$WORK/big.grib" "$BIG" 360 181; fi
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
echo "== FDB5 + GribJump" >&2
(
    export LD_LIBRARY_PATH=$SP/gribjumplib/lib64:$SP/fdb5lib/lib64:$SP/eckitlib/lib64:$SP/metkitlib/lib64:$SP/eccodeslib/lib64
    export PATH=$SP/gribjumplib/bin:$SP/fdb5lib/bin:$PATH
    export FDB5_CONFIG_FILE=$WORK/fdb5.yaml GRIBJUMP_CONFIG_FILE=$WORK/gribjump.yaml GRIBJUMP_THREADS=4
    "$PY" bench/extract/gribjump_side.py "$WORK/fields.grib" "$N" "$REPS"
) | grep '^{' >"$WORK/gribjump.jsonl"
echo "== fieldstore" >&2
BIG_ENV=()
if [ "$BIG" -gt 0 ]; then BIG_ENV=(FIELDSTORE_EXTRACT_BIG_GRIB="$WORK/big.grib"); fi
env FIELDSTORE_EXTRACT_GRIB="$WORK/fields.grib" FIELDSTORE_EXTRACT_ROOT="$WORK/fieldstore" REPS="$REPS" \
    "${BIG_ENV[@]}" cargo bench -q --locked -p fieldstore-grib --bench extract >"$WORK/fieldstore.jsonl"
"$PY" bench/extract/summary.py "$WORK/gribjump.jsonl" "$WORK/fieldstore.jsonl"
