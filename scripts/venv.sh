# Sourced by the scripts that make Python venvs (setup-eccodes.sh,
# setup-fdb5.sh, the test-*.sh of Python clients). Also
# fieldstore_share_eccodes (below).
# fieldstore_venv DIR PACKAGE... creates the Python venv DIR (if it has no
# pip yet) and pip-installs binary wheels of PACKAGE... from PyPI into it.
#
# Needs python3 3.11-3.13 (the versions ECMWF's wheels are built for). A
# Python without ensurepip (Debian without python3-venv) gets python3-venv
# through apt when it can, else a venv without pip that the system's pip
# installs into (`pip --python`). Returns non-zero when all of that fails.
fieldstore_venv() {
    local venv=$1
    shift
    local pip=("$venv/bin/pip")
    if [ ! -x "$venv/bin/pip" ]; then
        rm -rf "$venv"
        if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv "$venv" >/dev/null 2>&1; then
            rm -rf "$venv"
            if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
                && apt-get update -qq >/dev/null 2>&1 \
                && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null 2>&1 \
                && python3 -m venv "$venv" >/dev/null 2>&1; then
                :
            elif command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 \
                && python3 -m venv --without-pip "$venv" >/dev/null 2>&1; then
                pip=(python3 -m pip --python "$venv/bin/python")
            else
                rm -rf "$venv"
                echo "setup: cannot create a Python venv (install python3-venv)" >&2
                return 1
            fi
        fi
    fi
    "${pip[@]}" install --quiet --disable-pip-version-check --only-binary=:all: "$@"
}

# fieldstore_share_eccodes VENV: one ecCodes per process. The venv's
# eccodeslib and eckitlib packages become links to the very files
# fieldstore's libraries were linked against (scripts/setup.sh's wheel, when
# it used one), so that Python's eccodes and fieldstore's library load the
# same copies (eckit aborts when two copies register).
fieldstore_share_eccodes() {
    local site built pkg
    site=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    grep -qv '^#' target/eccodes/lib-dirs 2>/dev/null || return 0
    built=$(cd target/eccodes/venv && "$PWD/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    for pkg in eccodeslib eckitlib eckitlib.libs; do
        if [ -e "$built/$pkg" ] && [ "$(readlink -f "$site/$pkg")" != "$(readlink -f "$built/$pkg")" ]; then
            rm -rf "${site:?}/$pkg"
            ln -s "$built/$pkg" "$site/$pkg"
        fi
    done
}
