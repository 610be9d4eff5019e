#!/usr/bin/env bash
# Polytope and pygribjump on fieldstore's libgribjump
# (crates/fieldstore-gribjump/tests/python): the unmodified pygribjump
# 0.13.1 and polytope-mars 0.3.14 (polytope-python 2.1.20, covjsonkit
# 0.2.26), all from PyPI, against FDB5 + GribJump 0.13 from their wheels on
# the same GRIB fields, CoverageJSON compared value for value.
#
# Python packages under ~/.cache/fieldstore/gribjump-python (kept across
# runs and clones; FIELDSTORE_CACHE moves it):
# - venv: pygribjump, polytope-mars, pyfdb 5.25 (FDB5's side), eccodes
#   (writes the fields), pytest; not gribjumplib, so that findlibs takes
#   GRIBJUMP_DIR: fieldstore's library;
# - oracle: the gribjumplib wheel alone (pip --target), put on PYTHONPATH
#   for GribJump's side only (findlibs takes the package first).
#
#   bash scripts/test-gribjump-python.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/venv.sh
cache=${FIELDSTORE_CACHE:-$HOME/.cache/fieldstore}/gribjump-python
mkdir -p "$cache"
deps=("pygribjump==0.13.1.33" "pyfdb==5.25.0.33" "fdb5lib==5.25.0.33" "eccodes==2.50.0" "eccodeslib==2.50.0.33" pytest)
# Pure-Python packages published as source only (polytope-mars) are built
# by pip; the rest are wheels.
polytope=("polytope-mars==0.3.14" "polytope-python==2.1.20" "covjsonkit==0.2.26")
oracle=("gribjumplib==0.13.1.33")
want="${deps[*]} ${polytope[*]} ${oracle[*]}"
if [ "$(cat "$cache/installed" 2>/dev/null)" != "$want" ]; then
    (
        flock 9
        if [ "$(cat "$cache/installed" 2>/dev/null)" != "$want" ]; then
            echo "test-gribjump-python: installing $want (PyPI) under $cache" >&2
            fieldstore_venv "$cache/venv" "${deps[@]}"
            "$cache/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${polytope[@]}"
            rm -rf "$cache/oracle"
            "$cache/venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
                --no-deps --target "$cache/oracle" "${oracle[@]}"
            echo "$want" >"$cache/installed"
        fi
    ) 9>"$cache/.lock"
fi
# fieldstore's library and CLI (debug builds), the library installed as
# libgribjump.so under target/gribjump-python/prefix; the C API (libfdb5.so,
# which a test archives through) under target/gribjump-python/capi.
[ -z "${FIELDSTORE_SETUP_ONLY:-}" ] || exit 0  # installs only (scripts/test-all.sh)
source scripts/debug-build.sh
fieldstore_debug_build fieldstore-gribjump fieldstore-cli fieldstore-capi
prefix=target/gribjump-python/prefix
bash scripts/install-gribjump.sh --from "$FIELDSTORE_LIB_DIR" "$prefix" 2>/dev/null
bash scripts/install-capi.sh --from "$FIELDSTORE_LIB_DIR" target/gribjump-python/capi 2>/dev/null
# fieldstore's Python package, where scripts/test-python.sh built it (an
# earlier stage of scripts/test-all.sh): a test archives through it.
# FIELDSTORE_PY_PYTHON set beforehand names another.
py=target/fieldstore-py/venv/bin/python
if [ -n "${FIELDSTORE_PY_PYTHON:-}" ]; then
    :
elif [ -x "$py" ] && "$py" -c 'import fieldstore' 2>/dev/null; then
    export FIELDSTORE_PY_PYTHON="$PWD/$py"
else
    echo "test-gribjump-python: fieldstore's Python package is not built (scripts/test-python.sh): its test skips" >&2
fi
rc=0
FIELDSTORE_GRIBJUMP_PREFIX="$PWD/$prefix" FIELDSTORE_GRIBJUMP_ORACLE="$cache/oracle" \
    FIELDSTORE_CAPI_PREFIX="$PWD/target/gribjump-python/capi" \
    FIELDSTORE_CLI="$FIELDSTORE_DEBUG_DIR/fieldstore" \
    "$cache/venv/bin/python" -m pytest crates/fieldstore-gribjump/tests/python -q -p no:cacheprovider "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "test-gribjump-python: FAILED: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
