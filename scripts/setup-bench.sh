# Sourced by scripts/test-all.sh: what the hammer's tests need
# (crates/fieldstore-hammer), only when missing --
# - Open MPI's mpirun (openmpi-bin, ~11 s): tests/mpi.rs launches four ranks;
# - Chromium (chromium, ~17 s, 124 MB download, 414 MB on disk): tests/report.rs
#   renders the `--report` page headless.
# Those tests pass without them, saying so, except under CI=true, where they fail.
bench_missing=()
command -v mpirun >/dev/null 2>&1 || bench_missing+=(openmpi-bin)
command -v chromium >/dev/null 2>&1 || bench_missing+=(chromium)
if [ "${#bench_missing[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${bench_missing[@]}" >/dev/null
    else
        echo "setup-bench: ${bench_missing[*]} not found; the hammer's MPI and browser tests will be skipped" >&2
    fi
fi
unset bench_missing
