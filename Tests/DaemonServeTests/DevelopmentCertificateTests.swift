import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The development certificate as `serve` makes it when sites lack one: a CA that can
/// sign only for the served names, short-lived, and announced loudly; on a daemon in this process.
@Suite("aasad serve: the development certificate")
final class DevelopmentCertificateTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("the CA carries name constraints and a short validity; clients still trust it for the sites")
    func constrainedAuthority() throws {
        let server = try TestDaemon(config: config)
        let text = try Tool.run("openssl", ["x509", "-in", config.developmentCA, "-noout", "-text"]).text
        #expect(text.contains("X509v3 Name Constraints: critical"))
        #expect(text.contains("Permitted:"))
        #expect(text.contains("DNS:test") && text.contains("DNS:localhost"))
        #expect(text.contains("IP:127.0.0.1/255.255.255.255"))
        // Expires within 91 days (openssl -checkend exits 1 when it will), and not within 31.
        #expect(try Tool.run("openssl", ["x509", "-in", config.developmentCA, "-noout", "-checkend", "\(91 * 86_400)"]).status == 1)
        #expect(try Tool.run("openssl", ["x509", "-in", config.developmentCA, "-noout", "-checkend", "\(31 * 86_400)"]).status == 0)
        let leaf = config.path("state/dev-tls/cert.pem")
        #expect(try Tool.run("openssl", ["x509", "-in", leaf, "-noout", "-checkend", "\(31 * 86_400)"]).status == 1)
        // curl with the CA, for plain, alias and wildcard hosts.
        #expect(try server.https("a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(try server.https("www.a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(try server.https("x.w.test", "/.well-known/apple-app-site-association").status == 200)
    }

    @Test("a leaf the CA signs for a name outside its constraints fails openssl verify; one inside passes")
    func constraintBites() throws {
        _ = try TestDaemon(config: config)
        let key = config.path("state/dev-tls/ca-key.pem")
        func verify(_ name: String) throws -> Tool.Output {
            let directory = config.path("forged-\(name)")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let request = try Tool.run(
                "openssl",
                [
                    "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(name)", "-keyout",
                    directory + "/key.pem", "-out", directory + "/request.pem",
                ])
            #expect(request.status == 0, "\(request.stderr)")
            try Data("subjectAltName=DNS:\(name)\n".utf8).write(to: URL(fileURLWithPath: directory + "/ext.cnf"))
            let signed = try Tool.run(
                "openssl",
                [
                    "x509", "-req", "-in", directory + "/request.pem", "-CA", config.developmentCA, "-CAkey", key, "-days", "1",
                    "-extfile", directory + "/ext.cnf", "-out", directory + "/cert.pem",
                ])
            #expect(signed.status == 0, "\(signed.stderr)")
            return try Tool.run("openssl", ["verify", "-CAfile", config.developmentCA, directory + "/cert.pem"])
        }
        let outside = try verify("www.apple.com")
        #expect(outside.status != 0)
        #expect((outside.text + outside.stderr).contains("permitted subtree violation"))
        #expect(try verify("new.a.test").status == 0, "a name inside the constraints verifies: the failure above is the constraint")
    }

    @Test("start-up warns and names the hosts served with it; /sites shows each site's certificate source")
    func announced() throws {
        let server = try TestDaemon(config: config)
        let json = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        let sites = json?["sites"] as? [[String: Any]] ?? []
        func certificate(_ directory: String) -> String? {
            sites.first { $0["directory"] as? String == directory }?["certificate"] as? String
        }
        #expect(certificate("a.test") == "development")
        #expect(certificate("*.w.test") == "development")
        #expect(certificate("own.test") == "site")
        #expect(server.stop())
        let warning = server.log().split(separator: "\n").first { $0.contains("DEVELOPMENT certificate") }
        #expect(warning != nil)
        #expect(warning?.contains("warning") == true)
        #expect(warning?.contains("a.test") == true && warning?.contains("*.w.test") == true)
        #expect(warning?.contains("own.test") == false, "own.test has its own certificate")
        #expect(warning?.contains("tls/cert.pem") == true, "it says how to give them a real one")
    }

    @Test("with no site yet, the warning says so instead of counting 0 hosts")
    func noSiteYet() throws {
        try FileManager.default.removeItem(atPath: config.path("config/sites"))
        try FileManager.default.createDirectory(atPath: config.path("config/sites"), withIntermediateDirectories: true)
        let server = try TestDaemon(config: config)
        #expect(server.stop())
        let warning = server.log().split(separator: "\n").first { $0.contains("DEVELOPMENT certificate") }
        #expect(warning?.contains("no site is configured yet") == true, "\(server.log())")
        #expect(warning?.contains("0 hosts") == false)
    }

    @Test("an older CA without name constraints (ten years) is replaced at start")
    func oldAuthorityReplaced() throws {
        let directory = config.path("state/dev-tls")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let old = try Tool.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "3650", "-subj",
                "/CN=aasad development CA", "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0", "-addext",
                "keyUsage=critical,keyCertSign,cRLSign", "-keyout", directory + "/ca-key.pem", "-out", directory + "/ca.pem",
            ])
        #expect(old.status == 0, "\(old.stderr)")
        let server = try TestDaemon(config: config)
        let text = try Tool.run("openssl", ["x509", "-in", config.developmentCA, "-noout", "-text"]).text
        #expect(text.contains("X509v3 Name Constraints"))
        #expect(try server.https("a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(server.stop())
        #expect(server.log().contains("made a new development CA"))
    }
}
