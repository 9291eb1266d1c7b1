import DaemonTesting
import Foundation
import TestSupport
import Testing

/// `validate`, `match --config` and `sites` load the config directory through
/// the code `serve` uses, so that they answer every host as the server does: the daemon serves
/// in this process, the commands run from the built binary.
@Suite("One load path: serve, validate, match --config and sites agree")
final class LoadPathTests {
    let config: TestConfig
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
    }

    private func aasad(_ arguments: [String]) throws -> Tool.Output {
        try Tool.run(Binary.aasad.path, arguments)
    }

    @Test("an alias on another site's symlink name: serve, match --config, validate and sites all give it to the symlink's site")
    func aliasOnSymlinkName() throws {
        // a.test already has www.a.test as a symlink alias; b.test claims it in its site.yaml.
        try config.write("config/sites/b.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/b.test/site.yaml", Array("aliases: [www.a.test]\n".utf8))
        let server = try TestDaemon(config: config)
        #expect(try server.http("www.a.test", Self.path).body == config.aasa)
        #expect(try server.http("a.test", Self.path).status == 200)
        #expect(try server.http("b.test", Self.path).status == 200)

        let match = try aasad(["match", "--config", config.config, "https://www.a.test/buy/1"])
        #expect(match.status == 0, "\(match.text)")
        #expect(match.text.contains("opens ABCDE12345.com.example.app"), "match disagrees with serve: \(match.text)")

        let validate = try aasad(["validate", config.config])
        #expect(validate.status == 1)
        let refusal = validate.text.split(separator: "\n").filter { $0.hasPrefix("error:") && $0.contains("www.a.test") }
        #expect(
            refusal.contains {
                $0.contains("sites/b.test/site.yaml") && $0.contains("sites/www.a.test, a symlink to sites/a.test, is named for it")
            },
            "\(validate.text)")

        let sites = try aasad(["sites", "--config", config.config])
        #expect(sites.status == 1)
        #expect(sites.text.contains("refused=www.a.test"), "\(sites.text)")
    }

    @Test("an alias on a directory's name under a wildcard: the directory serves it, in serve and in match --config")
    func aliasOnDirectoryUnderWildcard() throws {
        // x.w.test: a site of its own, and an alias of c.test; *.w.test covers it.
        try config.write("config/sites/x.w.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/c.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/c.test/site.yaml", Array("aliases: [x.w.test]\n".utf8))
        let server = try TestDaemon(config: config)
        #expect(try server.http("x.w.test", Self.path).body == config.ownAASA)
        #expect(try server.http("y.w.test", Self.path).body == config.wildcardAASA)

        let json = try aasad(["match", "--format", "json", "--config", config.config, "https://x.w.test/anything"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [String: Any]
        #expect(object?["site"] as? String == "sites/x.w.test", "\(json.text)")
    }
}
