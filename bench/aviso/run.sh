#!/usr/bin/env bash
# run.sh -- Aviso: from a writer's flush returning to a pyaviso listener's
# callback, through `fieldstore notify` and aviso-server 0.13.1 on loopback
# (in-memory backend), 4 writer processes flushing one field at a time;
# beside it the floor, the same listener's latency for notifications posted
# straight to the server at the same rate; and the publisher's CPU per
# flush. The test crates/fieldstore-cli/tests/aviso/bench.rs does the work
# (release build); aviso-server and pyaviso come from scripts/setup-aviso.sh.
#
# Usage: bench/aviso/run.sh
# Knobs (environment) [defaults]:
#   FLUSHES      flushes per writer [2500]
#   INTERVAL_MS  pause of each writer after each flush [10]
#   STEPS_PER_DATE  steps of a forecast, each forecast (date) a dataset; 0: one dataset per writer [100]
#   OUT          the report (JSON) [<repo>/docs/bench/aviso.json]
#   SERVER_NODELAY  1: an experiment, not the benchmark -- aviso-server with TCP_NODELAY forced on
#                the connections it accepts (LD_PRELOAD of bench/aviso/nodelay.c, built with cc), to
#                tell how much of the latency is Nagle's algorithm on its event stream [0]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
source scripts/setup.sh >/dev/null
source scripts/venv.sh
source scripts/setup-aviso.sh
aviso_setup
OUT=${OUT:-$REPO/docs/bench/aviso.json}
SERVER=$AVISO_SERVER_BIN
if [ "${SERVER_NODELAY:-0}" = 1 ]; then
    SHIM=$(mktemp -d)
    trap 'rm -rf "$SHIM"' EXIT
    cc -shared -fPIC -O2 -o "$SHIM/nodelay.so" bench/aviso/nodelay.c -ldl
    printf '#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' "$SHIM/nodelay.so" "$AVISO_SERVER_BIN" >"$SHIM/aviso_server"
    chmod +x "$SHIM/aviso_server"
    SERVER=$SHIM/aviso_server
fi
FIELDSTORE_AVISO_SERVER=$SERVER FIELDSTORE_AVISO_CLIENT=$AVISO_CLIENT_BIN \
FIELDSTORE_AVISO_PYTHON=$(dirname "$AVISO_CLIENT_BIN")/python \
FIELDSTORE_AVISO_BENCH_FLUSHES=${FLUSHES:-2500} FIELDSTORE_AVISO_BENCH_INTERVAL_MS=${INTERVAL_MS:-10} \
FIELDSTORE_AVISO_BENCH_STEPS_PER_DATE=${STEPS_PER_DATE:-100} \
FIELDSTORE_AVISO_BENCH_OUT=$OUT \
    cargo test --release --locked -p fieldstore-cli --test aviso -- --ignored --exact bench::bench_flush_to_listener --nocapture
echo "report: $OUT"
