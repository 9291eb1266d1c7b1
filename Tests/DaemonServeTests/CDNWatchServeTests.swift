import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The CDN watch (cdn-watch in aasad.yaml) of a daemon in-process against a fake Apple CDN
/// (Tests/TestSupport/FakeOriginCDN.swift): each served host's state on /sites and /metrics.
@Suite("aasad serve: CDN watch: Apple's CDN copy of every served host, on /sites and /metrics")
final class CDNWatchServeTests {
    let cdn: FakeOriginCDN

    init() throws {
        cdn = try FakeOriginCDN()
    }

    /// The site's `cdn` object on /sites, or nil until the watch has asked.
    static func cdnState(_ server: TestDaemon, _ site: String) throws -> [String: Any]? {
        let page = try server.admin("/sites")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(page.body)) as? [String: Any])
        let sites = try #require(object["sites"] as? [[String: Any]])
        let entry = try #require(sites.first { $0["directory"] as? String == site })
        return entry["cdn"] as? [String: Any]
    }

    static func waitForState(_ server: TestDaemon, _ site: String, _ state: String) throws -> [String: Any]? {
        try waitFor(state, of: site) { try cdnState(server, site) }
    }

    /// Waits until `read` (a site's `cdn` or `dal` object on `/sites`) shows `state`.
    static func waitFor(_ state: String, of site: String, _ read: () throws -> [String: Any]?) throws -> [String: Any]? {
        var found: [String: Any]?
        let reached = try eventually(attempts: 150) {
            found = try read()
            return found?["state"] as? String == state
        }
        #expect(reached, "\(site) never reached \(state); last: \(String(describing: found))")
        return found
    }

    @Test("states follow the CDN and the served file: missing, current, stale since the change, current again; metrics by state")
    func statesOnSites() throws {
        let config = try TestConfig()
        let environment = [
            "AASAD_CDN_WATCH_ENABLED": "true", "AASAD_CDN_WATCH_URL": cdn.cdnByAddress, "AASAD_CDN_WATCH_INTERVAL": "1s",
            "AASAD_CDN_WATCH_RATE": "20", "AASAD_CDN_WATCH_CA_FILE": cdn.caFile,
        ]
        let server = try TestDaemon(config: config, environment: environment)
        // No copy yet: missing, with the CDN's reason.
        let missing = try Self.waitForState(server, "a.test", "missing")
        #expect(missing?["status"] as? Int == 404)
        #expect(missing?["failureReason"] as? String == "SWCERR00101 Bad HTTP Response: 404 Not Found")
        // The CDN fetched the file, written out its own way: current.
        try cdn.cdnCopy(
            "a.test",
            Array(#"{"applinks":{"details":[{"components":[{"/":"/buy/*"}],"appIDs":["ABCDE12345.com.example.app"]}],"apps":[]}}"#.utf8))
        try cdn.cdnCopy("www.a.test", config.aasa)
        _ = try Self.waitForState(server, "a.test", "current")
        // The site changes: stale at once, since the change, without waiting for the CDN.
        let v2 = Array(
            #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/sell/*"}]}]}}"#.utf8)
        try config.write("config/sites/a.test/apple-app-site-association", v2)
        let stale = try Self.waitForState(server, "a.test", "stale")
        let since = try #require(stale?["since"] as? Int)
        let modified = try #require(
            try FileManager.default.attributesOfItem(atPath: config.path("config/sites/a.test/apple-app-site-association"))[
                .modificationDate] as? Date)
        #expect(abs(since - Int(modified.timeIntervalSince1970)) <= 2)
        // The CDN catches up on both names.
        try cdn.cdnCopy("a.test", v2)
        try cdn.cdnCopy("www.a.test", v2)
        let current = try Self.waitForState(server, "a.test", "current")
        #expect(current?["status"] as? Int == 200)
        // A CDN that fails: error.
        try cdn.cdnStatus("own.test", 503)
        _ = try Self.waitForState(server, "own.test", "error")
        // Wildcard sites have no CDN entry of their own: never asked.
        #expect(!cdn.cdnRequests.contains { $0.contains("*") || $0.hasSuffix("w.test") })
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"aasad_cdn_sites{state="current"}"#))
        #expect(metrics.contains(#"aasad_cdn_sites{state="error"} 1"#))
    }

    @Test("without cdn-watch there is no cdn member on /sites and no CDN request")
    func offByDefault() throws {
        let config = try TestConfig()
        let server = try TestDaemon(config: config)
        let page = try server.admin("/sites")
        #expect(!String(decoding: page.body, as: UTF8.self).contains(#""cdn""#))
        #expect(!String(decoding: try server.admin("/metrics").body, as: UTF8.self).contains("aasad_cdn_sites"))
    }

    static let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    static let otherFingerprint = "AA:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    static let key = "AIzaSyD-watch_KEY.secret~0123456789abcd"

    /// Google's answer listing `package` with `fingerprint` for `host`.
    static func listing(_ host: String, _ fingerprint: String = fingerprint) -> [UInt8] {
        Array(
            #"{"statements": [{"source": {"web": {"site": "https://\#(host)."}}, "relation": "delegate_permission/common.handle_all_urls", "target": {"androidApp": {"packageName": "com.example", "certificate": {"sha256Fingerprint": "\#(fingerprint)"}}}}], "maxAge": "30s"}"#
                .utf8)
    }

    /// The site's `dal` object on /sites (nil until asked), and the page.
    static func dalState(_ server: TestDaemon, _ site: String) throws -> [String: Any]? {
        let page = try server.admin("/sites")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(page.body)) as? [String: Any])
        let entry = try #require((object["sites"] as? [[String: Any]])?.first { $0["directory"] as? String == site })
        #expect(entry["cdn"] == nil, "Apple's CDN is not watched")
        return entry["dal"] as? [String: Any]
    }

    static func waitForDAL(_ server: TestDaemon, _ site: String, _ state: String) throws -> [String: Any]? {
        try waitFor(state, of: site) { try dalState(server, site) }
    }

    @Test(
        "cdn-watch.google: Google's view on /sites, the status page and metrics: missing, current, stale since the change, hostile text escaped, 429 an error; the key sent, never shown"
    )
    func google() throws {
        let config = try TestConfig()
        let environment = [
            "AASAD_CDN_WATCH_GOOGLE": "true", "AASAD_CDN_WATCH_GOOGLE_URL": "https://127.0.0.1:\(cdn.port)/v1/statements:list",
            "AASAD_CDN_WATCH_GOOGLE_KEY": Self.key, "AASAD_CDN_WATCH_INTERVAL": "1s", "AASAD_CDN_WATCH_RATE": "20",
            "AASAD_CDN_WATCH_CA_FILE": cdn.caFile,
        ]
        // Google lists nothing yet: its debugString holds control bytes, markup and the key.
        let hostile = Array(
            #"{"maxAge": "1s", "debugString": "ERROR \u001b]0;pwned\u0007 <script>alert(1)</script> \u202E key \#(Self.key)"}"#.utf8)
        try cdn.dalAnswer("a.test", hostile)
        try cdn.dalAnswer("www.a.test", hostile)
        let server = try TestDaemon(config: config, environment: environment)
        let missing = try #require(try Self.waitForDAL(server, "a.test", "missing"))
        let reason = try #require(missing["failureReason"] as? String)
        #expect(reason.contains(#"\x1B]0;pwned\x07"#) && reason.contains("<script>") && !reason.contains("\u{1B}"), "\(reason)")
        #expect(!reason.contains(Self.key) && reason.contains("[key]"))
        // Only hosts serving an assetlinks.json that gives an app handle_all_urls are asked, with the key.
        // Both names are asked, one after the other: a.test found missing says nothing of
        // www.a.test's request yet, so the test waits for it rather than reading it at once.
        #expect(eventually { Set(cdn.dalRequests.map { $0.components(separatedBy: "&")[0] }).count == 2 }, "\(Set(cdn.dalRequests))")
        #expect(cdn.dalRequests.allSatisfy { $0.hasSuffix("&key=\(Self.key)") }, "\(cdn.dalRequests)")
        #expect(cdn.cdnRequests.isEmpty, "Apple's CDN is off")
        let page = String(decoding: try server.admin("/").body, as: UTF8.self)
        #expect(page.contains("Google DAL: no app listed"), "\(page)")
        #expect(!page.contains("<script>alert") && !page.contains("\u{1B}") && !page.contains("\u{202E}"))
        // Google lists the served app on both names: current.
        try cdn.dalAnswer("a.test", Self.listing("a.test"))
        try cdn.dalAnswer("www.a.test", Self.listing("www.a.test"))
        let current = try #require(try Self.waitForDAL(server, "a.test", "current"))
        #expect(current["status"] as? Int == 200 && current["failureReason"] is NSNull)
        // The served file names another certificate: stale at once, since the change.
        try config.write(
            "config/sites/a.test/assetlinks.json",
            Array(
                String(decoding: config.assetLinks, as: UTF8.self).replacingOccurrences(of: Self.fingerprint, with: Self.otherFingerprint)
                    .utf8))
        _ = try Self.waitForDAL(server, "a.test", "stale")
        // Back to what Google lists: current at once, compared with the answers already seen.
        try config.write("config/sites/a.test/assetlinks.json", config.assetLinks)
        _ = try Self.waitForDAL(server, "a.test", "current")
        // Google's quota spent: the watch pauses Google; a 429 is no news about the host, whose
        // state stays current.
        try cdn.dalAnswer("a.test", Array(#"{"error": {"code": 429, "message": "Quota exceeded"}}"#.utf8), status: 429)
        try cdn.dalAnswer("www.a.test", Array(#"{"error": {"code": 429, "message": "Quota exceeded"}}"#.utf8), status: 429)
        #expect(server.waitForLog("429, paused"))
        #expect(try Self.dalState(server, "a.test")?["state"] as? String == "current")
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"aasad_dal_sites{state="current"} 1"#), "\(metrics)")
        #expect(!metrics.contains("aasad_cdn_sites"))
        for text in [metrics, String(decoding: try server.admin("/sites").body, as: UTF8.self), server.log()] {
            #expect(!text.contains(Self.key))
        }
    }

    @Test(
        "an unreachable google-url with a key: the error names the URL with [key]; /sites, the status page and the log never hold the key")
    func unreachableKeepsKey() throws {
        let config = try TestConfig()
        // Port 9 on loopback: nothing listens, the connection is refused at once.
        let environment = [
            "AASAD_CDN_WATCH_GOOGLE": "true", "AASAD_CDN_WATCH_GOOGLE_URL": "https://127.0.0.1:9/v1/statements:list",
            "AASAD_CDN_WATCH_GOOGLE_KEY": Self.key, "AASAD_CDN_WATCH_INTERVAL": "1s", "AASAD_CDN_WATCH_RATE": "20",
        ]
        let server = try TestDaemon(config: config, environment: environment)
        let error = try #require(try Self.waitForDAL(server, "a.test", "error"))
        let message = try #require(error["error"] as? String)
        #expect(message.contains("127.0.0.1:9") && message.contains("[key]"), "\(message)")
        let page = String(decoding: try server.admin("/").body, as: UTF8.self)
        // Failures in a row pause Google (CDNWatchSchedule.failuresBeforePause).
        #expect(server.waitForLog("failing, paused"), "\(server.log())")
        for text in [String(decoding: try server.admin("/sites").body, as: UTF8.self), page, server.log()] {
            #expect(!text.contains(Self.key) && !text.contains("SECRET") && !text.contains("AIzaSyD"), "\(text)")
        }
    }
}
