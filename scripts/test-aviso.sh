#!/usr/bin/env bash
# `fieldstore notify` against the real Aviso (crates/fieldstore-cli/tests/aviso):
# aviso-server 0.13.1 on loopback and unmodified `aviso listen` listeners of
# pyaviso 2.4.2, both cached under ~/.cache/fieldstore by
# scripts/setup-aviso.sh (the server's debug build), while writer processes
# archive and flush.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/venv.sh
source scripts/setup-aviso.sh
aviso_setup debug
[ -z "${FIELDSTORE_SETUP_ONLY:-}" ] || exit 0  # installs only (scripts/test-all.sh)
# Under scripts/test-all.sh, the binary its workspace build made (as
# scripts/test-s3-radosgw.sh does).
scope=(-p fieldstore-cli)
[ -z "${FIELDSTORE_BUILT_WORKSPACE:-}" ] || scope=(--workspace)
FIELDSTORE_AVISO_SERVER=$AVISO_SERVER_BIN FIELDSTORE_AVISO_CLIENT=$AVISO_CLIENT_BIN FIELDSTORE_AVISO_REQUIRED=1 \
    python3 scripts/run-tests.py "${scope[@]}" --locked --select fieldstore-cli::test::aviso
