#!/usr/bin/env bash
# Regenerates Sources/AASA/ISOCodes.swift from ICU through Foundation's Locale.
# Linux Foundation's isoRegionCodes also lists CLDR pseudo-regions and UN M.49 numeric codes that
# Apple's uloc_getISOCountries() does not: those are filtered out here.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/codes.swift" <<'SWIFT'
import Foundation
let pseudo: Set<String> = ["AC", "CP", "EU", "EZ", "QO", "TA", "UN"]
let regions = Locale.isoRegionCodes.filter { $0.count == 2 && $0.allSatisfy(\.isLetter) && !pseudo.contains($0) }.sorted()
print(regions.joined(separator: " "))
print(Locale.isoLanguageCodes.sorted().joined(separator: " "))
SWIFT
swiftc -O "$work/codes.swift" -o "$work/codes" 2>/dev/null
"$work/codes" >"$work/codes.txt"
python3 - "$work/codes.txt" <<'PY'
import sys
regions, langs = [l.split() for l in open(sys.argv[1]).read().splitlines()[:2]]
def fmt(items, per=16):
    return '\n'.join('        ' + ', '.join('"%s"' % x for x in items[i:i + per]) + ',' for i in range(0, len(items), per))
text = open('Sources/AASA/ISOCodes.swift').read()
head = text[:text.index('enum ISOCodes {')]
open('Sources/AASA/ISOCodes.swift', 'w').write(head + '''enum ISOCodes {
    /// %d region codes, upper case.
    static let regions: [String] = [
%s
    ]

    /// %d language codes, lower case.
    static let languages: [String] = [
%s
    ]
}
''' % (len(regions), fmt(regions), len(langs), fmt(langs)))
PY
echo "Sources/AASA/ISOCodes.swift regenerated"
