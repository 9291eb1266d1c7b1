#!/usr/bin/env bash
# Fuzzes what parses untrusted bytes, with libFuzzer and AddressSanitizer:
#   aasa    AASA, StrictJSON (JSON parser, validators, URL parsing, matcher)      Fuzz/corpus, Fuzz/fail-cases
#   http1   the HTTP/1.1 request parser, and the field values of what it parsed  Fuzz/http1-corpus, Fuzz/http1-fail-cases
#   fields  header values: HTTP dates, If-None-Match lists, Host normalisation   Fuzz/fields-corpus, Fuzz/fields-fail-cases
#   http2   raw HTTP/2 client bytes through HTTP2Session (libnghttp2)            Fuzz/http2-corpus, Fuzz/http2-fail-cases
#   config  site.yaml and aasad.yaml values, and Cache-Control as a field value  Fuzz/config-corpus, Fuzz/config-fail-cases
#   pem     TLSContext's chain and key loading (input: chain, NUL, key)           Fuzz/pem-corpus, Fuzz/pem-fail-cases
#   acme    what a CA sends: ACME JSON, problems, header lines, PEM chains; and   Fuzz/acme-corpus, Fuzz/acme-fail-cases
#           (first byte 0x1E) the record files replicas share in the storage directory
#   check   CDN and origin bodies as canonical JSON, entitlements entries/plists  Fuzz/check-corpus, Fuzz/check-fail-cases
#   ownership  which site holds which host: programs of directory, symlink and alias changes  Fuzz/ownership-corpus, Fuzz/ownership-fail-cases
#   verdicts   the verdicts' file a restart trusts (state/…/validated-contents)      Fuzz/verdicts-corpus, Fuzz/verdicts-fail-cases
#   tokens  the tenant API's tokens file (api.tokens-file: YAML, digests, host patterns)  Fuzz/tokens-corpus, Fuzz/tokens-fail-cases
#   api     a tenant API request's bytes: the listener's reading, route, {host}, Authorization,
#           the list's query, If-Match, the PUT body                                Fuzz/api-corpus, Fuzz/api-fail-cases
#   tenant  tokens, then api, from one build (CI's smoke)
# New inputs that add coverage are merged into the target's corpus; a crash, timeout, leak or
# out-of-memory input is moved to its fail-cases folder. The normal test run replays both folders of
# every target (of the ownership corpus, one share in 8 a day: scripts/fuzz-replay.sh replays all). Each run is recorded in Fuzz/ledger.tsv (date, commit, inputs, exec/s, coverage,
# units added, result); scripts/fuzz-ledger.py sums it into docs/reliability.md's table.
# Usage: scripts/fuzz.sh [seconds per target] [aasa|http1|fields|http2|config|pem|acme|check|ownership|verdicts|tokens|api|tenant|all]   (default 60, all)
# FUZZ_RUNS=N runs N inputs per target instead of a time (the documented campaign: 10,000,000).
# FUZZ_SMOKE=1 is CI's check that every target builds and runs: it compiles without optimisation
# (a third of -O's compile time), starts from an empty corpus (the committed corpora are replayed
# by the normal test run, without the sanitizers' slowdown) and keeps nothing, in the corpus or
# the ledger. FUZZ_NOTE=TEXT is written in the ledger's note column (e.g. "beside builds").
# FUZZ_TIMEOUT=S: seconds one input may take before libFuzzer calls it a hang (default 10; the
# campaign uses 60 beside other work, where a starved process is not a hung one).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
which="${2:-all}"
case "$which" in aasa | http1 | fields | http2 | config | pem | acme | check | ownership | verdicts | tokens | api | tenant | all) ;; *)
    echo "usage: scripts/fuzz.sh [seconds] [aasa|http1|fields|http2|config|pem|acme|check|ownership|verdicts|tokens|api|tenant|all]" >&2
    exit 64
    ;;
