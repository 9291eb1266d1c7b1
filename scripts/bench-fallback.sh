#!/usr/bin/env bash
# Fallback redirects (issue 12) beside AASA requests, and beside nginx doing the same redirect.
#
# Starts aasad and nginx on shared/bench's fixtures (the same sites and certificates, nginx with
# shared/bench's own config and TLS settings), every site with a fallback to
# https://www.example.com{path}: aasad through each site's site.yaml (docs/link-domain.md), nginx
# through `location / { return 302 https://www.example.com$request_uri; }` beside its
# `location =` for the AASA file. Before measuring, checks every fixture host on both servers over
# HTTP/1.1 and HTTP/2 (the AASA path: 200, application/json and the exact bytes of the file; the
# fallback path: 302 and exactly one Location, the expected one) and aborts on any difference.
# Then, in alternating rounds (aasad, nginx, aasad, nginx, ...), runs four workloads against
# each server with shared/bench/run-workloads.sh:
#   h1-aasa      wrk -t1 -c50 -dS --latency: HTTP/1.1 keep-alive over TLS on
#                /.well-known/apple-app-site-association
#   h1-fallback  the same on /buy/42?src=mail (302 to https://www.example.com/buy/42?src=mail)
#   h2-aasa      h2load -c50 -m10 -n N over ALPN h2 on the AASA path
#   h2-fallback  the same on the fallback path
# Servers are pinned to --server-cpus with one worker per CPU (by default core 0: aasad
# --threads 1, nginx worker_processes 1), wrk and h2load to --client-cpus (default core 1).
# Server CPU is utime+stime from /proc/PID/stat of the server's process tree (its threads and
# nginx's worker included) over each run.
#
# This machine's throughput swings by about ±40 % between runs (builds and fuzzers share its two
# cores), so only medians of alternating rounds from one run are compared, never figures from
# different runs; read rps_per_core (rps / server CPU) beside rps, and srv_core: a run is a
# measure of the server only when its core was busy (srv_core near 1).
#
# Usage: scripts/bench-fallback.sh [options]
#   --aasad BINARY       the aasad to measure (default: swift build -c release --product aasad)
#   --rounds N           rounds (default 3)
#   --duration S         seconds per wrk run (default 10)
#   --h2-requests N      requests per h2load run (default 200000)
#   --server-cpus LIST   taskset CPUs of both servers (default 0)
#   --client-cpus LIST   taskset CPUs of wrk and h2load (default 1)
#   --base-port N        aasad listens on 127.0.0.1:N, nginx on N+1 (default 9540)
#   --work-dir DIR       keep fixtures, configs, logs and raw results there (default: a temp dir)
# BENCH_DIR names the shared harness (default: ../shared/bench beside this repository).
# Needs root when nginx, wrk or h2load must be installed (apt-get; nginx's service stays off).
#
# Output (stdout), all key=value like shared/bench, then a table:
#   check server=aasad ok=20 failed=0
#   workload=h1-fallback rep=1 server=aasad rps=... p50_ms=... p99_ms=... non2xx=0 errors=0 ...
#   summary workload=h1-fallback server=aasad runs=3 rps=... srv_cpu=... rps_per_core=... ...
#   ratio=fallback_vs_aasa server=aasad proto=h1 rps=0.97 rps_per_core=0.98
#   ratio=aasad_vs_nginx workload=h1-fallback rps=1.60 rps_per_core=1.70
# Summary values are medians over the rounds, except non2xx_total and errors_total (sums): wrk's
# non2xx counts answers that are not 2xx or 3xx; h2load's errors count failed requests (a 4xx or
# 5xx answer) and errored ones; ok is h2load's 2xx count (0 for a redirect).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=${BENCH_DIR:-$root/../shared/bench}
[[ -f $bench/lib.sh ]] || {
    echo "error: no shared bench harness in $bench (set BENCH_DIR)" >&2
    exit 1
}
bench=$(cd "$bench" && pwd)
# shellcheck source=/dev/null
source "$bench/lib.sh"

