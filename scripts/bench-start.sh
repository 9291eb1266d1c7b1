#!/usr/bin/env bash
# One start of `aasad serve` to its "aasad ready" line, then stopped: prints the start's own thread
# (main=, in 10 ms ticks), the wall time to readiness, the process's CPU seconds (user and system
# ticks), and RSS at readiness. With PERF_OUT, the start runs under `perf record -F 499 -g` (read it
# with scripts/perf-phases.py). A restart is a second start on the same state directory; a binary's
# first start on a state directory is a first start (the verdict cache is per binary).
# SETTLE=N also prints RSS N seconds after readiness.
# Usage: [STATE=DIR] [PERF_OUT=FILE] [SETTLE=N] scripts/bench-start.sh BINARY TREE   (TREE/config,
# made by scripts/bench-reload.py --tree=TREE; STATE defaults to TREE/state)
set -euo pipefail
bin=$1
tree=$2
state=${STATE:-$tree/state}
fifo=$(mktemp -u)
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT
command=("$bin" serve --config "$tree/config" --state "$state" --https 127.0.0.1:0 --http 127.0.0.1:0 --threads 2 --log-level warning --admin off)
if [ -n "${PERF_OUT:-}" ]; then
    perf record -F 499 -g -o "$PERF_OUT" -- "${command[@]}" >"$fifo" 2>/dev/null &
else
    "${command[@]}" >"$fifo" 2>/dev/null &
fi
runner=$!
start=$(date +%s.%N)
while read -r line; do case "$line" in "aasad ready"*) break ;; esac done <"$fifo"
end=$(date +%s.%N)
pid=$(pgrep -n -f -- "$bin serve --config $tree/config")
read -r user system < <(awk '{print $14, $15}' "/proc/$pid/stat")
read -r main_user main_system < <(awk '{print $14, $15}' "/proc/$pid/task/$pid/stat")
rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
echo "main=$((main_user + main_system)) wall=$(echo "$end - $start" | bc) cpu=$(echo "($user + $system)/100" | bc -l | cut -c1-6) user=$user sys=$system rss_kb=$rss"
if [ -n "${SETTLE:-}" ]; then
    # RSS once the late certificate checks and the trim after readiness are done (a measurement's
    # delay, not an ordering of events).
    sleep "$SETTLE"
    echo "rss_settled_kb=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")"
fi
kill -INT "$pid" 2>/dev/null || true
wait "$runner" 2>/dev/null || true
