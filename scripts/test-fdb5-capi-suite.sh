#!/usr/bin/env bash
# FDB5's own C API test, tests/fdb/api/test_fdb_c.cc, unchanged, built
# against fieldstore's library instead of FDB5's and run as FDB5's CMake
# runs it (FDB_HOME a build directory whose etc/fdb/config.yaml and schema
# are FDB5's tests/fdb/etc/fdb files with @PROJECT_BINARY_DIR@ filled in;
# the working directory holds the test's three GRIB files).
#
#   FDB5_SOURCE=/path/to/fdb FDB5_TEST_DATA=/path/to/pyfdb-0.1.3/tests/data \
#       bash scripts/test-fdb5-capi-suite.sh
#
# FDB5_SOURCE: a checkout (or export) of ecmwf/fdb holding
# tests/fdb/api/test_fdb_c.cc and tests/fdb/etc/fdb. FDB5_TEST_DATA: a
# directory with x138-300.grib, x138-400.grib, y138-400.grib (FDB5's CMake
# downloads them from ECMWF's test-data server; pyfdb 0.1.3's tests/data
# has the same files); default: $PYFDB_SOURCE/tests/data.
#
# Without FDB5_SOURCE this says it skipped and why: no package CI can reach
# carries FDB5's test sources (PyPI's fdb5lib and pyfdb 5.x are wheels
# without sdists; Debian's source package `fdb` is 5.10.8, whose tarballs
# deb.debian.org does not serve here), and GitHub is out of CI's reach.
#
# What it needs besides the test: fieldstore's header and library
# (scripts/install-capi.sh), eckit's headers and library (the eckitlib
# wheel fieldstore was built against, scripts/setup.sh), and two FDB5
# headers the test includes (fdb5/database/Key.h, fdb5/fdb5_config.h),
# taken from the fdb5lib wheel (PyPI). FDB5's library is not linked: every
# fdb_* call goes to fieldstore's.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${FDB5_SOURCE:-}
test_cc=${src:+$src/tests/fdb/api/test_fdb_c.cc}
etc=${src:+$src/tests/fdb/etc/fdb}
# The test kept beside the repository for CI (../shared/peer, its README):
# the test and its schema; its config is written here (FDB5's test
# config's shape: a writable root and a second one read, listed and wiped).
peer=$PWD/../shared/peer
if [ -z "$src" ] && [ -f "$peer/fdb5_capi_test/test_fdb_c.cc" ] && [ -f "$peer/fdb5_capi_test/schema" ]; then
    src=$peer/fdb5_capi_test
    test_cc=$src/test_fdb_c.cc
    etc=""
    : "${FDB5_TEST_DATA:=$peer/pyfdb-0.1.3/tests/data}"
fi
if [ -z "$src" ]; then
    echo "test-fdb5-capi-suite: SKIPPED FDB5's tests/fdb/api/test_fdb_c.cc: FDB5_SOURCE is not set" \
        "and ../shared/peer/fdb5_capi_test is absent (no package on PyPI or Debian that CI reaches" \
        "carries FDB5's test sources; see this script)" >&2
    exit 0
fi
if [ ! -f "$test_cc" ] || { [ -n "$etc" ] && { [ ! -f "$etc/config.yaml" ] || [ ! -f "$etc/schema" ]; }; }; then
    echo "test-fdb5-capi-suite: FDB5_SOURCE=$src lacks tests/fdb/api/test_fdb_c.cc or tests/fdb/etc/fdb/{config.yaml,schema}" >&2
    exit 2
fi
data=${FDB5_TEST_DATA:-${PYFDB_SOURCE:+$PYFDB_SOURCE/tests/data}}
for f in x138-300.grib x138-400.grib y138-400.grib; do
    if [ -z "$data" ] || [ ! -f "$data/$f" ]; then
        echo "test-fdb5-capi-suite: no $f in FDB5_TEST_DATA (or \$PYFDB_SOURCE/tests/data): '${data}'" >&2
        exit 2
    fi
done
source scripts/setup.sh
source scripts/venv.sh
work=$PWD/target/fdb5-suite
mkdir -p "$work"
if ! grep -qv '^#' target/eccodes/lib-dirs 2>/dev/null; then
    echo "test-fdb5-capi-suite: needs the eccodeslib/eckitlib wheels of scripts/setup.sh (target/eccodes/lib-dirs)" >&2
    exit 2
