# Sourced by the scripts: installs what the project needs on a fresh Debian
# machine with a Rust toolchain (rustup), and nothing when it is there.
# Idempotent and quiet when there is nothing to do.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
    [ -f "$HOME/.cargo/env" ] && source "$HOME/.cargo/env"
fi
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
# --- Ceph (crates/fieldstore-rados) -- begin ------------------------------------
# A throwaway single-node cluster for the RADOS tests (scripts/ceph-start.sh):
# ceph-mon, ceph-osd, ceph-common (the rados tool and librados.so.2, which
# fieldstore-rados loads at run time), ceph-mgr (pool statistics, which pool
# quotas need: tests/quota.rs). Only when missing.
if ! command -v ceph-mon >/dev/null 2>&1 || ! command -v ceph-osd >/dev/null 2>&1 ||
    ! command -v rados >/dev/null 2>&1 || ! command -v ceph-mgr >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        # Nothing may start at install time (images without systemd).
        [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            ceph-mon ceph-osd ceph-common ceph-mgr >/dev/null
    else
        echo "setup: Ceph not found; the RADOS tests will skip (install ceph-mon, ceph-osd, ceph-common)" >&2
    fi
fi
# --- Ceph -- end -----------------------------------------------------------------
