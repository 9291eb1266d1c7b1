#!/usr/bin/env bash
# Times `aasad match` on 128 KB AASA files of hostile patterns (release build), against long URLs
# that make every pattern work hardest. Prints one line per case: median wall time of N runs.
# Usage: scripts/bench-match.sh [runs]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
swift build -c release --product aasad >/dev/null
bin="$(swift build -c release --show-bin-path)/aasad"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
LIMIT = 131072

def fill(make_component, extra=None):
    """Adds components until the file is just under 128 KB."""
    comps = []
    doc = {"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": comps}]}}
    if extra: doc["applinks"].update(extra)
    i = 0
    while True:
        comps.append(make_component(i))
        if len(json.dumps(doc)) > LIMIT:
            comps.pop()
            return doc
        i += 1

# 1. Backtracking bait: one long *a*a*a…*b pattern per component, none of which matches.
stars = fill(lambda i: {"/": "/" + "*a" * 60 + "*b%d" % i})
# 2. One single pattern as long as the file allows.
one = {"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/" + "*a" * ((LIMIT - 200) // 2) + "*b"}]}]}}
# 3. Built-in string variables in every position.
langs = fill(lambda i: {"/": "/" + "$(lang)*" * 12 + "x%d" % i, "caseSensitive": False})
# 4. Custom variables with wildcard values, repeated.
custom = fill(lambda i: {"/": "/" + "$(v)" * 20 + "z%d" % i}, {"substitutionVariables": {"v": ["*a", "*b", "?c", "a*", "*"] }})
for name, doc in [("stars", stars), ("one-pattern", one), ("lang-variables", langs), ("custom-variables", custom)]:
    text = json.dumps(doc)
    assert len(text) <= LIMIT, name
    open(f"{work}/{name}.json", "w").write(text)
    print(f"{name}: {len(text)} bytes, {len(doc['applinks']['details'][0]['components'])} components", file=sys.stderr)
PY

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for name in stars one-pattern lang-variables custom-variables; do
    for path_len in 200 2000 8000; do
        url="https://example.com/$(head -c "$path_len" /dev/zero | tr '\0' 'a')"
        url="${url:0:8192}"
        times=()
        for _ in $(seq "$runs"); do
            start=$(date +%s.%N)
            "$bin" match --format json --file "$work/$name.json" "$url" >/dev/null || true
            end=$(date +%s.%N)
            times+=("$(echo "$end - $start" | bc)")
        done
        verdict=$("$bin" match --format json --file "$work/$name.json" "$url" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r.get("error") or r["appID"])')
        printf 'bench=match file=%s url_bytes=%d median_s=%s runs=%s result=%s\n' "$name" "${#url}" "$(printf '%s\n' "${times[@]}" | median)" "$runs" "$verdict"
    done
done
