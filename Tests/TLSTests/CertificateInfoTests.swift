import Foundation
import TestSupport
import Testing

@testable import TLS

@Suite("Certificate names and validity")
struct CertificateInfoTests {
    @Test(
        "RFC 6125 matching: exact names, one left-most wildcard label, no partial or bare-TLD wildcards",
        arguments: [
            ("a.example.com", "a.example.com", true),
            ("A.Example.COM", "a.example.com", true),
            ("a.example.com.", "a.example.com", true),
            ("*.example.com", "a.example.com", true),
            ("*.example.com", "example.com", false),
            ("*.example.com", "a.b.example.com", false),
            ("*.example.com", "*.example.com", true),
            ("a.example.com", "*.example.com", false),
            ("*.com", "example.com", false),
            ("*.com", "*.com", false),
            ("f*.example.com", "foo.example.com", false),
            ("www.*.com", "www.example.com", false),
            ("*.*.example.com", "a.b.example.com", false),
            ("b.example.com", "a.example.com", false),
            ("", "a.example.com", false),
        ])
    func matching(_ presented: String, _ host: String, _ expected: Bool) {
        #expect(CertificateInfo.matches(presented: presented, host: host) == expected)
    }

    @Test("a development leaf's names and validity are read from its PEM")
    func readsLeaf() throws {
        let scratch = try TemporaryDirectory(prefix: "aasad-tls-test")
        let issued = try DevelopmentCertificate.issue(directory: scratch.path("info"), hosts: ["a.test", "*.w.test"])
        let info = try CertificateInfo(leafPEM: issued.chainPEM)
        #expect(Set(info.dnsNames) == ["a.test", "*.w.test", "localhost"])
        #expect(info.covers("a.test") && info.covers("x.w.test") && info.covers("*.w.test") && !info.covers("b.test"))
        let now = Int64(Date().timeIntervalSince1970)
        #expect(info.notBefore <= now && info.notAfter > now)
        #expect(info.notAfter - info.notBefore <= Int64(DevelopmentCertificate.leafDays + 1) * 86_400)
        // The issuer, as the status page shows it: the development CA's name.
        #expect(info.issuer.hasPrefix("/") && info.issuer.contains("O=aasad development"), "\(info.issuer)")
    }

    @Test("text without a certificate is refused")
    func notPEM() {
        #expect(throws: TLSError.self) { try CertificateInfo(leafPEM: Array("nothing".utf8)) }
    }
}

@Suite("The development CA is constrained and short-lived")
struct DevelopmentAuthorityTests {
    @Test("reserved names permit their whole top-level name; public names only themselves")
    func permittedNames() {
        #expect(DevelopmentCertificate.permittedNames(for: ["a.test", "*.w.test", "links.localhost"]) == ["localhost", "test"])
        #expect(
            DevelopmentCertificate.permittedNames(for: ["links.example.com", "*.users.example.com", "shop.example.org"])
                == ["links.example.com", "localhost", "shop.example.org", "users.example.com"])
        #expect(DevelopmentCertificate.permittedNames(for: ["a.example.com", "b.a.example.com"]) == ["a.example.com", "localhost"])
    }

    @Test("the CA is kept while it permits every served name, and made again when a name outside it is served")
    func remadeForNewNames() throws {
        let scratch = try TemporaryDirectory(prefix: "aasad-tls-test")
        let directory = scratch.path("remade")
        let first = try DevelopmentCertificate.issue(directory: directory, hosts: ["links.example.com"])
        #expect(first.authorityCreated)
        let again = try DevelopmentCertificate.issue(directory: directory, hosts: ["links.example.com", "a.links.example.com"])
        #expect(!again.authorityCreated, "a name under a permitted one needs no new CA")
        let other = try DevelopmentCertificate.issue(directory: directory, hosts: ["links.example.com", "shop.example.net"])
        #expect(other.authorityCreated, "a name outside the constraints needs a new CA")
        #expect(other.permittedNames.contains("shop.example.net"))
        let day: Int64 = 86_400
        #expect(other.authorityNotAfter - Int64(Date().timeIntervalSince1970) <= Int64(DevelopmentCertificate.authorityDays) * day)
        #expect(other.leafNotAfter <= other.authorityNotAfter)
    }
}
