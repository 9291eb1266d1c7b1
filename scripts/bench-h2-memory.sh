#!/usr/bin/env bash
# What an HTTP/2 client that never finishes its requests costs a server in memory: for aasad, nginx
# and h2o alike (shared/bench's start-server.sh and fixtures: TLS, h2, loopback, the server on
# core 0 and one worker, the client on core 1), N connections each open 100 streams whose HEADERS
# carry `:path /` and four copies of a 3,950-byte user-agent, HPACK-indexed, and never
# END_STREAM (Tests/aasadTests/Fixtures/h2hold.py). Reports the RSS growth of the server's whole
# process tree per attacking connection while they are held, and its RSS once they have closed
# against before. Rounds alternate the servers' order; the summary gives medians.
# Not a test: it measures, it does not pass or fail.
# Usage: scripts/bench-h2-memory.sh [BINARY] [connections] [rounds] [servers] [copies]
#   e.g. scripts/bench-h2-memory.sh .build/release/aasad 100 3 "aasad nginx h2o"
#   copies: user-agent copies per stream (default 4, the reported attack; 1: one per stream,
#   which a server that refuses repeated fields must hold within its budget instead)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "${1:-.build/release/aasad}")
conns=${2:-100}
rounds=${3:-3}
read -r -a servers <<<"${4:-aasad nginx h2o}"
copies=${5:-4}
bench=$(realpath "${BENCH_DIR:-../shared/bench}")
client=$(realpath Tests/aasadTests/Fixtures/h2hold.py)
# shellcheck source=/dev/null
source "$bench/lib.sh"
host=a.example.test
work=$(mktemp -d)
chmod 755 "$work" # nginx workers run as nobody and read the fixtures
run="" cpid=""
cleanup() {
    [ -n "$cpid" ] && stop_pid "$cpid" h2hold.py
    [ -n "$run" ] && { "$bench/stop-server.sh" "$run" >/dev/null 2>&1 || true; }
    rm -rf "$work"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"
"$bench/gen-fixtures.sh" "$work/fx" >/dev/null
python3 -c 'import h2' 2>/dev/null || die "python3 h2 is missing (pip install h2)"

# settle PID: waits until the tree's RSS has not moved by more than 1 % for two seconds (at
# most 15 s), then prints it.
settle() {
    local last now i
    last=$(kv rss_kb "$(tree_mem "$1")")
    for i in $(seq 1 15); do
        sleep 1
        now=$(kv rss_kb "$(tree_mem "$1")")
        if [ $((now > last ? now - last : last - now)) -le $((last / 100)) ] && [ "$i" -ge 2 ]; then break; fi
        last=$now
    done
    echo "$now"
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) commit $(git rev-parse --short HEAD) connections=$conns copies=$copies"
for round in $(seq 1 "$rounds"); do
    order=("${servers[@]}")
    # Alternate: each round starts one server later.
    for ((k = 0; k < (round - 1) % ${#servers[@]}; k++)); do order=("${order[@]:1}" "${order[0]}"); done
    for server in "${order[@]}"; do
        case $server in
            nginx | h2o) args=(--server "$server") ;;
            aasad) args=(--server cmd --cmd "$binary serve --config {config} --https 127.0.0.1:{port} --threads {workers} --state {run}/state --log-level warning --admin off") ;;
            *) die "unknown server $server" ;;
        esac
        port=$((24000 + RANDOM % 8000))
        run=$work/run-$round-$server
        "$bench/start-server.sh" "${args[@]}" --sites "$work/fx/ecdsa/sites" --port "$port" --run-dir "$run" --cpus 0 >/dev/null
        pid=$(cat "$run/pid")
        # One request over h2 first: what the first connection allocates once is not counted.
        curl -sk --http2 -o /dev/null --connect-to "$host:$port:127.0.0.1:$port" "https://$host:$port/.well-known/apple-app-site-association"
        before=$(settle "$pid")
        rm -f "$work/ctl" "$work/out"
        mkfifo "$work/ctl"
        taskset -c 1 python3 "$client" "$port" "$host" "$conns" "$copies" <"$work/ctl" >"$work/out" 2>"$work/err" &
        cpid=$!
        exec 3>"$work/ctl"
        for _ in $(seq 1 1200); do
            grep -q '^held' "$work/out" && break
            kill -0 "$cpid" 2>/dev/null || break
            sleep 0.1
        done
        grep -q '^held' "$work/out" || { cat "$work/err" >&2; die "h2hold.py did not hold against $server"; }
        held=$(settle "$pid")
        report=$(sed -n 's/^held //p' "$work/out")
        echo >&3
        exec 3>&-
        for _ in $(seq 1 100); do
            grep -q '^closed' "$work/out" && break
            sleep 0.1
        done
        wait "$cpid" 2>/dev/null || true
        cpid=""
        after=$(settle "$pid")
        "$bench/stop-server.sh" "$run" >/dev/null
        run=""
        echo "round=$round server=$server rss_before_kb=$before rss_held_kb=$held rss_after_kb=$after" \
            "kb_per_conn=$(awk -v a="$held" -v b="$before" -v n="$conns" 'BEGIN { printf "%.1f", (a - b) / n }')" \
            "after_vs_before_pct=$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.1f", (a - b) * 100 / b }')" \
            "client=$(printf '%s' "$report" | tr -d ' ')"
    done
done | tee "$work/lines"

echo
echo "| server | KB RSS per attacking connection (median) | RSS after close vs before (median) |"
echo "|---|---|---|"
for server in "${servers[@]}"; do
    per=$(grep " server=$server " "$work/lines" | while read -r line; do kv kb_per_conn "$line"; done | median)
    after=$(grep " server=$server " "$work/lines" | while read -r line; do kv after_vs_before_pct "$line"; done | median)
    echo "| $server | $per | ${after} % |"
done
