#!/usr/bin/env bash
# Fuzzes the AASA library (JSON parser, validators, URL parsing, matcher) with libFuzzer and
# AddressSanitizer. New inputs go to Fuzz/corpus; a crash is copied to Fuzz/fail-cases, which
# the normal test run replays (Tests/AASATests/FuzzReplayTests.swift).
# Usage: scripts/fuzz.sh [seconds]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out=.build-fuzz
mkdir -p "$out" Fuzz/corpus Fuzz/fail-cases
swiftc -O -sanitize=fuzzer,address -parse-as-library -enable-upcoming-feature ExistentialAny \
    Sources/AASA/*.swift Fuzz/FuzzAASA.swift -o "$out/fuzz-aasa"
# Seed the corpus with every AASA-shaped file the project ships.
for f in config/sites/*/apple-app-site-association config/sites/*/assetlinks.json Tests/aasadTests/Fixtures/*.json; do
    [ -f "$f" ] && cp "$f" "Fuzz/corpus/seed-$(echo "$f" | md5sum | cut -c1-12)"
done
set +e
"$out/fuzz-aasa" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/" Fuzz/corpus
status=$?
set -e
for crash in "$out"/crash-* "$out"/timeout-* "$out"/oom-*; do
    [ -e "$crash" ] || continue
    cp "$crash" Fuzz/fail-cases/
    echo "saved $(basename "$crash") to Fuzz/fail-cases: add a fix and keep the case" >&2
done
exit $status
