# Shared helpers for the project's scripts. Source it; do not run it.

# ensure_packages PKG...: installs the Debian packages that are missing (needs root or sudo).
ensure_packages() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# require_swift: stops with advice when the Swift toolchain is missing.
require_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        echo "error: the Swift toolchain (6.0 or later) is not on PATH; install it from swift.org first" >&2
        exit 1
    fi
}

# ensure_python_package MODULE REQUIREMENT [DEBIAN_PACKAGE]: makes MODULE importable by the python3
# on PATH: from PyPI with pip, or, where that python3 has no usable pip (Debian's own), from
# Debian's package.
ensure_python_package() {
    python3 -c "import $1" 2>/dev/null && return 0
    echo "installing: $2" >&2
    python3 -m pip install --quiet --disable-pip-version-check "$2" 2>/dev/null ||
        python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$2" 2>/dev/null ||
        { [ -n "${3:-}" ] && ensure_packages "$3"; }
    python3 -c "import $1" || { echo "error: cannot install the Python module $1" >&2; return 1; }
}
