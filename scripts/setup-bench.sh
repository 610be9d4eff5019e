# Sourced by scripts/test-all.sh: what the hammer's tests need
# (crates/fieldstore-hammer) -- Open MPI's mpirun, under which
# tests/mpi.rs launches four ranks (it passes without it, saying so, except
# under CI=true). Only when missing; about 11 s on a Debian 12 machine.
if ! command -v mpirun >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            openmpi-bin >/dev/null
    else
        echo "setup-bench: mpirun not found; the hammer's MPI test will be skipped (install openmpi-bin)" >&2
    fi
fi
