import Daemon
import DaemonTesting
import Foundation
import TestSupport
import Testing

/// A start with more certificate pairs than `Daemon.certificateChecksBeforeReady` that it has no
/// verdict for is ready before it checks them (Sources/Daemon/Daemon+LateChecks.swift).
@Suite("Certificate pairs checked after readiness")
final class LateCertificateCheckServeTests {
    @Test("past the bound, a broken pair is found after readiness and reported; the valid ones are served")
    func brokenPairFoundLate() throws {
        let config = try TestConfig()
        let own = config.path("config/sites/own.test/tls")
        let chain = try Array(Data(contentsOf: URL(fileURLWithPath: own + "/cert.pem")))
        let key = try Array(Data(contentsOf: URL(fileURLWithPath: own + "/key.pem")))
        let aasa = try Array(Data(contentsOf: URL(fileURLWithPath: config.path("config/sites/own.test/apple-app-site-association"))))
        // Pairs of distinct bytes (one more blank line after the chain each), so that each is a
        // pair of its own to check: with own.test's and the broken one, two past the bound.
        for i in 0..<Daemon.certificateChecksBeforeReady {
            try config.write("config/sites/s\(i).late.test/apple-app-site-association", aasa)
            try config.write("config/sites/s\(i).late.test/tls/cert.pem", chain + Array(repeating: UInt8(ascii: "\n"), count: i + 1))
            try config.write("config/sites/s\(i).late.test/tls/key.pem", key)
        }
        // own.test's chain with another key: it loads as PEM and fails the key match.
        try config.makePair(["broken.test"], into: config.path("scratch"))
        try config.write("config/sites/broken.test/apple-app-site-association", aasa)
        try config.write("config/sites/broken.test/tls/cert.pem", chain)
        let otherKey = try Array(Data(contentsOf: URL(fileURLWithPath: config.path("scratch/key.pem"))))
        try config.write("config/sites/broken.test/tls/key.pem", otherKey)
        let server = try TestDaemon(config: config, flags: ["--log-level", "info"])
        #expect(server.waitForLog("certificate pairs checked after start"), "the pairs were not checked late")
        #expect(server.waitForLog("does not match the certificate"), "the broken pair was not reported")
        // The valid pairs are served (a broken pair is never: its context fails to load at the
        // handshake, before and after the check; SiteStoreTests' DeferredCertificateTests shows
        // it taken out of the registry).
        #expect(try server.servedFingerprint("s7.late.test") == Tool.fingerprint(ofFile: own + "/cert.pem"))
        #expect(server.stop())
    }
}
