# Sourced by the scripts that install fieldstore's libraries or run its
# binaries from the debug build (test-capi-python.sh, test-pyfdb-suite.sh,
# test-fdb5-capi-suite.sh, test-ml-clients.sh, test-gribjump-python.sh), and
# by those that run some of a package's test binaries (test-s3-radosgw.sh,
# test-aviso.sh).
#
# fieldstore_debug_build PACKAGE...: builds PACKAGE... (debug profile) and
# sets FIELDSTORE_DEBUG_DIR (where the binaries are) and FIELDSTORE_LIB_DIR
# (where the shared libraries are), both absolute.
#
# Under scripts/test-all.sh (FIELDSTORE_BUILT_WORKSPACE=1) it builds
# nothing: the workspace's test build made the binaries and the libraries
# already (libraries stay in deps/ there). A `cargo build -p` of a few
# packages would unify the dependencies' features differently and compile
# about 36 crates again (~100 s on 2 cores, and as much again at the next
# test build).
fieldstore_debug_build() {
    local target
    target=$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)
    FIELDSTORE_DEBUG_DIR=$target/debug
    if [ -n "${FIELDSTORE_BUILT_WORKSPACE:-}" ]; then
        FIELDSTORE_LIB_DIR=$target/debug/deps
    else
        local args=() p
        for p in "$@"; do args+=(-p "$p"); done
        cargo build --locked -q "${args[@]}" || return 1
        FIELDSTORE_LIB_DIR=$target/debug
    fi
}

# fieldstore_run_tests PACKAGE TEST...: runs PACKAGE's integration-test
# binaries TEST... (scripts/run-tests.py: two at a time, in that order).
# Under scripts/test-all.sh, the ones the workspace's build made, for the
# reason above; else `cargo test -p PACKAGE` builds them.
fieldstore_run_tests() {
    local package=$1 scope=(-p "$1") select=() t
    shift
    [ -z "${FIELDSTORE_BUILT_WORKSPACE:-}" ] || scope=(--workspace)
    for t in "$@"; do select+=(--select "$package::test::$t"); done
    python3 scripts/run-tests.py "${scope[@]}" --locked "${select[@]}"
}
