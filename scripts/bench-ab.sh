#!/usr/bin/env bash
# Compares two aasad binaries on shared/bench in alternating rounds (A B A B ...), one bench.sh
# round each, and prints the median rps, server CPU and rps per server core of every workload
# for each, with the ratio B/A. Differences under about 10 % are within this machine's noise.
# Usage: scripts/bench-ab.sh A_BINARY B_BINARY [workloads] [rounds] [seconds]
#   e.g. scripts/bench-ab.sh /tmp/aasad-before .build/release/aasad h1-c50,h2 3 10
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || {
    echo "usage: scripts/bench-ab.sh A_BINARY B_BINARY [workloads] [rounds] [seconds]" >&2
    exit 64
}
a=$(realpath "$1")
b=$(realpath "$2")
workloads=${3:-h1-c50,h2}
rounds=${4:-3}
seconds=${5:-10}
bench=${BENCH:-../shared/bench/bench.sh}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for round in $(seq 1 "$rounds"); do
    for side in A B; do
        binary=$a
        [ "$side" = B ] && binary=$b
        echo "round $round: $side ($binary)" >&2
        "$bench" --servers '' --server-name "$side" --reps 1 --duration "$seconds" --workloads "$workloads" \
            --server-cmd "$binary serve --config {config} --https 127.0.0.1:{port} --threads {workers} --state {run}/state --log-level warning" \
            2>&1 | grep '^workload=' >>"$out/runs" || true
    done
done
python3 - "$out/runs" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    rows.setdefault((kv["workload"], kv["server"]), []).append(kv)
def med(runs, key):
    values = [float(r[key]) for r in runs if r.get(key) not in (None, "", "NA")]
    return statistics.median(values) if values else float("nan")
for workload in sorted({w for w, _ in rows}):
    a, b = rows.get((workload, "A"), []), rows.get((workload, "B"), [])
    print(f"{workload}: rounds A={len(a)} B={len(b)}")
    for key in ("rps", "srv_cpu", "rps_per_core", "p99_ms", "errors"):
        ma, mb = med(a, key), med(b, key)
        ratio = f"{mb / ma:.2f}" if ma else "-"
        print(f"  {key:13} A={ma:12.2f}  B={mb:12.2f}  B/A={ratio}")
PY
