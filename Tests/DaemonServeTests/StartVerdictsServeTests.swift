import DaemonTesting
import Foundation
import SiteStore
import TestSupport
import Testing

/// A start records the verdicts of its first load for the next start after it is ready, before
/// `start` returns (Sources/Daemon/Daemon.swift, `SiteRegistry.reloadAll(remembers:)`): they must
/// still be recorded, or every restart would validate every file again.
@Suite("The first load's verdicts recorded after readiness")
final class StartVerdictsServeTests {
    @Test("a server stopped as soon as its start returned has recorded its verdicts")
    func stopWaits() throws {
        let config = try TestConfig()
        try FileManager.default.removeItem(atPath: config.path("config/sites/own.test/tls"))
        // Enough sites that the first view and the walk take a while after readiness.
        let aasa = try Array(Data(contentsOf: URL(fileURLWithPath: config.path("config/sites/a.test/apple-app-site-association"))))
        for index in 0..<3000 { try config.write("config/sites/s\(index).many.test/apple-app-site-association", aasa) }
        let file = config.state + "/cache/validated-contents"
        let identity = try #require(KnownValid.binaryIdentity())
        let server = try TestDaemon(config: config)
        #expect(server.stop())
        #expect(KnownValid.load(path: file, identity: identity).count > 0, "the start returned before the verdicts were recorded")
    }

    @Test("a start's verdicts reach the state file, and a restart reads them")
    func recorded() throws {
        let config = try TestConfig()
        // No pair to check: a start that checks pairs records the verdicts with theirs.
        try FileManager.default.removeItem(atPath: config.path("config/sites/own.test/tls"))
        let file = config.state + "/cache/validated-contents"
        let identity = try #require(KnownValid.binaryIdentity())
        let server = try TestDaemon(config: config)
        // Written after readiness, before the start returned.
        #expect(KnownValid.load(path: file, identity: identity).count > 0, "no verdict was recorded")
        let first = KnownValid.load(path: file, identity: identity)
        #expect(server.stop())
        // A restart trusts them, and records the same set (nothing changed on disk).
        let again = try TestDaemon(config: config)
        #expect(try again.http("a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(again.stop())
        #expect(KnownValid.load(path: file, identity: identity).count == first.count)
    }
}
