#!/usr/bin/env bash
# Bounded fuzz run of the schema and request parsers and the decoders of
# stored bytes (record framing, index blocks) and of FDB5's remote protocol (needs a nightly
# toolchain and cargo-fuzz: `rustup toolchain install nightly; cargo install cargo-fuzz`).
# Usage: scripts/fuzz.sh [seconds per target, default 60]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${1:-60}"
for target in schema request record block remote; do
    mkdir -p "corpus/$target"
    cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$secs"
done
