import Foundation
import Logging
import Testing

@testable import SiteStore

private let aasa = TempConfig.aasa

/// Hostile shapes of sites/ against the registry's records, claims and snapshot: a full load of a
/// new tree (sites added in one batch, each claim new) must decide as one site at a time does.
@Suite("Registry under hostile site trees")
struct RegistryAttackTests {
    /// Every site with its names held and refused, and who the snapshot serves each name from.
    private static func picture(_ r: SiteRegistry, hosts: [String]) -> [String] {
        r.statuses.map { "\($0.directory) \($0.state) \($0.hosts) \($0.refusedHosts.map(\.host))" }
            + hosts.map { "\($0) -> \(r.snapshot.site(forHost: $0)?.directory ?? "-")" }
    }

    @Test("many sites' site.yaml claim one name: one holds it, the rest are refused; the same after a full load and one site at a time")
    func manyClaimants() throws {
        let c = try TempConfig()
        let names = (0..<60).map { "s\($0).test" }
        for name in names {
            try c.write("sites/\(name)/apple-app-site-association", aasa)
            try c.write("sites/\(name)/site.yaml", "aliases:\n  - shared.test\n  - SHARED.test.\n  - \(name)\n")
        }
        let full = c.registry()
        full.reloadAll()
        #expect(full.snapshot.site(forHost: "shared.test")?.directory == "s0.test")
        #expect(full.conflictingHosts == names.count - 1)
        let stepwise = c.registry()
        for name in names.reversed() { stepwise.reload([name]) }
        // Added one at a time, the first to claim it (s59) keeps it (rule 3); a full load of a
        // new tree decides the tie by name. Both refuse it to every other site.
        #expect(stepwise.snapshot.site(forHost: "shared.test")?.directory == "s59.test")
        #expect(stepwise.conflictingHosts == names.count - 1)
        // The holder goes: the name passes to one other claimant, never to none or two.
        try FileManager.default.removeItem(atPath: c.root + "/sites/s0.test")
        full.reload(["s0.test"])
        #expect(full.snapshot.site(forHost: "shared.test")?.directory == "s1.test")
        #expect(full.conflictingHosts == names.count - 2)
    }

    @Test("names that differ only in case or a final dot, and a 253-byte name, as directories and aliases")
    func spellingsAndLength() throws {
        let c = try TempConfig()
        let label = String(repeating: "a", count: 63)
        let long = [label, label, label, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(long.utf8.count == 253)
        try c.write("sites/\(long)/apple-app-site-association", aasa)
        try c.write("sites/x.test/apple-app-site-association", aasa)
        try c.write("sites/X.test/apple-app-site-association", aasa)
        try c.write("sites/y.test/apple-app-site-association", aasa)
        try c.write("sites/y.test/site.yaml", "aliases:\n  - X.TEST.\n  - \(long.uppercased())\n")
        let full = c.registry()
        full.reloadAll()
        let hosts = ["x.test", long, "y.test"]
        // The directory spelled as the host holds it; aliases of names a directory stands for are refused.
        #expect(full.snapshot.site(forHost: "x.test")?.directory == "x.test")
        #expect(full.snapshot.site(forHost: long)?.directory == long)
        #expect(full.status(of: "X.test")?.refusedHosts.map(\.host) == ["x.test"])
        #expect(full.status(of: "y.test")?.refusedHosts.map(\.host).sorted() == [long, "x.test"].sorted())
        let stepwise = c.registry()
        for name in ["y.test", "X.test", long, "x.test"] { stepwise.reload([name]) }
        #expect(Self.picture(stepwise, hosts: hosts) == Self.picture(full, hosts: hosts))
    }

    @Test("a site removed and made again, or turned into an alias, within one reload")
    func removedAndReadded() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/site.yaml", "aliases:\n  - www.b.test\n")
        let r = c.registry()
        r.reloadAll()
        // b.test's directory goes and comes back with another alias; a.test becomes an alias of b.test.
        try FileManager.default.removeItem(atPath: c.root + "/sites/b.test")
        try c.write("sites/b.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/site.yaml", "aliases:\n  - shop.b.test\n")
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test")
        try c.link("sites/a.test", to: "b.test")
        r.reload(["a.test", "b.test"])
        #expect(r.siteNames == ["b.test"])
        #expect(r.snapshot.site(forHost: "a.test")?.directory == "b.test")
        #expect(r.snapshot.site(forHost: "shop.b.test")?.directory == "b.test")
        #expect(r.snapshot.site(forHost: "www.b.test") == nil)
        #expect(r.snapshot.sites.count == 1)
        let fresh = c.registry()
        fresh.reloadAll()
        let hosts = ["a.test", "b.test", "shop.b.test", "www.b.test"]
        #expect(Self.picture(r, hosts: hosts) == Self.picture(fresh, hosts: hosts))
    }
}
