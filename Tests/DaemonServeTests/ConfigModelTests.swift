import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The watched config directory of a daemon in-process against a model: Fixtures/config_model.py
/// changes `sites/` at random (seeded) while clients fetch, and checks every answer against what the
/// model allows. AASAD_MODEL_SEED, AASAD_MODEL_OPERATIONS and AASAD_MODEL_BATCH choose the run (a
/// seeded 300 by default, every kind of operation among them); scripts/model-test.sh runs the long one.
@Suite("Config directory against a model under load")
struct ConfigModelTests {
    @Test("random site, alias, certificate and ConfigMap changes: each step converges, no wrong answer in between")
    func model() async throws {
        let config = try TestConfig()
        let script = TestConfig.fixtures.appendingPathComponent("config_model.py").path
        let work = config.path("model")
        let prepared = try Tool.run("python3", [script, "prepare", config.config, work])
        try #require(prepared.status == 0, "\(prepared.stderr)")
        let server = try TestDaemon(config: config)
        // Minutes of waiting on the model's client: on a thread of its own (TestSupport/OwnThread.swift).
        let arguments = [script, "run", config.config, work, "\(server.httpsPort)"]
        let out = try await onOwnThread { try Tool.run("python3", arguments) }
        // The figures (operations, time, convergence) go to the test log for docs/reliability.md.
        print(out.text)
        let summary = out.text.split(separator: "\n").last { $0.hasPrefix("ok ") || $0.hasPrefix("fail ") } ?? ""
        #expect(out.status == 0 && summary.hasPrefix("ok "), "\(out.text.suffix(6000))\n\(out.stderr.suffix(3000))")
        #expect(server.stop())
    }
}

/// Watcher gaps found by the model test, each reproduced on its own.
@Suite("Watched config directory: watches follow names")
final class WatchGapTests {
    let config: TestConfig
    let server: TestDaemon
    let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
        server = try TestDaemon(config: config)
    }

    @Test("a site whose alias symlink came and went still has its changes picked up")
    func aliasCameAndWent() throws {
        // The alias shares the site's directory inode, so inotify hands back the site's watch for it.
        let alias = config.path("config/sites/alias.a.test")
        symlink("a.test", alias)
        #expect(try eventually { try server.http("alias.a.test", path).status == 200 })
        unlink(alias)
        #expect(try eventually { try server.http("alias.a.test", path).status == 404 })
        let changed = Array(#"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.changed", "paths": ["*"]}]}}"#.utf8)
        try config.write("config/sites/a.test/apple-app-site-association", changed)
        #expect(try eventually { try server.http("a.test", path).body == changed }, "a.test's change was not picked up")
        #expect(server.stop())
    }
}
