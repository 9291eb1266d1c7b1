import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Daemon

@Suite("The daemon in-process: start on port 0, serve over TLS, reload, stop")
struct DaemonTests {
    static let aasa = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/a/*"}]}]}}"#

    /// A config folder with one site, a.test, and settings that serve it on a loopback port of
    /// its own, one worker, no admin listener and no watcher.
    static func oneSite() throws -> (TemporaryDirectory, ServerSettings) {
        let folder = try TemporaryDirectory(prefix: "daemon-test")
        try folder.write("config/sites/a.test/apple-app-site-association", Array(Self.aasa.utf8))
        var settings = ServerSettings()
        settings.https = ["127.0.0.1:0"]
        settings.admin = nil
        settings.threads = 1
        settings.watch = false
        settings.state = folder.path("state")
        return (folder, settings)
    }

    @Test("a Daemon started in this process serves the AASA file over TLS, reloads on request and stops")
    func servesInProcess() throws {
        let (folder, settings) = try Self.oneSite()
        let lines = Mutex<[String]>([])
        let daemon = Daemon(
            configDirectory: folder.path("config"), settings: settings, logger: Logger(label: "daemon-test"),
            output: { line in lines.withLock { $0.append(line) } })
        try daemon.start()
        defer { daemon.stop(drain: true) }
        #expect(lines.withLock { $0 }.contains { $0.hasPrefix("aasad ready: https=127.0.0.1:") })
        let port = try #require(daemon.boundHTTPS.first?.port)
        #expect(port != 0)
        #expect(daemon.snapshot?.sites.count == 1)

        func fetch() throws -> Tool.Output {
            try Tool.run(
                "curl",
                [
                    "-sS", "--max-time", "10", "--cacert", folder.path("state/dev-tls/ca.pem"), "--resolve", "a.test:\(port):127.0.0.1",
                    "https://a.test:\(port)/.well-known/apple-app-site-association",
                ])
        }
        let first = try fetch()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(String(decoding: first.stdout, as: UTF8.self) == Self.aasa)

        // A changed file is served after `reload`, whose generation the test waits on.
        let changed = Self.aasa.replacingOccurrences(of: "/a/*", with: "/b/*")
        try folder.write("config/sites/a.test/apple-app-site-association", Array(changed.utf8))
        let before = daemon.reloadGeneration
        daemon.reload()
        #expect(eventually { daemon.reloadGeneration > before })
        #expect(String(decoding: try fetch().stdout, as: UTF8.self) == changed)

        // A live setting applies; one that needs a new process is kept as in force.
        var next = daemon.settings
        next.idleTimeout = 7
        next.threads = 4
        #expect(daemon.apply(settings: next))
        #expect(daemon.settings.idleTimeout == 7 && daemon.settings.threads == 1)

        // Values out of their bounds change nothing, as they would not from the file.
        for change in [{ $0.idleTimeout = 0 }, { $0.maxConnections = -1 }, { $0.cacheControl = "a\r\nb" }]
            as [(inout ServerSettings) -> Void]
        {
            var bad = daemon.settings
            change(&bad)
            #expect(!daemon.apply(settings: bad))
        }
        #expect(daemon.settings.idleTimeout == 7 && daemon.settings.maxConnections == 0)
    }

    @Test("readers on other threads while the owner stops: the parts stay readable, the settings those in force")
    func readsWhileStopping() throws {
        let (folder, settings) = try Self.oneSite()
        let daemon = Daemon(
            configDirectory: folder.path("config"), settings: settings, logger: Logger(label: "daemon-test"), output: { _ in })
        try daemon.start()
        var next = daemon.settings
        next.idleTimeout = 7
        #expect(daemon.apply(settings: next))
        // The accessors are documented as readable from any thread: they must not race with stop.
        let done = Atomic<Bool>(false)
        let reads = Atomic<Int>(0)
        let reader = Thread {
            while !done.load(ordering: .acquiring) {
                _ = daemon.boundHTTPS
                _ = daemon.snapshot
                _ = daemon.settings
                _ = daemon.adminView
                reads.add(1, ordering: .relaxed)
            }
        }
        reader.start()
        #expect(eventually { reads.load(ordering: .relaxed) > 0 })
        daemon.stop(drain: false)
        done.store(true, ordering: .releasing)
        // Stopped, it still answers what was in force, and a second stop, a reload, an apply do nothing.
        #expect(daemon.settings.idleTimeout == 7)
        daemon.stop(drain: false)
        daemon.reload()
        next.idleTimeout = 8
        #expect(!daemon.apply(settings: next))
        #expect(daemon.settings.idleTimeout == 7)
    }

    @Test("a start that fails after listening (the PID file cannot be written) leaves nothing running")
    func failedStartStopsItsParts() throws {
        var (folder, settings) = try Self.oneSite()
        settings.watch = true
        settings.pidFile = folder.path("no-such-directory/aasad.pid")
        let daemon = Daemon(
            configDirectory: folder.path("config"), settings: settings, logger: Logger(label: "daemon-test"), output: { _ in })
        #expect(throws: StartFailure.self) { try daemon.start() }
        // Its watcher, listeners and settings follower are gone: nothing applies or reloads.
        var next = settings
        next.idleTimeout = 7
        #expect(!daemon.apply(settings: next))
        let before = daemon.reloadGeneration
        daemon.reload()
        #expect(daemon.reloadGeneration == before)
        daemon.stop(drain: false)
    }

    @Test("a start with settings out of their bounds is refused before anything is made")
    func refusesUncheckedSettings() throws {
        let folder = try TemporaryDirectory(prefix: "daemon-test")
        var settings = ServerSettings()
        settings.https = ["127.0.0.1:0"]
        settings.admin = nil
        settings.state = folder.path("state")
        settings.threads = 0
        let daemon = Daemon(
            configDirectory: folder.path("config"), settings: settings, logger: Logger(label: "daemon-test"), output: { _ in })
        #expect(throws: StartFailure.self) { try daemon.start() }
        #expect(daemon.boundHTTPS.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: folder.path("state")))
    }

    @Test("two daemons run in one process, each on its own port")
    func twoInOneProcess() throws {
        var (folder, settings) = try Self.oneSite()
        settings.admin = "127.0.0.1:0"
        let daemons = (0..<2).map { _ in
            Daemon(configDirectory: folder.path("config"), settings: settings, logger: Logger(label: "daemon-test"), output: { _ in })
        }
        for daemon in daemons { try daemon.start() }
        defer { for daemon in daemons { daemon.stop(drain: false) } }
        let ports = daemons.compactMap { $0.boundHTTPS.first?.port }
        #expect(ports.count == 2 && ports[0] != ports[1])
        #expect(daemons.allSatisfy { $0.boundAdmin != nil })
    }
}