esac
out=.build-fuzz
# libFuzzer and ASan report a crash themselves. Swift's runtime backtracer would also start on the
# trap, and under ASan it reports a bogus overflow and keeps the target from exiting: the crash input
# was written but never reached the fail-cases folder.
export SWIFT_BACKTRACE=enable=no
mkdir -p "$out"
status=0
# compile ARGS...: swiftc with libFuzzer and ASan; the linker's notes on ASan's local symbols are dropped.
# -package-name: HTTPCore has `package` declarations, which need one.
# AASAD_FRONTEND: a frontend at low priority (scripts/lib.sh nice_frontend; scripts/test's smoke).
frontend=()
tenant_frontend=()
[ -z "${AASAD_FRONTEND:-}" ] || frontend=(-driver-use-frontend-path "$AASAD_FRONTEND")
[ -z "${AASAD_FRONTEND:-}" ] || tenant_frontend=(-Xswiftc -driver-use-frontend-path -Xswiftc "$AASAD_FRONTEND")
# -wmo: the target is one module, compiled by one frontend (without it each batch of files parses
# and type-checks the others again: a third more CPU for the check target's smoke, 17.1 against
# 11.7 s).
compile() {
    local optimisation=-O
    [ -z "${FUZZ_SMOKE:-}" ] || optimisation=-Onone
    swiftc "${frontend[@]}" "$optimisation" -wmo -sanitize=fuzzer,address -parse-as-library -enable-upcoming-feature ExistentialAny -package-name aasad "$@" 2>&1 |
        { grep -v "Cannot export local symbol" || true; }
    return "${PIPESTATUS[0]}"
}

# one_module NAME FILES...: copies FILES to $out/NAME-src without their imports of the project's own
# modules (HTTPCore, HTTP1, AASA, StrictJSON, SafeText, Hashing…), so that they compile as the one module the fuzz target is;
# prints the copies' paths.
one_module() {
    local dir="$out/$1-src"
    shift
    rm -rf "$dir"
    mkdir -p "$dir"
    for f in "$@"; do
        sed -E '/^(@_exported )?(public )?import (HTTPCore|HTTP1|AASA|StrictJSON|SafeText|Hashing|Served|Outbound|TLS|Logging)$/d' "$f" >"$dir/$(basename "$f")"
        echo "$dir/$(basename "$f")"
    done
}

# run NAME CORPUS FAILS MAX_LEN [BINARY]: runs $out/fuzz-NAME (or BINARY) for $seconds (or
# $FUZZ_RUNS inputs), keeps what it found, and records the run in the ledger (Fuzz/ledger.tsv).
run() {
    local name=$1 corpus=$2 fails=$3 max_len=$4 binary=${5:-$out/fuzz-$1}
    local budget="-max_total_time=$seconds"
    [ -n "${FUZZ_RUNS:-}" ] && budget="-runs=$FUZZ_RUNS"
    mkdir -p "$corpus" "$fails"
    # New inputs go to a scratch folder (libFuzzer writes to its first corpus); afterwards only
    # those that add coverage to the committed corpus are merged into it (-merge=1), so the
    # corpus grows by what a run found, not by every intermediate unit.
    local scratch="$out/$name-new"
    rm -rf "$scratch"
    mkdir -p "$scratch"
    local started=$SECONDS
    local corpora=("$scratch" "$corpus")
    [ -z "${FUZZ_SMOKE:-}" ] || corpora=("$scratch")
    set +e
    "$binary" "$budget" -print_final_stats=1 -max_len="$max_len" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
        -artifact_prefix="$out/$name-" "${corpora[@]}" 2>&1 | tee "$out/$name.log" | grep -E '^#[0-9]+ +DONE|ERROR|SUMMARY' || true
    local code=${PIPESTATUS[0]}
    set -e
    [ "$code" -eq 0 ] || status=1
    local result=clean
    for crash in "$out/$name"-crash-* "$out/$name"-timeout-* "$out/$name"-oom-* "$out/$name"-leak-*; do
        [ -e "$crash" ] || continue
        mv "$crash" "$fails/"
        result="kept $(basename "$crash")"
        echo "saved $(basename "$crash") to $fails: add a fix and keep the case" >&2
    done
    [ "$code" -eq 0 ] || [ "$result" != clean ] || result="exit $code"
    # libFuzzer's last status line: executions and executions per second.
    grep -E '^#[0-9]+' "$out/$name.log" | tail -1 | sed "s/^/$name: /"
    # FUZZ_SMOKE=1 (CI's check that every target builds and runs) keeps nothing and records nothing.
    [ -z "${FUZZ_SMOKE:-}" ] || return 0
    local before after
    before=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    "$binary" -merge=1 -max_len="$max_len" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 "$corpus" "$scratch" \
        >"$out/$name-merge.log" 2>&1 || echo "$name: merging the new units failed (see $out/$name-merge.log)" >&2
    after=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    local inputs rate cov ft commit
    final_stat() { grep -oE "^stat::$1: *[0-9]+" "$out/$name.log" | grep -oE '[0-9]+$' | tail -1 || true; }
    inputs=$(final_stat number_of_executed_units)
    rate=$(final_stat average_exec_per_sec)
    cov=$(grep -oE '^#[0-9]+.* cov: [0-9]+' "$out/$name.log" | tail -1 | grep -oE '[0-9]+$' || true)
    ft=$(grep -oE '^#[0-9]+.* ft: [0-9]+' "$out/$name.log" | tail -1 | grep -oE '[0-9]+$' || true)
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo -)
    [ -z "$(git status --porcelain -- Sources Fuzz/*.swift 2>/dev/null)" ] || commit="$commit+changes"
    python3 scripts/fuzz-ledger.py --append "$commit" "$name" "$((SECONDS - started))" "${inputs:--}" "${rate:--}" \
        "${cov:--}" "${ft:--}" "$after" "$((after - before))" "$result" "${FUZZ_NOTE:--}"
    echo "$name: $((after - before)) new units merged into $corpus; ledger: Fuzz/ledger.tsv (scripts/fuzz-ledger.py --update docs/reliability.md)"
}

