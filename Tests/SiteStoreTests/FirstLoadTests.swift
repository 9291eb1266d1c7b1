import Foundation
import Logging
import TestSupport
import Testing

@testable import SiteStore

/// A first load updates each chunk's sites while the next chunk is read (`FirstLoad`); a later
/// full load reads every chunk, then updates every site. Both must serve the same.
@Suite("A first load, chunk by chunk")
struct FirstLoadTests {
    /// Sites in more than one chunk, some failing, with alias symlinks to sites of the first and
    /// of a later chunk, and one to a name that is no site.
    private func layout() throws -> (GitSyncLayout, sites: Int) {
        let sites = SiteRegistry.chunkSize + 50
        let layout = try GitSyncLayout()
        let later = SiteRegistry.chunkSize + 10
        try layout.worktree("A", sites: sites, tree: "a", changed: [3: "{", later + 1: "[]"])
        let directory = layout.root + "/.worktrees/A/sites/"
        for (alias, target) in [
            ("a0.t.test", "s0.t.test"), ("a1.t.test", "s\(later).t.test"), ("a2.t.test", "s0.t.test"), ("a3.t.test", "none.t.test"),
        ] {
            try FileManager.default.createSymbolicLink(atPath: directory + alias, withDestinationPath: target)
        }
        layout.publish("A")
        return (layout, sites)
    }

    /// Each site served, by directory: its hosts and its file.
    private func served(_ registry: SiteRegistry) -> [String: [String]] {
        var served: [String: [String]] = [:]
        for site in registry.snapshot.sites.values {
            served[site.directory] =
                site.hosts.map(\.description).sorted() + [site.aasa.map { String(decoding: $0.body, as: UTF8.self) } ?? "-"]
        }
        return served
    }

    @Test("alias symlinks read after their target was updated give it their names")
    func aliasesOfEarlierChunks() throws {
        let (layout, _) = try layout()
        let registry = layout.registry()
        let snapshot = registry.reloadAll()
        let later = "s\(SiteRegistry.chunkSize + 10).t.test"
        #expect(snapshot.site(forHost: "a0.t.test")?.directory == "s0.t.test")
        #expect(snapshot.site(forHost: "a2.t.test")?.directory == "s0.t.test")
        #expect(snapshot.site(forHost: "a1.t.test")?.directory == later)
        #expect(snapshot.site(forHost: "s0.t.test")?.hosts.map(\.description).sorted() == ["a0.t.test", "a2.t.test", "s0.t.test"])
        #expect(registry.status(of: "s0.t.test")?.hosts.count == 3)
    }

    @Test("a first load serves, counts and reports what a later full load of the same tree does")
    func sameAsLaterLoad() throws {
        let (layout, sites) = try layout()
        let registry = layout.registry()
        registry.reloadAll()
        let first = (served(registry), registry.lastReloadProblems, registry.stateCounts, registry.distinctContents)
        #expect(first.0.count == sites - 2)
        // Two invalid sites, and the alias of no site.
        #expect(first.1 == 3)
        registry.reloadAll()
        let again = (served(registry), registry.lastReloadProblems, registry.stateCounts, registry.distinctContents)
        #expect(first.0 == again.0)
        #expect(first.1 == again.1)
        #expect(first.2 == again.2)
        #expect(first.3 == again.3)
    }

    @Test("sites published at once, worked out on every core, serve and log what one at a time does")
    func publishedAtOnce() throws {
        let c = try TempConfig()
        for i in 0..<40 { try c.write("sites/s\(i).test/apple-app-site-association", TempConfig.aasa) }
        // s1.test claims s2.test's name (refused) and one of its own (held).
        try c.write("sites/s1.test/site.yaml", "aliases: [s2.test, extra1.test]\n")
        let lines = LogLines()
        let registry = SiteRegistry(root: c.root, logger: lines.logger)
        registry.reloadAll()
        let names = registry.snapshot.sites.keys.sorted()
        // By the name each site is published under, and who answers for each name.
        let served = {
            var served: [String: [String]] = [:]
            for (name, site) in registry.snapshot.sites {
                served[name] = [site.directory] + site.hosts.map(\.description).sorted()
                for host in site.hosts { served[name]?.append(registry.snapshot.site(forHost: host.name)?.directory ?? "-") }
            }
            return served
        }
        let refusal = { lines.messages().filter { $0.contains("s2.test") } }
        let loaded = (served(), refusal())
        #expect(loaded.0.allSatisfy { name, served in served[0] == name })
        #expect(loaded.0["s1.test"] == ["s1.test", "extra1.test", "s1.test", "s1.test", "s1.test"])
        #expect(loaded.1.count == 1 && loaded.1[0].contains("sites/s1.test"))
        for threshold in [0, Int.max] {
            registry.publish(names, threshold: threshold)
            #expect(served() == loaded.0)
        }
        #expect(refusal() == Array(repeating: loaded.1[0], count: 3))
    }

    @Test("a first load keeps one content for every distinct file, counted by the sites that serve its bytes")
    func contentsShared() throws {
        let sites = 2_000
        func load(shared: Bool) throws -> (SiteRegistry, TempConfig) {
            let c = try TempConfig()
            for i in 0..<sites {
                let body = shared ? TempConfig.aasa : TempConfig.aasa.replacingOccurrences(of: "/*", with: "/\(i)/*")
                try c.write("sites/s\(i).test/apple-app-site-association", body)
            }
            let registry = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            registry.reloadAll()
            return (registry, c)
        }
        let (distinct, _) = try load(shared: false)
        #expect(distinct.distinctContents == sites)
        #expect(distinct.snapshot.sites.count == sites)
        let (one, c) = try load(shared: true)
        #expect(one.distinctContents == 1)
        #expect(one.snapshot.sites.count == sites)
        // Held while one site serves it, dropped with the last.
        for i in 1..<sites { try FileManager.default.removeItem(atPath: c.root + "/sites/s\(i).test") }
        one.reloadAll()
        #expect(one.snapshot.sites.count == 1 && one.distinctContents == 1)
        try FileManager.default.removeItem(atPath: c.root + "/sites/s0.test")
        one.reloadAll()
        #expect(one.distinctContents == 0)
    }
}
