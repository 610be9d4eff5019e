#!/usr/bin/env bash
# The C API benchmark of docs/benchmarks.md ("C API"): one C program
# (bench/capi/capi_bench.c) dlopen()ing FDB5's libfdb5.so (the fdb5lib
# wheel of scripts/setup-fdb5.sh) or fieldstore's library, and the same work
# through fieldstore's Rust handle (crates/fieldstore-capi/examples/
# rust_bench.rs), interleaved in one run: REPS repetitions, each running the
# three in a rotating order, for 64 KiB and 1 MiB fields. Every run gets an
# empty root on the same file system (target/capi-bench), deleted after it;
# each of its phases (archive+flush, list, list+keys, list-warm, retrieve) is
# a new process that opens a new handle (timed, but for list-warm, which
# lists ten times and times the last nine), as a writer and readers would.
#
#   bash bench/capi/run.sh [OUT.jsonl]     # REPS=5 by default
#
# Prints a summary table (medians; ratios), keeps every run's JSON line in
# OUT (default target/capi-bench/results.jsonl) and plots them in OUT's
# name with .png.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/setup.sh
reps=${REPS:-5}
out=${1:-target/capi-bench/results.jsonl}
dir=$PWD/target/capi-bench
mkdir -p "$dir"
: >"$out"

python=$(bash scripts/setup-fdb5.sh)
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
fdb5_lib="$site/fdb5lib/lib64/libfdb5.so"
# FDB5's library finds its dependencies (eckit, metkit, ecCodes of the
# wheels) through the loader's path; the fieldstore library has an rpath.
fdb5_path="$site/fdb5lib/lib64:$site/eckitlib/lib64:$site/metkitlib/lib64:$site/eccodeslib/lib64"

cargo build --release --locked -p fieldstore-capi --lib --example rust_bench
target=${CARGO_TARGET_DIR:-target}
fs_lib="$PWD/$target/release/libfieldstore_capi.so"
rust_bench="$PWD/$target/release/examples/rust_bench"
cc -O2 -std=gnu11 -Wall -Wextra -Werror -I crates/fieldstore-capi/include bench/capi/capi_bench.c -ldl \
    -o "$dir/capi_bench"
schema=$PWD/tests/fixtures/schema/hammer.schema

run() { # impl size nsteps nlevels nparams: each phase in a new process
    local root="$dir/root" phase
    rm -rf "$root"
    mkdir -p "$root"
    sync
    for phase in archive list list+keys list-warm retrieve; do
        case $1 in
        fdb5) LD_LIBRARY_PATH=$fdb5_path "$dir/capi_bench" "$fdb5_lib" "$root" "$schema" "$2" "$3" "$4" "$5" fdb5 "$phase" 2>/dev/null ;;
        fieldstore) "$dir/capi_bench" "$fs_lib" "$root" "$schema" "$2" "$3" "$4" "$5" fieldstore-c "$phase" ;;
        rust) "$rust_bench" "$root" "$schema" "$2" "$3" "$4" "$5" fieldstore-rust "$phase" ;;
        esac >>"$out"
        # The archived bytes go to disk now, not during the read phases'
        # timing (writeback of a gigabyte took whole phases' time).
        if [ "$phase" = archive ]; then sync; fi
    done
    rm -rf "$root"
}

impls=(fdb5 fieldstore rust)
for rep in $(seq 1 "$reps"); do
    for shape in "65536 20 10 50" "1048576 10 10 10"; do
        for i in 0 1 2; do
            # Rotate the order from one repetition to the next.
            impl=${impls[$(((i + rep) % 3))]}
            echo "bench/capi: repetition $rep/$reps, $impl, $shape" >&2
            # shellcheck disable=SC2086
            run "$impl" $shape
        done
    done
done
# The table, and the plot beside OUT (FDB5's venv gets matplotlib for it).
"$python" -c 'import matplotlib' 2>/dev/null || "$python" -m pip install -q matplotlib
"$python" bench/capi/summary.py "$out" "${out%.jsonl}.png"
