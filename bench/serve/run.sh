#!/usr/bin/env bash
# FDB5's remote protocol on loopback: FDB5's own client (the wheel's fdb-hammer, pyfdb 5.25)
# against FDB5's `fdb-server` and against `fieldstore serve`, and fieldstore's own client
# (fieldstore-hammer, type: remote) against `fieldstore serve`, side by side in one run
# (bench/serve/serve_bench.py says what is measured). Results: docs/benchmarks.md, "Remote access".
# The scale-out simulation is bench/serve/scaleout.py (same binaries).
#
# Usage: bench/serve/run.sh [serve_bench.py options]
#   e.g. bench/serve/run.sh --sizes 64k,1m --procs 1,4 --reps 3
# Knobs (environment): WORK [${TMPDIR:-/tmp}/fieldstore-serve-bench], OUT JSON
# [$WORK/serve.json], KINDS [fdb5,fieldstore,fsclient] (fdb5 alone needs no fieldstore build).
# fsclient's round trip uses fieldstore's Python package from scripts/test-python.sh's venv, when
# it exists (else pass --fs-python, or the round trip is left out for fsclient).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
source scripts/setup.sh
WORK=${WORK:-${TMPDIR:-/tmp}/fieldstore-serve-bench}
OUT=${OUT:-$WORK/serve.json}
KINDS=${KINDS:-fdb5,fieldstore,fsclient}
PY=$(bash scripts/setup-fdb5.sh)
BIN=/bin/false
if [[ $KINDS != fdb5 ]]; then
    cargo build --release --locked -p fieldstore-cli -p fieldstore-hammer >&2
    BIN=$REPO/target/release/fieldstore
fi
mkdir -p "$WORK"
FS_PY=()
if [ -x target/fieldstore-py/venv/bin/python ]; then
    FS_PY=(--fs-python "$REPO/target/fieldstore-py/venv/bin/python")
fi
"$PY" bench/serve/serve_bench.py --work "$WORK" --fieldstore "$BIN" --kinds "$KINDS" --json "$OUT" \
    "${FS_PY[@]}" "$@"
echo "report: $OUT" >&2
