#!/usr/bin/env bash
# Runs testssl.sh (Debian's package) against aasad serving the shipped example config, and fails on
# any finding rated HIGH or CRITICAL. links.localhost gets a certificate shaped like a public CA's
# (a local test CA, 90 days, OCSP and CRL addresses on loopback, never contacted): the development
# certificate is rated on purpose as what it is (short-lived, no revocation), which says nothing
# about the server. Prints testssl's findings from MEDIUM up and a summary line.
# Usage: scripts/testssl.sh [path to aasad; default: the debug build]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_packages testssl.sh openssl
bin="${1:-}"
if [ -z "$bin" ]; then
    require_swift
    swift build --product aasad >/dev/null
    bin="$(swift build --show-bin-path)/aasad"
fi
work=$(mktemp -d)
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
cp -r config "$work/config"
tls="$work/config/sites/links.localhost/tls"
mkdir -p "$tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 -subj "/CN=aasad testssl CA" \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=links.localhost" \
    -keyout "$tls/key.pem" -out "$work/leaf.csr" 2>/dev/null
printf '%s\n' "subjectAltName=DNS:links.localhost,DNS:www.links.localhost" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth" "authorityInfoAccess=OCSP;URI:http://127.0.0.1:9/ocsp" \
    "crlDistributionPoints=URI:http://127.0.0.1:9/ca.crl" >"$work/leaf.ext"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 90 \
    -extfile "$work/leaf.ext" -out "$tls/cert.pem" 2>/dev/null
"$bin" serve --config "$work/config" --state "$work/state" --https 127.0.0.1:0 --admin 127.0.0.1:0 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 1 300); do
    grep -q '^aasad ready:' "$work/out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/err" >&2; exit 1; }
    sleep 0.1
done
port=$(grep '^aasad ready:' "$work/out" | grep -oE 'https=[^ ,]+' | grep -oE '[0-9]+$')
[ -n "$port" ] || { echo "error: aasad did not become ready" >&2; cat "$work/err" >&2; exit 1; }
# --ip: no DNS lookup; the host name is the certificate's and the SNI.
set +e
testssl --quiet --color 0 --warnings off --ip 127.0.0.1 --add-ca "$work/ca.pem" \
    --jsonfile "$work/testssl.json" "https://links.localhost:$port" >"$work/testssl.txt" 2>&1
set -e
python3 - "$work/testssl.json" <<'PY'
import json, sys
findings = json.load(open(sys.argv[1]))
order = ["OK", "INFO", "LOW", "MEDIUM", "HIGH", "CRITICAL"]
counts = {s: 0 for s in order + ["WARN", "DEBUG", "FATAL"]}
for f in findings:
    counts[f.get("severity", "INFO")] = counts.get(f.get("severity", "INFO"), 0) + 1
    if f.get("severity") in ("MEDIUM", "HIGH", "CRITICAL", "FATAL", "WARN"):
        print(f"{f['severity']:8} {f['id']}: {f['finding']}")
print("testssl " + " ".join(f"{k.lower()}={v}" for k, v in counts.items() if v or k in ("HIGH", "CRITICAL")))
sys.exit(1 if counts["HIGH"] or counts["CRITICAL"] or counts["FATAL"] else 0)
PY
