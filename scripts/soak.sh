#!/usr/bin/env bash
# Soak test (issue 10): mixed load against aasad for a fixed time with a config change every
# second, sampling the server's RSS and open descriptors; see scripts/soak.py for what runs.
# Usage: scripts/soak.sh [seconds, default 1800] [--release] [soak.py options]
# The documented run: scripts/soak.sh 1800 --release --max-rss-slope 64 --max-fd-slope 0.5
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
require_swift
ensure_packages nghttp2-client openssl python3
ensure_python_package h2 h2==4.1.0 python3-h2
seconds="${1:-1800}"
shift || true
config=debug
if [ "${1:-}" = "--release" ]; then
    config=release
    shift
fi
swift build -c "$config" --product aasad >/dev/null
exec python3 scripts/soak.py --bin "$(swift build -c "$config" --show-bin-path)/aasad" --seconds "$seconds" "$@"
