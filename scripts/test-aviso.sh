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
source scripts/debug-build.sh
export FIELDSTORE_AVISO_SERVER=$AVISO_SERVER_BIN FIELDSTORE_AVISO_CLIENT=$AVISO_CLIENT_BIN FIELDSTORE_AVISO_REQUIRED=1
fieldstore_run_tests fieldstore-cli aviso
