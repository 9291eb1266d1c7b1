import DaemonTesting
import Foundation
import TestSupport
import Testing

/// What the in-process daemons share (the process) must not tie them together: each keeps its
/// own listeners, log and reloads when another stops.
@Suite("Several daemons in one test process")
final class InProcessTests {
    @Test("one daemon's stop leaves another serving, reloading and logging; each log holds its own sites only")
    func stopIsolated() throws {
        let first = try TestDaemon(config: TestConfig())
        let secondConfig = try TestConfig()
        try secondConfig.write("config/sites/second.test/apple-app-site-association", secondConfig.aasa)
        let second = try TestDaemon(config: secondConfig)
        #expect(first.httpsPort != second.httpsPort && first.adminPort != second.adminPort)
        #expect(try second.https("second.test", "/.well-known/apple-app-site-association").status == 200)
        // Its own sites only (and its own development CA, which the other's clients do not trust).
        #expect(try first.https("second.test", "/.well-known/apple-app-site-association", ["--insecure"]).status == 404)

        #expect(first.stop())
        // The other still answers, follows a change in its config directory, and logs it.
        let before = second.daemon.reloadGeneration
        try secondConfig.write("config/sites/later.test/apple-app-site-association", secondConfig.aasa)
        #expect(second.waitForReload(after: before))
        #expect(try second.https("later.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(second.reload())
        #expect(second.waitForLog("reload requested"))
        #expect(try second.admin("/readyz").status == 200)
        #expect(!first.log().contains("second.test") && !first.log().contains("reload requested"))
        #expect(second.stop())
    }

    @Test(
        "a daemon bound to a port another process listens on too (SO_REUSEPORT on both, so the bind succeeds) does not start: its connections would be split"
    )
    func sharedPortRefused() throws {
        // Listens with SO_REUSEPORT, as aasad does, as another test process's server on a port
        // both picked would.
        let other = try ReusePortListener()
        defer { other.stop() }
        let port = other.port
        let refused = #expect(throws: TestDaemon.Failure.self) {
            try TestDaemon(config: TestConfig(), flags: ["--https", "127.0.0.1:\(port)"])
        }
        // Refused for the shared port, not for a failed bind.
        #expect(refused?.description == "port \(port) is shared with a socket of another process", "\(String(describing: refused))")
    }
}
