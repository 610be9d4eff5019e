# Sourced by scripts/setup.sh: ECMWF's ecCodes for crates/fieldstore-grib.
#
# fieldstore builds and runs against the ecCodes of the PyPI wheel
# `eccodeslib` (pinned below), the very build FDB5's own wheels (fdb5lib,
# pyfdb) use, so that a GRIB message gets the same MARS key in both (ecCodes
# 2.50 puts `timespan` into GRIB2 keys; Debian bookworm's 2.28 does not, and
# the field would land in another collocation). See docs/grib.md.
#
# The wheel goes into a project venv, target/eccodes/venv; the file
# target/eccodes/lib-dirs then names its library directories (ecCodes',
# then eckit's, which libeccodes.so needs), and
# crates/fieldstore-grib/build.rs links against them with an rpath: the
# binaries need no LD_LIBRARY_PATH. Only target/eccodes/lib-dirs matters to
# the build; its first line records what was installed.
#
# Without a usable Python 3.11-3.13 or without PyPI, Debian's libeccodes-dev
# is installed instead and lib-dirs says so (`# system`): fieldstore then
# builds against ecCodes 2.28 and cargo warns that GRIB2 keys will lack
# `timespan`. Delete target/eccodes to try the wheel again.
#
# ECCODES_DIR (an ecCodes install prefix) overrides all of this.
# Idempotent, quiet when there is nothing to do, and safe to run from
# several shells at once (a lock serialises installs).

fieldstore_eccodes_wheel="eccodeslib==2.50.0.33"
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"

fieldstore_setup_eccodes() {
    local root prefix venv stamp
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    prefix="$root/target/eccodes"
    venv="$prefix/venv"
    stamp="$prefix/lib-dirs"
    [ -n "${ECCODES_DIR:-}" ] && return 0
    if [ -f "$stamp" ] && { head -n1 "$stamp" | grep -qx "# $fieldstore_eccodes_wheel" \
        || head -n1 "$stamp" | grep -qx "# system"; }; then
        return 0
    fi
    mkdir -p "$prefix"
    (
        flock 9
        # Another shell may have finished while this one waited.
        if [ -f "$stamp" ] && head -n1 "$stamp" | grep -qx "# $fieldstore_eccodes_wheel"; then
            exit 0
        fi
        echo "setup: installing ecCodes ($fieldstore_eccodes_wheel, PyPI) into $venv" >&2
        if fieldstore_venv "$venv" "$fieldstore_eccodes_wheel"; then
            local site
            site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
            if [ -f "$site/eccodeslib/lib64/libeccodes.so" ] && [ -d "$site/eckitlib/lib64" ]; then
                printf '# %s\n%s\n%s\n' "$fieldstore_eccodes_wheel" \
                    "$site/eccodeslib/lib64" "$site/eckitlib/lib64" >"$stamp.tmp"
                mv "$stamp.tmp" "$stamp"
                exit 0
            fi
            echo "setup: the wheel has no eccodeslib/lib64/libeccodes.so" >&2
        fi
        echo "setup: WARNING: ecCodes from PyPI unavailable; using Debian's libeccodes-dev" \
            "(GRIB2 keys will lack 'timespan' and differ from FDB5's; see docs/grib.md)" >&2
        if ! dpkg -s libeccodes-dev >/dev/null 2>&1 && ! pkg-config --exists eccodes 2>/dev/null; then
            if command -v apt-get >/dev/null 2>&1; then
                apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libeccodes-dev
            else
                echo "setup: ecCodes not found; install it (Debian: libeccodes-dev) or set ECCODES_DIR" >&2
                exit 1
            fi
        fi
        printf '# system\n' >"$stamp.tmp"
        mv "$stamp.tmp" "$stamp"
    ) 9>"$prefix/.lock"
}

fieldstore_setup_eccodes
