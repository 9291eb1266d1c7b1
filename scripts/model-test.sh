#!/usr/bin/env bash
# The model-based config test (Tests/DaemonServeTests/ConfigModelTests.swift) with more operations than
# CI's seeded 300: scripts/model-test.sh [operations] [seed]. Builds, runs only that test, and
# prints its figures (operations, seconds, answers checked, wrong answers, convergence times).
# docs/reliability.md records the documented run (at least 10,000 operations).
set -euo pipefail
cd "$(dirname "$0")/.."
export AASAD_MODEL_OPERATIONS="${1:-10000}"
export AASAD_MODEL_SEED="${2:-$(date +%s)}"
echo "model test: $AASAD_MODEL_OPERATIONS operations, seed $AASAD_MODEL_SEED"
swift build --build-tests
swift test --skip-build --disable-xctest --filter 'ConfigModelTests'
