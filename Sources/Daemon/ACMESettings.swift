package import ACME
package import SiteStore

/// The `acme:` section of aasad.yaml (docs/acme.md): automatic certificates, off unless a directory
/// is set. Each value is checked as it is applied (ServerSettings' keys); `consistencyProblems`
/// checks the values together once every source has applied.
package struct ACMESettings: Equatable {
    /// The CA's directory URL; nil: automatic certificates are off.
    package var directory: String?
    package var email: String?
    package var directoryCA: String?
    /// nil: `<state>/acme`.
    package var storage: String?
    package var challenges = CertificateManager.Configuration.defaultChallenges
    package var eabKeyID: String?
    package var eabMACKey: String?
    package var dnsHook: String?
    package var ordersPerHour = CertificateManager.Configuration.defaultOrdersPerHour
    package var namesPerSite = CertificateManager.Configuration.defaultNamesPerSite
    /// Whether a child of a `per-name` wildcard site gets a certificate: a URL or a program
    /// (`ChildAsk`); nil: only the site's allow file approves.
    package var ask: String?
    /// How every wildcard site without site.yaml `certificates:` gets certificates.
    package var wildcardCertificates = WildcardCertificates.wildcard

    /// What aasad can answer: RFC 8737's, RFC 8555 §8.3's and §8.4's.
    package static let knownChallenges = ["tls-alpn-01", "http-01", "dns-01"]

    package static func challengesProblem(_ values: [String]) -> String? {
        guard !values.isEmpty else { return "must name at least one of \(knownChallenges.joined(separator: ", "))" }
        if let unknown = values.first(where: { !knownChallenges.contains($0) }) {
            return "\"\(unknown)\" is not a challenge aasad answers (\(knownChallenges.joined(separator: ", ")))"
        }
        guard Set(values).count == values.count else { return "names a challenge twice" }
        return nil
    }

    /// An account contact (RFC 8555 §7.3: a mailto URL the CA may reject): one address, no
    /// spaces or control bytes, which would otherwise reach the JSON sent to the CA.
    package static func emailProblem(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.count <= 254, let at = bytes.firstIndex(of: UInt8(ascii: "@")), at > 0, at < bytes.count - 1,
            bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") }), bytes.count(where: { $0 == UInt8(ascii: "@") }) == 1
        else { return "must be one email address, not \"\(text)\"" }
        return nil
    }

    /// Problems of the values together: each named `acme.<key>`.
    package func consistencyProblems(httpListeners: [String]) -> [(key: String, message: String)] {
        guard directory != nil else { return [] }
        var problems: [(String, String)] = []
        if (eabKeyID == nil) != (eabMACKey == nil) {
            problems.append(("acme.eab", "needs both kid and hmac-key"))
        }
        if challenges == ["http-01"] && httpListeners.isEmpty {
            problems.append(("acme.challenges", "http-01 alone needs a plain HTTP listener (listen.http, port 80 as the CA sees it)"))
        }
        if challenges == ["dns-01"] && dnsHook == nil {
            problems.append(("acme.challenges", "dns-01 needs acme.dns-hook"))
        }
        return problems
    }

    /// The manager's configuration; nil when automatic certificates are off.
    package func configuration(state: String) throws(ACMEError) -> CertificateManager.Configuration? {
        guard let directory else { return nil }
        let eab = try eabKeyID.flatMap { kid throws(ACMEError) in
            try eabMACKey.map { key throws(ACMEError) in try ACMEClient.ExternalAccountBinding(keyID: kid, macKeyBase64URL: key) }
        }
        return CertificateManager.Configuration(
            directory: try ACMEURL(directory), contact: email.map { [$0] } ?? [], directoryCA: directoryCA,
            storage: storage ?? state + "/acme", challenges: challenges, externalAccountBinding: eab, dnsHook: dnsHook,
            ordersPerHour: ordersPerHour, namesPerSite: namesPerSite)
    }
}