fi
eckit_lib=$(grep -v '^#' target/eccodes/lib-dirs | sed -n 2p)
eckit_include=$(dirname "$eckit_lib")/include
if [ ! -f "$eckit_include/eckit/testing/Test.h" ]; then
    echo "test-fdb5-capi-suite: no eckit headers at $eckit_include" >&2
    exit 2
fi
# FDB5's two headers, from its wheel (unpacked, not installed).
wheel=fdb5lib==5.25.0.33
if [ "$(cat "$work/fdb5lib.pin" 2>/dev/null)" != "$wheel" ]; then
    [ -x "$work/venv/bin/pip" ] || fieldstore_venv "$work/venv" pip
    rm -rf "$work/wheel" "$work/fdb5lib"
    "$work/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
        -d "$work/wheel" "$wheel"
    "$work/venv/bin/python" -m zipfile -e "$work"/wheel/fdb5lib-*.whl "$work/fdb5lib"
    echo "$wheel" >"$work/fdb5lib.pin"
fi
fdb5_include="$work/fdb5lib/fdb5lib/include"
[ -f "$fdb5_include/fdb5/database/Key.h" ] || { echo "test-fdb5-capi-suite: $wheel has no include/fdb5/database/Key.h" >&2; exit 2; }

source scripts/debug-build.sh
fieldstore_debug_build fieldstore-capi
bash scripts/install-capi.sh --from "$FIELDSTORE_LIB_DIR" "$work/prefix" 2>/dev/null
prefix="$work/prefix"

# FDB5's CMake, by hand: configure_file(@ONLY) of etc/fdb, the roots, the
# data next to the test.
build="$work/build"
rm -rf "$build"
mkdir -p "$build/etc/fdb" "$build/tests/fdb/root" "$build/tests/fdb/root2" "$build/tests/fdb/api"
if [ -n "$etc" ]; then
    for f in config.yaml schema; do
        sed "s|@PROJECT_BINARY_DIR@|$build|g" "$etc/$f" >"$build/etc/fdb/$f"
    done
else
    cp "$src/schema" "$build/etc/fdb/schema"
    cat >"$build/etc/fdb/config.yaml" <<EOF
type: local
engine: toc
schema: $build/etc/fdb/schema
spaces:
- handler: Default
  roots:
  - {path: $build/tests/fdb/root, writable: true, visit: true}
  - {path: $build/tests/fdb/root2, wipe: true, archive: false, list: true, retrieve: true}
EOF
fi
cp "$data"/x138-300.grib "$data"/x138-400.grib "$data"/y138-400.grib "$build/tests/fdb/api/"
# fieldstore's fdb_c.h first: the test is compiled against fieldstore's header.
c++ -std=c++17 -o "$build/tests/fdb/api/fdb_test_api_fdb_c" "$test_cc" \
    -I"$prefix/include" -I"$fdb5_include" -I"$eckit_include" \
    -L"$prefix/lib" -lfieldstore -L"$eckit_lib" -leckit \
    -Wl,--disable-new-dtags -Wl,-rpath,"$prefix/lib:$eckit_lib"
echo "== FDB5's test_fdb_c.cc on fieldstore's library ($test_cc)"
rc=0
(cd "$build/tests/fdb/api" && FDB_HOME="$build" ./fdb_test_api_fdb_c) >"$build/output.txt" 2>&1 || rc=$?
grep -E '^(Running|Completed|FAILED|Test failed)|tests failed out of|^  ' "$build/output.txt" | grep -v '^  *k=' || true
summary=$(grep -E '[0-9]+ tests failed out of [0-9]+' "$build/output.txt" | tail -n1 || true)
if [ "$rc" -ne 0 ] || [ -z "$summary" ] || ! grep -qE '^0 tests failed' <<<"$summary"; then
    echo "test-fdb5-capi-suite: FAILED (exit $rc): ${summary:-no summary}; output in $build/output.txt" >&2
    exit 1
fi
echo "test-fdb5-capi-suite: $summary" >&2
