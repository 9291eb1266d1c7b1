#!/usr/bin/env bash
# Instructions per request, counted by callgrind (repeatable where wall-clock figures on this
# machine swing by ±40 %): starts BINARY under callgrind on the shipped example config with one
# worker, warms it up, zeroes the counters, serves N requests with h2load over HTTP/1.1
# keep-alive and over HTTP/2, and prints instructions per request for each.
# Usage: scripts/callgrind-requests.sh [BINARY] [N]    (default .build/release/aasad, 20000)
# CALLGRIND_PATH=/buy/42?src=mail counts another path of links.localhost (default the AASA file;
# that one is the site's fallback redirect, docs/link-domain.md). CALLGRIND_CONFIG=DIR and
# CALLGRIND_HOST=NAME count another config directory and host (e.g. one of scripts/bench-reload.py's
# generated sites: whether a request costs more among many sites). Instrumentation starts with
# the measurement, so a large config's start-up runs at valgrind's uninstrumented speed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
binary=$(realpath "${1:-.build/release/aasad}")
requests=${2:-20000}
port=$((20000 + RANDOM % 20000))
with_work_and_server
url="https://127.0.0.1:$port${CALLGRIND_PATH:-/.well-known/apple-app-site-association}"
config=${CALLGRIND_CONFIG:-config}
host=${CALLGRIND_HOST:-links.localhost}
# Valgrind 3.19 cannot read the DWARF 5 debug information Swift emits: count a copy without it.
strip --strip-debug -o "$work/aasad" "$binary"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.%p" "$work/aasad" serve --config "$config" \
    --https "127.0.0.1:$port" --threads 1 --state "$work/state" --log-level warning >"$work/log" 2>&1 &
server=$!
# Valgrind reads the binary's debug information first, and a large config loads slowly: allow minutes.
wait_for_https "$host" "$port" 1200 1 "$work/log" "the server under callgrind" || exit 1
# measure LABEL H2LOAD-ARGS...: instructions of the server between a zero and a dump.
measure() {
    local label=$1
    shift
    callgrind_control -i on "$server" >/dev/null 2>&1
    h2load -n 500 -c 2 -H ":authority: $host" "$@" "$url" >/dev/null
    callgrind_control -z "$server" >/dev/null 2>&1
    h2load -n "$requests" -c 4 -H ":authority: $host" "$@" "$url" | grep -E "^requests:" >&2
    callgrind_control -d "$label" "$server" >/dev/null 2>&1
    local file
    file=$(ls -t "$work"/callgrind.* | head -1)
    local total
    total=$(grep -m1 '^summary:' "$file" | awk '{print $2}')
    echo "$label: $((total / requests)) instructions per request ($total for $requests)"
    # CALLGRIND_KEEP=DIR keeps each dump for callgrind_annotate.
    if [ -n "${CALLGRIND_KEEP:-}" ]; then
        mkdir -p "$CALLGRIND_KEEP"
        cp "$file" "$CALLGRIND_KEEP/$label.callgrind"
    fi
}
measure h1 --h1
measure h2 -m 10
