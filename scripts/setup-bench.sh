# Sourced by scripts/test-all.sh: what the hammer's tests need
# (crates/fieldstore-hammer), only when missing --
# - Open MPI's mpirun (openmpi-bin, ~11 s): tests/mpi.rs launches four ranks;
# - Chromium (chromium, ~17 s, 124 MB download, 414 MB on disk): tests/report.rs
#   renders the `--report` page headless.
# Those tests pass without them, saying so, except under CI=true, where they fail.
source "$(dirname "${BASH_SOURCE[0]}")/install-missing.sh"
install_missing setup-bench "the hammer's MPI and browser tests will be skipped" \
    mpirun:openmpi-bin chromium:chromium
