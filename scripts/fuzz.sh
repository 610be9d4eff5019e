#!/usr/bin/env bash
# Bounded fuzz run of the schema and request parsers, the decoders of
# stored bytes (record framing, index blocks), of FDB5's remote protocol and
# of GRIB input through ecCodes (seeded with ecCodes-made messages) (needs a nightly
# toolchain and cargo-fuzz: `rustup toolchain install nightly; cargo install cargo-fuzz`).
# Usage: scripts/fuzz.sh [seconds per target, default 60]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${1:-60}"
mkdir -p corpus/grib
find ../tests/fixtures/grib ../tests/fixtures/grib-* -name '*.grib' -size -20k -exec cp -n {} corpus/grib/ \;
for target in schema request record block remote grib; do
    mkdir -p "corpus/$target"
    cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$secs"
done
