# Sourced by the setup scripts: install_missing WHO SKIPPED COMMAND:PACKAGE...
# installs (apt-get, as root, quietly) the Debian package of each COMMAND
# not on the PATH; without apt-get or root it says, as WHO, which are
# missing and SKIPPED (what will not run without them).
install_missing() {
    local who=$1 skipped=$2 pair
    shift 2
    local missing=()
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    else
        echo "$who: ${missing[*]} not found; $skipped" >&2
    fi
}
