# Sourced by scripts/test-all.sh (not by scripts/setup.sh, so that the
# README's first command stays light): what the C API's tests need beyond a
# C compiler (scripts/setup.sh) -- valgrind, under which
# crates/fieldstore-capi/tests/c_api.rs runs its C test program, and
# gfortran, which compiles crates/fieldstore-capi/tests/fortran.rs's client
# (both run without them, saying so, except under CI=true). Only when
# missing.
capi_missing=()
command -v valgrind >/dev/null 2>&1 || capi_missing+=(valgrind)
command -v gfortran >/dev/null 2>&1 || capi_missing+=(gfortran)
if [ "${#capi_missing[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${capi_missing[@]}" >/dev/null
    else
        echo "setup-capi: ${capi_missing[*]} not found; the C API's memory checks (valgrind) and Fortran client (gfortran) will be skipped" >&2
    fi
fi
unset capi_missing
