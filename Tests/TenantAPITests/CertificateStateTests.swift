import Foundation
import SiteStore
import Testing

@testable import TenantAPI

/// GET's certificate state with automatic certificates: each name's progress and the served
/// certificate's end, as the served state (the Daemon's, over the certificate manager) gives them.
@Suite("tenant API: certificate progress in the site state")
struct CertificateStateTests {
    /// The directory's state, with certificate names reported as the manager would.
    final class WithProgress: APIServedState {
        let inner: DirectoryServedState
        let names: [APICertificateName]
        init(root: String, names: [APICertificateName]) {
            inner = DirectoryServedState(root: root)
            self.names = names
        }
        func served(directory: String) -> APIServedSite? {
            guard var site = inner.served(directory: directory) else { return nil }
            site.certificateSource = "acme"
            site.certificateState = "failed"
            site.certificateNotAfter = "2026-12-01T00:00:00Z"
            site.certificateNames = names
            return site
        }
        func ownership() -> HostOwnership { inner.ownership() }
    }

    @Test("a CA's hostile error (quotes, CR/LF, NUL, bidi) reaches the JSON as an escaped string, with state and times")
    func progressIsValidJSON() throws {
        let hostile = "urn:ietf:params:acme:error:rejectedIdentifier \"x\"\r\n\u{0}\u{202E}</script>"
        let names = [
            APICertificateName(name: "a.example", state: "failed", error: hostile, nextAttempt: "2026-11-27T03:00:00Z"),
            APICertificateName(name: "www.a.example", state: "valid", notAfter: "2026-12-01T00:00:00Z"),
        ]
        let fixture = try APIFixture(state: { WithProgress(root: $0, names: names) })
        #expect(fixture.put("a.example").status == 201)
        let answer = fixture.call("GET", "/v1/sites/a.example")
        #expect(answer.status == 200)
        let certificate = try #require(answer.json["certificate"] as? [String: Any])
        #expect(certificate["source"] as? String == "acme")
        #expect(certificate["state"] as? String == "failed")
        #expect(certificate["notAfter"] as? String == "2026-12-01T00:00:00Z")
        let listed = try #require(certificate["names"] as? [[String: Any]])
        #expect(listed.count == 2)
        #expect(listed.first?["error"] as? String == hostile)
        #expect(listed.first?["nextAttempt"] as? String == "2026-11-27T03:00:00Z")
        #expect(listed.first?["notAfter"] is NSNull)
        #expect(listed.last?["state"] as? String == "valid")
        #expect(listed.last?["error"] is NSNull)
        // No raw control byte in the body: the error is escaped, not copied.
        #expect(!answer.body.contains { $0 < 0x20 })
    }

    @Test("without automatic certificates the names are an empty list")
    func noNames() throws {
        let fixture = try APIFixture()
        #expect(fixture.put("b.example").status == 201)
        let certificate = try #require(fixture.call("GET", "/v1/sites/b.example").json["certificate"] as? [String: Any])
        #expect((certificate["names"] as? [Any])?.isEmpty == true)
    }
}
