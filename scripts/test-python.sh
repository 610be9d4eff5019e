#!/usr/bin/env bash
# The Python package's tests (crates/fieldstore-py): builds the extension
# into a venv under target/fieldstore-py (kept across runs: after the first
# run only changed code is rebuilt) and runs pytest, with the real pyfdb of
# scripts/setup-fdb5.sh for the drop-in test, earthkit-data, cfgrib and
# xarray for the recipe test, and dask and zarr for the array views' tests
# (FIELDSTORE_PY_STRICT=1: nothing may skip).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
prefix=target/fieldstore-py
venv="$prefix/venv"
# maturin and eccodeslib: the build runs without isolation, against the
# eccodeslib of this venv (see crates/fieldstore-py/build_backend/).
deps=(pytest "maturin>=1.9,<2" "eccodeslib==2.50.0.33" earthkit-data cfgrib xarray dask "zarr>=3")
mkdir -p "$prefix"
if [ "$(cat "$prefix/deps" 2>/dev/null)" != "${deps[*]}" ]; then
    echo "test-python: installing ${deps[*]} into $venv" >&2
    fieldstore_venv "$venv" "${deps[@]}"
    echo "${deps[*]}" >"$prefix/deps"
fi
# The real pyfdb (its own venv, shared with the CLI's agreement test).
pyfdb_python=$(bash scripts/setup-fdb5.sh)
# cfgrib's own sample files (issue 28's cases were found on them), from the
# sdist of the cfgrib the venv uses, fetched once: test_cfgrib_samples.py.
cfgrib_version=$("$venv/bin/python" -c "import cfgrib; print(cfgrib.__version__)")
samples="$prefix/cfgrib-$cfgrib_version/tests/sample-data"
if [ ! -d "$samples" ]; then
    tmp=$(mktemp -d)
    if "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-binary :all: "cfgrib==$cfgrib_version" -d "$tmp" >/dev/null 2>&1; then
        tar -xzf "$tmp"/cfgrib-*.tar.gz -C "$prefix" "cfgrib-$cfgrib_version/tests/sample-data" || true
    fi
    rm -rf "$tmp"
fi
[ -d "$samples" ] || echo "test-python: cfgrib's sample files are not available; test_cfgrib_samples.py skips" >&2
# Other centres' real GRIB (NCEP, Environment Canada, DMI, ZAMG…), from
# pygrib's sdist, fetched once from PyPI (pip cannot download an sdist it
# cannot build here): test_foreign.py.
pygrib_samples="$prefix/pygrib-2.1.8/sampledata"
if [ ! -d "$pygrib_samples" ]; then
    "$venv/bin/python" - "$prefix" <<'PY' || true
import hashlib, io, json, sys, tarfile, urllib.request
meta = json.load(urllib.request.urlopen("https://pypi.org/pypi/pygrib/json", timeout=60))
files = meta.get("releases", {}).get("2.1.8") or meta["urls"]
sdist = next(u for u in files if u["packagetype"] == "sdist" and u["filename"] == "pygrib-2.1.8.tar.gz")
data = urllib.request.urlopen(sdist["url"], timeout=300).read()
if hashlib.sha256(data).hexdigest() != sdist["digests"]["sha256"]:
    sys.exit("pygrib sdist: sha256 does not match PyPI's")
with tarfile.open(fileobj=io.BytesIO(data)) as t:
    t.extractall(sys.argv[1], members=[m for m in t.getmembers()
                                       if m.name.startswith("pygrib-2.1.8/sampledata/")], filter="data")
PY
fi
[ -d "$pygrib_samples" ] || echo "test-python: pygrib's sample files are not available; test_foreign.py skips" >&2
# FIELDSTORE_SETUP_ONLY=1: install what the tests use, build and run nothing
# (scripts/test-all.sh does it while the workspace's tests run).
[ -z "${FIELDSTORE_SETUP_ONLY:-}" ] || exit 0
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
    --no-deps --force-reinstall ./crates/fieldstore-py
rc=0
FIELDSTORE_CFGRIB_SAMPLES="$([ -d "$samples" ] && realpath "$samples")" \
FIELDSTORE_PYGRIB_SAMPLES="$([ -d "$pygrib_samples" ] && realpath "$pygrib_samples")" \
FIELDSTORE_PY_STRICT=1 FIELDSTORE_PYFDB_PYTHON="$pyfdb_python" \
    "$venv/bin/python" -m pytest crates/fieldstore-py/tests -q -p no:cacheprovider || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "test-python: FAILED: pytest collected no tests in crates/fieldstore-py/tests" >&2
    exit 1
fi
exit "$rc"
