# Sourced by the scripts that run Ceph (scripts/test-all.sh, the RADOS
# benchmarks): installs a single node's Ceph daemons and tools when missing.
# Not part of scripts/setup.sh, so that the main job on the embedded store
# (scripts/demo.sh) installs nothing it does not use.
#
# Sourced by people too (docs/benchmarks.md): it leaves the caller's shell
# options as they were, installing in a subshell under `set -euo pipefail`
# whose failure makes the `source` command fail (as scripts/setup.sh).
(
set -euo pipefail
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
)
