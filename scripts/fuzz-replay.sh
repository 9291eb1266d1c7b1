#!/usr/bin/env bash
# Replays every input of every fuzzing corpus through its target's checks, in the test runner:
# the normal test run (scripts/test) replays a daily share of the corpora whose whole replay
# costs minutes of CPU in a debug build (the ownership corpus: one input in 8, FuzzCorpus.sample),
# this runs all of them. Run it after a change to Sources/SiteStore/HostOwnership*. docs/reliability.md ("CI time") has its figures.
# Usage: scripts/fuzz-replay.sh [swift test --filter expression]   (default: every replay suite)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
AASAD_FUZZ_REPLAY=full swift test --skip-build --disable-xctest --filter "${1:-FuzzReplayTests}"