if [ "$which" = all ] || [ "$which" = http1 ]; then
    # The parser and the field functions the server applies to what it parsed (HTTPCore).
    # shellcheck disable=SC2046 # file names without spaces
    compile $(one_module http1 Sources/HTTP1/*.swift) Sources/HTTPCore/*.swift Fuzz/FuzzHTTP1.swift -o "$out/fuzz-http1"
    run http1 Fuzz/http1-corpus Fuzz/http1-fail-cases 20000
fi

if [ "$which" = all ] || [ "$which" = fields ]; then
    compile Sources/HTTPCore/*.swift Fuzz/FuzzFields.swift -o "$out/fuzz-fields"
    run fields Fuzz/fields-corpus Fuzz/fields-fail-cases 256
fi

if [ "$which" = all ] || [ "$which" = http2 ]; then
    # One module: HTTP2Session and HTTPCore without the import between them, nghttp2 through the
    # CAASANghttp2 module map.
    # shellcheck disable=SC2046 # file names without spaces
    compile -I Sources/CAASANghttp2 $(one_module http2 Sources/HTTP2/*.swift) Sources/HTTPCore/*.swift \
        Fuzz/FuzzHTTP2.swift -lnghttp2 -o "$out/fuzz-http2"
    run http2 Fuzz/http2-corpus Fuzz/http2-fail-cases 16384
fi

if [ "$which" = all ] || [ "$which" = config ]; then
    # ServerSettings lives in the Daemon library with everything it needs, so this target is
    # aasad itself (which links it), built by SwiftPM in its own scratch path with -D FUZZ_CONFIG: AASACommand then
    # has no @main, and Sources/aasad/FuzzEntry.swift hands aasad_main to libFuzzer, which calls
    # ConfigFuzz.check (Sources/Daemon/ConfigFuzz.swift) on each input (the checks ConfigFuzzReplayTests runs in every test run).
    swift build -c release --scratch-path .build-fuzz-config --product aasad \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZ_CONFIG 2>&1 | { grep -v "Cannot export local symbol" || true; }
    mkdir -p Fuzz/config-corpus
    cp config/aasad.yaml Fuzz/config-corpus/seed-aasad.yaml
    printf 'aliases:\n  - www.a.test\n  - "*.users.a.test"\ncache-control: max-age=60\n' >Fuzz/config-corpus/seed-site.yaml
    printf 'cache-control: "public, max-age=60,\\tmust-revalidate"\naliases: [b.test]\n' >Fuzz/config-corpus/seed-site-quoted.yaml
    printf 'listen: {https: [":8443", "[::1]:8443"], http: []}\ncache-control: no-cache\ntimeouts: {idle: 5}\n' \
        >Fuzz/config-corpus/seed-aasad-flow.yaml
    printf 'max-age=300, stale-while-revalidate=60' >Fuzz/config-corpus/seed-value
    # Routes, previews and the interstitial (docs/link-domain.md): captures, globs, placeholders.
    printf 'fallback:\n  web: https://w.example{path}\npreview: {site-name: S}\ninterstitial: true\nroutes:\n  - path: /p/{id}/*\n    web: https://s.example/p/{id}?{query}\n    ios: https://apps.apple.com/app/id1\n    preview: {title: "P {id}", image: "https://c.example/{id}.png"}\n  - {path: /i/*a?b, web: "https://s.example/i", status: 303}\n' \
        >Fuzz/config-corpus/seed-site-routes.yaml
    run config Fuzz/config-corpus Fuzz/config-fail-cases 4096 .build-fuzz-config/release/aasad
fi

if [ "$which" = all ] || [ "$which" = pem ]; then
    # The corpus is committed (test-only keys); it is not regenerated here.
    # TLS with the one-shot SHA-256 it binds sessions with (Hashing) as one module.
    # shellcheck disable=SC2046 # file names without spaces
    compile -enable-upcoming-feature InternalImportsByDefault -I Sources/CAASAOpenSSL -lssl -lcrypto \
        $(one_module pem Sources/TLS/*.swift Sources/Hashing/*.swift) Fuzz/FuzzPEM.swift -o "$out/fuzz-pem"
    run pem Fuzz/pem-corpus Fuzz/pem-fail-cases 16384
fi

if [ "$which" = all ] || [ "$which" = acme ]; then
    # The parsers of Sources/ACME/Wire with the strict JSON parser (StrictJSON, SafeText) and HTTP
    # dates (HTTPCore) as one module, OpenSSL for the chain's certificates; and the storage
    # directory's records as values (RecordText, RecordValues, with the Backoff bound they cut a
    # wait to). The corpus is committed.
    # shellcheck disable=SC2046 # file names without spaces
    compile -enable-upcoming-feature InternalImportsByDefault -I Sources/CAASAOpenSSL -lssl -lcrypto \
        $(one_module acme Sources/ACME/Wire/*.swift Sources/ACME/RecordText.swift Sources/ACME/RecordValues.swift \
            Sources/ACME/Backoff.swift Sources/Outbound/ResponseHeaders.swift Sources/StrictJSON/*.swift Sources/SafeText/*.swift) \
        Sources/HTTPCore/*.swift \
        Fuzz/FuzzACME.swift -o "$out/fuzz-acme"
    run acme Fuzz/acme-corpus Fuzz/acme-fail-cases 65536
fi

if [ "$which" = all ] || [ "$which" = check ]; then
    # Sources/Check's parsers of outside bytes with the AASA library, the strict JSON parser and the
    # digest (Hashing) as one module, OpenSSL under the digest. The corpus is committed.
    # shellcheck disable=SC2046 # file names without spaces
    # Google's Digital Asset Links answers (DigitalAssetLinks.swift) come with the outbound
    # client they are fetched through, and its TLS and libcurl.
    compile -I Sources/CAASAOpenSSL -I Sources/CAASACurl -lssl -lcrypto -lcurl \
        $(one_module check Sources/Check/JSONComparison.swift Sources/Check/Entitlements.swift Sources/Check/CheckReport.swift \
            Sources/Check/CheckFuzz.swift Sources/Check/DigitalAssetLinks.swift Sources/Outbound/*.swift Sources/TLS/*.swift \
            Sources/AASA/*.swift Sources/StrictJSON/*.swift Sources/SafeText/*.swift Sources/Hashing/*.swift) \
        Fuzz/FuzzCheck.swift -o "$out/fuzz-check"
    run check Fuzz/check-corpus Fuzz/check-fail-cases 65536
fi

if [ "$which" = all ] || [ "$which" = ownership ]; then
    # HostOwnership and its checks with the host names they use and the escaper their messages
    # quote through (SafeText's TerminalText), as one module (no I/O). The corpus is committed.
    # shellcheck disable=SC2046 # file names without spaces
    compile $(one_module ownership Sources/SiteStore/HostOwnership.swift Sources/SiteStore/HostOwnership+Layered.swift Sources/SiteStore/HostOwnershipFuzz.swift \
        Sources/SiteStore/AliasPolicy.swift Sources/Served/HostName.swift Sources/Served/Punycode.swift \
        Sources/SafeText/*.swift) Fuzz/FuzzOwnership.swift -o "$out/fuzz-ownership"
    run ownership Fuzz/ownership-corpus Fuzz/ownership-fail-cases 512
fi

if [ "$which" = all ] || [ "$which" = verdicts ]; then
    # The verdicts' file format (no I/O: its reading from disk is KnownValid+Disk.swift) and its
    # checks, as one module. The corpus is committed.
    compile Sources/SiteStore/KnownValid.swift Sources/SiteStore/KnownValidFuzz.swift Fuzz/FuzzVerdicts.swift -o "$out/fuzz-verdicts"
    run verdicts Fuzz/verdicts-corpus Fuzz/verdicts-fail-cases 4096
fi

if [ "$which" = all ] || [ "$which" = tokens ] || [ "$which" = api ] || [ "$which" = tenant ]; then
    # The tokens file is read with Yams, and the request's parts are TenantAPI's (which needs
    # SiteStore and Yams), so SwiftPM builds one binary for both, in its own scratch path, with
    # -D FUZZ_TENANT: Fuzz/Tenant/TenantFuzzEntry.swift hands it to libFuzzer, which calls
    # TenantFuzz.tokens or .request (Sources/TenantAPI/TenantFuzz.swift, the checks
    # TenantFuzzReplayTests runs in every test run) as AASAD_FUZZ_TARGET says. The smoke builds it
    # without optimisation, as the other targets.
    # The smoke's debug build compiles each module whole too (-wmo, with -num-threads 1 so that
    # it still writes the object per file SwiftPM links), without an index store that nothing
    # reads: 83 CPU seconds against 113.
    tenant_config=release
    tenant_whole=()
    if [ -n "${FUZZ_SMOKE:-}" ]; then
        tenant_config=debug
        tenant_whole=(-Xswiftc -wmo -Xswiftc -num-threads -Xswiftc 1 -Xswiftc -no-emit-module-separately-wmo)
    fi
    swift build -c "$tenant_config" --disable-index-store --scratch-path .build-fuzz-tenant --product aasad-tenant-fuzz \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZ_TENANT "${tenant_whole[@]}" "${tenant_frontend[@]}" 2>&1 | { grep -v "Cannot export local symbol" || true; }
    tenant_binary=".build-fuzz-tenant/$tenant_config/aasad-tenant-fuzz"
    if [ "$which" != api ]; then
        mkdir -p Fuzz/tokens-corpus
        printf 'tokens:\n  - name: platform\n    sha256: %s\n    scope: write\n    hosts: ["*"]\n  - name: customer-a\n    sha256: %s\n    scope: read\n    hosts: ["*.customer-a.example", links.customer-a.com]\n' \
            "$(printf a | sha256sum | cut -c1-64)" "$(printf b | sha256sum | cut -c1-64)" >Fuzz/tokens-corpus/seed-two-tokens.yaml
        printf 'tokens: [{name: a, sha256: %s, scope: write, hosts: [&h "*.a.example", *h]}]\n' \
            "$(printf c | sha256sum | cut -c1-64)" >Fuzz/tokens-corpus/seed-flow-anchor.yaml
        AASAD_FUZZ_TARGET=tokens run tokens Fuzz/tokens-corpus Fuzz/tokens-fail-cases 4096 "$tenant_binary"
    fi
    if [ "$which" != tokens ]; then
        mkdir -p Fuzz/api-corpus
        body='{"aasa":{"applinks":{"details":[]}},"assetlinks":[],"settings":{"aliases":["www.a.example"]},"page":"<p>"}'
        printf 'PUT /v1/sites/a.example HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer t0k3n\r\nIf-Match: "%s", W/"x"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
            "$(printf a | sha256sum | cut -c1-64)" "${#body}" "$body" >Fuzz/api-corpus/seed-put
        printf 'GET /v1/sites?limit=10&cursor=abc HTTP/1.1\r\nHost: api\r\n\r\n' >Fuzz/api-corpus/seed-list
        printf 'GET /v1/sites/*.a.example/verification HTTP/1.0\r\nIf-None-Match: *\r\n\r\n' >Fuzz/api-corpus/seed-verification
        AASAD_FUZZ_TARGET=api run api Fuzz/api-corpus Fuzz/api-fail-cases 8192 "$tenant_binary"
    fi
fi

if [ "$which" = all ] || [ "$which" = aasa ]; then
    # shellcheck disable=SC2046 # file names without spaces
    compile $(one_module aasa Sources/AASA/*.swift Sources/StrictJSON/*.swift Sources/SafeText/*.swift) Fuzz/FuzzAASA.swift -o "$out/fuzz-aasa"
    # Seed the corpus with every AASA-shaped file the project ships.
    for f in config/sites/*/apple-app-site-association config/sites/*/assetlinks.json Tests/aasadTests/Fixtures/*.json; do
        [ -f "$f" ] && cp "$f" "Fuzz/corpus/seed-$(echo "$f" | md5sum | cut -c1-12)"
    done
    run aasa Fuzz/corpus Fuzz/fail-cases 8192
fi
exit $status
