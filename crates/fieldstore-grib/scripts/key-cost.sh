#!/usr/bin/env bash
# GRIB key extraction, CPU time per field, fieldstore against FDB5 in one
# run: ROUNDS rounds (default 3), each FDB5 (scripts/fdb5_key_cost.py: user CPU of its
# GRIB archive path minus its keyed archive path, 5 x 200 fields) then
# fieldstore (`cargo bench -p fieldstore-grib` on the same file: mars_key,
# and archive_grib minus archive with the key given, into a memory store).
# Same ecCodes on both sides (the eccodeslib 2.50 wheel). Results:
# docs/benchmarks.md ("GRIB key extraction").
#
#   bash crates/fieldstore-grib/scripts/key-cost.sh [FILE.grib] [ROUNDS]
#
# FILE.grib defaults to the 1 MiB GRIB2 template FDB5 was measured with,
# written once into target/fieldstore-grib by make_bench_template.py.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/setup.sh
py=$(bash scripts/setup-fdb5.sh)
file=${1:-$PWD/target/fieldstore-grib/tmpl-1mib.grib}
rounds=${2:-3}
if [ ! -f "$file" ]; then
    mkdir -p "$(dirname "$file")"
    "$py" crates/fieldstore-grib/scripts/make_bench_template.py "$file"
fi
file=$(realpath "$file")
cargo bench -p fieldstore-grib --bench mars_key --locked --no-run -q 2>/dev/null
echo "date: $(date -u +%FT%TZ); $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p')); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "fieldstore ecCodes: $(grep -v '^#' target/eccodes/lib-dirs 2>/dev/null | head -1 || echo system)"
for round in $(seq "$rounds"); do
    echo "== round $round"
    "$py" crates/fieldstore-grib/scripts/fdb5_key_cost.py "$file" 200 5 | grep -v '^message'
    FIELDSTORE_GRIB_BENCH_FILE=$file cargo bench -p fieldstore-grib --bench mars_key --locked -q \
        -- 'bench-file' 2>/dev/null \
        | awk '/^(mars_key|archive)\/bench-file/ {name=$0} /time:/ && name {print name ": " $2 " " $3 " " $4 " " $5 " " $6 " " $7; name=""}'
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
