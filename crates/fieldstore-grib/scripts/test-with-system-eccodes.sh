#!/usr/bin/env bash
# Run fieldstore-grib's tests against the system's ecCodes (Debian bookworm's
# libeccodes-dev: 2.28) instead of the PyPI wheel fieldstore normally builds
# with (scripts/setup-eccodes.sh: eccodeslib 2.50, the one FDB5's wheels use).
# With ecCodes before 2.50 the GRIB2 keys of timespan.grib lack `timespan`;
# tests/oracle.rs checks the recorded older keys then.
#
#   bash crates/fieldstore-grib/scripts/test-with-system-eccodes.sh
#
# Builds in target/system-eccodes (a separate target directory, so the
# shared one keeps its wheel-linked artefacts).
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/setup.sh
if ! pkg-config --exists eccodes 2>/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libeccodes-dev
fi
version=$(pkg-config --modversion eccodes)
libdir=$(pkg-config --variable=libdir eccodes)
ECCODES_DIR=$libdir \
FIELDSTORE_GRIB_EXPECT_ECCODES=$version \
CARGO_TARGET_DIR=target/system-eccodes \
    cargo test -p fieldstore-grib --locked
