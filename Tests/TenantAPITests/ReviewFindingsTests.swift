import Foundation
import Glibc
import SiteStore
import Testing

@testable import TenantAPI

/// Hostile cases found in review: each was red before its fix.
@Suite struct ReviewFindingsTests {
    /// The longest host the API accepts (253 bytes: three 63-byte labels, one of 53, `example`).
    static let longestHost =
        [
            String(repeating: "a", count: 63), String(repeating: "b", count: 63), String(repeating: "c", count: 63),
            String(repeating: "d", count: 53),
        ]
        .joined(separator: ".") + ".example"

    /// A name of 253 bytes is a valid site; its temporary name in sites/ must still fit in one
    /// directory entry (NAME_MAX, 255 bytes), or every write of it fails with 500.
    @Test func theLongestHostCanBeWrittenAndDeleted() throws {
        #expect(Self.longestHost.utf8.count == 253)
        #expect(APIHostName.problem(Substring(Self.longestHost)) == nil)
        let fixture = try APIFixture()
        let put = fixture.put(Self.longestHost)
        #expect(put.status == 201, "\(put.status) \(put.text)")
        #expect(fixture.entries() == [Self.longestHost])
        let delete = fixture.call("DELETE", "/v1/sites/\(Self.longestHost)")
        #expect(delete.status == 204, "\(delete.status) \(delete.text)")
        #expect(fixture.entries().isEmpty)
    }

    /// A list page that stops at the scan bound hands a cursor to continue from; it must not
    /// carry another tenant's host name (the cursor was the last name looked at in base64).
    @Test func aCursorTellsNoHostOutsideTheTokensPatterns() throws {
        // Nothing served: the list reads only the names, not 10,001 sites.
        let fixture = try APIFixture(state: { _ in NeverServed() })
        for i in 0...TenantAPI.maximumNamesScanned {
            #expect(mkdir(fixture.sites + "/s\(String(format: "%05d", i)).other.example", 0o755) == 0)
        }
        let page = fixture.call("GET", "/v1/sites?limit=10", token: APIFixture.customerA)
        #expect(page.status == 200)
        let next = try #require(page.json["next"] as? String)
        var b64 = next.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.utf8.count % 4 != 0 { b64 += "=" }
        let decoded = Data(base64Encoded: b64).map { String(decoding: $0, as: UTF8.self) } ?? ""
        // Open: the cursor is base64url of that name (docs/api.md); a sealed cursor needs a cipher
        // the Hashing module does not offer yet. Recorded so that the fix turns this red-to-green.
        withKnownIssue("the cursor names the last host looked at, whoever's it is") {
            #expect(!decoded.contains("other.example"), "the cursor reads \(decoded)")
        }
    }

    /// settings values are written into site.yaml: no JSON string may add a key or an alias.
    static let yamlProbes: [String] = [
        #"{"cache-control":"max-age=1\naliases: [x.other.example]"}"#,
        #"{"cache-control":"max-age=1\u2028aliases: [x.other.example]"}"#,
        #"{"cache-control":"max-age=1\u0085aliases: [x.other.example]"}"#,
        #"{"cache-control":"max-age=1\r\naliases: [x.other.example]"}"#,
        #"{"cache-control":"max-age=1\"\naliases: [x.other.example]\n#"}"#,
        #"{"aliases\n":["x.other.example"]}"#,
        #"{"x\": 1\naliases":["x.other.example"]}"#,
        #"{"aliases":["X.OTHER.EXAMPLE."]}"#,
        #"{"aliases":["*.other.example"]}"#,
        #"{"aliases":["xn--mnchen-3ya.other.example"]}"#,
        #"{"aliases":"x.other.example"}"#,
        #"{"aliases":[["x.other.example"]]}"#,
        #"{"aliases":["&a x.other.example"]}"#,
        #"{"aliases":["!!str x.other.example"]}"#,
        #"{"<<":{"aliases":["x.other.example"]}}"#,
        #"{"aliases":["a.customer-a.example"],"aliases":["x.other.example"]}"#,
        #"{"fallback.web":"https://x.other.example/","aliases":["a.customer-a.example"]}"#,
    ]

    @Test(arguments: yamlProbes)
    func noSettingsValueClaimsANameOutsideThePatterns(_ settings: String) throws {
        let fixture = try APIFixture()
        let answer = fixture.put("a.customer-a.example", extra: #","settings":\#(settings)"#, token: APIFixture.customerA)
        if answer.status < 300 {
            let yaml = fixture.file("a.customer-a.example", "site.yaml") ?? ""
            let (parsed, _) = SiteSettings.parse(yaml, file: "site.yaml")
            #expect(parsed.aliases.allSatisfy { $0.name.hasSuffix(".customer-a.example") }, "\(yaml)")
        } else {
            #expect(fixture.entries().isEmpty)
        }
    }
}

@Suite struct ReviewPendingClaimTests {
    /// A claim the API recorded must not outlive the site: a site written with an alias and then
    /// removed by hand (a person, git-sync) frees the alias at the next reload, and another
    /// site may then take it.
    @Test func aSiteRemovedByHandFreesItsAliasForTheNextWrite() throws {
        let fixture = try APIFixture()
        #expect(fixture.put("a.example", extra: #","settings":{"aliases":["shared.example"]}"#).status == 201)
        try FileManager.default.removeItem(atPath: fixture.sites + "/a.example")
        let second = fixture.put("b.example", extra: #","settings":{"aliases":["shared.example"]}"#)
        #expect(second.status == 201, "\(second.status) \(second.text)")
    }
}
