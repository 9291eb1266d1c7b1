#!/usr/bin/env bash
# Fuzzes what parses untrusted bytes, with libFuzzer and AddressSanitizer:
#   aasa    the AASA library (JSON parser, validators, URL parsing, matcher)     Fuzz/corpus, Fuzz/fail-cases
#   http1   the HTTP/1.1 request parser, and the field values of what it parsed  Fuzz/http1-corpus, Fuzz/http1-fail-cases
#   fields  header values: HTTP dates, If-None-Match lists, Host normalisation   Fuzz/fields-corpus, Fuzz/fields-fail-cases
#   http2   raw HTTP/2 client bytes through HTTP2Session (libnghttp2)            Fuzz/http2-corpus, Fuzz/http2-fail-cases
# New inputs go to the target's corpus; a crash, timeout or out-of-memory input is copied to its
# fail-cases folder. The normal test run replays both folders of every target.
# Usage: scripts/fuzz.sh [seconds per target] [aasa|http1|fields|http2|all]   (default 60, all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
which="${2:-all}"
case "$which" in aasa | http1 | fields | http2 | all) ;; *)
    echo "usage: scripts/fuzz.sh [seconds] [aasa|http1|fields|http2|all]" >&2
    exit 64
    ;;
esac
out=.build-fuzz
mkdir -p "$out"
status=0
# compile ARGS...: swiftc with libFuzzer and ASan; the linker's notes on ASan's local symbols are dropped.
compile() {
    swiftc -O -sanitize=fuzzer,address -parse-as-library -enable-upcoming-feature ExistentialAny "$@" 2>&1 |
        { grep -v "Cannot export local symbol" || true; }
    return "${PIPESTATUS[0]}"
}

# run NAME CORPUS FAILS MAX_LEN: runs $out/fuzz-NAME for $seconds and keeps what it found.
run() {
    local name=$1 corpus=$2 fails=$3 max_len=$4
    mkdir -p "$corpus" "$fails"
    set +e
    "$out/fuzz-$name" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/$name-" "$corpus" 2>&1 | tee "$out/$name.log" | grep -E '^#[0-9]+ +DONE|ERROR|SUMMARY' || true
    local code=${PIPESTATUS[0]}
    set -e
    [ "$code" -eq 0 ] || status=1
    for crash in "$out/$name"-crash-* "$out/$name"-timeout-* "$out/$name"-oom-*; do
        [ -e "$crash" ] || continue
        mv "$crash" "$fails/"
        echo "saved $(basename "$crash") to $fails: add a fix and keep the case" >&2
    done
    # libFuzzer's last status line: executions and executions per second.
    grep -E '^#[0-9]+' "$out/$name.log" | tail -1 | sed "s/^/$name: /"
}

if [ "$which" = all ] || [ "$which" = http1 ]; then
    # The parser and the field functions the server applies to what it parsed (HTTPCore).
    compile Sources/HTTP1/*.swift Sources/HTTPCore/*.swift Fuzz/FuzzHTTP1.swift -o "$out/fuzz-http1"
    run http1 Fuzz/http1-corpus Fuzz/http1-fail-cases 20000
fi

if [ "$which" = all ] || [ "$which" = fields ]; then
    compile Sources/HTTPCore/*.swift Fuzz/FuzzFields.swift -o "$out/fuzz-fields"
    run fields Fuzz/fields-corpus Fuzz/fields-fail-cases 256
fi

if [ "$which" = all ] || [ "$which" = http2 ]; then
    # One module: HTTP2Session without its `import HTTP1` (HTTP1's sources are compiled with it),
    # nghttp2 through the CAASANghttp2 module map.
    mkdir -p "$out/http2-src"
    sed -e '/^public import HTTP1$/d' -e '/^import HTTP1$/d' Sources/HTTP2/HTTP2Session.swift >"$out/http2-src/HTTP2Session.swift"
    compile -I Sources/CAASANghttp2 "$out/http2-src/HTTP2Session.swift" Sources/HTTP1/*.swift Sources/HTTPCore/*.swift \
        Fuzz/FuzzHTTP2.swift -lnghttp2 -o "$out/fuzz-http2"
    run http2 Fuzz/http2-corpus Fuzz/http2-fail-cases 16384
fi

if [ "$which" = all ] || [ "$which" = aasa ]; then
    compile Sources/AASA/*.swift Fuzz/FuzzAASA.swift -o "$out/fuzz-aasa"
    # Seed the corpus with every AASA-shaped file the project ships.
    for f in config/sites/*/apple-app-site-association config/sites/*/assetlinks.json Tests/aasadTests/Fixtures/*.json; do
        [ -f "$f" ] && cp "$f" "Fuzz/corpus/seed-$(echo "$f" | md5sum | cut -c1-12)"
    done
    run aasa Fuzz/corpus Fuzz/fail-cases 8192
fi
exit $status
