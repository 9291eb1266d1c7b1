import Foundation
import Logging
import Outbound
import TestSupport
import Testing

@testable import Check

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

    /// `apple` Apple CDN targets (h0.test…) and `google` Google targets (PREFIX0.test…), each
    /// Google target serving one app, and what those serve: the fixtures of the shared-rate tests.
    static func bothServices(apple: Int, google: Int, googlePrefix: String = "g") -> (
        apple: [CDNWatchSchedule.Target], google: [CDNWatchSchedule.Target], served: [String: (apps: Set<AndroidApp>, includes: Bool)]
    ) {
        let digest = JSONComparison.digest(FakeOriginCDN.aasa(1))
        let appleTargets = (0..<apple).map {
            CDNWatchSchedule.Target(host: "h\($0).test", site: "h\($0).test", digest: digest, changedAt: 0)
        }
        let apps: Set<AndroidApp> = [AndroidApp(packageName: "com.example", fingerprint: "AA")]
        let googleTargets = (0..<google).map {
            CDNWatchSchedule.Target(
                host: "\(googlePrefix)\($0).test", site: "\(googlePrefix)\($0).test", digest: DALListing.digest(apps), changedAt: 0)
        }
        let served = Dictionary(uniqueKeysWithValues: googleTargets.map { ($0.host, (apps: apps, includes: false)) })
        return (appleTargets, googleTargets, served)
    }

    @Test("with Google's view too, both services share the one rate and take turns: 5,000 hosts each")
    func sharedRate() throws {
        let (apple, google, served) = Self.bothServices(apple: 5_000, google: 5_000, googlePrefix: "g")
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

    /// A probe of the fake API over its address, with `key`.
    private func probe(key: String?) throws -> DALProbe {
        let client = try OutboundClient(configuration: CDNProbe.configuration(caFile: cdn.caFile, userAgent: "test"))
        return DALProbe(client: client, base: "https://127.0.0.1:\(cdn.port)/v1/statements:list", key: key)
    }

    @Test("the key never survives in part: an answer quoting it across the debugString's or error's cut is redacted before the cut")
    func keyAcrossCuts() throws {
        let key = "SECRETKEY1234567"
        // The key starts 6 bytes before each cut: cutting first would keep "SECRET".
        let debug = String(repeating: "d", count: DALListing.maximumDebugBytes - 6) + key
        try cdn.dalAnswer("debug.test", Array(#"{"debugString": "\#(debug)"}"#.utf8))
        let message = String(repeating: "m", count: DALProbe.maximumErrorMessageBytes - 6) + key
        try cdn.dalAnswer("error.test", Array(#"{"error": {"code": 500, "message": "\#(message)"}}"#.utf8), status: 500)
        let probe = try probe(key: key)
        guard case .success(let listing) = probe.observe("debug.test").result else {
            Issue.record("no listing")
            return
        }
        #expect(listing.debugString?.contains("SECRET") == false, "\(listing.debugString ?? "")")
        guard case .failure(let refusal) = probe.observe("error.test").result else {
            Issue.record("no refusal")
            return
        }
        #expect(!refusal.message.contains("SECRET"), "\(refusal.message)")
        #expect(refusal.message.hasSuffix("[key]"))
    }

    @Test("the watch keeps at most maximumWatchReasonCharacters of an error, as of a reason")
    func errorBound() throws {
        let limit = DALProbe.maximumWatchReasonCharacters
        // An error answer's message is cut at 512 bytes; with "the API answered 500: " before it
        // the error is over the watch's bound.
        try cdn.dalAnswer(
            "long.test", Array(#"{"error": {"message": "\#(String(repeating: "e", count: 600))"}}"#.utf8), status: 500)
        let observation = try probe(key: nil).observation("long.test", served: (apps: [], includes: false))
        #expect(observation.error?.unicodeScalars.count == limit, "\(observation.error?.count ?? 0)")
        #expect(DALProbe.watchText(String(repeating: "x", count: limit)).count == limit)
        #expect(DALProbe.watchText(String(repeating: "x", count: limit + 1)).count == limit)
    }

    @Test(
        "a listing with every served app and more, from a file that includes other lists, is current in the watch; without includes, stale")
    func includeSuperset() throws {
        let served = AndroidApp(packageName: "com.example", fingerprint: String(repeating: "AA:", count: 31) + "AA")
        let included = AndroidApp(packageName: "com.example.included", fingerprint: String(repeating: "BB:", count: 31) + "BB")
        func statement(_ app: AndroidApp) -> String {
            #"{"source": {"web": {"site": "https://inc.test."}}, "relation": "delegate_permission/common.handle_all_urls", "target": {"androidApp": {"packageName": "\#(app.packageName)", "certificate": {"sha256Fingerprint": "\#(app.fingerprint)"}}}}"#
        }
        try cdn.dalAnswer("inc.test", Array(#"{"statements": [\#(statement(served)), \#(statement(included))]}"#.utf8))
        let probe = try probe(key: nil)
        let digest = DALListing.digest([served])
        let withIncludes = probe.observation("inc.test", served: (apps: [served], includes: true))
        #expect(withIncludes.state(against: digest) == .current, "\(withIncludes)")
        let without = probe.observation("inc.test", served: (apps: [served], includes: false))
        #expect(without.state(against: digest) == .stale)
        // An included list cannot take a served app away: a listing missing one is stale anyway.
        let missingOne = probe.observation(
            "inc.test", served: (apps: [served, AndroidApp(packageName: "com.gone", fingerprint: "CC")], includes: true))
        #expect(missingOne.state(against: DALListing.digest([served, AndroidApp(packageName: "com.gone", fingerprint: "CC")])) == .stale)
        #expect(DALComparison.mayComeFromIncludes(listed: [served, included], served: (apps: [served], includes: true)))
        #expect(!DALComparison.mayComeFromIncludes(listed: [included], served: (apps: [served], includes: true)))
    }

    @Test("a Google 429 pauses Google only: Apple's watch goes on at its rate")
    func googleThrottledAppleRuns() throws {
        let (apple, google, served) = Self.bothServices(apple: 1_000, google: 3, googlePrefix: "q")
        for target in google {
            try cdn.dalAnswer(target.host, Array(#"{"error": {"code": 429, "message": "quota"}}"#.utf8), status: 429)
        }
        let watch = try CDNWatch(
            settings: CDNWatch.Settings(
                url: cdn.cdnByAddress, interval: 3_600, rate: 10, caFile: cdn.caFile,
                google: CDNWatch.Google(url: "https://127.0.0.1:\(cdn.port)/v1/statements:list", key: nil)),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), generation: { 1 },
            targets: { CDNWatch.Targets(apple: apple, google: google, served: served) })
        watch.start()
        #expect(eventually { cdn.cdnRequests.count >= 20 }, "Apple asked \(cdn.cdnRequests.count) times")
        watch.stop()
        #expect(cdn.dalRequests.count == 1, "Google asked once, then paused: \(cdn.dalRequests.count)")
        #expect(watch.googleStates.isEmpty, "a 429 is no state")
        #expect(watch.states.count >= 19)
        // A reload makes a new watch: the pause carries over, Google is not asked again at once.
        let reloaded = try CDNWatch(
            settings: watch.settings, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), generation: { 1 },
            targets: { CDNWatch.Targets(apple: apple, google: google, served: served) })
        reloaded.takePauses(from: watch)
        let asked = cdn.cdnRequests.count
        reloaded.start()
        #expect(eventually { cdn.cdnRequests.count >= asked + 10 }, "Apple asked \(cdn.cdnRequests.count - asked) times")
        reloaded.stop()
        #expect(cdn.dalRequests.count == 1, "the pause carried over: \(cdn.dalRequests.count)")
    }

    @Test("a Google API that never answers leaves Apple's watch near its rate: time shared, then the failing service paused")
    func hangingGoogle() throws {
        let silent = try SilentListener()
        let (apple, google, served) = Self.bothServices(apple: 1_000, google: 1_000, googlePrefix: "g")
        // Each look at Google waits out the whole (shortened) timeout.
        let watch = try CDNWatch(
            settings: CDNWatch.Settings(
                url: cdn.cdnByAddress, interval: 3_600, rate: 10, caFile: cdn.caFile,
                google: CDNWatch.Google(url: "https://127.0.0.1:\(silent.port)/v1/statements:list", key: "SECRETKEY1234"), timeoutSeconds: 1
            ),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), generation: { 1 },
            targets: { CDNWatch.Targets(apple: apple, google: google, served: served) })
        let started = Date()
        watch.start()
        // 40 is 4 s at the rate; a watch that gives Google a turn for every Apple look gets one
        // Apple look a second and does not get there within the wait.
        #expect(eventually(attempts: 150) { cdn.cdnRequests.count >= 40 }, "Apple asked \(cdn.cdnRequests.count) times")
        watch.stop()
        let elapsed = Date().timeIntervalSince(started)
        let toApple = cdn.cdnRequests.count
        let googleLooks = watch.googleStates.count
        print(
            "CDN watch at rate 10 with a Google API that never answers: \(toApple) requests to Apple, \(googleLooks) looks at Google in \(elapsed) s"
        )
        #expect(Double(toApple) <= elapsed * 10 + 1)
        #expect(
            googleLooks <= CDNWatchSchedule.failuresBeforePause, "Google is paused after \(CDNWatchSchedule.failuresBeforePause) failures")
        #expect(watch.googleStates.values.allSatisfy { $0.state == .error && $0.error?.contains("SECRETKEY1234") != true })
    }
}

/// A TCP listener that accepts into its backlog and never reads or answers: a service that hangs.
private final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw BindFailed()
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    struct BindFailed: Error {}

    deinit { close(fd) }
}
