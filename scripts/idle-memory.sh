#!/usr/bin/env bash
# Memory per idle kept-alive TLS connection, over HTTP/1.1 and HTTP/2: starts the server on
# shared/bench's fixtures (ECDSA, one worker pinned to core 0), opens N connections that each
# make one request and then stay idle (shared/bench/idle-conns.py for HTTP/1.1,
# scripts/idle-h2-conns.py for HTTP/2), and prints the growth of the server's RSS (its whole
# process tree, as shared/bench does) divided by the connections open. Each protocol gets a
# fresh server, so one's heap does not pad the other's figure.
# Usage: scripts/idle-memory.sh [BINARY|nginx|h2o] [connections] [rounds]
#   e.g. scripts/idle-memory.sh .build/release/aasad 5000 3
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-.build/release/aasad}
conns=${2:-5000}
rounds=${3:-1}
bench=$(realpath "${BENCH_DIR:-../shared/bench}")
# shellcheck source=/dev/null
source "$bench/lib.sh"
host=a.example.test
work=$(mktemp -d)
chmod 755 "$work" # nginx workers run as nobody and read the fixtures
run=""
cleanup() {
    [ -n "$run" ] && { "$bench/stop-server.sh" "$run" >/dev/null 2>&1 || true; }
    rm -rf "$work"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"
"$bench/gen-fixtures.sh" "$work/fx" >/dev/null
case $target in
    nginx | h2o) args=(--server "$target") ;;
    *) args=(--server cmd --cmd "$(realpath "$target") serve --config {config} --https 127.0.0.1:{port} --threads {workers} --state {run}/state --log-level warning") ;;
esac

for round in $(seq 1 "$rounds"); do
    for proto in h1 h2; do
        port=$((24000 + RANDOM % 8000))
        run=$work/run-$round-$proto
        "$bench/start-server.sh" "${args[@]}" --sites "$work/fx/ecdsa/sites" --port "$port" --run-dir "$run" --cpus 0 >/dev/null
        pid=$(cat "$run/pid")
        # One request first, so the figure leaves out what the first connection allocates once.
        curl -sk -o /dev/null --connect-to "$host:$port:127.0.0.1:$port" "https://$host:$port/.well-known/apple-app-site-association"
        sleep 1
        before=$(tree_mem "$pid")
        client=$bench/idle-conns.py
        [ "$proto" = h2 ] && client=scripts/idle-h2-conns.py
        taskset -c 1 timeout 200 python3 "$client" 127.0.0.1 "$port" "$host" "$conns" 60 >"$work/out" 2>&1 </dev/null &
        cpid=$!
        for _ in $(seq 1 1500); do
            grep -q '^ready' "$work/out" && break
            kill -0 "$cpid" 2>/dev/null || break
            sleep 0.1
        done
        sleep 1
        open=$(ss -Htn state established "( sport = :$port )" | wc -l)
        after=$(tree_mem "$pid")
        stop_pid "$cpid" "$client"
        "$bench/stop-server.sh" "$run" >/dev/null
        run=""
        rb=$(kv rss_kb "$before") ra=$(kv rss_kb "$after")
        echo "round=$round proto=$proto open=$open $(grep -o 'failed=[0-9]*' "$work/out" | head -n1 || echo failed=none)" \
            "rss_before_kb=$rb rss_kb=$ra kb_per_conn=$(awk -v a="$ra" -v b="$rb" -v n="$open" 'BEGIN { printf "%.1f", n ? (a - b) / n : 0 }')"
    done
done
