import Testing

@testable import TLS

@Suite("Certificate names: which hosts a certificate covers (RFC 6125 §6.4.3)")
struct CertificateNamesTests {
    static let names = CertificateNames(["Example.COM", "*.wild.example", "a*.partial.example", "*.com", "dot.example."])

    @Test(
        "one host a line: whether the certificate covers it",
        arguments: [
            ("example.com", true),  // exact, case-insensitive
            ("www.example.com", false),  // no wildcard for example.com
            ("x.wild.example", true),  // * is one label
            ("wild.example", false),  // * is never empty
            ("y.x.wild.example", false),  // * is exactly one label
            (".wild.example", false),
            ("ab.partial.example", false),  // partial wildcards match nothing
            ("example.org", false),
            ("anything.com", false),  // a wildcard over a single label is refused
            ("dot.example", true),  // a trailing dot in the certificate is ignored
            ("", false),
        ])
    func covers(_ host: String, _ expected: Bool) {
        #expect(Self.names.covers(host) == expected, "\(host)")
    }

    @Test("a context reads its leaf's subjectAltName DNS names at load")
    func readAtLoad() throws {
        let pair = try TestCertificate.make(["a.test", "*.b.test", "C.test"], key: .rsa)
        let context = try TLSContext(chainPEM: pair.chainPEM, keyPEM: pair.keyPEM, identity: "x", source: "s")
        #expect(context.names.dnsNames == ["a.test", "*.b.test", "c.test"])
        #expect(context.names.covers("x.b.test") && !context.names.covers("b.test"))
    }

    @Test(
        "the 421 rule and `aasad validate` agree on every name: one matching rule serves both",
        arguments: [
            ("a.example.com", "a.example.com"), ("*.example.com", "a.example.com"), ("*.example.com", "example.com"),
            ("*.example.com", "a.b.example.com"), ("*.com", "example.com"), ("f*.example.com", "foo.example.com"),
            ("*.*.example.com", "a.b.example.com"), ("*.example..com", "a.example..com"), ("*..com", "a..com"),
            ("A.Example.COM.", "a.example.com"), ("*.Example.COM", "x.example.com"),
        ])
    func agreesWithValidate(_ presented: String, _ host: String) {
        #expect(
            CertificateNames([presented]).covers(host) == CertificateInfo.matches(presented: presented, host: host), "\(presented) \(host)")
    }
}
