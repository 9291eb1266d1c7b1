import Check
import Foundation
import Logging
import TestSupport
import Testing

/// The CDN watch against a fake Apple CDN: `aasad sites --cdn` (the CLI) and the watch's rate
/// bound. What serve shows of it is tested in-process (Tests/DaemonServeTests/CDNWatchServeTests.swift).
@Suite("CDN watch: aasad sites --cdn and the rate bound")
final class CDNWatchTests {
    let cdn: FakeOriginCDN

    init() throws {
        cdn = try FakeOriginCDN()
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

    @Test("the rate bound holds with 10,000 hosts: at most rate × seconds requests, the first pass in order of need")
    func rateBound() throws {
        let digest = JSONComparison.digest(FakeOriginCDN.aasa(1))
        let targets = (0..<10_000).map { CDNWatchSchedule.Target(host: "h\($0).test", site: "h\($0).test", digest: digest, changedAt: 0) }
        let watch = try CDNWatch(
            settings: CDNWatch.Settings(url: cdn.cdnByAddress, interval: 3_600, rate: 5, caFile: cdn.caFile),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), generation: { 1 },
            targets: { CDNWatch.Targets(apple: targets) })
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

    @Test("with Google's view too, both services share the one rate and take turns: 5,000 hosts each")
    func sharedRate() throws {
        let digest = JSONComparison.digest(FakeOriginCDN.aasa(1))
        let apple = (0..<5_000).map { CDNWatchSchedule.Target(host: "h\($0).test", site: "h\($0).test", digest: digest, changedAt: 0) }
        let apps: Set<AndroidApp> = [AndroidApp(packageName: "com.example", fingerprint: "AA")]
        let google = (0..<5_000).map {
            CDNWatchSchedule.Target(host: "g\($0).test", site: "g\($0).test", digest: DALListing.digest(apps), changedAt: 0)
        }
        let served = Dictionary(uniqueKeysWithValues: google.map { ($0.host, (apps: apps, includes: false)) })
        let watch = try CDNWatch(
            settings: CDNWatch.Settings(
                url: cdn.cdnByAddress, interval: 3_600, rate: 5, caFile: cdn.caFile,
                google: CDNWatch.Google(url: "https://127.0.0.1:\(cdn.port)/v1/statements:list", key: nil)),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), generation: { 1 },
            targets: { CDNWatch.Targets(apple: apple, google: google, served: served) })
        let started = Date()
        watch.start()
        #expect(eventually { cdn.cdnRequests.count + cdn.dalRequests.count >= 10 })
        watch.stop()
        let elapsed = Date().timeIntervalSince(started)
        let (toApple, toGoogle) = (cdn.cdnRequests.count, cdn.dalRequests.count)
        #expect(Double(toApple + toGoogle) <= elapsed * 5 + 1, "\(toApple) + \(toGoogle) requests in \(elapsed) s, over 5 a second")
        #expect(abs(toApple - toGoogle) <= 1, "turns: \(toApple) to Apple, \(toGoogle) to Google")
        print("CDN watch at rate 5 with Google's view: \(toApple) requests to Apple, \(toGoogle) to Google in \(elapsed) s")
        // Google lists nothing for these hosts: missing, with its debugString as the reason.
        #expect(watch.googleStates.values.allSatisfy { $0.state == .missing && $0.failureReason?.contains("ERRORS") == true })
        #expect(watch.googleStates.count >= toGoogle - 1)
    }
}
