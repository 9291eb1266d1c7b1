#!/usr/bin/env bash
# Server CPU time per request, a cost that survives this noisy 2-core machine better than req/s:
# the load generator drives a FIXED number of requests and the figure is the server's own CPU
# time (utime + stime of its whole process tree, workers included, from /proc/PID/stat) spent
# on them, so a slow or shared client core stretches the run but barely moves the figure.
# Starts aasad, nginx and h2o on shared/bench's fixtures (ECDSA), the server pinned to core 0
# and the client to core 1, and runs them in alternating rounds (A B C A B C ...). Workloads:
#   h1        h2load --h1 -c50 -n N: HTTP/1.1 keep-alive over TLS
#   h2        h2load -c50 -m10 -n N: HTTP/2
#   resumed   h2load --h1 -c50 -n N/10 with Connection: close: a TLS 1.3 resumed connection each
#   newconn   shared/bench's tls-newconn -c50 for NEWCONN_SECONDS (default 3): a full TLS 1.3
#             handshake each; divided by the connections it completed (the up to 50 still open
#             at the end are in the CPU but not the count: under 2 % at this machine's rates)
# Prints each run, then per workload and server the median over rounds of server CPU
# microseconds per request (or connection) and the ratio to aasad. A server that is not
# installed is skipped with a note.
# Usage: scripts/cpu-per-request.sh AASAD_BINARY [rounds] [requests] [workloads] [servers]
#   e.g. scripts/cpu-per-request.sh .build/release/aasad 5 100000 h1,h2,resumed,newconn aasad,nginx,h2o
# The server `aasad-before` is a second aasad binary, AASAD_BEFORE=BINARY, in the same alternating
# rounds (a change's before and after beside nginx and h2o in one run):
#   AASAD_BEFORE=/tmp/aasad-old scripts/cpu-per-request.sh .build/release/aasad 3 50000 h2 aasad,aasad-before,h2o,nginx
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || {
    echo "usage: scripts/cpu-per-request.sh AASAD_BINARY [rounds] [requests] [workloads] [servers]" >&2
    exit 64
}
aasad=$(realpath "$1")
rounds=${2:-3}
requests=${3:-100000}
workloads=${4:-h1,h2,resumed,newconn}
servers=${5:-aasad,nginx,h2o}
newconn_seconds=${NEWCONN_SECONDS:-3}
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
bench_fixtures

# Start every server once, each on its own port; only the one under load uses its core.
declare -A port pid
active=()
n=0
IFS=, read -r -a wanted <<<"$servers"
for server in "${wanted[@]}"; do
    if [ "$server" != aasad ] && [ "$server" != aasad-before ] && ! command -v "$server" >/dev/null 2>&1; then
        echo "note: $server is not installed; skipped" >&2
        continue
    fi
    n=$((n + 1))
    port[$server]=$((24000 + RANDOM % 8000 + n))
    binary=$server
    [ "$server" = aasad ] && binary=$aasad
    [ "$server" = aasad-before ] && binary=${AASAD_BEFORE:?aasad-before needs AASAD_BEFORE=BINARY}
    bench_start "$binary" "${port[$server]}" "$work/run-$server"
    pid[$server]=$(cat "$work/run-$server/pid")
    active+=("$server")
done
[ ${#active[@]} -gt 0 ] || { echo "no server to measure" >&2; exit 1; }

# drive WORKLOAD PORT OUT: runs the load once; prints "COUNT ERRORS" (requests or connections).
drive() {
    local workload=$1 p=$2 out=$3 url="https://$host:$2$path" f
    case $workload in
        h1 | h2 | resumed)
            local opt=(--h1 -c50 -n "$requests")
            [ "$workload" = h2 ] && opt=(-c50 -m10 -n "$requests")
            [ "$workload" = resumed ] && opt=(--h1 -c50 -H 'Connection: close' -n $((requests / 10)))
            timeout 300 taskset -c 1 h2load -t1 "${opt[@]}" --connect-to "127.0.0.1:$p" "$url" >"$out" 2>&1 </dev/null || true
            # "requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout"
            awk '/^requests:/ { ok = $8; bad = $10 + $12 + $14 } /^status codes:/ { non2xx = $5 + $7 + $9 }
                END { print ok + 0, bad + non2xx }' "$out" ;;
        newconn)
            timeout $((newconn_seconds + 30)) taskset -c 1 "$(newconn_bin)" -addr "127.0.0.1:$p" -sni "$host" \
                -path "$path" -c 50 -d "${newconn_seconds}s" -warm 0s >"$out" 2>&1 </dev/null || true
            f=$(grep '^conns=' "$out" || echo 'conns=0 errors=1')
            echo "$(kv conns "$f") $(($(kv errors "$f") + $(kv non200 "$f" || echo 0) + $(kv reused "$f" || echo 0)))" ;;
        *) echo "unknown workload $workload" >&2; exit 64 ;;
    esac
}

# Warm every server up (sessions, caches, first allocations) before anything is counted.
for server in "${active[@]}"; do
    timeout 60 taskset -c 1 h2load -t1 -c10 -n 2000 --connect-to "127.0.0.1:${port[$server]}" \
        "https://$host:${port[$server]}$path" >/dev/null 2>&1 || true
done

IFS=, read -r -a list <<<"$workloads"
for round in $(seq 1 "$rounds"); do
    for workload in "${list[@]}"; do
        for server in "${active[@]}"; do
            c0=$(tree_cpu_ticks "${pid[$server]}")
            read -r count errors < <(drive "$workload" "${port[$server]}" "$work/out")
            c1=$(tree_cpu_ticks "${pid[$server]}")
            us=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v n="$count" 'BEGIN { printf "%.2f", n ? c * 1e6 / hz / n : 0 }')
            echo "round=$round workload=$workload server=$server count=$count errors=$errors cpu_s=$(awk -v c=$((c1 - c0)) -v hz="$hz" 'BEGIN { printf "%.2f", c / hz }') us_per_req=$us" |
                tee -a "$work/runs" >&2
        done
    done
done

python3 - "$work/runs" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(p.split("=", 1) for p in line.split())
    rows.setdefault((kv["workload"], kv["server"]), []).append(kv)
for workload in dict.fromkeys(w for w, _ in rows):
    base = None
    for (w, server), runs in rows.items():
        if w != workload:
            continue
        us = statistics.median(float(r["us_per_req"]) for r in runs)
        errors = sum(int(r["errors"]) for r in runs)
        if server == "aasad":
            base = us
        ratio = f"{us / base:.2f}" if base else "-"
        print(f"summary workload={workload} server={server} runs={len(runs)} us_per_req={us:.2f} vs_aasad={ratio} errors={errors}")
PY
