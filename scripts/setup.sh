# Sourced by the scripts, and by people in their own shells: installs what
# the project needs on a fresh Debian machine with a Rust toolchain
# (rustup), and nothing when it is there. Idempotent and quiet when there is
# nothing to do.
#
# Sourcing it changes the caller's shell in one way only: cargo is put on
# the PATH ($HOME/.cargo/env) when it is not there. Its shell options are
# left as they were: the installs run in a subshell under `set -euo
# pipefail` (an interactive shell left with `set -e` would close at its next
# failing command), and a failure makes the `source` command fail (status
# 1) instead of exiting the caller's shell. The scripts that source it set
# `-euo pipefail` themselves, so they stop there.
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    source "$HOME/.cargo/env"
fi
(
    set -euo pipefail
    if ! command -v cargo >/dev/null 2>&1; then
        echo "setup: cargo not found; install Rust with rustup first" >&2
        exit 1
    fi
    # rustfmt and clippy (rust-toolchain.toml asks for them too).
    for component in rustfmt clippy; do
        if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
            rustup component add "$component"
        fi
    done
    # A C compiler for the fuzz targets' libFuzzer and for native bindings.
    if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq build-essential
    fi
    # ECMWF's ecCodes, for GRIB messages' MARS keys (crates/fieldstore-grib links it):
    # the PyPI wheel FDB5 uses, in target/eccodes/venv (scripts/setup-eccodes.sh).
    source "$(dirname "${BASH_SOURCE[0]}")/setup-eccodes.sh"
)
