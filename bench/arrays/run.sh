#!/usr/bin/env bash
# The arrays benchmark (docs/benchmarks.md, "Arrays"): sets up a venv under
# target/bench-arrays with fieldstore (built from this checkout), ECMWF's
# pyfdb/fdb5lib and z3fdb, xarray, cfgrib, zarr 3, dask and matplotlib
# (PyPI), writes the cube into DIR (default /tmp/arrays-bench, ~600 MB),
# runs every case REPEAT times (default 3) and writes
# docs/bench/arrays.json and docs/bench/arrays.png.
#
#   bash bench/arrays/run.sh [DIR] [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/venv.sh
dir=${1:-/tmp/arrays-bench}
repeat=${2:-3}
venv=target/bench-arrays/venv
fieldstore_venv "$venv" z3fdb "pyfdb==5.25.0.33" "fdb5lib==5.25.0.33" "eccodeslib==2.50.0.33" \
    "maturin>=1.9,<2" xarray cfgrib "zarr>=3" dask matplotlib
PATH="$PWD/$venv/bin:$PATH" CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1} "$venv/bin/python" -m pip install --quiet \
    --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./crates/fieldstore-py
[ -d "$dir/cube.zarr" ] || "$venv/bin/python" bench/arrays/bench.py prepare "$dir"
"$venv/bin/python" bench/arrays/bench.py run "$dir" --repeat "$repeat" > docs/bench/arrays.json
"$venv/bin/python" bench/arrays/bench.py plot docs/bench/arrays.json docs/bench/arrays.png
"$venv/bin/python" bench/arrays/bench.py table docs/bench/arrays.json
