import ACME
import Foundation
import Logging
import SiteStore
import Testing

@testable import Daemon

/// What turns wildcard children on and approves them, as text: `acme.ask`,
/// `acme.wildcard-certificates`, site.yaml `certificates:`, and the site's allow file
/// (`allowed-children`), each with its hostile values.
@Suite struct WildcardChildrenSettingsTests {
    @Test func askAndWildcardCertificatesAreReadAndChecked() {
        var settings = ServerSettings()
        #expect(settings.acme.ask == nil && settings.acme.wildcardCertificates == .wildcard)
        let problems = settings.apply(
            yaml: "acme:\n  ask: \"http://127.0.0.1:9000/ask?k=1\"\n  wildcard-certificates: per-name\n", file: "aasad.yaml")
        #expect(problems.isEmpty, "\(problems)")
        #expect(settings.acme.ask == "http://127.0.0.1:9000/ask?k=1" && settings.acme.wildcardCertificates == .perName)
        #expect(settings.apply(environment: ["AASAD_ACME_ASK": "/usr/local/bin/may-have"]).problems.isEmpty)
        #expect(settings.acme.ask == "/usr/local/bin/may-have")
        for bad in ["http://10.0.0.1/ask", "https://a.example/ask#x", "ask.example", "https://a.example/\u{7F}"] {
            #expect(!settings.apply(environment: ["AASAD_ACME_ASK": bad]).problems.isEmpty, "\(bad.debugDescription)")
        }
        #expect(!settings.apply(environment: ["AASAD_ACME_WILDCARD_CERTIFICATES": "per_name"]).problems.isEmpty)
        #expect(SettingsSchema.setting("acme.ask")?.applies == .newProcess)
    }

    @Test func siteYAMLCertificatesIsPerNameOrWildcard() {
        #expect(SiteSettings.parse("certificates: per-name\n", file: "f").0.certificates == .perName)
        #expect(SiteSettings.parse("certificates: wildcard\n", file: "f").0.certificates == .wildcard)
        #expect(SiteSettings.parse("aliases: []\n", file: "f").0.certificates == nil)
        for bad in [
            "certificates: Per-Name\n", "certificates: [per-name]\n", "certificates:\n  a: b\n", "certificates: per_name\n",
            "certificates: \"per-name\u{0}\"\n",
        ] {
            let (settings, problems) = SiteSettings.parse(bad, file: "f")
            #expect(settings.certificates == nil && !problems.isEmpty, "\(bad.debugDescription)")
        }
    }

    @Test func theAllowFileIsParsedStrictly() throws {
        let allowed = try AllowedChildren.parse(Array("# users\n\nalice.u.example.com\nteam-*.u.example.com\n*.x.example.com\n".utf8)).get()
        #expect(allowed.allows("alice.u.example.com"))
        #expect(!allowed.allows("bob.u.example.com"))
        #expect(allowed.allows("team-blue.u.example.com"))
        #expect(!allowed.allows("team-.u.example.com"), "a '*' stands for one character or more")
        #expect(!allowed.allows("team-blue.v.example.com"))
        #expect(allowed.allows("any.x.example.com"))
        for bad in [
            "Alice.u.example.com", "alice.u.example.com.", "alice.u.example.com\r", " alice.u.example.com", "a*b*.u.example.com",
            "alice.*.example.com", "*.com", "alice", "al ice.u.example.com", "al\u{0}ice.u.example.com", "-a.u.example.com",
            "é.u.example.com", String(repeating: "a", count: 64) + ".u.example.com",
        ] {
            #expect(throws: AllowedChildren.Problem.self, "\(bad.debugDescription)") {
                try AllowedChildren.parse(Array((bad + "\n").utf8)).get()
            }
        }
        // The bounds at N and N+1: entries and bytes.
        let n = AllowedChildren.maximumEntries
        let names = (0..<n).map { "c\($0).u.example.com" }.joined(separator: "\n")
        #expect(throws: Never.self) { try AllowedChildren.parse(Array(names.utf8)).get() }
        #expect(throws: AllowedChildren.Problem.self) { try AllowedChildren.parse(Array((names + "\nx.u.example.com").utf8)).get() }
        let bytes = AllowedChildren.maximumFileBytes
        let padded = "a.u.example.com\n" + String(repeating: "#", count: bytes - 16)
        #expect(throws: Never.self) { try AllowedChildren.parse(Array(padded.utf8)).get() }
        #expect(throws: AllowedChildren.Problem.self) { try AllowedChildren.parse(Array((padded + "#").utf8)).get() }
    }

    /// A config directory with the `per-name` wildcard site `*.w.test`, and its snapshot.
    static func perNameSite() throws -> (config: String, snapshot: Snapshot) {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("children-\(UUID().uuidString)").path
        let site = config + "/sites/*.w.test"
        try FileManager.default.createDirectory(atPath: site, withIntermediateDirectories: true)
        try Data(#"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.w", "paths": ["*"]}]}}"#.utf8).write(
            to: URL(fileURLWithPath: site + "/apple-app-site-association"))
        try Data("certificates: per-name\n".utf8).write(to: URL(fileURLWithPath: site + "/site.yaml"))
        let registry = SiteRegistry(root: config, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        registry.reloadAll()
        return (config, registry.snapshot)
    }

    @Test func anUnusableAllowFileIsItsParentsNoNeverAFailure() throws {
        let (config, _) = try Self.perNameSite()
        defer { try? FileManager.default.removeItem(atPath: config) }
        let file = config + "/sites/*.w.test/allowed-children"
        func ask() -> ChildApprovals.Heard { Daemon.askAboutChild("alice.w.test", parent: "*.w.test", config: config, endpoint: nil) }
        // Neither an allow file nor acme.ask: nothing can approve, for the whole parent.
        #expect(ask().answer == .no && ask().wholeParent)
        try Data("alice.w.test\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(ask() == ChildApprovals.Heard(.yes, "listed"))
        // A CRLF line, a bad line, an oversize file, a directory, a symlink: the parent's no, not
        // a failure (which would pause every other site's asks).
        let oversize = "alice.w.test\n" + String(repeating: "#", count: AllowedChildren.maximumFileBytes)
        for bad in ["alice.w.test\r\n", "Alice.w.test\n", oversize] {
            try Data(bad.utf8).write(to: URL(fileURLWithPath: file))
            let heard = ask()
            #expect(heard.answer == .no && heard.wholeParent, "\(heard)")
        }
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
        #expect(ask().answer == .no && ask().wholeParent, "\(ask())")
        try FileManager.default.removeItem(atPath: file)
        try Data("alice.w.test\n".utf8).write(to: URL(fileURLWithPath: config + "/elsewhere"))
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: config + "/elsewhere")
        #expect(ask().answer == .no && ask().wholeParent, "\(ask())")
    }

    @Test func aWildcardTheOwnershipCheckHoldsBackHasNoChildren() throws {
        let (config, snapshot) = try Self.perNameSite()
        defer { try? FileManager.default.removeItem(atPath: config) }
        let open = ACMENames(blocked: { _ in false })
        #expect(open.childSite(of: "alice.w.test", in: snapshot)?.directory == "*.w.test")
        // The wildcard's record is not verified: the child name itself has no record.
        let held = ACMENames(blocked: { $0 == "*.w.test" })
        #expect(held.childSite(of: "alice.w.test", in: snapshot) == nil)
    }
}
