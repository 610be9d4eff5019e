#!/usr/bin/env bash
# Install fieldstore's C library (crates/fieldstore-capi: FDB5's fdb_c.h
# over fieldstore) under PREFIX, so that FDB5's clients find it:
#
#   PREFIX/lib/libfieldstore.so        the library (SONAME libfieldstore.so)
#   PREFIX/lib/libfdb5.so              -> libfieldstore.so: the name FDB5's
#                                         clients link with (-lfdb5) and
#                                         findlibs looks for
#   PREFIX/lib/libfieldstore.a         the static library
#   PREFIX/include/fdb5/api/fdb_c.h    the header (#include "fdb5/api/fdb_c.h")
#   PREFIX/lib/pkgconfig/fieldstore.pc and fdb5.pc
#
#   bash scripts/install-capi.sh [--debug] [--from DIR] [PREFIX]    # default PREFIX: target/fieldstore-capi
#
# Then: C and Fortran clients build with `pkg-config --cflags --libs fdb5`
# (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig); Python's legacy pyfdb (findlibs)
# finds it with FDB5_DIR=PREFIX (or FDB5_HOME). --debug installs the debug
# build (faster to build); --from DIR installs the libraries cargo already
# built in DIR (target/<profile>) without building (the tests use it). The
# library finds ecCodes where
# it was built against (scripts/setup.sh's wheel, or the system's), or next
# to itself.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-lib.sh
install_lib_args install-capi fieldstore-capi "$@"

install -d "$prefix/lib/pkgconfig" "$prefix/include/fdb5/api"
# Copy then rename, so that a process using the old library keeps it.
install -m 0755 "$built/libfieldstore_capi.so" "$prefix/lib/.libfieldstore.so.new"
mv -f "$prefix/lib/.libfieldstore.so.new" "$prefix/lib/libfieldstore.so"
ln -sfn libfieldstore.so "$prefix/lib/libfdb5.so"
install -m 0644 "$built/libfieldstore_capi.a" "$prefix/lib/libfieldstore.a"
install -m 0644 crates/fieldstore-capi/include/fdb5/api/fdb_c.h "$prefix/include/fdb5/api/fdb_c.h"

# ecCodes' directories: the linker needs them to check the library's own
# dependencies when a client links (-rpath-link), and static links need them
# (as DT_RPATH, which also serves libeccodes' own dependencies on eckit).
eccodes_dirs=""
if [ -f target/eccodes/lib-dirs ]; then
    eccodes_dirs=$(grep -v '^#' target/eccodes/lib-dirs | paste -sd: || true)
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
for name in fieldstore fdb5; do
    {
        echo "prefix=$prefix"
        echo 'libdir=${prefix}/lib'
        echo 'includedir=${prefix}/include'
        echo
        echo "Name: $name"
        echo "Description: FDB5's C API (fdb_c.h, FDB5 5.25) implemented by fieldstore"
        echo "Version: $version"
        libs='-L${libdir} -lfieldstore -Wl,-rpath,${libdir}'
        private='-leccodes -ldl -lgcc_s -lutil -lrt -lpthread -lm -lc'
        if [ -n "$eccodes_dirs" ]; then
            libs="$libs -Wl,-rpath-link,$eccodes_dirs"
            private="-L${eccodes_dirs//:/ -L} -Wl,--disable-new-dtags -Wl,-rpath,$eccodes_dirs $private"
        fi
        echo "Libs: $libs"
        echo "Libs.private: $private"
        echo 'Cflags: -I${includedir}'
    } >"$prefix/lib/pkgconfig/$name.pc"
done
echo "install-capi: installed fieldstore's C library ($built) under $prefix:" >&2
echo "  C:      cc app.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs fdb5)" >&2
echo "  Python: FDB5_DIR=$prefix python -c 'import pyfdb'   # legacy pyfdb 0.1.x, through findlibs" >&2
