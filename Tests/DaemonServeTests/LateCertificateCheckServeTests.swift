import Daemon
import DaemonTesting
import Foundation
import Synchronization
import TestSupport
import Testing

/// A start with more certificate pairs than `Daemon.certificateChecksBeforeReady` that it has no
/// verdict for is ready before it checks them (Sources/Daemon/Daemon+LateChecks.swift).
@Suite("Certificate pairs checked after readiness")
final class LateCertificateCheckServeTests {
    /// `Daemon.certificateChecksBeforeReady` pairs of distinct bytes (s0.late.test, ...), and
    /// when `broken`, broken.test's broken one (first by name of the sites with a pair): past the
    /// bound with own.test's. Returns own.test's certificate.
    func manyPairs(_ config: TestConfig, broken: Bool = true) throws -> String {
        let own = config.path("config/sites/own.test/tls")
        let chain = try Array(Data(contentsOf: URL(fileURLWithPath: own + "/cert.pem")))
        let key = try Array(Data(contentsOf: URL(fileURLWithPath: own + "/key.pem")))
        let aasa = try Array(Data(contentsOf: URL(fileURLWithPath: config.path("config/sites/own.test/apple-app-site-association"))))
        // Pairs of distinct bytes (one more blank line after the chain each), so that each is a
        // pair of its own to check.
        for i in 0..<Daemon.certificateChecksBeforeReady {
            try config.write("config/sites/s\(i).late.test/apple-app-site-association", aasa)
            try config.write("config/sites/s\(i).late.test/tls/cert.pem", chain + Array(repeating: UInt8(ascii: "\n"), count: i + 1))
            try config.write("config/sites/s\(i).late.test/tls/key.pem", key)
        }
        guard broken else { return own + "/cert.pem" }
        // own.test's chain with another key: it loads as PEM and fails the key match.
        try config.makePair(["broken.test"], into: config.path("scratch"))
        try config.write("config/sites/broken.test/apple-app-site-association", aasa)
        try config.write("config/sites/broken.test/tls/cert.pem", chain)
        let otherKey = try Array(Data(contentsOf: URL(fileURLWithPath: config.path("scratch/key.pem"))))
        try config.write("config/sites/broken.test/tls/key.pem", otherKey)
        return own + "/cert.pem"
    }

    @Test("past the bound, a broken pair is found after readiness and reported; the valid ones are served")
    func brokenPairFoundLate() throws {
        let config = try TestConfig()
        let own = try manyPairs(config)
        // A public name whose pair waits too: the CA names public names one by one (names under
        // .test only as the `test` subtree), and it must not name this one.
        func bytes(_ path: String) throws -> [UInt8] {
            try Array(Data(contentsOf: URL(fileURLWithPath: config.path("config/sites/own.test/" + path))))
        }
        try config.write("config/sites/pending.example.org/apple-app-site-association", bytes("apple-app-site-association"))
        try config.write("config/sites/pending.example.org/tls/cert.pem", Array("pending\n".utf8) + bytes("tls/cert.pem"))
        try config.write("config/sites/pending.example.org/tls/key.pem", bytes("tls/key.pem"))
        let server = try TestDaemon(config: config, flags: ["--log-level", "info"])
        #expect(server.waitForLog("certificate pairs checked after start"), "the pairs were not checked late")
        #expect(server.waitForLog("does not match the certificate"), "the broken pair was not reported")
        // The sites without a pair get the development certificate; its CA does not permit the
        // hosts of sites whose pair waited for its check (a tenant's names in a CA nobody asked for).
        let authority = try Tool.run("openssl", ["x509", "-in", config.developmentCA, "-noout", "-text"]).text
        #expect(authority.contains("Permitted:"))
        #expect(!authority.contains("pending.example.org"), "the CA names a host whose pair waited")
        // The valid pairs are served (a broken pair is never: its context fails to load at the
        // handshake, before and after the check; SiteStoreTests' DeferredCertificateTests shows
        // it taken out of the registry).
        #expect(try server.servedFingerprint("s7.late.test") == Tool.fingerprint(ofFile: own))
        #expect(server.stop())
    }

    @Test("a stop while pairs are checked after start returns once no check is running")
    func stopWaitsForChecks() throws {
        let config = try TestConfig()
        _ = try manyPairs(config, broken: false)
        let server = try TestDaemon(config: config, flags: ["--log-level", "info"])
        // Stopped at once: the checks (a millisecond a pair) are under way or about to start.
        #expect(server.stop())
        // The process would exit now, tearing down OpenSSL under a check still running.
        #expect(!server.daemon.checkingCertificatesLate, "a late check still runs after the stop returned")
    }

    @Test("a start that fails on its PID file while pairs wait for their late check fails, not hangs")
    func failedStartWithLateChecks() throws {
        let config = try TestConfig()
        _ = try manyPairs(config, broken: false)
        let pidFile = config.path("no-such-directory/aasad.pid")
        let ended = DispatchSemaphore(value: 0)
        let outcome = Mutex<String?>(nil)
        // On a thread of its own: a start that deadlocks must fail the test, not hang the run.
        nonisolated(unsafe) let shared = config
        DispatchQueue.global().async {
            do {
                _ = try TestDaemon(config: shared, flags: ["--pid-file", pidFile])
                outcome.withLock { $0 = "started" }
            } catch {
                outcome.withLock { $0 = "failed" }
            }
            ended.signal()
        }
        #expect(ended.wait(timeout: .now() + .seconds(120)) == .success, "the failed start never returned")
        #expect(outcome.withLock { $0 } == "failed")
    }

    /// Removes the sites of `TestConfig` that have no pair of their own.
    func onlySitesWithPairs(_ config: TestConfig) throws {
        for site in ["a.test", "www.a.test", "*.w.test", "bad.test"] {
            try FileManager.default.removeItem(atPath: config.path("config/sites/\(site)"))
        }
    }

    @Test("past the bound, with no default pair and every pair valid, the default is the first site's pair, and no development CA is made")
    func firstValidPairIsDefault() throws {
        let config = try TestConfig()
        try onlySitesWithPairs(config)
        let own = try manyPairs(config, broken: false)
        let server = try TestDaemon(config: config, flags: ["--log-level", "info"])
        // A name no site serves gets the default.
        #expect(try server.servedFingerprint("nowhere.test") == Tool.fingerprint(ofFile: own))
        #expect(server.waitForLog("certificate pairs checked after start"), "the pairs were not checked late")
        #expect(!FileManager.default.fileExists(atPath: config.developmentCA), "a development CA was made")
        #expect(server.stop())
    }

    @Test(
        "past the bound, with no default pair and no site without one, a broken pair first by name neither stops the start nor becomes the default: the next valid one is"
    )
    func brokenFirstPairNotDefault() throws {
        let config = try TestConfig()
        try onlySitesWithPairs(config)
        let own = try manyPairs(config)
        let server = try TestDaemon(config: config, flags: ["--log-level", "info"])
        #expect(try server.servedFingerprint("s7.late.test") == Tool.fingerprint(ofFile: own))
        // own.test's pair, next by name, passed its check before readiness and is the default,
        // which the site whose pair failed gets, as a site added after start would.
        #expect(try server.servedFingerprint("nowhere.test") == Tool.fingerprint(ofFile: own))
        #expect(try server.servedFingerprint("broken.test") == Tool.fingerprint(ofFile: own))
        #expect(server.waitForLog("does not match the certificate"), "the broken pair was not reported")
        #expect(!FileManager.default.fileExists(atPath: config.developmentCA), "a development CA was made")
        #expect(server.stop())
    }
}
