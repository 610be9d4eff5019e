# Sourced by scripts/test-aviso.sh and bench/aviso/run.sh: ECMWF's Aviso
# 2, built or installed once and cached outside the clone:
# - aviso-server 0.13.1 (crates.io), `cargo install --locked` into
#   $FIELDSTORE_CACHE/aviso-server-0.13.1 (optimised: 5.7 min from nothing
#   on 2 cores), or with `aviso_setup debug` into …-0.13.1-debug (no
#   optimisation, no debug info: under 4 min). The tests take the debug
#   build: they check what the server delivers, not how fast, and CI builds
#   it from nothing. The latency benchmark (bench/aviso) takes the optimised
#   one, as a rival should be.
#   Its build downloads the Swagger UI unless SWAGGER_UI_DOWNLOAD_URL names
#   a file: the zip inside the utoipa-swagger-ui-vendored crate (crates.io),
#   so nothing but crates.io is needed;
# - pyaviso 2.4.2 (PyPI: the `aviso` command and the Python client) in the
#   venv $FIELDSTORE_CACHE/pyaviso-2.4.2/venv.
# Sets AVISO_SERVER_BIN and AVISO_CLIENT_BIN; returns non-zero on failure.
aviso_setup() { # [debug]
    local cache=${FIELDSTORE_CACHE:-$HOME/.cache/fieldstore}
    local root=$cache/aviso-server-0.13.1 profile=()
    if [ "${1:-}" = debug ]; then
        root=$root-debug
        profile=(--debug)
    fi
    local cargo_home=${CARGO_HOME:-$HOME/.cargo}
    AVISO_SERVER_BIN=$root/bin/aviso_server
    AVISO_CLIENT_BIN=$cache/pyaviso-2.4.2/venv/bin/aviso
    if [ ! -x "$AVISO_SERVER_BIN" ]; then
        echo "setup-aviso: building aviso-server 0.13.1 into $root (once; 4-6 min)" >&2
        local swagger=$cache/swagger-ui
        if [ ! -f "$swagger/v5.32.6.zip" ]; then
            # `cargo info` downloads the crate into cargo's cache.
            cargo info utoipa-swagger-ui-vendored@0.2.0 >/dev/null 2>&1 || true
            local crate
            crate=$(ls "$cargo_home"/registry/cache/*/utoipa-swagger-ui-vendored-0.2.0.crate 2>/dev/null | head -1)
            if [ -z "$crate" ]; then
                echo "setup-aviso: cannot download the crate utoipa-swagger-ui-vendored 0.2.0" >&2
                return 1
            fi
            mkdir -p "$swagger"
            tar -xzf "$crate" -C "$swagger" --strip-components=2 \
                utoipa-swagger-ui-vendored-0.2.0/res/v5.32.6.zip || return 1
        fi
        local build=$root-build
        rm -rf "$build"
        SWAGGER_UI_DOWNLOAD_URL="file://$swagger/v5.32.6.zip" CARGO_PROFILE_DEV_DEBUG=0 \
            cargo install aviso-server --version 0.13.1 --locked "${profile[@]}" --root "$root" --target-dir "$build" \
            || { rm -rf "$build"; return 1; }
        rm -rf "$build"
    fi
    if [ ! -x "$AVISO_CLIENT_BIN" ]; then
        echo "setup-aviso: installing pyaviso 2.4.2 into $cache/pyaviso-2.4.2/venv" >&2
        fieldstore_venv "$cache/pyaviso-2.4.2/venv" "pyaviso==2.4.2" || return 1
    fi
    export AVISO_SERVER_BIN AVISO_CLIENT_BIN
}
