import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The config directory as git-sync (kubernetes/git-sync v4) publishes it, served end to end:
/// `ROOT/.worktrees/A` checked out, `ROOT/config -> .worktrees/A`; then `.worktrees/B` with
/// `changed` sites changed, a new link renamed over `ROOT/config`, and A deleted at once.
@Suite("Sites from a git-sync checkout, swapped under load")
final class GitSyncServeTests {
    /// Sites in each tree, and how many of them the new tree changes. The documented run (1,000
    /// changed sites) is this one; set AASAD_GITSYNC_SITES to try more.
    static let sites = ProcessInfo.processInfo.environment["AASAD_GITSYNC_SITES"].flatMap(Int.init) ?? 1_100
    static let changed = 1_000
    static let clients = 4
    static let template =
        #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.{tree}{i}"], "components": [{"/": "/*"}]}]}}"#

    static func body(_ tree: String, _ i: Int) -> [UInt8] {
        Array(template.replacingOccurrences(of: "{tree}", with: tree).replacingOccurrences(of: "{i}", with: "\(i)").utf8)
    }

    /// Checks a tree out: every site's file, and the default wildcard certificate for *.g.test.
    func worktree(_ config: TestConfig, _ name: String, changed: Int) throws {
        for i in 0..<Self.sites {
            try config.write(".worktrees/\(name)/sites/s\(i).g.test/apple-app-site-association", Self.body(i < changed ? "b" : "a", i))
        }
        try FileManager.default.createDirectory(atPath: config.path(".worktrees/\(name)/tls"), withIntermediateDirectories: true)
        for file in ["cert.pem", "key.pem"] {
            try FileManager.default.copyItem(atPath: config.path("wildcard/\(file)"), toPath: config.path(".worktrees/\(name)/tls/\(file)"))
        }
    }

    /// Publishes a worktree as git-sync does: a new symlink renamed over the old one.
    func publish(_ config: TestConfig, _ name: String) {
        symlink(".worktrees/\(name)", config.path("config-new"))
        rename(config.path("config-new"), config.config)
    }

    @Test("1,000 changed sites are applied as one snapshot: no client sees the old tree after the new, and the new is served whole")
    func swapUnderLoad() throws {
        let config = try TestConfig()
        try FileManager.default.removeItem(atPath: config.config)
        try FileManager.default.createDirectory(atPath: config.path("wildcard"), withIntermediateDirectories: true)
        let made = try Tool.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=g.test",
                "-addext", "subjectAltName=DNS:*.g.test", "-keyout", config.path("wildcard/key.pem"), "-out",
                config.path("wildcard/cert.pem"),
            ])
        #expect(made.status == 0)
        try worktree(config, "A", changed: 0)
        publish(config, "A")
        let server = try TestDaemon(config: config)

        let clients = Process()
        clients.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        clients.arguments = [
            Tool.python3, TestConfig.fixtures.appendingPathComponent("tree-clients.py").path, "\(server.httpsPort)",
            config.path("wildcard/cert.pem"), "\(Self.sites)", "\(Self.changed)", "\(Self.clients)", Self.template,
        ]
        let input = Pipe()
        let output = Pipe()
        clients.standardInput = input
        clients.standardOutput = output
        try clients.run()
        let started = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        #expect(started.hasPrefix("started"), "the clients did not start: \(started)")

        try worktree(config, "B", changed: Self.changed)
        let swapped = Date()
        publish(config, "B")
        try FileManager.default.removeItem(atPath: config.path(".worktrees/A"))
        let last = "s\(Self.changed - 1).g.test"
        let applied = try eventually(attempts: 300, interval: 0.05) {
            try server.https(last, "/.well-known/apple-app-site-association", cacert: config.path("wildcard/cert.pem")).body
                == Self.body("b", Self.changed - 1)
        }
        #expect(applied, "the new tree was not served")
        print(
            "git-sync swap of \(Self.changed) changed sites (of \(Self.sites)) served after \(Int(Date().timeIntervalSince(swapped) * 1000)) ms"
        )

        input.fileHandleForWriting.write(Data("stop\n".utf8))
        let summary = output.fileHandleForReading.readDataToEndOfFile()
        clients.waitUntilExit()
        let report = try JSONSerialization.jsonObject(with: summary) as? [String: Any] ?? [:]
        #expect((report["violations"] as? [String]) == [], "\(report["violations"] ?? "no report")")
        #expect((report["final"] as? [String]) == [], "sites not served from the new tree: \(report["final"] ?? "no report")")
        #expect((report["a"] as? Int ?? 0) > 0 && (report["b"] as? Int ?? 0) > 0, "\(report)")
        #expect(server.stop())
    }
}
