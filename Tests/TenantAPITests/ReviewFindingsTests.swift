import Foundation
import Glibc
import SafeText
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
        #expect(!decoded.contains("other.example"), "the cursor reads \(decoded)")
        // And it still continues the listing for the token it was given to.
        let second = fixture.call("GET", "/v1/sites?limit=10&cursor=\(next)", token: APIFixture.customerA)
        #expect(second.status == 200, "\(second.status) \(second.text)")
    }

    /// Three empty site directories and the cursor after the first, given to `platform`.
    static func platformCursor() throws -> (APIFixture, String) {
        let fixture = try APIFixture(state: { _ in NeverServed() })
        for host in ["a.example", "b.example", "c.example"] { #expect(mkdir(fixture.sites + "/" + host, 0o755) == 0) }
        let page = fixture.call("GET", "/v1/sites?limit=1", token: APIFixture.platform)
        #expect(page.status == 200, "\(page.status) \(page.text)")
        return (fixture, try #require(page.json["next"] as? String))
    }

    /// A client cannot write a cursor of its own (the former plain base64url of a host), nor
    /// alter one it was given: each is 400, not a page starting where it chose.
    @Test func aForgedOrAlteredCursorIs400() throws {
        let (fixture, next) = try Self.platformCursor()
        #expect(fixture.call("GET", "/v1/sites?limit=1&cursor=\(next)", token: APIFixture.platform).status == 200)
        var altered = Array(next.utf8)
        altered[altered.count / 2] = altered[altered.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let forged = [
            Base64URL.encode(Array("a.example".utf8)), String(decoding: altered, as: UTF8.self), String(next.dropLast()),
            next + "A", "", "%00", String(repeating: "A", count: ListCursor.maximumTextLength + 1),
        ]
        for cursor in forged {
            let answer = fixture.call("GET", "/v1/sites?limit=1&cursor=\(cursor)", token: APIFixture.platform)
            #expect(answer.status == 400, "\(cursor): \(answer.status) \(answer.text)")
            #expect(answer.json["error"] as? String == "bad-request")
        }
    }

    /// A cursor is bound to the token it was given to: another token (here one that could list
    /// the same names) sending it gets 400.
    @Test func anotherTokensCursorIs400() throws {
        let (fixture, next) = try Self.platformCursor()
        let answer = fixture.call("GET", "/v1/sites?limit=1&cursor=\(next)", token: APIFixture.reader)
        #expect(answer.status == 400, "\(answer.status) \(answer.text)")
    }

    /// The longest host seals to exactly `ListCursor.maximumTextLength` characters and opens; one
    /// character more is refused before decoding.
    @Test func theLongestCursorIsReadAndOneMoreIsNot() {
        let sealed = ListCursor.seal(Self.longestHost, token: "platform")
        #expect(sealed.utf8.count == ListCursor.maximumTextLength)
        #expect(ListCursor.open(Substring(sealed), token: "platform") == Self.longestHost)
        #expect(ListCursor.open(Substring(sealed + "A"), token: "platform") == nil)
        #expect(ListCursor.open(Substring(sealed), token: "reader") == nil)
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
