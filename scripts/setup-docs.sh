# Sourced by scripts/test-all.sh: what the docs' shell blocks run besides
# fieldstore, only when missing -- socat and openssl for docs/serve.md's
# TLS recipe (crates/fieldstore-cli/tests/docs.rs runs it).
source "$(dirname "${BASH_SOURCE[0]}")/install-missing.sh"
install_missing setup-docs "docs/serve.md's TLS block will fail in the docs test" \
    socat:socat openssl:openssl
