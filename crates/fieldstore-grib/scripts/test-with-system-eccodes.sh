#!/usr/bin/env bash
# Run fieldstore-grib's tests against the ecCodes of the PyPI wheels (the
# `eccodeslib` package FDB5's wheels use, 2.50 when the oracle was recorded)
# instead of the system's (Debian bookworm: 2.28). With 2.50 every fixture key
# must equal tests/fixtures/oracle/ecmwf-splits.tsv exactly, `timespan`
# included.
#
#   bash crates/fieldstore-grib/scripts/test-with-eccodes-wheel.sh VENV
#
# VENV: a Python venv with `pip install eccodes` (which brings eccodeslib and
# eckitlib). The test binaries are linked against the system's
# libeccodes.so.0; a symlink of that name to the wheel's library, first on
# LD_LIBRARY_PATH, swaps it at run time.
set -euo pipefail
venv=${1:?usage: $0 VENV}
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
lib="$site/eccodeslib/lib64/libeccodes.so"
[ -f "$lib" ] || { echo "no $lib: pip install eccodes into $venv" >&2; exit 1; }
cd "$(dirname "$0")/../../.."
source scripts/setup.sh
cargo test -p fieldstore-grib --no-run --locked
version=$("$venv/bin/python" -c 'import eccodeslib; print(".".join(eccodeslib.__version__.split(".")[:3]))')
swap=$(mktemp -d)
trap 'rm -rf "$swap"' EXIT
ln -s "$lib" "$swap/libeccodes.so.0"
FIELDSTORE_GRIB_EXPECT_ECCODES=$version \
LD_LIBRARY_PATH="$swap:$site/eccodeslib/lib64:$site/eckitlib/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    cargo test -p fieldstore-grib --locked
