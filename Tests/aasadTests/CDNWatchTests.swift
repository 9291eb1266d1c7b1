import Check
import Foundation
import Logging
import TestSupport
import Testing

/// The CDN watch in `serve` (cdn-watch in aasad.yaml) against a fake Apple CDN.
@Suite("CDN watch: Apple's CDN copy of every served host, on /sites and /metrics")
final class CDNWatchTests {
    let cdn: FakeOriginCDN

    init() throws {
        cdn = try FakeOriginCDN()
    }

    /// The site's `cdn` object on /sites, or nil until the watch has asked.
    static func cdnState(_ server: RunningServer, _ site: String) throws -> [String: Any]? {
        let page = try server.admin("/sites")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(page.body)) as? [String: Any])
        let sites = try #require(object["sites"] as? [[String: Any]])
        let entry = try #require(sites.first { $0["directory"] as? String == site })
        return entry["cdn"] as? [String: Any]
    }

    static func waitForState(_ server: RunningServer, _ site: String, _ state: String) throws -> [String: Any]? {
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
        let server = try RunningServer(config: config, environment: environment)
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

    @Test("aasad sites --cdn asks the CDN once per exact host and shows each site's worst host")
    func sitesCommand() throws {
        let config = try TestConfig()
        try cdn.cdnCopy("a.test", config.aasa)
        try cdn.cdnCopy("www.a.test", Array(#"{"applinks": {"apps": [], "details": []}}"#.utf8))
        try cdn.cdnStatus("own.test", 503)
        let out = try AASAD.run([
            "sites", "--config", config.config, "--format", "json", "--cdn", "--cdn-url", cdn.cdn, "--cacert", cdn.caFile, "--connect-to",
            cdn.connectTo,
        ])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any], "\(out.stderr)")
        let sites = try #require(object["sites"] as? [[String: Any]])
        func copy(_ directory: String) -> [String: Any]? {
            sites.first { $0["directory"] as? String == directory }?["cdn"] as? [String: Any]
        }
        #expect(copy("a.test")?["state"] as? String == "stale")
        #expect(copy("a.test")?["host"] as? String == "www.a.test")
        #expect(copy("own.test")?["state"] as? String == "error")
        #expect(copy("*.w.test") == nil, "a wildcard site has no CDN entry")
        #expect(Set(cdn.cdnRequests) == ["a.test", "www.a.test", "own.test"])
        let text = try AASAD.run([
            "sites", "--config", config.config, "--cdn", "--cdn-url", cdn.cdn, "--cacert", cdn.caFile, "--connect-to", cdn.connectTo,
        ])
        #expect(text.stdout.contains("cdn=stale(www.a.test)"))
    }

    @Test("without cdn-watch there is no cdn member on /sites and no CDN request")
    func offByDefault() throws {
        let config = try TestConfig()
        let server = try RunningServer(config: config)
        let page = try server.admin("/sites")
        #expect(!String(decoding: page.body, as: UTF8.self).contains(#""cdn""#))
        #expect(!String(decoding: try server.admin("/metrics").body, as: UTF8.self).contains("aasad_cdn_sites"))
    }

    @Test("the rate bound holds with 10,000 hosts: at most rate × seconds requests, the first pass in order of need")
    func rateBound() throws {
        let digest = JSONComparison.digest(FakeOriginCDN.aasa(1))
        let targets = (0..<10_000).map { CDNWatchSchedule.Target(host: "h\($0).test", site: "h\($0).test", digest: digest, changedAt: 0) }
        let watch = try CDNWatch(
            settings: CDNWatch.Settings(url: cdn.cdnByAddress, interval: 3_600, rate: 5, caFile: cdn.caFile),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), generation: { 1 }, targets: { targets })
        let started = Date()
        watch.start()
        // Two seconds' worth at the bound; a watch over it gets there sooner and fails below.
        #expect(eventually { cdn.cdnRequests.count >= 10 }, "the watch asked \(cdn.cdnRequests.count) times")
        watch.stop()
        let elapsed = Date().timeIntervalSince(started)
        let asked = cdn.cdnRequests.count
        #expect(asked >= 5, "the watch asked \(asked) times in \(elapsed) s")
        #expect(Double(asked) <= elapsed * 5 + 1, "the watch asked \(asked) times in \(elapsed) s, over 5 a second")
        #expect(Set(cdn.cdnRequests).count == asked, "no host asked twice before every host was asked once")
        // Every answered request leaves a state; stop aborts the one in flight, which the fake
        // CDN may have counted already.
        #expect((asked - 1...asked).contains(watch.states.count), "\(watch.states.count) states for \(asked) requests")
        #expect(watch.states.values.allSatisfy { $0.state == .missing })
    }
}
