#!/usr/bin/env bash
# The main job on the embedded default store: archive real GRIB files,
# list, retrieve, axes, and a short hammer run. Works on a fresh Debian
# machine with a Rust toolchain (scripts/setup.sh installs the rest).
#
# The store lives in $FIELDSTORE_ROOT (default: ./fieldstore-data, created
# on first use); this script uses a fresh one under target/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cargo build --release --locked -q -p fieldstore-cli
fs="$PWD/target/release/fieldstore"
export FIELDSTORE_ROOT="$PWD/target/demo/fieldstore-data"
rm -rf "$PWD/target/demo" && mkdir -p "$PWD/target/demo"
unset FIELDSTORE_CONFIG

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "fieldstore info"
"$fs" info

step "archive every GRIB fixture (keys from each message's MARS metadata)"
"$fs" archive tests/fixtures/grib/*.grib

step "list everything of class rd"
"$fs" list class=rd

step "list datasets only, and the axes of class od"
"$fs" list --depth 1
"$fs" axes class=od

step "retrieve two fields into one GRIB file"
"$fs" retrieve 'class=e6,expver=5659,stream=oper,date=20161230,time=1800,type=fc,levtype=sfc,step=6/12,param=167' \
    -o target/demo/out.grib
ls -l target/demo/out.grib

step "where are they"
"$fs" where 'class=e6,expver=5659,stream=oper,date=20161230,time=1800,type=fc,levtype=sfc,step=6/12,param=167'

# Without --drop-caches: the read is warm, and nothing outside the demo is
# touched (--drop-caches empties the whole machine's page cache).
step "a short hammer run: 2 processes, 64 KiB fields, write then read then list (pattern A)"
mkdir -p target/demo/hammer
"$fs" hammer --root target/demo/hammer --scenario a --processes 2 --nsteps 3 --nensembles 2 --nlevels 5 \
    --nparams 4 --field-size 65536 --full-check