aasad='' rounds=3 duration=10 h2_requests=200000 server_cpus=0 client_cpus=1 base_port=9540 work=''
while (($#)); do
    case $1 in
        --aasad) aasad=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --h2-requests) h2_requests=$2; shift 2 ;;
        --server-cpus) server_cpus=$2; shift 2 ;;
        --client-cpus) client_cpus=$2; shift 2 ;;
        --base-port) base_port=$2; shift 2 ;;
        --work-dir) work=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $duration =~ ^[1-9][0-9]*$ && $h2_requests =~ ^[1-9][0-9]*$ ]] ||
    die "--rounds, --duration and --h2-requests take positive whole numbers"

aasa_path=/.well-known/apple-app-site-association
fallback_path='/buy/42?src=mail'
fallback_target='https://www.example.com{path}'
want_location="https://www.example.com$fallback_path"
load_host=a.example.test
workloads=(h1-aasa h1-fallback h2-aasa h2-fallback)
servers=(aasad nginx)

ensure_tools
if [[ -z $aasad ]]; then
    log "building aasad (release)"
    (cd "$root" && swift build -c release --product aasad >&2) || die "release build failed"
    aasad=$(cd "$root" && swift build -c release --show-bin-path)/aasad
fi
[[ -x $aasad ]] || die "no aasad binary at $aasad"
aasad=$(realpath "$aasad")

keep_work=1
if [[ -z $work ]]; then work=$(mktemp -d /tmp/aasad-bench-fallback.XXXXXX); keep_work=0; fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
chmod 755 "$work" # nginx's worker (not root) reads the AASA files below it
raw=$work/results.txt
: >"$raw"

