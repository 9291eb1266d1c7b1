/// How a wildcard site's names get automatic certificates (docs/acme.md, "Wildcard children"):
/// site.yaml's `certificates:`, or `acme.wildcard-certificates` for every wildcard site.
public enum WildcardCertificates: String, Sendable, Equatable, CaseIterable {
    /// One certificate for the wildcard (`*.users.example.com`), over DNS-01 (`acme.dns-hook`).
    case wildcard
    /// A certificate per child name (`alice.users.example.com`), ordered at its first handshake
    /// once an approval says yes (the site's allow file, or `acme.ask`), over TLS-ALPN-01 or
    /// HTTP-01: no DNS API needed.
    case perName = "per-name"
}
