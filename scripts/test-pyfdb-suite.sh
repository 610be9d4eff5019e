#!/usr/bin/env bash
# The legacy pyfdb 0.1.3 in a plain venv, on fieldstore's library (FDB5_DIR):
# pyfdb==0.1.3, eccodes, eccodeslib/eckitlib wheels of their own (not the
# files the library was built against, unlike scripts/test-capi-python.sh),
# pytest, numpy, GitPython; in target/pyfdb-suite/venv (kept across runs).
#
# 1. crates/fieldstore-capi/tests/plain_venv: one ecCodes and one eckit in
#    the process whether pyfdb or eccodes is imported first.
# 2. pyfdb 0.1.3's own test suite, unchanged (18 tests), from
#    PYFDB_SOURCE: a checkout of ecmwf/pyfdb at tag 0.1.3 (or an export of
#    it; `git archive 0.1.3`). Its tests need conftest.py, tests/util.py and
#    tests/data/*.grib, which the sdist on PyPI (pyfdb-0.1.3.tar.gz) does
#    not carry: without PYFDB_SOURCE the sdist is downloaded and looked at;
#    it runs from there if it carries them, else this part is skipped,
#    saying why (GitHub is out of CI's reach).
#
#   PYFDB_SOURCE=/path/to/pyfdb-0.1.3 bash scripts/test-pyfdb-suite.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/venv.sh
work=target/pyfdb-suite
mkdir -p "$work"
deps=("pyfdb==0.1.3" "eccodes==2.50.0" "eccodeslib==2.50.0.33" pytest numpy GitPython)
if [ "$(cat "$work/venv.deps" 2>/dev/null)" != "${deps[*]}" ]; then
    echo "test-pyfdb-suite: installing ${deps[*]} into $work/venv" >&2
    fieldstore_venv "$work/venv" "${deps[@]}"
    echo "${deps[*]}" >"$work/venv.deps"
fi
py="$PWD/$work/venv/bin/python"
[ -z "${FIELDSTORE_SETUP_ONLY:-}" ] || exit 0  # installs only (scripts/test-all.sh)
source scripts/debug-build.sh
fieldstore_debug_build fieldstore-capi
bash scripts/install-capi.sh --from "$FIELDSTORE_LIB_DIR" "$work/prefix" 2>/dev/null
prefix="$PWD/$work/prefix"
built=""
if grep -qv '^#' target/eccodes/lib-dirs 2>/dev/null; then
    built="$(grep -v '^#' target/eccodes/lib-dirs | head -n1)/libeccodes.so"
fi

echo "== one ecCodes whichever is imported first (plain venv)"
if [ -z "$built" ]; then
    echo "test-pyfdb-suite: FAILED: fieldstore was not built against scripts/setup.sh's ecCodes wheel" >&2
    exit 1
fi
FIELDSTORE_CAPI_PREFIX="$prefix" FIELDSTORE_BUILD_ECCODES="$built" \
    "$py" -m pytest crates/fieldstore-capi/tests/plain_venv -q -p no:cacheprovider

echo "== pyfdb 0.1.3's own tests, unchanged"
# Its tests find their data through the git repository they are in
# (tests/util.py: GitPython's rev-parse --show-toplevel).
has_suite() { [ -f "$1/conftest.py" ] && [ -f "$1/tests/util.py" ] && [ -f "$1/tests/data/x138-300.grib" ]; }
src=${PYFDB_SOURCE:-}
# The suite kept beside the repository for CI (../shared/peer, its README).
peer=$(cd "$(dirname "$0")/.." && pwd)/../shared/peer/pyfdb-0.1.3
if [ -z "$src" ] && has_suite "$peer"; then
    src=$peer
fi
if [ -z "$src" ]; then
    sdist="$work/sdist"
    rm -rf "$sdist"
    mkdir -p "$sdist"
    "$py" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
        -d "$sdist" "pyfdb==0.1.3"
    tar xzf "$sdist"/pyfdb-0.1.3.tar.gz -C "$sdist"
    if has_suite "$sdist/pyfdb-0.1.3"; then
        src="$sdist/pyfdb-0.1.3"
    else
        missing=""
        for f in conftest.py tests/util.py tests/data/x138-300.grib; do
            [ -e "$sdist/pyfdb-0.1.3/$f" ] || missing="$missing $f"
        done
        echo "test-pyfdb-suite: SKIPPED pyfdb 0.1.3's suite: PyPI's sdist lacks$missing" \
            "(its tests cannot run from it); set PYFDB_SOURCE to a checkout of ecmwf/pyfdb 0.1.3" >&2
        exit 0
    fi
fi
if ! has_suite "$src"; then
    echo "test-pyfdb-suite: PYFDB_SOURCE=$src has no conftest.py, tests/util.py and tests/data" >&2
    exit 2
fi
run="$work/run"
rm -rf "$run"
mkdir -p "$run"
# A copy, made a git repository of its own when it is none (an export).
cp -a "$src/." "$run/"
if ! git -C "$run" rev-parse --show-toplevel >/dev/null 2>&1 ||
    [ "$(cd "$run" && git rev-parse --show-toplevel)" != "$(cd "$run" && pwd -P)" ]; then
    git -C "$run" init -q
fi
rc=0
(cd "$run" && FDB5_DIR="$prefix" "$py" -m pytest -q -p no:cacheprovider --junitxml=junit.xml) || rc=$?
if [ "$rc" -ne 0 ]; then
    echo "test-pyfdb-suite: FAILED: pyfdb 0.1.3's suite (pytest exit $rc)" >&2
    exit 1
fi
tests=$(sed -n 's/.*<testsuite [^>]*tests="\([0-9]*\)".*/\1/p' "$run/junit.xml" | head -n1)
if [ "${tests:-0}" -lt 18 ]; then
    echo "test-pyfdb-suite: FAILED: pyfdb 0.1.3's suite ran ${tests:-0} tests, expected 18" >&2
    exit 1
fi
echo "test-pyfdb-suite: pyfdb 0.1.3's suite: all $tests passed" >&2
