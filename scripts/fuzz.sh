#!/usr/bin/env bash
# Fuzzes what parses untrusted bytes, with libFuzzer and AddressSanitizer: the AASA library (JSON
# parser, validators, URL parsing, matcher) and the HTTP/1.1 request parser. New inputs go to
# Fuzz/corpus and Fuzz/http1-corpus; a crash is copied to Fuzz/fail-cases (AASA) or
# Fuzz/http1-fail-cases, which the normal test run replays.
# PEM loading (TLSContext) has its own target: corpus Fuzz/pem-corpus, failures Fuzz/pem-fail-cases.
# Usage: scripts/fuzz.sh [seconds per target] [aasa|http1|pem|all]   (default 60, all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
which="${2:-all}"
out=.build-fuzz
mkdir -p "$out" Fuzz/corpus Fuzz/fail-cases Fuzz/http1-corpus Fuzz/http1-fail-cases
status=0

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
if [ "$which" = all ] || [ "$which" = pem ]; then
    # TLSContext's chain and key loading; input: chain, NUL, key (see Fuzz/FuzzPEM.swift). The
    # corpus is committed (test-only keys); it is not regenerated here.
    mkdir -p Fuzz/pem-corpus Fuzz/pem-fail-cases
    swiftc -O -sanitize=fuzzer,address -parse-as-library -enable-upcoming-feature ExistentialAny \
        -enable-upcoming-feature InternalImportsByDefault -I Sources/CAASAOpenSSL -lssl -lcrypto \
        Sources/TLS/*.swift Fuzz/FuzzPEM.swift -o "$out/fuzz-pem"
    set +e
    "$out/fuzz-pem" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$out/pem-" \
        Fuzz/pem-corpus
    [ $? -eq 0 ] || status=1
    set -e
    for crash in "$out"/pem-crash-* "$out"/pem-timeout-* "$out"/pem-oom-* "$out"/pem-leak-*; do
        [ -e "$crash" ] && cp "$crash" Fuzz/pem-fail-cases/
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
