import AASA
import Foundation
import Logging
import Testing

@testable import SiteStore

private let good = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#
private let good2 = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/b/*"}]}]}}"#
private let broken = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]"#

extension TempConfig {
    func registry() -> SiteRegistry {
        SiteRegistry(root: root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func remove(_ relative: String) throws {
        try FileManager.default.removeItem(atPath: root + "/" + relative)
    }
}

private func body(_ snapshot: Snapshot, _ host: String) -> String? {
    snapshot.site(forHost: host)?.aasa.map { String(decoding: $0.body, as: UTF8.self) }
}

@Suite("Site registry: last good, deletions, aliases, conflicts")
struct SiteRegistryTests {
    @Test("a full load serves every valid site")
    func loads() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/b.test/apple-app-site-association", good2)
        let r = c.registry()
        let s = r.reloadAll()
        #expect(body(s, "a.test") == good)
        #expect(body(s, "b.test") == good2)
        #expect(r.statuses.map(\.state) == [.serving, .serving])
    }

    @Test("an invalid new file leaves the last good version serving, and the state says so")
    func lastGood() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = c.registry()
        r.reloadAll()
        try c.write("sites/a.test/apple-app-site-association", broken)
        let s = r.reload(["a.test"])
        #expect(body(s, "a.test") == good)
        let status = try #require(r.statuses.first)
        #expect(status.state == .servingLastGood)
        #expect(status.errors.first?.contains("sites/a.test/apple-app-site-association") == true)
        // Fixed: the new version is served and the state is clean again.
        try c.write("sites/a.test/apple-app-site-association", good2)
        #expect(body(r.reload(["a.test"]), "a.test") == good2)
        #expect(r.statuses.first?.state == .serving)
    }

    @Test("a site that never had a good version is not served")
    func neverGood() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", broken)
        let r = c.registry()
        #expect(r.reloadAll().site(forHost: "a.test") == nil)
        #expect(r.statuses.first?.state == .refused)
    }

    @Test("a deleted file or site stops being served", arguments: ["sites/a.test/apple-app-site-association", "sites/a.test"])
    func deletion(_ path: String) throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = c.registry()
        r.reloadAll()
        try c.remove(path)
        #expect(r.reload(["a.test"]).site(forHost: "a.test") == nil)
    }

    @Test("a deleted invalid file does not bring back its last good version")
    func deletedAfterBroken() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = c.registry()
        r.reloadAll()
        try c.write("sites/a.test/apple-app-site-association", broken)
        r.reload(["a.test"])
        try c.remove("sites/a.test/apple-app-site-association")
        #expect(r.reload(["a.test"]).site(forHost: "a.test") == nil)
    }

    @Test("per file: a broken assetlinks.json does not hold back a fixed AASA file")
    func perFile() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/assetlinks.json", "[]")
        let r = c.registry()
        let s = r.reloadAll()
        #expect(body(s, "a.test") == good)
        #expect(s.site(forHost: "a.test")?.assetLinks == nil)
        try c.write("sites/a.test/apple-app-site-association", good2)
        #expect(body(r.reload(["a.test"]), "a.test") == good2)
    }

    @Test("a renamed site directory moves its hosts")
    func rename() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = c.registry()
        r.reloadAll()
        try FileManager.default.moveItem(atPath: c.root + "/sites/a.test", toPath: c.root + "/sites/c.test")
        let s = r.reload(["a.test", "c.test"])
        #expect(s.site(forHost: "a.test") == nil)
        #expect(body(s, "c.test") == good)
    }

    @Test("an alias symlink added or removed changes the site's hosts")
    func aliases() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = c.registry()
        r.reloadAll()
        try c.link("sites/www.a.test", to: "a.test")
        #expect(body(r.reload(["www.a.test"]), "www.a.test") == good)
        try c.remove("sites/www.a.test")
        #expect(r.reload(["www.a.test"]).site(forHost: "www.a.test") == nil)
        #expect(body(r.snapshot, "a.test") == good)
    }

    @Test("an alias made before its site is served once the site appears, as a full scan would")
    func aliasBeforeSite() throws {
        let c = try TempConfig()
        try c.link("sites/www.a.test", to: "a.test")
        let r = c.registry()
        r.reloadAll()
        #expect(r.snapshot.site(forHost: "www.a.test") == nil)
        // The watcher reports the new directory only; the dangling symlink is read again with it.
        try c.write("sites/a.test/apple-app-site-association", good)
        #expect(body(r.reload(["a.test"]), "www.a.test") == good)
        #expect(body(r.snapshot, "a.test") == good)
        // And it stays an ordinary alias: removed, it stops being served.
        try c.remove("sites/www.a.test")
        #expect(r.reload(["www.a.test"]).site(forHost: "www.a.test") == nil)
    }

    @Test("two entries of sites/ for one host: the one spelled as the host holds it, the other is refused and says why")
    func twoEntriesOneHost() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = c.registry()
        r.reloadAll()
        // A symlink www.a.test (an alias of a.test) and a directory WWW.A.test stand for one host.
        try c.link("sites/www.a.test", to: "a.test")
        try c.write("sites/WWW.A.test/apple-app-site-association", good2)
        let s = r.reload(["www.a.test", "WWW.A.test"])
        #expect(body(s, "www.a.test") == good, "the name is served by nobody, or by the wrong spelling")
        #expect(body(s, "a.test") == good)
        let refused = try #require(r.status(of: "WWW.A.test")?.refusedHosts.first)
        #expect(
            refused
                == RefusedHost(
                    host: "www.a.test", heldBy: "sites/a.test", reason: "sites/www.a.test, a symlink to sites/a.test, is named for it"))
        #expect(r.status(of: "a.test")?.refusedHosts == [])
        // The symlink gone, the directory holds its name.
        try c.remove("sites/www.a.test")
        #expect(body(r.reload(["www.a.test"]), "www.a.test") == good2)
        #expect(r.status(of: "WWW.A.test")?.refusedHosts == [])
    }

    @Test("identical files share one prepared content; unused contents are dropped")
    func sharing() throws {
        let c = try TempConfig()
        for i in 0..<20 { try c.write("sites/s\(i).test/apple-app-site-association", i % 2 == 0 ? good : good2) }
        let r = c.registry()
        let s = r.reloadAll()
        #expect(r.distinctContents == 2)
        #expect(s.site(forHost: "s0.test")?.aasa?.content === s.site(forHost: "s2.test")?.aasa?.content)
        for i in 0..<20 where i % 2 == 1 { try c.remove("sites/s\(i).test") }
        r.reloadAll()
        #expect(r.distinctContents == 1)
    }

    @Test("a change to one site leaves the others' served objects untouched")
    func incremental() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/b.test/apple-app-site-association", good)
        let r = c.registry()
        let before = r.reloadAll()
        try c.write("sites/a.test/apple-app-site-association", good2)
        let after = r.reload(["a.test"])
        #expect(after.generation > before.generation)
        #expect(after.site(forHost: "b.test") === before.site(forHost: "b.test"))
    }

    @Test("a bad directory name is reported, and a Kubernetes ..data entry is ignored")
    func entries() throws {
        let c = try TempConfig()
        try c.write("sites/a_b.test/apple-app-site-association", good)
        try c.write("sites/..data/x", "")
        let r = c.registry()
        r.reloadAll()
        #expect(r.entryErrors.map(\.file) == ["sites/a_b.test"])
        #expect(r.statuses.isEmpty)
    }
}

@Suite("site.yaml: aliases and cache policy")
struct SiteSettingsTests {
    @Test("aliases in site.yaml are served by the site; cache-control replaces the default")
    func aliasesAndCache() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/site.yaml", "aliases:\n  - www.a.test\n  - A.example\ncache-control: max-age=60\n")
        let r = c.registry()
        let s = r.reloadAll()
        #expect(body(s, "www.a.test") == good)
        #expect(body(s, "a.example") == good)
        let headers = String(decoding: s.site(forHost: "a.test")!.aasa!.headers.http1, as: UTF8.self)
        #expect(headers.contains("Cache-Control: max-age=60\r\n"))
    }

    @Test(
        "a broken site.yaml is reported by key and the previous settings stay in force",
        arguments: [
            ("aliases: www.a.test\n", "must be a list"),
            ("alias:\n  - www.a.test\n", "unknown key \"alias\""),
            ("aliases:\n  - bücher.test\n", "xn--bcher-kva.test"),
            ("cache-control: [1]\n", "one line of text"),
            ("aliases: [\n", "not valid YAML"),
        ])
    func broken(_ yaml: String, _ message: String) throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/site.yaml", "aliases:\n  - www.a.test\n")
        let r = c.registry()
        r.reloadAll()
        try c.write("sites/a.test/site.yaml", yaml)
        let s = r.reload(["a.test"])
        #expect(body(s, "www.a.test") == good, "the last good settings were dropped")
        let status = try #require(r.statuses.first)
        #expect(status.state == .servingLastGood)
        #expect(status.errors.contains { $0.contains("site.yaml") && $0.contains(message) }, "\(status.errors)")
    }

    @Test("an alias in site.yaml on another site's directory name is refused: the directory's site serves it")
    func aliasOnDirectoryName() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/b.test/apple-app-site-association", good2)
        try c.write("sites/b.test/site.yaml", "aliases: [a.test, www.b.test]\n")
        let r = c.registry()
        let s = r.reloadAll()
        #expect(body(s, "a.test") == good)
        #expect(body(s, "b.test") == good2)
        #expect(body(s, "www.b.test") == good2)
        #expect(r.status(of: "b.test")?.hosts == ["b.test", "www.b.test"])
        #expect(
            r.status(of: "b.test")?.refusedHosts == [
                RefusedHost(host: "a.test", heldBy: "sites/a.test", reason: "sites/a.test is named for it")
            ])
        #expect(r.conflictingHosts == 1)
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(
            scan.sites.first { $0.directory == "sites/b.test" }?.problems.contains {
                $0.file == "sites/b.test/site.yaml"
                    && $0.message == "the alias a.test is not served by sites/b.test: sites/a.test is named for it"
            } == true)
        #expect(scan.sites.first { $0.directory == "sites/a.test" }?.problems == [])
    }

    @Test("validate reports site.yaml problems like any other file")
    func scanned() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/site.yaml", "colour: blue\n")
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(!scan.isValid)
        #expect(scan.sites[0].problems.contains { $0.file == "sites/a.test/site.yaml" && $0.message.contains("unknown key \"colour\"") })
    }
}

@Suite("Read bounds of the config directory's small files")
struct ConfigFileBoundTests {
    @Test("a site.yaml one byte over 64 KB is refused with its size, not parsed")
    func siteYAMLBound() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/site.yaml", "# " + String(repeating: "x", count: SiteSettings.maximumFileSize - 2))
        #expect(ConfigLoader.scan(directory: c.root).isValid)  // exactly 64 KB: read
        try c.write("sites/a.test/site.yaml", "# " + String(repeating: "x", count: SiteSettings.maximumFileSize - 1))
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites[0].problems.contains { $0.file == "sites/a.test/site.yaml" && $0.message.contains("larger than 64 KB") })
    }

    @Test("a cert.pem over 1 MB is refused with its size; a missing key.pem is named")
    func certificateBounds() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/tls/cert.pem", String(repeating: "x", count: CertificateFiles.maximumFileSize + 1))
        try c.write("sites/a.test/tls/key.pem", "key")
        var problems = ConfigLoader.scan(directory: c.root).sites[0].problems
        #expect(problems.contains { $0.file == "sites/a.test/tls/cert.pem" && $0.message.contains("larger than 1 MB") })
        try c.remove("sites/a.test/tls/key.pem")
        problems = ConfigLoader.scan(directory: c.root).sites[0].problems
        #expect(problems.contains { $0.file == "sites/a.test/tls/key.pem" && $0.message.contains("missing") })
    }
}

@Suite("Site registry: a read takes the content another site serves")
struct SharedContentRegistryTests {
    @Test("a site added with another's bytes shares its content; removing the other in the same reload keeps it, counted once")
    func addedBesideRemoved() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/c.test/apple-app-site-association", good2)
        let r = c.registry()
        let first = r.reloadAll()
        let held = try #require(first.site(forHost: "a.test")?.aasa?.content)
        try c.write("sites/b.test/apple-app-site-association", good)
        let shared = r.reload(["b.test"])
        #expect(shared.site(forHost: "b.test")?.aasa?.content === held)
        #expect(r.preparer.contents.count == 2)
        // a.test goes while d.test comes with the same bytes, in one reload.
        try c.remove("sites/a.test")
        try c.write("sites/d.test/apple-app-site-association", good)
        let after = r.reload(["a.test", "d.test"])
        #expect(after.site(forHost: "a.test") == nil)
        #expect(after.site(forHost: "b.test")?.aasa?.content === held)
        #expect(after.site(forHost: "d.test")?.aasa?.content === held)
        #expect(r.preparer.contents.count == 2)
        // d.test goes: b.test still uses the content, so a site added after takes it again.
        try c.remove("sites/d.test")
        _ = r.reload(["d.test"])
        #expect(r.preparer.contents.count == 2)
        try c.write("sites/e.test/apple-app-site-association", good)
        #expect(r.reload(["e.test"]).site(forHost: "e.test")?.aasa?.content === held)
        // The last two users gone, the content goes too; the other site's stays.
        try c.remove("sites/b.test")
        try c.remove("sites/e.test")
        _ = r.reload(["b.test", "e.test"])
        #expect(r.preparer.contents.count == 1)
        #expect(body(r.snapshot, "c.test") == good2)
    }
}
