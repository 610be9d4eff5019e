#!/usr/bin/env bash
# The ML pipelines that read FDB, unchanged, on `fieldstore serve` beside
# FDB5's `fdb-server` (crates/fieldstore-cli/tests/ml): earthkit-data 1.3
# through pyfdb 5.25, and `anemoi-datasets create` 0.5.47 through
# earthkit-data 0.20 and the legacy pyfdb 0.1.3, each over FDB5's own
# library and remote client (the fdb5lib wheel); and anemoi-datasets with no
# server, through pyfdb 0.1.3 on fieldstore's own libfdb5.so.
#
# Two venvs under ~/.cache/fieldstore (kept across clones), since the two
# clients pin different earthkit-data. anemoi-datasets is installed without
# pyodc (ODB sources only), whose odclib pins an eckit other than
# fdb5lib's; cfunits is an sdist (pure Python).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/venv.sh
cache=${FIELDSTORE_CACHE:-$HOME/.cache/fieldstore}
mkdir -p "$cache"
fdb5=("fdb5lib==5.25.0.33" "eccodes==2.50.0")
earthkit=(ml-earthkit "pyfdb==5.25.0.33" "${fdb5[@]}" "earthkit-data==1.3.0" xarray pytest pyyaml)
anemoi_deps=("anemoi-transform>=0.4" "anemoi-utils[s3]>=0.5.12" cfunits glom jsonschema lru-dict "numcodecs<0.16"
    numpy pint psutil pydantic pyyaml rich "ruamel-yaml>=0.16" semantic-version tqdm "zarr<=2.18.7")
anemoi=(ml-anemoi "pyfdb==0.1.3" "${fdb5[@]}" pytest "anemoi-datasets==0.5.47" "${anemoi_deps[@]}")
# The path with no server: pyfdb 0.1.3 on fieldstore's own libfdb5.so, in a
# venv without fdb5lib (findlibs then takes FDB5_DIR).
local_=(ml-anemoi-local "pyfdb==0.1.3" "eccodes==2.50.0" pytest "anemoi-datasets==0.5.47" "${anemoi_deps[@]}")
stamp() { [ "$(cat "$cache/$1.deps" 2>/dev/null)" = "$*" ]; }
if ! stamp "${earthkit[@]}"; then
    echo "test-ml-clients: installing ${earthkit[*]:1} into $cache/${earthkit[0]}" >&2
    fieldstore_venv "$cache/${earthkit[0]}" "${earthkit[@]:1}"
    echo "${earthkit[*]}" >"$cache/${earthkit[0]}.deps"
fi
for spec in anemoi local_; do
    declare -n s=$spec
    stamp "${s[@]}" && continue
    echo "test-ml-clients: installing ${s[*]:1} into $cache/${s[0]}" >&2
    venv="$cache/${s[0]}"
    base=("pyfdb==0.1.3" "eccodes==2.50.0" pytest)
    [ "$spec" = anemoi ] && base+=("${fdb5[@]}")
    fieldstore_venv "$venv" "${base[@]}"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "anemoi-datasets==0.5.47"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --prefer-binary \
        "${base[@]}" "${anemoi_deps[@]}"
    echo "${s[*]}" >"$cache/${s[0]}.deps"
done
# One ecCodes per process in the no-server venv (as test-capi-python.sh).
fieldstore_share_eccodes "$cache/${local_[0]}"
[ -z "${FIELDSTORE_SETUP_ONLY:-}" ] || exit 0  # installs only (scripts/test-all.sh)
source scripts/debug-build.sh
fieldstore_debug_build fieldstore-cli fieldstore-capi
bin=$FIELDSTORE_DEBUG_DIR/fieldstore
mkdir -p target/ml
bash scripts/install-capi.sh --from "$FIELDSTORE_LIB_DIR" "$PWD/target/ml/prefix" 2>/dev/null
export FDB5_DIR=$PWD/target/ml/prefix
rc=0
for venv in "$cache/${earthkit[0]}:test_earthkit_remote.py" "$cache/${anemoi[0]}:test_anemoi.py" \
    "$cache/${local_[0]}:test_anemoi_local.py"; do
    python=${venv%%:*}/bin/python
    site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    (
        export FIELDSTORE_BIN=$bin FIELDSTORE_SCHEMA=$PWD/tests/fixtures/schema/ecmwf.schema
        export FDB5_BIN=$site/fdb5lib/bin  # (absent in the no-server venv: not used there)
        FDB5_LIBS=$(for l in fdb5lib eckitlib metkitlib eccodeslib; do printf '%s:' "$site/$l/lib64"; done)
        export FDB5_LIBS
        cd crates/fieldstore-cli/tests/ml
        "$python" -m pytest -q -p no:cacheprovider "${venv##*:}"
    ) || rc=$?
done
exit "$rc"
