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
        var found: [String: Any]?
        let reached = try eventually(attempts: 150) {
            found = try cdnState(server, site)
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
}
