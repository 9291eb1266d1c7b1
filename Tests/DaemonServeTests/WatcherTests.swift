import DaemonTesting
import Foundation
import TestSupport
import Testing

/// Ten thousand sites in CI (the 100,000-site figures come from scripts/bench-reload.py).
@Suite("Many sites at scale")
final class ManySitesTests {
    static let count = 10_000

    @Test("10,000 sites load, every one answers, and a one-site change is applied while the rest stay")
    func tenThousandSites() throws {
        let config = try TestConfig()
        let shared = Array(#"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "paths": ["*"]}]}}"#.utf8)
        for i in 0..<Self.count {
            let bytes =
                i % 2 == 0
                ? shared
                : Array(#"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.s\#(i)", "paths": ["*"]}]}}"#.utf8)
            try config.write("config/sites/s\(i).many.test/apple-app-site-association", bytes)
        }
        let server = try TestDaemon(config: config)
        let client = KeepAliveClient(port: server.httpPort)
        for i in stride(from: 0, to: Self.count, by: 997) {
            let answer = client.get(host: "s\(i).many.test", path: "/.well-known/apple-app-site-association")
            #expect(answer?.status == 200, "s\(i).many.test")
        }
        let changed = Array(#"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.changed", "paths": ["*"]}]}}"#.utf8)
        try config.write("config/sites/s4242.many.test/apple-app-site-association", changed)
        #expect(
            eventually(interval: 0.02) {
                client.get(host: "s4242.many.test", path: "/.well-known/apple-app-site-association")?.body == changed
            },
            "the change was not applied")
        #expect(client.get(host: "s4243.many.test", path: "/.well-known/apple-app-site-association")?.status == 200)
        #expect(server.stop())
    }
}

@Suite("Certificates reload without a restart")
final class CertificateReloadTests {
    let config: TestConfig
    let server: TestDaemon

    init() throws {
        config = try TestConfig()
        server = try TestDaemon(config: config)
    }

    @Test("a site's new certificate is used by new connections; a mismatched pair is refused and the old one stays")
    func siteCertificate() throws {
        let tls = config.path("config/sites/own.test/tls")
        let original = try Tool.fingerprint(ofFile: tls + "/cert.pem")
        #expect(try server.servedFingerprint("own.test") == original)
        try config.makePair(["own.test"], into: tls)
        let rotated = try Tool.fingerprint(ofFile: tls + "/cert.pem")
        #expect(try eventually { try server.servedFingerprint("own.test") == rotated }, "the new certificate was not picked up")
        // A key that does not match the certificate: refused, the rotated pair stays.
        let other = config.path("scratch-other")
        try config.makePair(["own.test"], into: other)
        rename(other + "/key.pem", tls + "/key.pem")
        #expect(server.waitForLog("does not match the certificate"), "the mismatched pair was not noticed")
        #expect(try server.servedFingerprint("own.test") == rotated)
        #expect(server.stop())
        #expect(server.log().contains("does not match the certificate"))
    }

    @Test("a default certificate added to tls/ is served to unknown names from then on")
    func defaultCertificate() throws {
        try config.makePair(["default.test"], into: config.path("config/tls"))
        let added = try Tool.fingerprint(ofFile: config.path("config/tls/cert.pem"))
        #expect(try eventually { try server.servedFingerprint("unknown.test") == added }, "the default certificate was not replaced")
        // The site with its own certificate keeps it.
        #expect(try server.servedFingerprint("own.test") == Tool.fingerprint(ofFile: config.ownCA))
    }
}
