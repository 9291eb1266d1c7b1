import Check
import Foundation
import Testing

@Suite("check: JSON comparison, CDN states, entitlement entries")
struct CheckUnitTests {
    @Test(
        "the CDN's copy is the origin's file when the JSON says the same",
        arguments: [
            (#"{"a": 1, "b": [1, 2]}"#, #"{"b":[1,2],"a":1}"#, true),
            (#"{"a": 1.0}"#, #"{"a": 1}"#, true),
            (#"{"a": 1e2}"#, #"{"a": 100}"#, true),
            (#"{"a": "x", "a": "y"}"#, #"{"a": "y"}"#, true),
            (#"{"a": [1, 2]}"#, #"{"a": [2, 1]}"#, false),
            (#"{"a": 1}"#, #"{"a": 1, "b": null}"#, false),
            (#"{"a": "1"}"#, #"{"a": 1}"#, false),
            (#"{"a": true}"#, #"{"a": 1}"#, false),
            (#"{"a": "é"}"#, #"{"a": "\u00e9"}"#, true),
            (#"{"a": 1"#, #"{"a": 1}"#, false),
        ])
    func sameContent(_ a: String, _ b: String, _ same: Bool) {
        #expect(JSONComparison.sameContent(Array(a.utf8), Array(b.utf8)) == same)
        #expect(JSONComparison.sameContent(Array(b.utf8), Array(a.utf8)) == same)
    }

    @Test("CDN states from the CDN's answer and the origin's file")
    func cdnStates() {
        let file = JSONComparison.digest(Array(#"{"webcredentials": {"apps": []}}"#.utf8))
        let copy = CDNObservation(status: 200, digest: file)
        #expect(copy.state(against: file) == .current)
        #expect(copy.state(against: JSONComparison.digest(Array("{}".utf8))) == .stale)
        #expect(copy.state(against: nil) == .stale)
        #expect(CDNObservation(status: 200, digest: nil).state(against: file) == .stale, "a copy that is not JSON")
        #expect(CDNObservation(status: 404).state(against: file) == .missing)
        #expect(CDNObservation(status: 503).state(against: file) == .error)
        #expect(CDNObservation(status: 301).state(against: file) == .error)
        #expect(CDNObservation(status: nil, error: "timeout").state(against: file) == .error)
    }

    static func entitlements(_ entries: [String]) throws -> Entitlements {
        let plist: [String: Any] = [Entitlements.key: entries]
        return try Entitlements(plist: try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0))
    }

    @Test("entries: services, modes, wildcards read from their base domain")
    func entries() throws {
        let read = try Self.entitlements([
            "applinks:Example.com", "applinks:*.example.com", "webcredentials:login.example.com?mode=developer",
            "appclips:clip.example.com?mode=developer+managed", "activitycontinuation:example.com",
        ])
        #expect(read.problems.isEmpty)
        #expect(read.domains.map(\.host) == ["example.com", "example.com", "login.example.com", "clip.example.com", "example.com"])
        #expect(read.domains.map(\.usesCDN) == [true, true, false, false, true])
        #expect(read.domains[3].modes == ["developer", "managed"])
        #expect(read.domains[1].domain == "*.example.com")
    }

    @Test(
        "entries that cannot work are problems, each with a fix",
        arguments: [
            "applinks:example.com:8443", "applinks:https://example.com", "applinks:example.com/path", "weblinks:example.com",
            "appclips:*.example.com", "applinks:example.com?mode=staging", "applinks:bücher.example", "example.com", "applinks:localhost",
            "applinks:$(ASSOCIATED_DOMAIN)", "applinks:-bad.example.com", "applinks:a..example.com",
        ])
    func badEntries(_ entry: String) throws {
        let read = try Self.entitlements([entry])
        #expect(read.domains.isEmpty)
        #expect(read.problems.count == 1)
        #expect(read.problems.allSatisfy { !$0.fix.isEmpty })
    }

    @Test("a file that is not a property list, or has no associated domains, says so")
    func unreadable() throws {
        #expect(throws: Entitlements.ReadError.self) { try Entitlements(plist: Data("not a plist".utf8)) }
        let empty = try PropertyListSerialization.data(fromPropertyList: ["other": 1] as [String: Any], format: .xml, options: 0)
        #expect(throws: Entitlements.ReadError.self) { try Entitlements(plist: empty) }
        // A file read one byte past the bound (what a bounded read gives of a larger one) is
        // refused unparsed, even when what was read would parse; at the bound it is read.
        let plist = try PropertyListSerialization.data(
            fromPropertyList: [Entitlements.key: ["applinks:example.com"]] as [String: Any], format: .xml, options: 0)
        let padded = Array(plist) + Array(repeating: UInt8(ascii: " "), count: Entitlements.maximumFileSize - plist.count)
        #expect(try Entitlements(bytes: padded).domains.map(\.host) == ["example.com"])
        #expect {
            try Entitlements(bytes: padded + [UInt8(ascii: " ")])
        } throws: {
            ($0 as? Entitlements.ReadError)?.description.contains("larger than 1024 KB") == true
        }
    }

    @Test(
        "targets: each host once as fetched, the entitlements' services merged by host, the CDN left out only when every entry bypasses it")
    func targets() throws {
        let read = try Self.entitlements([
            "applinks:*.example.com", "webcredentials:example.com?mode=developer", "applinks:example.com",
            "appclips:clip.example.com?mode=developer+managed", "webcredentials:login.example.com",
            "webcredentials:login.example.com?mode=managed",
        ])
        let targets = CheckTarget.list(hosts: ["login.example.com", "*.other.example", "other.example"], domains: read.domains)
        #expect(
            targets == [
                CheckTarget(host: "login.example.com", services: ["webcredentials"]),
                CheckTarget(host: "other.example"),
                CheckTarget(host: "example.com", services: ["applinks", "webcredentials"]),
                CheckTarget(host: "clip.example.com", services: ["appclips"], usesCDN: false),
            ])
        var base = HostChecker.Options()
        base.cdn = "https://cdn.test/"
        let developer = targets[3].options(base)
        #expect(developer.cdn == nil && developer.developerModeOnly && developer.services == ["appclips"])
        let everyone = targets[2].options(base)
        #expect(everyone.cdn == "https://cdn.test/" && !everyone.developerModeOnly && everyone.services == ["applinks", "webcredentials"])
        // A public entry for the host keeps the CDN, whatever entries for it come after.
        let merged = CheckTarget.list(
            hosts: [], domains: try Self.entitlements(["applinks:a.example", "applinks:a.example?mode=developer"]).domains)
        #expect(merged == [CheckTarget(host: "a.example", services: ["applinks"])])
    }

    @Test("host names for check: A-labels only, two labels or more, no empty or hyphen-edged label")
    func hostNames() {
        for good in ["example.com", "a-b.example.co.uk", "xn--fhqz97e.example"] { #expect(Entitlements.isHostName(good), "\(good)") }
        for bad in [
            "", "localhost", "example.com.", ".example.com", "a..b", "-a.com", "a-.com", "evil.test#x", "u@evil.test", "evil.test?a=",
            "Bücher.de",
        ] {
            #expect(!Entitlements.isHostName(bad), "\(bad)")
        }
    }
}
