#!/usr/bin/env bash
# Install fieldstore's libgribjump (crates/fieldstore-gribjump: GribJump
# 0.13's C API, gribjump_c.h, over fieldstore's extraction) under PREFIX, so
# that GribJump's clients find it:
#
#   PREFIX/lib/libgribjump.so              the library (SONAME libgribjump.so)
#   PREFIX/include/gribjump/gribjump_c.h   the header
#   PREFIX/lib/pkgconfig/gribjump.pc
#
#   bash scripts/install-gribjump.sh [--debug] [--from DIR] [PREFIX]   # default PREFIX: target/fieldstore-capi
#
# The default PREFIX is scripts/install-capi.sh's: libgribjump.so beside
# libfdb5.so. Then: C clients build with `pkg-config --cflags --libs
# gribjump` (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig); pygribjump (findlibs)
# finds it with GRIBJUMP_DIR=PREFIX (or GRIBJUMP_HOME) in a Python without
# the gribjumplib package (which findlibs would take first). --debug
# installs the debug build; --from DIR installs what cargo already built in
# DIR (target/<profile>) without building (the tests use it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-lib.sh
install_lib_args install-gribjump fieldstore-gribjump "$@"

install -d "$prefix/lib/pkgconfig" "$prefix/include/gribjump"
# Copy then rename, so that a process using the old library keeps it.
install -m 0755 "$built/libgribjump.so" "$prefix/lib/.libgribjump.so.new"
mv -f "$prefix/lib/.libgribjump.so.new" "$prefix/lib/libgribjump.so"
install -m 0644 crates/fieldstore-gribjump/include/gribjump/gribjump_c.h "$prefix/include/gribjump/gribjump_c.h"

eccodes_dirs=""
if [ -f target/eccodes/lib-dirs ]; then
    eccodes_dirs=$(grep -v '^#' target/eccodes/lib-dirs | paste -sd: || true)
fi
{
    echo "prefix=$prefix"
    echo 'libdir=${prefix}/lib'
    echo 'includedir=${prefix}/include'
    echo
    echo "Name: gribjump"
    echo "Description: GribJump's C API (gribjump_c.h, GribJump 0.13) implemented by fieldstore"
    echo "Version: 0.13.1"
    libs='-L${libdir} -lgribjump -Wl,-rpath,${libdir}'
    if [ -n "$eccodes_dirs" ]; then
        libs="$libs -Wl,-rpath-link,$eccodes_dirs"
    fi
    echo "Libs: $libs"
    echo 'Cflags: -I${includedir}'
} >"$prefix/lib/pkgconfig/gribjump.pc"
echo "install-gribjump: installed fieldstore's libgribjump ($built) under $prefix:" >&2
echo "  C:      cc app.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs gribjump)" >&2
echo "  Python: GRIBJUMP_DIR=$prefix python -c 'import pygribjump'   # without the gribjumplib package" >&2
