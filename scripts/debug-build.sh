# Sourced by the scripts that install fieldstore's libraries or run its
# binaries from the debug build (test-capi-python.sh, test-pyfdb-suite.sh,
# test-fdb5-capi-suite.sh, test-ml-clients.sh, test-gribjump-python.sh).
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
