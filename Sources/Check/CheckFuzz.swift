import SafeText

/// What the `check` fuzz target (scripts/fuzz.sh) and its replay test run on one input: the
/// parsers of outside bytes that `aasad check` and the CDN watch add. The first byte chooses (by
/// parity): even, a body as JSON to canonicalise (a CDN's or an origin's); odd, one
/// associated-domains entry, or (3 modulo 4) a Digital Asset Links API answer for `a.test`. Each must succeed or fail cleanly, never trap, and what succeeds
/// must keep its invariants (checked with `precondition`, so that the fuzzer sees a broken one as
/// a crash). The property list around the entries is Foundation's parser, not fuzzed here: on
/// Linux it leaks a CFError (464 bytes) for every malformed list, which LeakSanitizer stops on;
/// `aasad check` reads one file per run, so that leak costs nothing there.
public enum CheckFuzz {
    public static func check(_ input: [UInt8]) {
        guard let mode = input.first else { return }
        let rest = Array(input.dropFirst())
        switch mode % 2 {
        case 0:
            guard let canonical = JSONComparison.canonical(rest) else {
                precondition(JSONComparison.digest(rest) == nil, "a digest of bytes that are not JSON")
                return
            }
            precondition(JSONComparison.canonical(canonical) == canonical, "the canonical form is not stable")
            precondition(JSONComparison.sameContent(rest, canonical), "a body differs from its own canonical form")
            precondition(JSONComparison.digest(rest)?.count == 32, "no digest of valid JSON")
        case _ where mode % 4 == 3:
            guard case .success(let listing) = DALListing.read(rest, host: "a.test") else { return }
            precondition(listing.apps.count <= DALListing.maximumStatements, "more apps than statements read")
            for app in listing.apps {
                precondition(DALListing.isPackageName(app.packageName), "a bad package name kept")
                precondition(
                    DALListing.isFingerprint(app.fingerprint) && app.fingerprint == app.fingerprint.uppercased(), "a bad fingerprint kept")
            }
            precondition(listing.maxAge.map(DALListing.isDuration) ?? true, "a bad maxAge kept")
            precondition(
                !(listing.debugString ?? "").unicodeScalars.contains(where: TerminalText.isEscaped), "a debugString not escaped")
        default:
            let entry = String(decoding: rest, as: UTF8.self)
            if case .success(let domain) = Entitlements.parse(entry) {
                precondition(!domain.host.isEmpty && !domain.host.hasPrefix("*") && !domain.host.contains(":"), "a bad host kept")
                precondition(Entitlements.services.contains(domain.service), "an unknown service kept")
                precondition(domain.usesCDN == domain.modes.isEmpty, "CDN use does not follow the modes")
            }
        }
    }
}