declare -A pid_of=() port_of=()
cleanup() {
    local name
    for name in "${!pid_of[@]}"; do stop_pid "${pid_of[$name]}" "$name"; done
    ((keep_work)) || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

emit() { printf '%s\n' "$1" | tee -a "$raw"; }

# Fixtures: shared/bench's sites (ECDSA certificates), each with the fallback in site.yaml.
fx=$work/fixtures
"$bench/gen-fixtures.sh" "$fx"
sites=$fx/ecdsa/sites
while read -r dir _; do
    printf '# Every other path: a redirect to the web site, path and query as sent.\nfallback:\n  web: %s\n' \
        "$fallback_target" >"$sites/$dir/site.yaml"
done <"$fx/hosts.txt"

# nginx: shared/bench's config (TLS settings, one server block per site, `location =` for the
# AASA paths), started once to write it, with `location / { return 404; }` turned into the same
# redirect as aasad's. The count check fails loudly should shared/bench's config change shape.
run=$work/run/nginx
port_of[nginx]=$((base_port + 1))
pid_of[nginx]=$("$bench/start-server.sh" --server nginx --sites "$sites" --port "${port_of[nginx]}" \
    --run-dir "$run" --cpus "$server_cpus")
"$bench/stop-server.sh" "$run"
unset 'pid_of[nginx]'
# shellcheck disable=SC2016 # $request_uri is nginx's variable (path and query as sent), not the shell's
redirect='return 302 https://www.example.com$request_uri;'
sed "s|location / { return 404; }|location / { $redirect }|" "$run/nginx.conf" >"$run/nginx-fallback.conf"
redirects=$(grep -cF "location / { $redirect }" "$run/nginx-fallback.conf" || true)
(("$redirects" == $(wc -l <"$fx/hosts.txt"))) ||
    die "expected one redirect per site in $run/nginx-fallback.conf, found $redirects"
pid_of[nginx]=$("$bench/start-server.sh" --server cmd --sites "$sites" --port "${port_of[nginx]}" \
    --run-dir "$run" --cpus "$server_cpus" \
    --cmd "nginx -p {run} -c {run}/nginx-fallback.conf -e {run}/error.log -g 'daemon off;'")
log "started nginx pid ${pid_of[nginx]} on port ${port_of[nginx]}"

port_of[aasad]=$base_port
pid_of[aasad]=$("$bench/start-server.sh" --server cmd --sites "$sites" --port "${port_of[aasad]}" \
    --run-dir "$work/run/aasad" --cpus "$server_cpus" \
    --cmd "$aasad serve --config {config} --https 127.0.0.1:{port} --threads {workers} --state {run}/state --log-level warning")
log "started aasad ($aasad) pid ${pid_of[aasad]} on port ${port_of[aasad]}"

# location_of HEADERS_FILE: the Location value, or "count=N" unless there is exactly one.
location_of() {
    tr -d '\r' <"$1" | awk 'tolower($1) == "location:" { n++; v = $2 } END { if (n == 1) print v; else print "count=" n }'
}

# check NAME: every fixture host over HTTP/1.1 and HTTP/2, both paths.
check() {
    local name=$1 port=${port_of[$1]} ok=0 bad=0 dir host v want got loc
    while read -r dir host; do
        for v in 1.1 2; do
            rm -f "$work/body" "$work/head"
            got=$(curl -sS "--http$v" --max-time 5 --cacert "$fx/ca.pem" --resolve "$host:$port:127.0.0.1" \
                -o "$work/body" -w '%{http_code} %{http_version} %{content_type}' \
                "https://$host:$port$aasa_path" 2>&1 || true)
            if [[ $got == "200 $v application/json"* ]] && cmp -s "$work/body" "$sites/$dir/apple-app-site-association"; then
                ok=$((ok + 1))
            else
                bad=$((bad + 1))
                log "check $name: $host$aasa_path HTTP/$v -> $got (want 200 and the file's bytes)"
            fi
            got=$(curl -sS "--http$v" --max-time 5 --cacert "$fx/ca.pem" --resolve "$host:$port:127.0.0.1" \
                -o /dev/null -D "$work/head" -w '%{http_code} %{http_version}' \
                "https://$host:$port$fallback_path" 2>&1 || true)
            loc=$(location_of "$work/head")
            want="302 $v"
            if [[ $got == "$want" && $loc == "$want_location" ]]; then
                ok=$((ok + 1))
            else
                bad=$((bad + 1))
                log "check $name: $host$fallback_path HTTP/$v -> $got Location $loc (want $want $want_location)"
            fi
        done
    done <"$fx/hosts.txt"
    emit "check server=$name ok=$ok failed=$bad"
    if ((bad)); then
        keep_work=1 # the logs and configs say why
        die "$name does not answer both paths as expected; nothing measured (logs in $work/run/$name)"
    fi
}
for name in "${servers[@]}"; do check "$name"; done

# one NAME WORKLOAD ROUND: one run of one workload against one server.
one() {
    local name=$1 w=$2 r=$3 tool path line
    case $w in
        h1-*) tool=h1-c50 ;;
        h2-*) tool=h2 ;;
    esac
    case $w in
        *-aasa) path=$aasa_path ;;
        *-fallback) path=$fallback_path ;;
    esac
    line=$("$bench/run-workloads.sh" --target "127.0.0.1:${port_of[$name]}" --host "$load_host" --label "$name" \
        --pid "${pid_of[$name]}" --workloads "$tool" --path "$path" --duration "$duration" \
        --h2-requests "$h2_requests" --client-cpus "$client_cpus" --server-cpus "$server_cpus")
    line=${line/workload=$tool /workload=$w rep=$r }
    emit "$line"
    if [[ $(kv non2xx "$line" || echo 0) != 0 || $(kv errors "$line") != 0 ]]; then
        log "warning: $w on $name: non2xx=$(kv non2xx "$line" || echo -) errors=$(kv errors "$line")"
    fi
    if [[ $tool == h2 && $(kv proto "$line") != h2 ]]; then
        log "warning: $w on $name negotiated $(kv proto "$line"), not h2"
    fi
}

