#!/usr/bin/env bash
# Runs the whole test suite (unit and end-to-end: every aasad the tests start is the sanitized
# build) under ThreadSanitizer or AddressSanitizer, in its own build folder. A report from any
# process (the test runner or a server it started) is written under .build-<sanitizer>/reports
# and fails the run.
# Usage: scripts/sanitize.sh thread|address [swift test arguments, e.g. --filter ServeTests]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
require_swift
kind="${1:-}"
case "$kind" in
thread) short=tsan ;;
address) short=asan ;;
*)
    echo "usage: scripts/sanitize.sh thread|address [swift test arguments]" >&2
    exit 64
    ;;
esac
shift
scratch=".build-$short"
reports="$PWD/$scratch/reports"
rm -rf "$reports"
mkdir -p "$reports"
swift build --build-tests --scratch-path "$scratch" -Xswiftc -sanitize="$kind" -Xswiftc -g
# Reports go to files (a server's stderr is read by the tests, not shown). Leak checking is off:
# the process-lifetime caches (snapshots, TLS contexts) are freed by exit, not before it.
export TSAN_OPTIONS="log_path=$reports/tsan halt_on_error=0 second_deadlock_stack=1"
export ASAN_OPTIONS="log_path=$reports/asan detect_leaks=0 abort_on_error=0"
set +e
swift test --skip-build --scratch-path "$scratch" --disable-xctest "$@" 2>&1 | tee "$scratch/test.log" | grep -E '^(✘|✔ Test run|✘ Test run)|Test run with'
status=${PIPESTATUS[0]}
set -e
found=$(find "$reports" -type f | wc -l)
echo "sanitizer=$kind tests_exit=$status reports=$found ($reports)"
for f in $(find "$reports" -type f | head -5); do
    echo "== $f"
    grep -E 'SUMMARY|WARNING|ERROR' "$f" | head -5
done
[ "$status" -eq 0 ] && [ "$found" -eq 0 ]
