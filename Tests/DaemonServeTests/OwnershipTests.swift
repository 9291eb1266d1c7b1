import DaemonTesting
import Foundation
import TestSupport
import Testing

/// A tenant that writes one site directory cannot take another site's names (HostOwnership):
/// a daemon in this process, the binary's `validate`, `sites` and `match`, and `/sites` over real
/// sockets and files. TestConfig
/// has a.test (with the symlink www.a.test), *.w.test, own.test and bad.test.
@Suite("Host ownership: a tenant's aliases never take another site's names", .serialized)
final class OwnershipTests {
    let config: TestConfig
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
        // validate and sites find serve's state directory through aasad.yaml, as serve does.
        try config.write("config/aasad.yaml", Array("state: \"\(config.state)\"\n".utf8))
    }

    private func aasad(_ arguments: [String]) throws -> Tool.Output {
        try Tool.run(Binary.aasad.path, arguments)
    }

    /// `/sites`' entry for a site directory.
    private func adminSite(_ server: TestDaemon, _ directory: String) throws -> [String: Any]? {
        let page = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        return (page?["sites"] as? [[String: Any]])?.first { $0["directory"] as? String == directory }
    }

    private func refused(_ server: TestDaemon, _ directory: String) throws -> [[String: String]] {
        (try adminSite(server, directory)?["refusedHosts"] as? [[String: String]]) ?? []
    }

    @Test("an alias under another tenant's wildcard is refused: the wildcard's site keeps serving the name")
    func aliasUnderWildcard() throws {
        try config.write("config/sites/evil.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/evil.test/site.yaml", Array("aliases: [x.w.test, \"*.y.w.test\"]\n".utf8))
        let server = try TestDaemon(config: config)
        #expect(try server.http("x.w.test", Self.path).body == config.wildcardAASA)
        #expect(try server.http("z.y.w.test", Self.path).body == config.wildcardAASA)
        #expect(try server.https("x.w.test", Self.path, cacert: config.developmentCA).body == config.wildcardAASA)
        #expect(try server.http("evil.test", Self.path).body == config.ownAASA)

        let refusals = try refused(server, "evil.test")
        #expect(
            refusals == [
                ["host": "*.y.w.test", "heldBy": "sites/*.w.test", "reason": "it lies under *.w.test, which sites/*.w.test is named for"],
                ["host": "x.w.test", "heldBy": "sites/*.w.test", "reason": "it lies under *.w.test, which sites/*.w.test is named for"],
            ], "\(refusals)")
        #expect(try adminSite(server, "evil.test")?["hosts"] as? [String] == ["evil.test"])
        #expect(try refused(server, "*.w.test").isEmpty)
        #expect(server.waitForLog("sites/evil.test/site.yaml: the alias x.w.test is not served by sites/evil.test"))

        let validate = try aasad(["validate", config.config])
        #expect(validate.status == 1)
        #expect(
            validate.text.contains(
                "sites/evil.test/site.yaml: the alias x.w.test is not served by sites/evil.test: it lies under *.w.test, which sites/*.w.test is named for"
            ), "\(validate.text)")
        let sites = try aasad(["sites", "--config", config.config])
        #expect(sites.status == 1)
        #expect(sites.text.contains("refused: x.w.test: held by sites/*.w.test: it lies under *.w.test"), "\(sites.text)")
        let match = try aasad(["match", "--config", config.config, "https://x.w.test/anything"])
        #expect(match.text.contains("opens ABCDE12345.com.example.w"), "\(match.text)")
    }

    @Test("an alias equal to another site's name is refused: the victim keeps serving its AASA over its certificate")
    func aliasOnAnotherSitesName() throws {
        try config.write("config/sites/evil.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/evil.test/site.yaml", Array("aliases: [own.test, a.test, www.a.test]\n".utf8))
        let server = try TestDaemon(config: config)
        // own.test: its own certificate (self-signed, trusted as own.pem) and its AASA.
        let own = try server.https("own.test", Self.path, cacert: config.ownCA)
        #expect(own.status == 200 && own.body == config.ownAASA)
        #expect(try server.https("a.test", Self.path, cacert: config.developmentCA).body == config.aasa)
        #expect(try server.https("www.a.test", Self.path, cacert: config.developmentCA).body == config.aasa)
        let reasons = try refused(server, "evil.test").map { "\($0["host"] ?? ""): \($0["reason"] ?? "")" }
        #expect(
            reasons == [
                "a.test: sites/a.test is named for it", "own.test: sites/own.test is named for it",
                "www.a.test: sites/www.a.test, a symlink to sites/a.test, is named for it",
            ], "\(reasons)")
        // Taken away while serving: nothing changes for the victims; the alias list is just shorter.
        try config.write("config/sites/evil.test/site.yaml", Array("aliases: [a.test]\n".utf8))
        #expect(eventually { ((try? self.refused(server, "evil.test")) ?? []).count == 1 })
        #expect(try server.https("own.test", Self.path, cacert: config.ownCA).body == config.ownAASA)
    }

    @Test("two aliases contest a name: the site that served it first keeps it, across a restart; validate and sites say who and why")
    func contestAcrossRestart() throws {
        try config.write("config/sites/z.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/z.test/site.yaml", Array("aliases: [shop.test]\n".utf8))
        var server = try TestDaemon(config: config)
        #expect(try server.http("shop.test", Self.path).body == config.ownAASA)
        // a.test (whose name sorts first) claims it while serving: refused.
        try config.write("config/sites/a.test/site.yaml", Array("aliases: [shop.test]\n".utf8))
        #expect(eventually { ((try? self.refused(server, "a.test")) ?? []).count == 1 })
        let reason = try refused(server, "a.test")
        #expect(
            reason == [["host": "shop.test", "heldBy": "sites/z.test", "reason": "sites/z.test/site.yaml names it too and held it first"]])
        #expect(try server.http("shop.test", Self.path).body == config.ownAASA)
        #expect(server.stop())
        let record = try String(contentsOfFile: config.state + "/served-first", encoding: .utf8)
        #expect(record == "aasad served-first 1\nshop.test z.test\n")

        // A new process reads the record: z.test still serves it, though a.test sorts first.
        server = try TestDaemon(config: config)
        #expect(try server.http("shop.test", Self.path).body == config.ownAASA)
        #expect(try refused(server, "a.test").count == 1)
        #expect(server.stop())

        let validate = try aasad(["validate", config.config])
        #expect(validate.status == 1)
        #expect(
            validate.text.contains(
                "sites/a.test/site.yaml: the alias shop.test is not served by sites/a.test: sites/z.test/site.yaml names it too and held it first"
            ), "\(validate.text)")
        #expect(!validate.text.contains("cannot be read"), "\(validate.text)")
        let sites = try aasad(["sites", "--config", config.config])
        #expect(sites.text.contains("refused: shop.test: held by sites/z.test"), "\(sites.text)")
        #expect(try String(contentsOfFile: config.state + "/served-first", encoding: .utf8) == record, "sites wrote the record")

        // A hostile record (a tenant cannot write it; a damaged one is ignored, not obeyed or fatal).
        try config.write("state/served-first", Array("aasad served-first 1\nshop.test a.test\u{1B}[2J\n".utf8))
        let blind = try aasad(["validate", config.config])
        #expect(blind.text.contains("cannot be read"), "\(blind.text)")
        server = try TestDaemon(config: config)
        #expect(server.waitForLog("ignoring the record of which site held each alias first"))
        #expect(try server.http("shop.test", Self.path).status == 200)
        #expect(server.stop())
        #expect(!server.log().contains("\u{1B}[2J"))
    }

    @Test("the operator's aliases-allowed bounds what a tenant may alias; a change to it applies while serving")
    func allowList() throws {
        try config.write("config/sites/t.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/t.test/site.yaml", Array("aliases: [t.tenants.example, bank.example]\n".utf8))
        try config.write("config/aliases-allowed", Array("* *.tenants.example\n".utf8))
        let server = try TestDaemon(config: config)
        #expect(try server.http("t.tenants.example", Self.path).body == config.ownAASA)
        #expect(try server.http("bank.example", Self.path).status == 404)
        #expect(try refused(server, "t.test") == [["host": "bank.example", "reason": "aliases-allowed does not allow it to this site"]])
        let validate = try aasad(["validate", config.config])
        #expect(
            validate.text.contains(
                "sites/t.test/site.yaml: the alias bank.example is not served by sites/t.test: aliases-allowed does not allow it to this site"
            ),
            "\(validate.text)")
        // The operator allows it: served without a restart.
        try config.write("config/aliases-allowed", Array("* *.tenants.example\nt.test t.tenants.example bank.example\n".utf8))
        #expect(eventually { (try? server.http("bank.example", Self.path).status) == 200 })
    }
}
