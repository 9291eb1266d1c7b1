#!/usr/bin/env bash
# Where a server's CPU goes under HTTP/2 load, by shared object (DSO): starts one server on
# shared/bench's fixtures (ECDSA, one worker pinned to core 0), warms it up, then records it with
# `perf record -F 2000 -g` while `h2load -t1 -c50 -m10 -n N` (pinned to core 1) runs, and prints
# each DSO's share of the server's samples and, with the server CPU time per request from
# /proc/PID/stat, its microseconds per request.
# Usage: scripts/perf-h2-dso.sh SERVER [N]    SERVER: a path to an aasad binary, or h2o, or nginx
#   e.g. scripts/perf-h2-dso.sh .build/release/aasad 300000; scripts/perf-h2-dso.sh h2o 300000
# PERF_KEEP=DIR keeps perf.data for `perf report -i DIR/perf.data`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || {
    echo "usage: scripts/perf-h2-dso.sh SERVER [requests]" >&2
    exit 64
}
server=$1
requests=${2:-300000}
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
bench_fixtures
port=$((24000 + RANDOM % 8000))
bench_start "$server" "$port" "$work/run"
pid=$(cat "$work/run/pid")
url="https://$host:$port$path"
taskset -c 1 h2load -t1 -c10 -n 20000 --connect-to "127.0.0.1:$port" "$url" >/dev/null 2>&1 || true
# Every process of the server's tree (nginx's and h2o's workers are children of the master).
pids=$( (pgrep -P "$pid" || true) | tr "\n" ",")$pid
perf record -q -F 2000 -g -p "$pids" -o "$work/perf.data" >/dev/null 2>&1 &
recorder=$!
sleep 1
c0=$(tree_cpu_ticks "$pid")
taskset -c 1 h2load -t1 -c50 -m10 -n "$requests" --connect-to "127.0.0.1:$port" "$url" | grep -E '^requests:' >&2
c1=$(tree_cpu_ticks "$pid")
kill -INT "$recorder"
wait "$recorder" || true
us=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v n="$requests" 'BEGIN { printf "%.2f", c * 1e6 / hz / n }')
echo "server=$server requests=$requests us_per_req=$us"
perf report -i "$work/perf.data" --sort dso --stdio --no-children 2>/dev/null | awk -v us="$us" '
    /^ +[0-9.]+%/ { share = $1; sub("%", "", share); name = $NF; printf "%6.1f %%  %5.2f us  %s\n", share, share * us / 100, name }' | head -15
if [ -n "${PERF_KEEP:-}" ]; then
    mkdir -p "$PERF_KEEP"
    cp "$work/perf.data" "$PERF_KEEP/perf.data"
fi
