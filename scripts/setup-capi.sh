# Sourced by scripts/test-all.sh (not by scripts/setup.sh, so that the
# README's first command stays light): what the C API's tests need beyond a
# C compiler (scripts/setup.sh) -- valgrind, under which
# crates/fieldstore-capi/tests/c_api.rs runs its C test program, and
# gfortran, which compiles crates/fieldstore-capi/tests/fortran.rs's client
# (both run without them, saying so, except under CI=true). Only when
# missing.
source "$(dirname "${BASH_SOURCE[0]}")/install-missing.sh"
install_missing setup-capi \
    "the C API's memory checks (valgrind) and Fortran client (gfortran) will be skipped" \
    valgrind:valgrind gfortran:gfortran
