# Sourced by scripts/install-capi.sh and scripts/install-gribjump.sh: their
# shared command line, `[--debug] [--from DIR] [PREFIX]`, and the build.
#
#   install_lib_args NAME CRATE "$@"
#
# sets `prefix` (PREFIX made absolute and created; default
# target/fieldstore-capi, so that both libraries sit side by side) and
# `built` (the directory holding what cargo built: DIR with --from, else
# CRATE built now, release unless --debug). NAME prefixes error messages.
install_lib_args() {
    local name=$1 crate=$2 profile=release
    shift 2
    built=""
    while [ $# -gt 0 ]; do
        case "$1" in
        --debug) profile=debug ;;
        --from)
            built=$2
            shift
            ;;
        -*)
            echo "$name: unknown option $1" >&2
            exit 2
            ;;
        *) break ;;
        esac
        shift
    done
    prefix=${1:-target/fieldstore-capi}
    mkdir -p "$prefix"
    prefix=$(cd "$prefix" && pwd)
    if [ -z "$built" ]; then
        source scripts/setup.sh
        if [ "$profile" = release ]; then
            cargo build --release --locked -p "$crate"
        else
            cargo build --locked -p "$crate"
        fi
        built="${CARGO_TARGET_DIR:-target}/$profile"
    fi
}
