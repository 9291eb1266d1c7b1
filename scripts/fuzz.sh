#!/usr/bin/env bash
# Fuzzes what parses untrusted bytes, with libFuzzer and AddressSanitizer: the AASA library (JSON
# parser, validators, URL parsing, matcher) and the HTTP/1.1 request parser. New inputs go to
# Fuzz/corpus and Fuzz/http1-corpus; a crash is copied to Fuzz/fail-cases (AASA) or
# Fuzz/http1-fail-cases, which the normal test run replays.
# Usage: scripts/fuzz.sh [seconds per target] [aasa|http1|config|all]   (default 60, all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
which="${2:-all}"
out=.build-fuzz
mkdir -p "$out" Fuzz/corpus Fuzz/fail-cases Fuzz/http1-corpus Fuzz/http1-fail-cases
status=0

# site.yaml and aasad.yaml values (issue 10). ServerSettings lives in the aasad executable with
# everything it needs, so this target is aasad itself, built by SwiftPM in its own scratch path
# with -D FUZZ_CONFIG: AASACommand then has no @main, and Sources/aasad/ConfigFuzz.swift hands
# aasad_main to libFuzzer, which calls ConfigFuzz.check on each input (the checks the replay
# test Tests/aasadTests/ConfigFuzzReplayTests runs over Fuzz/config-corpus and
# Fuzz/config-fail-cases in every test run).
fuzz_config() {
    mkdir -p Fuzz/config-corpus Fuzz/config-fail-cases
    swift build -c release --scratch-path .build-fuzz-config --product aasad \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZ_CONFIG
    cp config/aasad.yaml Fuzz/config-corpus/seed-aasad.yaml
    printf 'aliases:\n  - www.a.test\n  - "*.users.a.test"\ncache-control: max-age=60\n' >Fuzz/config-corpus/seed-site.yaml
    printf 'cache-control: "public, max-age=60,\\tmust-revalidate"\naliases: [b.test]\n' >Fuzz/config-corpus/seed-site-quoted.yaml
    printf 'listen: {https: [":8443", "[::1]:8443"], http: []}\ncache-control: no-cache\ntimeouts: {idle: 5}\n' \
        >Fuzz/config-corpus/seed-aasad-flow.yaml
    printf 'max-age=300, stale-while-revalidate=60' >Fuzz/config-corpus/seed-value
    cp Fuzz/config-fail-cases/* Fuzz/config-corpus/ 2>/dev/null || true
    local rc=0
    .build-fuzz-config/release/aasad -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/config-" Fuzz/config-corpus || rc=1
    for crash in "$out"/config-crash-* "$out"/config-timeout-* "$out"/config-oom-*; do
        [ -e "$crash" ] && cp "$crash" Fuzz/config-fail-cases/
    done
    return $rc
}
if [ "$which" = config ]; then
    fuzz_config || status=1
    exit $status
fi
if [ "$which" = all ]; then fuzz_config || status=1; fi

if [ "$which" = all ] || [ "$which" = http1 ]; then
    swiftc -O -sanitize=fuzzer,address -parse-as-library -enable-upcoming-feature ExistentialAny \
        Sources/HTTP1/*.swift Fuzz/FuzzHTTP1.swift -o "$out/fuzz-http1"
    printf 'GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: a.example\r\nAccept-Encoding: gzip\r\nIf-None-Match: "x"\r\n\r\n' >Fuzz/http1-corpus/seed-get
    printf 'HEAD http://a.example/x?y HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n' >Fuzz/http1-corpus/seed-pipelined
    set +e
    "$out/fuzz-http1" -max_total_time="$seconds" -max_len=20000 -timeout=10 -artifact_prefix="$out/http1-" Fuzz/http1-corpus
    [ $? -eq 0 ] || status=1
    set -e
    for crash in "$out"/http1-crash-* "$out"/http1-timeout-*; do
        [ -e "$crash" ] && cp "$crash" Fuzz/http1-fail-cases/
    done
fi
[ "$which" = all ] || [ "$which" = aasa ] || exit $status

swiftc -O -sanitize=fuzzer,address -parse-as-library -enable-upcoming-feature ExistentialAny \
    Sources/AASA/*.swift Fuzz/FuzzAASA.swift -o "$out/fuzz-aasa"
# Seed the corpus with every AASA-shaped file the project ships.
for f in config/sites/*/apple-app-site-association config/sites/*/assetlinks.json Tests/aasadTests/Fixtures/*.json; do
    [ -f "$f" ] && cp "$f" "Fuzz/corpus/seed-$(echo "$f" | md5sum | cut -c1-12)"
done
set +e
"$out/fuzz-aasa" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/" Fuzz/corpus
[ $? -eq 0 ] || status=1
set -e
for crash in "$out"/crash-* "$out"/timeout-* "$out"/oom-*; do
    [ -e "$crash" ] || continue
    cp "$crash" Fuzz/fail-cases/
    echo "saved $(basename "$crash") to Fuzz/fail-cases: add a fix and keep the case" >&2
done
exit $status
