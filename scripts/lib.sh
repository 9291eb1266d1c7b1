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

# nice_frontend DIR: makes DIR a view of the Swift toolchain whose bin/swift-frontend runs the real
# one at nice 19, and prints that path; fails (prints nothing) when the real frontend cannot be
# found. `nice` on `swift build` or `swiftc` does not reach the compilers: the driver starts each
# swift-frontend at priority 0 (`ps -o ni`), so the builds scripts/test runs beside the tests (the
# release binary, the fuzz targets) took the cores from them. `-driver-use-frontend-path` runs
# another frontend; the driver finds the toolchain's libraries (the sanitizers' runtimes, the
# static standard library) beside it, hence DIR/lib. The frontend is found from the compiler's own
# resource path, not from PATH: a toolchain manager's bin folder (swiftly's) holds links to the
# manager, not to the compiler. DIR must outlive the builds' products: a fuzz binary's run path
# names DIR/lib.
nice_frontend() {
    local resources usr real
    resources="$(swiftc -print-target-info 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["runtimeResourcePath"])' 2>/dev/null)" || return 1
    usr="$(dirname "$(dirname "$resources")")"
    real="$usr/bin/swift-frontend"
    [ -n "$resources" ] && [ -x "$real" ] && [ -d "$usr/lib" ] || return 1
    mkdir -p "$1/bin" || return 1
    ln -sfn "$usr/lib" "$1/lib" || return 1
    printf '#!/bin/sh\nexec nice -n 19 %q "$@"\n' "$real" >"$1/bin/swift-frontend" || return 1
    chmod +x "$1/bin/swift-frontend" || return 1
    echo "$1/bin/swift-frontend"
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

# wait_for_https HOST PORT TRIES PAUSE LOG WHAT: waits until a server on 127.0.0.1:PORT answers
# HTTPS for HOST (any status, certificate unchecked), trying TRIES times PAUSE seconds apart;
# otherwise prints "WHAT did not start:" and LOG's last lines, and returns 1.
wait_for_https() {
    local host=$1 port=$2 tries=$3 pause=$4 log=$5 what=$6
    for _ in $(seq 1 "$tries"); do
        curl -sk -o /dev/null --connect-to "$host:$port:127.0.0.1:$port" "https://$host:$port/" && return 0
        sleep "$pause"
    done
    echo "$what did not start:" >&2
    tail -20 "$log" >&2
    return 1
}

# with_work_and_server: sets `work` to a new temporary folder and `server` to "" (the caller puts
# its background server's process id there), and on exit stops that server, waits for it, and
# removes the folder. The script's own exit status stands: the stopped server's (143, SIGTERM)
# would otherwise replace it under `set -e`.
with_work_and_server() {
    work=$(mktemp -d)
    server=""
    trap 'status=$?; if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; rm -rf "$work"; exit "$status"' EXIT
}

# bench_fixtures: the set-up of the scripts that measure servers on shared/bench's fixtures
# (cpu-per-request.sh, perf-h2-dso.sh), run from the repository's root. Sources shared/bench's
# lib.sh (BENCH_DIR, default ../shared/bench) and sets `bench`, `host` and `path` (the fixtures'
# first site and its AASA file), `hz` (clock ticks a second, /proc/PID/stat's unit) and `work`: a
# new temporary folder, readable by nginx's workers (they run as nobody), with the fixtures in
# $work/fx. On exit every server `bench_start` started is stopped and the folder removed. Raises
# the open-file limit to its hard limit (thousands of connections).
bench_fixtures() {
    bench=$(realpath "${BENCH_DIR:-../shared/bench}")
    # shellcheck source=/dev/null
    source "$bench/lib.sh"
    host=a.example.test
    path=/.well-known/apple-app-site-association
    hz=$(getconf CLK_TCK)
    work=$(mktemp -d)
    chmod 755 "$work"
    bench_runs=()
    trap bench_cleanup EXIT
    ulimit -n "$(ulimit -Hn)"
    "$bench/gen-fixtures.sh" "$work/fx" >/dev/null
}

# bench_cleanup: stops the servers `bench_start` started and removes `work` (bench_fixtures' trap).
bench_cleanup() {
    local run
    for run in "${bench_runs[@]}"; do "$bench/stop-server.sh" "$run" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}

# bench_start SERVER PORT RUN_DIR: starts SERVER (h2o, nginx, caddy, or the path of an aasad binary) on
# the fixtures' ECDSA sites on 127.0.0.1:PORT, pinned to core 0, with its files in RUN_DIR (its
# process id in RUN_DIR/pid); it is stopped on exit.
bench_start() {
    local server=$1 args
    case $server in
        h2o | nginx | caddy) args=(--server "$server") ;;
        *) args=(--server cmd --cmd "$(realpath "$server") serve --config {config} --https 127.0.0.1:{port} --threads {workers} --state {run}/state --log-level warning") ;;
    esac
    bench_runs+=("$3")
    "$bench/start-server.sh" "${args[@]}" --sites "$work/fx/ecdsa/sites" --port "$2" --run-dir "$3" --cpus 0 >/dev/null
}
