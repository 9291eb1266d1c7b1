#!/usr/bin/env bash
# HTTP/2 conformance (RFC 7540/7541 as h2spec 2.x checks it) of a running or started aasad, over
# TLS, against the AASA path of links.localhost. h2spec cannot be vendored: give the directory of
# its source (a checkout or `git archive` of github.com/summerwind/h2spec); it is built here in
# GOPATH mode with Debian's Go and the golang-*-dev packages of its dependencies.
# Usage: scripts/h2spec.sh H2SPEC_SOURCE_DIR [BINARY]    (default .build/release/aasad)
# H2SPEC_ARGS='-v' or a case such as 'http2/5.1' is passed on to h2spec. Prints the pass count.
# H2SPEC_BINARY=PATH: an h2spec built before (by this script's steps) instead of building one;
# H2SPEC_SOURCE_DIR may then be any directory.
# Figures (146 of 146 since 1a61761) are in docs/reliability.md ("HTTP/2 conformance").
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
source_dir=$(realpath "${1:?usage: scripts/h2spec.sh H2SPEC_SOURCE_DIR [BINARY]}")
binary=$(realpath "${2:-.build/release/aasad}")
with_work_and_server
if [ -n "${H2SPEC_BINARY:-}" ]; then
    cp "$H2SPEC_BINARY" "$work/h2spec"
else
    ensure_packages golang-go golang-github-fatih-color-dev golang-github-spf13-cobra-dev golang-golang-x-net-dev
    # GOPATH mode: the source under its import path, the Debian packages' sources on the path.
    mkdir -p "$work/gopath/src/github.com/summerwind"
    cp -r "$source_dir" "$work/gopath/src/github.com/summerwind/h2spec"
    (cd "$work/gopath/src/github.com/summerwind/h2spec" &&
        GO111MODULE=off GOPATH="$work/gopath:/usr/share/gocode" GOCACHE="$work/gocache" GOFLAGS=-mod=mod \
            go build -o "$work/h2spec" ./cmd/h2spec)
fi
port=$((20000 + RANDOM % 20000))
"$binary" serve --config config --https "127.0.0.1:$port" --threads 1 --state "$work/state" \
    --log-level warning >"$work/log" 2>&1 &
server=$!
wait_for_https links.localhost "$port" 300 0.2 "$work/log" aasad || exit 1
# h2spec sends no SNI of its own choosing beyond -h; links.localhost is the example site, and
# aasad answers a connection for an unknown name with its default certificate anyway.
# -k: the example certificate is self-signed. -o 2: a case waits 2 s for an answer it expects.
# shellcheck disable=SC2086
"$work/h2spec" -t -k -h 127.0.0.1 -p "$port" -P /.well-known/apple-app-site-association -o 2 \
    ${H2SPEC_ARGS:-} | tee "$work/out" | grep -E "^\s*([0-9]+\.|×|Finished|[0-9]+ tests)" || true
[ -n "${H2SPEC_LOG:-}" ] && cp "$work/out" "$H2SPEC_LOG"
grep -E "tests, [0-9]+ passed" "$work/out"
