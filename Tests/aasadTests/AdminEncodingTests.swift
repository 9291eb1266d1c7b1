import Check
import Foundation
import StrictJSON
import Testing

@testable import Daemon
@testable import SiteStore
@testable import aasad

/// `/sites` writes each site's status by hand (a tenth of JSONEncoder's cost at 100,000 sites);
/// it must say what JSONEncoder would.
@Suite("/sites' hand-written JSON")
struct AdminEncodingTests {
    static let awkward = [
        "", "plain", "quote \" and backslash \\", "slash / and </script>", "control \u{01}\u{1F}\t\n\r", "unicode é 日本 🍏",
        "\u{7F} delete", "surrogates 𝄞",
    ]

    static var statuses: [SiteStatus] {
        var all: [SiteStatus] = []
        for (index, text) in awkward.enumerated() {
            for state in [SiteState.serving, .servingLastGood, .refused] {
                all.append(
                    SiteStatus(
                        directory: "d\(index)" + text, hosts: index % 2 == 0 ? [] : [text, "a.example"],
                        refusedHosts: index % 3 == 0
                            ? [RefusedHost(host: text, heldBy: index % 2 == 0 ? nil : "sites/" + text, reason: text)] : [],
                        state: state, etag: index % 2 == 0 ? nil : "\"\(text)\"",
                        loadedAt: index % 3 == 1 ? nil : Int64(index) * 1_700_000_001,
                        errors: [text, "sites/x: " + text]))
            }
        }
        return all
    }

    @Test("each site's object parses to what JSONEncoder writes for it")
    func sameAsEncoder() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for status in Self.statuses {
            let hand = AdminView.open(status) + Array("}".utf8)
            let parsed = try #require(
                try JSONSerialization.jsonObject(with: Data(hand)) as? NSDictionary, "\(String(decoding: hand, as: UTF8.self))")
            let expected = try #require(try JSONSerialization.jsonObject(with: encoder.encode(status)) as? NSDictionary)
            #expect(parsed == expected, "\(String(decoding: hand, as: UTF8.self))")
        }
    }

    @Test("each site's object is, byte for byte, what the string-built form before it wrote")
    func sameBytesAsStrings() {
        // The form `open` had when it built a String per member: the oracle for its bytes.
        func reference(_ status: SiteStatus) -> [UInt8] {
            func list(_ items: [String]) -> String { "[" + items.map(JSONValue.quote).joined(separator: ",") + "]" }
            var text = "{\"directory\":" + JSONValue.quote(status.directory)
            text += ",\"errors\":" + list(status.errors)
            if let etag = status.etag { text += ",\"etag\":" + JSONValue.quote(etag) }
            text += ",\"hosts\":" + list(status.hosts)
            if let loadedAt = status.loadedAt { text += ",\"loadedAt\":\(loadedAt)" }
            let refused = status.refusedHosts.map {
                "{" + ($0.heldBy.map { "\"heldBy\":" + JSONValue.quote($0) + "," } ?? "") + "\"host\":" + JSONValue.quote($0.host)
                    + ",\"reason\":" + JSONValue.quote($0.reason) + "}"
            }
            text += ",\"refusedHosts\":[" + refused.joined(separator: ",") + "]"
            text += ",\"state\":" + JSONValue.quote(status.state.rawValue)
            return Array(text.utf8)
        }
        var statuses = Self.statuses
        statuses.append(
            SiteStatus(
                directory: "two.example", hosts: ["a.example", "b.example"],
                refusedHosts: [RefusedHost(host: "c.example", heldBy: nil, reason: "r"), RefusedHost(host: "d", heldBy: "x", reason: "")],
                state: .serving, etag: nil, loadedAt: -1, errors: []))
        for status in statuses {
            #expect(AdminView.open(status) == reference(status), "\(String(decoding: reference(status), as: UTF8.self))")
        }
    }

    @Test("each site's cdn object parses to what JSONEncoder writes for it (aasad sites --cdn prints that)")
    func cdnSameAsEncoder() throws {
        let encoder = JSONEncoder()
        for (index, text) in Self.awkward.enumerated() {
            for state in CDNState.allCases {
                let host = CDNWatchSchedule.HostState(
                    host: "h\(index).example", site: "d" + text, state: state, checkedAt: 1_795_614_906, since: Int64(index),
                    status: index % 2 == 0 ? nil : 404, failureReason: index % 3 == 0 ? nil : text, error: index % 2 == 0 ? text : nil)
                let hand = AdminView.json(host)
                let parsed = try #require(
                    try JSONSerialization.jsonObject(with: Data(hand)) as? NSDictionary, "\(String(decoding: hand, as: UTF8.self))")
                let expected = try #require(try JSONSerialization.jsonObject(with: encoder.encode(host)) as? NSDictionary)
                #expect(parsed == expected)
            }
        }
    }
}
