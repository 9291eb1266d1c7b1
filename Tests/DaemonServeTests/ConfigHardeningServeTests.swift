import DaemonTesting
import Foundation
import TestSupport
import Testing

/// What the config directory feeds into responses, tried as an attacker or an unlucky operator
/// would, on a daemon in this process: header injection from site.yaml, a changed file answered
/// 304. (What needs the binary, settings refused by validate and serve, --user and the
/// descriptor limit, is in Tests/aasadTests/ConfigHardeningTests.swift.)
@Suite("Config hardening: header values and Last-Modified while serving")
final class ConfigHardeningServeTests {
    let config: TestConfig
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
    }

    /// The errors `/sites` lists for one site directory, and its state.
    private func siteStatus(_ server: TestDaemon, _ directory: String) throws -> (state: String, errors: [String])? {
        let listing = try server.admin("/sites")
        let object = try JSONSerialization.jsonObject(with: Data(listing.body)) as? [String: Any]
        let sites = object?["sites"] as? [[String: Any]] ?? []
        guard let site = sites.first(where: { $0["directory"] as? String == directory }) else { return nil }
        return (site["state"] as? String ?? "", site["errors"] as? [String] ?? [])
    }

    @Test("a site.yaml cache-control with CR/LF never reaches the response head; the error is on /sites and the last good value stays")
    func headerInjectionFromSiteYAML() throws {
        try config.write("config/sites/a.test/site.yaml", Array("cache-control: max-age=60\n".utf8))
        let server = try TestDaemon(config: config)
        #expect(try server.http("a.test", Self.path).headers["cache-control"] == "max-age=60")
        // A YAML double-quoted string turns \r\n into the two bytes CR LF.
        try config.write("config/sites/a.test/site.yaml", Array(#"cache-control: "max-age=60\r\nX-Injected: yes"\#n"#.utf8))
        #expect(
            try eventually {
                try siteStatus(server, "a.test")?.errors.contains { $0.contains("site.yaml") && $0.contains("0x0D") } == true
            },
            "the bad cache-control is not reported on /sites")
        let answer = try server.http("a.test", Self.path)
        #expect(answer.status == 200)
        #expect(answer.headers["x-injected"] == nil, "injected header: \(answer.headers)")
        #expect(answer.headers["cache-control"] == "max-age=60")
        #expect(try siteStatus(server, "a.test")?.state == "serving-last-good")
        #expect(server.stop())
        #expect(server.log().contains("cache-control"))
    }

    @Test("a site.yaml with CR/LF at start: the site serves with the default Cache-Control and no injected header")
    func headerInjectionAtStart() throws {
        try config.write("config/sites/a.test/site.yaml", Array(#"cache-control: "max-age=60\r\nX-Injected: yes"\#n"#.utf8))
        let server = try TestDaemon(config: config)
        let answer = try server.http("a.test", Self.path)
        #expect(answer.headers["x-injected"] == nil, "injected header: \(answer.headers)")
        #expect(answer.headers["cache-control"] == "max-age=300")
        let errors = try #require(try siteStatus(server, "a.test")).errors
        #expect(
            errors.contains { $0.contains("sites/a.test/site.yaml") && $0.contains("cache-control") && $0.contains("0x0D") }, "\(errors)")
    }

    /// Moves new bytes into place in one rename with the given mtime, as `rsync -a` does.
    private func replace(_ relative: String, with bytes: [UInt8], modified: Date) throws {
        let scratch = config.path("scratch-\(UUID().uuidString)")
        try Data(bytes).write(to: URL(fileURLWithPath: scratch))
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: scratch)
        #expect(rename(scratch, config.path(relative)) == 0)
    }

    @Test("Last-Modified moves whenever the content changes: same mtime (two edits in a second) and an older mtime (a roll-back)")
    func lastModifiedMovesWithContent() throws {
        let file = "config/sites/a.test/apple-app-site-association"
        let then = Date(timeIntervalSince1970: 1_600_000_000)
        try replace(file, with: config.aasa, modified: then)
        let server = try TestDaemon(config: config)
        let first = try server.http("a.test", Self.path)
        let firstModified = try #require(first.headers["last-modified"])

        // A new version with the very same mtime.
        let second = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.second"]}}"#.utf8)
        try replace(file, with: second, modified: then)
        #expect(try eventually { try server.http("a.test", Self.path).body == second })
        let revalidated = try server.http("a.test", Self.path, ["-H", "If-Modified-Since: \(firstModified)"])
        #expect(revalidated.status == 200, "a changed file was answered \(revalidated.status) to If-Modified-Since")
        #expect(revalidated.body == second)
        let secondModified = try #require(revalidated.headers["last-modified"])
        #expect(secondModified != firstModified)

        // A roll-back to an older mtime.
        let third = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.third"]}}"#.utf8)
        try replace(file, with: third, modified: then.addingTimeInterval(-86_400))
        #expect(try eventually { try server.http("a.test", Self.path).body == third })
        let rolledBack = try server.http("a.test", Self.path, ["-H", "If-Modified-Since: \(secondModified)"])
        #expect(rolledBack.status == 200, "a rolled-back file was answered \(rolledBack.status) to If-Modified-Since")
        #expect(rolledBack.body == third)
        // The same content still revalidates: 304 to its own Last-Modified.
        let current = try #require(rolledBack.headers["last-modified"])
        #expect(try server.http("a.test", Self.path, ["-H", "If-Modified-Since: \(current)"]).status == 304)
    }
}
