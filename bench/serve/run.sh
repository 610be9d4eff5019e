#!/usr/bin/env bash
# FDB5's remote protocol on loopback, server against server: FDB5's own client (the wheel's
# fdb-hammer, pyfdb 5.25) against FDB5's `fdb-server` and against `fieldstore serve`, side by side
# in one run (bench/serve/serve_bench.py says what is measured). Results: docs/benchmarks.md,
# "Remote access".
#
# Usage: bench/serve/run.sh [serve_bench.py options]
#   e.g. bench/serve/run.sh --sizes 64k,1m --procs 1,4 --reps 3
# Knobs (environment): WORK [${TMPDIR:-/tmp}/fieldstore-serve-bench], OUT JSON
# [$WORK/serve.json], KINDS [fdb5,fieldstore] (fdb5 alone needs no fieldstore build).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
source scripts/setup.sh
WORK=${WORK:-${TMPDIR:-/tmp}/fieldstore-serve-bench}
OUT=${OUT:-$WORK/serve.json}
KINDS=${KINDS:-fdb5,fieldstore}
PY=$(bash scripts/setup-fdb5.sh)
BIN=/bin/false
if [[ $KINDS == *fieldstore* ]]; then
    cargo build --release --locked -p fieldstore-cli >&2
    BIN=$REPO/target/release/fieldstore
fi
mkdir -p "$WORK"
"$PY" bench/serve/serve_bench.py --work "$WORK" --fieldstore "$BIN" --kinds "$KINDS" --json "$OUT" "$@"
echo "report: $OUT" >&2
