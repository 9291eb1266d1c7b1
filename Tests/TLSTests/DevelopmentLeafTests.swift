import Foundation
import TestSupport
import Testing

@testable import TLS

/// Development leaves per host: each host gets a leaf naming only itself, signed once
/// and then cached; names that are not plain host names, or that the CA does not permit, get no
/// leaf and cost no signing; everything is bounded.
@Suite("Development leaves per host")
struct DevelopmentLeafTests {
    let scratch: TemporaryDirectory

    init() throws {
        scratch = try TemporaryDirectory(prefix: "aasad-devca-test")
    }

    /// Hosts `h0.test` … `h(n-1).test`: more than the default leaf names.
    static func hosts(_ n: Int) -> [String] { (0..<n).map { "h\($0).test" } }

    @Test("names that are not plain host names (extension syntax, upper case, empty, over 253 bytes) get no leaf and no signing")
    func hostileNames() throws {
        let authority = try DevelopmentAuthority(directory: scratch.path("ca"), hosts: Self.hosts(20))
        let hostile = [
            "a.test,DNS:www.apple.com", "a.test\nDNS:www.apple.com", "A.TEST", "", "*.", "a.test/x", "a test", "a.test:443",
            "é.test", String(repeating: "a", count: 250) + ".test", "email:a@a.test",
        ]
        for name in hostile { #expect(authority.source(for: name)?.identity == nil, "\(name.debugDescription)") }
        #expect(authority.leavesIssued == 0)
    }

    @Test("a host outside the CA's name constraints gets no leaf and no signing (the default is presented)")
    func outsideConstraints() throws {
        let authority = try DevelopmentAuthority(directory: scratch.path("ca"), hosts: Self.hosts(20))
        #expect(!authority.permits("www.apple.com"))
        #expect(authority.source(for: "www.apple.com") == nil)
        #expect(authority.source(for: "*.apple.com") == nil)
        #expect(authority.leavesIssued == 0)
    }

    @Test("a host's leaf names that host alone, is signed once, and is cached by host; a wildcard's names the pattern")
    func perHost() throws {
        let authority = try DevelopmentAuthority(directory: scratch.path("ca"), hosts: Self.hosts(20) + ["*.w.test"])
        let first = try #require(authority.source(for: "h7.test"))
        #expect(try CertificateInfo(leafPEM: first.chainPEM).dnsNames == ["h7.test"])
        #expect(authority.source(for: "h7.test")?.identity == first.identity, "cached: the same leaf")
        #expect(authority.leavesIssued == 1)
        let wildcard = try #require(authority.source(for: "*.w.test"))
        #expect(try CertificateInfo(leafPEM: wildcard.chainPEM).dnsNames == ["*.w.test"])
        #expect(authority.leavesIssued == 2)
        // The leaf's key is the one leaf key, and the TLS layer accepts the pair.
        _ = try TLSContext(chainPEM: first.chainPEM, keyPEM: first.keyPEM, identity: first.identity, source: first.label)
        let info = try CertificateInfo(leafPEM: first.chainPEM)
        #expect(info.notAfter <= authority.issued.authorityNotAfter)
        #expect(first.chainPEM.count < 1_200, "one name: a small leaf (\(first.chainPEM.count) bytes of PEM)")
    }

    @Test("the leaf cache is bounded: past its capacity the least recently used host is signed again")
    func boundedCache() throws {
        let authority = try DevelopmentAuthority(directory: scratch.path("ca"), hosts: Self.hosts(20), cacheCapacity: 2)
        for host in ["h1.test", "h2.test", "h3.test"] { #expect(authority.source(for: host) != nil) }
        #expect(authority.leavesIssued == 3)
        _ = authority.source(for: "h3.test")
        #expect(authority.leavesIssued == 3, "h3 is cached")
        _ = authority.source(for: "h1.test")
        #expect(authority.leavesIssued == 4, "h1 was dropped (capacity 2) and is signed again")
    }

    @Test("up to 16 hosts the default leaf names them all and no host gets a leaf of its own; past 16 it names localhost only")
    func defaultLeaf() throws {
        let small = try DevelopmentAuthority(directory: scratch.path("small"), hosts: Self.hosts(16))
        #expect(Set(try CertificateInfo(leafPEM: small.issued.chainPEM).dnsNames) == Set(Self.hosts(16) + ["localhost"]))
        #expect(small.source(for: "h3.test") == nil)
        #expect(small.leavesIssued == 0)
        #expect(small.source(for: "later.test") != nil, "a host not in the default leaf (added later) gets its own")
        let large = try DevelopmentAuthority(directory: scratch.path("large"), hosts: Self.hosts(17))
        #expect(try CertificateInfo(leafPEM: large.issued.chainPEM).dnsNames == ["localhost"])
        #expect(large.source(for: "h3.test") != nil)
    }

    @Test("the CA's public names are bounded; past the bound they are left out, reported, and get no leaf")
    func boundedAuthority() throws {
        let names = (0..<5).map { "site\($0).example.com" }
        let constraints = DevelopmentCertificate.constraints(for: names + ["a.test", "b.site1.example.com"], limit: 3)
        #expect(constraints.permitted == ["localhost", "site0.example.com", "site1.example.com", "site2.example.com", "test"])
        #expect(constraints.omitted == ["site3.example.com", "site4.example.com"])
        // 100,000 public names: the collapse of names under others is linear (it was quadratic).
        let many = (0..<100_000).map { "s\($0).example.com" } + (0..<100_000).map { "www.s\($0).example.com" }
        let bounded = DevelopmentCertificate.constraints(for: many)
        #expect(bounded.permitted.count == DevelopmentCertificate.maximumPermittedPublicNames + 1)
        #expect(bounded.omitted.count == 100_000 - DevelopmentCertificate.maximumPermittedPublicNames)
        let authority = try DevelopmentAuthority(directory: scratch.path("ca"), hosts: many)
        #expect(authority.issued.omittedNames.count == bounded.omitted.count)
        let omitted = try #require(bounded.omitted.first)
        #expect(authority.source(for: omitted) == nil)
        #expect(authority.source(for: try #require(bounded.permitted.first { $0 != "localhost" })) != nil)
    }

    @Test("a CA kept from an earlier start permits what it permits, not only the names served now")
    func reusedAuthority() throws {
        let directory = scratch.path("ca")
        let first = try DevelopmentAuthority(directory: directory, hosts: ["links.example.com"] + Self.hosts(20))
        #expect(first.issued.authorityCreated)
        let again = try DevelopmentAuthority(directory: directory, hosts: Self.hosts(20))
        #expect(!again.issued.authorityCreated)
        #expect(again.permits("links.example.com") && again.permits("x.links.example.com"))
        #expect(again.source(for: "links.example.com") != nil)
    }
}
