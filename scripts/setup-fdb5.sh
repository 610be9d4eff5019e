#!/usr/bin/env bash
# The real FDB5 (ECMWF's PyPI wheels: pyfdb, fdb5lib, eccodes, and through
# them the same eccodeslib fieldstore builds with) in a venv under target/fdb5, for
# the agreement test (crates/fieldstore-cli/tests/fdb5_agreement.rs, which
# runs this script itself). Prints the venv's python. Idempotent: a second
# run only checks a stamp; safe to run from several processes at once.
#
#   bash scripts/setup-fdb5.sh        # -> /…/target/fdb5/venv/bin/python
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix="$root/target/fdb5"
venv="$prefix/venv"
# Pinned together: fdb5lib 5.25.0.33 requires eccodeslib==2.50.0.33, the
# ecCodes of scripts/setup-eccodes.sh. (The Python `eccodes` writes GRIB
# files for the benchmarks: crates/fieldstore-grib/scripts.)
packages=("pyfdb==5.25.0.33" "fdb5lib==5.25.0.33" "eccodes==2.50.0")
stamp="$prefix/installed"
want="${packages[*]}"
mkdir -p "$prefix"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    (
        flock 9
        if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
            echo "setup-fdb5: installing ${packages[*]} (PyPI) into $venv" >&2
            fieldstore_venv "$venv" "${packages[@]}" >&2
            echo "$want" >"$stamp"
        fi
    ) 9>"$prefix/.lock"
fi
echo "$venv/bin/python"
