import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The development certificate at scale: with thousands of sites without a certificate,
/// each host gets a small leaf of its own on its first SNI, which curl and openssl verify with the
/// development CA; an unknown name gets the default leaf and makes the server sign nothing; a
/// site added while serving gets a leaf too, unless the CA (made at start) does not permit it.
@Suite("aasad serve: development leaves per host")
final class DevelopmentLeafServeTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    /// Sites `host0.test` … `host(n-1).test`, each with the test AASA file.
    func addSites(_ n: Int) throws {
        for i in 0..<n { try config.write("config/sites/host\(i).test/apple-app-site-association", config.aasa) }
    }

    /// What `openssl s_client` sees for an SNI name (nil: no SNI): the leaf's subjectAltName
    /// line, the leaf's size in DER bytes, and whether it verified against the development CA.
    struct Presented {
        var names: String
        var bytes: Int
        var verified: Bool
    }

    func presented(_ server: TestDaemon, _ name: String?) throws -> Presented {
        let handshake = try Tool.run(
            "timeout",
            ["-s", "KILL", "10", "openssl", "s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-CAfile", config.developmentCA]
                + (name.map { ["-servername", $0, "-verify_hostname", $0] } ?? ["-noservername"]), input: [])
        let leaf = try Tool.run("openssl", ["x509", "-noout", "-ext", "subjectAltName"], input: handshake.stdout)
        let der = try Tool.run("openssl", ["x509", "-outform", "DER"], input: handshake.stdout)
        let names = leaf.text.split(separator: "\n").dropFirst().joined().trimmingCharacters(in: .whitespaces)
        return Presented(names: names, bytes: der.stdout.count, verified: handshake.text.contains("Verify return code: 0 (ok)"))
    }

    func leavesIssued(_ server: TestDaemon) throws -> Double {
        try Metrics(server)["aasad_development_leaves_issued_total"]
    }

    @Test("2,000 sites without certificates: each host verifies with curl and s_client, and its leaf names that host alone")
    func manyHosts() throws {
        try addSites(2_000)
        let server = try TestDaemon(config: config)
        for i in [0, 1, 999, 1_999] {
            let host = "host\(i).test"
            let shown = try presented(server, host)
            #expect(shown.verified, "\(host): \(shown)")
            #expect(shown.names == "DNS:\(host)", "\(host): the leaf names that host alone")
            #expect(shown.bytes > 0 && shown.bytes < 1_024, "\(host): a small leaf (\(shown.bytes) bytes)")
            #expect(try server.https(host, "/.well-known/apple-app-site-association").status == 200, "\(host)")
        }
        // A wildcard site's names share one leaf for its pattern; an alias gets its own.
        let wildcard = try presented(server, "x.w.test")
        #expect(wildcard.verified && wildcard.names == "DNS:*.w.test", "\(wildcard)")
        #expect(try server.https("y.w.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(try server.https("www.a.test", "/.well-known/apple-app-site-association").status == 200)
        // A site with its own pair keeps it.
        #expect(try server.https("own.test", "/.well-known/apple-app-site-association", cacert: config.ownCA).status == 200)
        // Signed once per host (host0, host1, host999, host1999, *.w.test, www.a.test), not per handshake.
        #expect(try leavesIssued(server) == 6)
    }

    @Test("unknown SNI names and connections without SNI get the default leaf (localhost, loopback) and cause no signing")
    func unknownNames() throws {
        try addSites(20)
        let server = try TestDaemon(config: config)
        #expect(try presented(server, "host3.test").verified)
        let before = try leavesIssued(server)
        #expect(before == 1)
        for name in ["unknown.test", "bad.test", "www.apple.com", "host3.test.evil", "w.test", "HOST4.TEST.", "localhost"] {
            let shown = try presented(server, name)
            #expect(shown.names == "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1", "\(name): \(shown)")
        }
        let none = try presented(server, nil)
        #expect(none.names.hasPrefix("DNS:localhost"), "\(none)")
        #expect(try leavesIssued(server) == before, "no name outside the config directory made the server sign")
    }

    @Test("a site added while serving gets a verifying leaf; one the CA does not permit is logged and gets the default")
    func addedWhileServing() throws {
        let server = try TestDaemon(config: config)
        try config.write("config/sites/later.test/apple-app-site-association", config.aasa)
        #expect(
            eventually { (try? server.https("later.test", "/.well-known/apple-app-site-association").status) == 200 },
            "later.test never verified")
        #expect(try presented(server, "later.test").names == "DNS:later.test")
        let issued = try leavesIssued(server)
        // A public name: the CA made at start permits `test` and `localhost` only, and is not
        // made again while serving (clients trust this one).
        try config.write("config/sites/later.example.com/apple-app-site-association", config.aasa)
        #expect(server.waitForLog("outside the development CA's name constraints"), "the refusal is logged")
        let shown = try presented(server, "later.example.com")
        #expect(!shown.verified)
        #expect(shown.names.hasPrefix("DNS:"), "\(shown)")
        #expect(!shown.names.contains("later.example.com"))
        #expect(try leavesIssued(server) == issued, "nothing signed for a name the CA would refuse")
        #expect(server.stop())
        #expect(server.log().contains("later.example.com"))
    }
}