for ((r = 1; r <= rounds; r++)); do
    for name in "${servers[@]}"; do
        log "round $r of $rounds: $name"
        for w in "${workloads[@]}"; do one "$name" "$w" "$r"; done
    done
done

# Summary: medians per workload and server (sums for the error counts), then the ratios.
values() { # values WORKLOAD SERVER KEY: one value per run
    grep "^workload=$1 rep=[0-9]* server=$2 " "$raw" | while read -r l; do kv "$3" "$l" || true; done
}
med() { values "$@" | median; }
total() { values "$@" | awk '{ s += $1 } END { print s + 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || b + 0 <= 0) print "nan"; else printf "%.2f", a / b }'; }

for w in "${workloads[@]}"; do
    for name in "${servers[@]}"; do
        line="summary workload=$w server=$name runs=$(values "$w" "$name" rps | wc -l)"
        for k in rps srv_cpu rps_per_core p50_ms p99_ms srv_core cli_core; do line+=" $k=$(med "$w" "$name" "$k")"; done
        if [[ $w == h2-* ]]; then
            line+=" ok=$(med "$w" "$name" ok)"
        else
            line+=" non2xx_total=$(total "$w" "$name" non2xx)"
        fi
        line+=" errors_total=$(total "$w" "$name" errors)"
        emit "$line"
    done
done
for name in "${servers[@]}"; do
    for proto in h1 h2; do
        a=$(ratio "$(med "$proto-fallback" "$name" rps)" "$(med "$proto-aasa" "$name" rps)")
        c=$(ratio "$(med "$proto-fallback" "$name" rps_per_core)" "$(med "$proto-aasa" "$name" rps_per_core)")
        emit "ratio=fallback_vs_aasa server=$name proto=$proto rps=$a rps_per_core=$c"
    done
done
for w in "${workloads[@]}"; do
    a=$(ratio "$(med "$w" aasad rps)" "$(med "$w" nginx rps)")
    c=$(ratio "$(med "$w" aasad rps_per_core)" "$(med "$w" nginx rps_per_core)")
    emit "ratio=aasad_vs_nginx workload=$w rps=$a rps_per_core=$c"
done

# The same for people: medians of $rounds alternating rounds.
{
    printf '\n%-12s %-6s %9s %8s %10s %8s %8s %7s\n' workload server 'req/s' 'srv CPU' 'req/s/core' 'p99 ms' 'bad' errors
    for w in "${workloads[@]}"; do
        for name in "${servers[@]}"; do
            line=$(grep "^summary workload=$w server=$name " "$raw")
            bad=$(kv non2xx_total "$line" || echo -)
            printf '%-12s %-6s %9.0f %8.2f %10.0f %8.2f %8s %7s\n' "$w" "$name" "$(kv rps "$line")" \
                "$(kv srv_cpu "$line")" "$(kv rps_per_core "$line")" "$(kv p99_ms "$line")" "$bad" \
                "$(kv errors_total "$line")"
        done
    done
    printf '\nfallback / AASA:'
    for name in "${servers[@]}"; do
        for proto in h1 h2; do
            line=$(grep "^ratio=fallback_vs_aasa server=$name proto=$proto " "$raw")
            printf '  %s %s %s (per core %s)' "$name" "$proto" "$(kv rps "$line")" "$(kv rps_per_core "$line")"
        done
    done
    printf '\naasad / nginx:  '
    for w in "${workloads[@]}"; do
        line=$(grep "^ratio=aasad_vs_nginx workload=$w " "$raw")
        printf '  %s %s (per core %s)' "$w" "$(kv rps "$line")" "$(kv rps_per_core "$line")"
    done
    printf '\n(bad: wrk answers not 2xx or 3xx; errors: socket errors, or h2load failed + errored;\n'
    printf ' rounds=%s duration=%ss h2_requests=%s; compare only within this run)\n' "$rounds" "$duration" "$h2_requests"
}
((keep_work)) && log "fixtures, configs, logs and raw results kept in $work"
