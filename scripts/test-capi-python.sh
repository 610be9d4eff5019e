#!/usr/bin/env bash
# The C API from Python (crates/fieldstore-capi/tests/python): the real
# legacy pyfdb 0.1.3 (PyPI; cffi over fdb_c, found by findlibs) on
# fieldstore's library, against the same script on FDB5's own libfdb5 (the
# fdb5lib wheel), and earthkit-data's "fdb" source through it.
#
# Two venvs under target/capi-python (kept across runs):
# - venv-fdb5: pyfdb 0.1.3 + fdb5lib (findlibs finds FDB5's library in the
#   fdb5lib package, before any variable);
# - venv: pyfdb 0.1.3 + earthkit-data, cfgrib, xarray, pytest, without
#   fdb5lib, so that findlibs takes FDB5_DIR: fieldstore's library, installed
#   under target/capi-python/prefix by scripts/install-capi.sh. Its
#   eccodeslib and eckitlib are the very files fieldstore's library was
#   linked against (scripts/setup.sh's wheel, the same version): a process
#   must load one ecCodes and one eckit (eckit aborts when two copies
#   register), and Python's eccodes (earthkit, cfgrib) loads them by path.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/venv.sh
prefix=target/capi-python
mkdir -p "$prefix"
pins=("pyfdb==0.1.3" "eccodeslib==2.50.0.33")
oracle=("${pins[@]}" "fdb5lib==5.25.0.33")
deps=("${pins[@]}" "eccodes==2.50.0" pytest earthkit-data cfgrib xarray)
if [ "$(cat "$prefix/venv-fdb5.deps" 2>/dev/null)" != "${oracle[*]}" ]; then
    echo "test-capi-python: installing ${oracle[*]} into $prefix/venv-fdb5" >&2
    fieldstore_venv "$prefix/venv-fdb5" "${oracle[@]}"
    echo "${oracle[*]}" >"$prefix/venv-fdb5.deps"
fi
if [ "$(cat "$prefix/venv.deps" 2>/dev/null)" != "${deps[*]}" ]; then
    echo "test-capi-python: installing ${deps[*]} into $prefix/venv" >&2
    fieldstore_venv "$prefix/venv" "${deps[@]}"
    echo "${deps[*]}" >"$prefix/venv.deps"
fi
# One ecCodes per process: the venv's eccodeslib/eckitlib become the build's.
fieldstore_share_eccodes "$prefix/venv"
# fieldstore's library (the debug build: cargo test --workspace built it).
[ -z "${FIELDSTORE_SETUP_ONLY:-}" ] || exit 0  # installs only (scripts/test-all.sh)
source scripts/debug-build.sh
fieldstore_debug_build fieldstore-capi
bash scripts/install-capi.sh --from "$FIELDSTORE_LIB_DIR" "$prefix/prefix" 2>/dev/null
rc=0
FIELDSTORE_CAPI_PREFIX="$PWD/$prefix/prefix" FIELDSTORE_CAPI_FDB5_PYTHON="$PWD/$prefix/venv-fdb5/bin/python" \
    "$prefix/venv/bin/python" -m pytest crates/fieldstore-capi/tests/python -q -p no:cacheprovider || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "test-capi-python: FAILED: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
