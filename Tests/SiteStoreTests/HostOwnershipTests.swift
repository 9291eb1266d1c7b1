import Foundation
import Logging
import TestSupport
import Testing

@testable import SiteStore

private func host(_ text: String) -> HostName {
    // Test names are valid by construction.
    (try? HostName(parsing: text)) ?? HostName(wildcardOver: "invalid.test")
}

/// A site as the table writes it: `dir` its directory (its entry under sites/), `links` symlink
/// entries to it, `aliases` its site.yaml.
private struct Site {
    var dir: String
    var links: [String] = []
    var aliases: [String] = []

    var names: HostOwnership.Names {
        var symlinks: [String: HostName] = [:]
        for link in links { symlinks[link] = host(link) }
        return HostOwnership.Names(host: host(dir), symlinks: symlinks, aliases: aliases.map(host))
    }
}

private func decide(_ sites: [Site], prior: [HostName: String] = [:]) -> HostOwnership {
    var ownership = HostOwnership(prior: prior)
    for site in sites { ownership.set(site.dir, site.names) }
    _ = ownership.resolve()
    return ownership
}

/// One line per case: the sites, a request host, who serves it, and the refusal said to the
/// loser (nil: none).
@Suite("Host ownership: the rule of which site holds which name")
struct HostOwnershipTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var what: String
        var sites: [SiteSpec]
        var request: String
        var servedBy: String?
        var refused: (site: String, host: String, reason: String)?
        var testDescription: String { what }
    }

    struct SiteSpec: Sendable {
        var dir: String
        var links: [String] = []
        var aliases: [String] = []
    }

    static let cases: [Case] = [
        Case(
            what: "an alias under another site's wildcard directory is refused",
            sites: [SiteSpec(dir: "*.wild.test"), SiteSpec(dir: "evil.test", aliases: ["www.wild.test"])],
            request: "www.wild.test", servedBy: "*.wild.test",
            refused: ("evil.test", "www.wild.test", "it lies under *.wild.test, which sites/*.wild.test is named for")),
        Case(
            what: "an alias on another site's directory name is refused",
            sites: [SiteSpec(dir: "victim.test"), SiteSpec(dir: "evil.test", aliases: ["victim.test"])],
            request: "victim.test", servedBy: "victim.test",
            refused: ("evil.test", "victim.test", "sites/victim.test is named for it")),
        Case(
            what: "an alias on another site's alias symlink is refused",
            sites: [SiteSpec(dir: "a.test", links: ["www.a.test"]), SiteSpec(dir: "evil.test", aliases: ["www.a.test"])],
            request: "www.a.test", servedBy: "a.test",
            refused: ("evil.test", "www.a.test", "sites/www.a.test, a symlink to sites/a.test, is named for it")),
        Case(
            what: "a wildcard alias under another site's wildcard directory is refused",
            sites: [SiteSpec(dir: "*.wild.test"), SiteSpec(dir: "evil.test", aliases: ["*.x.wild.test"])],
            request: "y.x.wild.test", servedBy: "*.wild.test",
            refused: ("evil.test", "*.x.wild.test", "it lies under *.wild.test, which sites/*.wild.test is named for")),
        Case(
            what: "a wildcard alias equal to another site's wildcard directory is refused",
            sites: [SiteSpec(dir: "*.wild.test"), SiteSpec(dir: "evil.test", aliases: ["*.wild.test"])],
            request: "y.wild.test", servedBy: "*.wild.test",
            refused: ("evil.test", "*.wild.test", "sites/*.wild.test is named for it")),
        Case(
            what: "an alias deeper under a wildcard is refused too",
            sites: [SiteSpec(dir: "*.wild.test"), SiteSpec(dir: "evil.test", aliases: ["a.b.c.wild.test"])],
            request: "a.b.c.wild.test", servedBy: "*.wild.test",
            refused: ("evil.test", "a.b.c.wild.test", "it lies under *.wild.test, which sites/*.wild.test is named for")),
        Case(
            what: "the wildcard's own name is not under it: an alias of it is held",
            sites: [SiteSpec(dir: "*.wild.test"), SiteSpec(dir: "b.test", aliases: ["wild.test"])],
            request: "wild.test", servedBy: "b.test", refused: nil),
        Case(
            what: "an operator's directory beside a wildcard directory holds its name (an exact name beats a wildcard)",
            sites: [SiteSpec(dir: "*.wild.test"), SiteSpec(dir: "www.wild.test")],
            request: "www.wild.test", servedBy: "www.wild.test", refused: nil),
        Case(
            what: "an operator's symlink beside a wildcard directory holds its name",
            sites: [SiteSpec(dir: "*.wild.test"), SiteSpec(dir: "b.test", links: ["www.wild.test"])],
            request: "www.wild.test", servedBy: "b.test", refused: nil),
        Case(
            what: "an alias under the site's own wildcard is held, under a wider wildcard of another",
            sites: [SiteSpec(dir: "*.test.example"), SiteSpec(dir: "*.a.test.example", aliases: ["www.a.test.example"])],
            request: "www.a.test.example", servedBy: "*.a.test.example", refused: nil),
        Case(
            what: "a wildcard alias above another site's exact name takes none of it",
            sites: [SiteSpec(dir: "www.shop.test"), SiteSpec(dir: "b.test", aliases: ["*.shop.test"])],
            request: "www.shop.test", servedBy: "www.shop.test", refused: nil),
        Case(
            what: "... and serves the other names below it",
            sites: [SiteSpec(dir: "www.shop.test"), SiteSpec(dir: "b.test", aliases: ["*.shop.test"])],
            request: "api.shop.test", servedBy: "b.test", refused: nil),
        Case(
            what: "two aliases on one name with no record: the directory name that sorts first holds it",
            sites: [SiteSpec(dir: "b.test", aliases: ["x.test"]), SiteSpec(dir: "a.test", aliases: ["x.test"])],
            request: "x.test", servedBy: "a.test",
            refused: ("b.test", "x.test", "sites/a.test/site.yaml names it too and held it first")),
        Case(
            what: "an exact alias and a wildcard alias above it, new together: both are held",
            sites: [SiteSpec(dir: "a.test", aliases: ["*.shop.test"]), SiteSpec(dir: "b.test", aliases: ["www.shop.test"])],
            request: "www.shop.test", servedBy: "b.test", refused: nil),
        Case(
            what: "two directories for one host: the one spelled as the host holds it",
            sites: [SiteSpec(dir: "A.test"), SiteSpec(dir: "a.test")],
            request: "a.test", servedBy: "a.test", refused: ("A.test", "a.test", "sites/a.test is named for it")),
        Case(
            what: "two spellings, neither exact: the first in byte order holds it",
            sites: [SiteSpec(dir: "a.test."), SiteSpec(dir: "A.test")],
            request: "a.test", servedBy: "A.test", refused: ("a.test.", "a.test", "sites/A.test is named for it")),
        Case(
            what: "an alias of the site's own name is no contest",
            sites: [SiteSpec(dir: "a.test", aliases: ["a.test"])],
            request: "a.test", servedBy: "a.test", refused: nil),
    ]

    @Test("the rule, case by case", arguments: cases)
    func rule(_ c: Case) {
        let ownership = decide(c.sites.map { Site(dir: $0.dir, links: $0.links, aliases: $0.aliases) })
        #expect(ownership.holder(serving: c.request)?.site == c.servedBy)
        let refusals = c.sites.flatMap { spec in ownership.refusals(of: spec.dir).map { (spec.dir, $0) } }
        if let expected = c.refused {
            #expect(refusals.count == 1)
            #expect(refusals.first?.0 == expected.site)
            #expect(refusals.first?.1.host.name == expected.host)
            #expect(refusals.first?.1.description == expected.reason)
        } else {
            #expect(refusals.isEmpty, "\(refusals)")
        }
    }

    @Test("a contest: the site that held the name first keeps it, whatever the names' order, and across a restart")
    func heldFirst() {
        var ownership = HostOwnership()
        ownership.set("z.test", Site(dir: "z.test", aliases: ["shop.test"]).names)
        _ = ownership.resolve()
        ownership.set("a.test", Site(dir: "a.test", aliases: ["shop.test"]).names)
        let touched = ownership.resolve()
        #expect(touched.contains("a.test"))
        #expect(ownership.holder(serving: "shop.test")?.site == "z.test")
        #expect(ownership.refusals(of: "a.test").map(\.description) == ["sites/z.test/site.yaml names it too and held it first"])
        // A restart from what it remembers decides the same, though a.test sorts first.
        #expect(ownership.remembered == [host("shop.test"): "z.test"])
        let restarted = decide(
            [Site(dir: "a.test", aliases: ["shop.test"]), Site(dir: "z.test", aliases: ["shop.test"])], prior: ownership.remembered)
        #expect(restarted.holder(serving: "shop.test")?.site == "z.test")
        // Without the record, the first start's order: a.test.
        #expect(
            decide([Site(dir: "z.test", aliases: ["shop.test"]), Site(dir: "a.test", aliases: ["shop.test"])]).holder(serving: "shop.test")?
                .site == "a.test")
        // The holder lets go: the other gets it.
        ownership.set("z.test", Site(dir: "z.test").names)
        _ = ownership.resolve()
        #expect(ownership.holder(serving: "shop.test")?.site == "a.test")
        #expect(ownership.refusals(of: "a.test").isEmpty)
    }

    @Test("a wildcard alias held first keeps the exact names below it from a later alias of another site")
    func wildcardHeldFirst() {
        var ownership = HostOwnership()
        ownership.set("a.test", Site(dir: "a.test", aliases: ["*.shop.test"]).names)
        _ = ownership.resolve()
        ownership.set("b.test", Site(dir: "b.test", aliases: ["www.shop.test", "*.x.shop.test"]).names)
        _ = ownership.resolve()
        #expect(ownership.holder(serving: "www.shop.test")?.site == "a.test")
        #expect(ownership.holder(serving: "y.x.shop.test")?.site == "a.test")
        #expect(
            ownership.refusals(of: "b.test").map(\.description) == [
                "it lies under *.shop.test, an alias of sites/a.test that held it first",
                "it lies under *.shop.test, an alias of sites/a.test that held it first",
            ])
        // The other way round: b.test's exact name held first stays b.test's.
        var other = HostOwnership()
        other.set("b.test", Site(dir: "b.test", aliases: ["www.shop.test"]).names)
        _ = other.resolve()
        other.set("a.test", Site(dir: "a.test", aliases: ["*.shop.test"]).names)
        _ = other.resolve()
        #expect(other.holder(serving: "www.shop.test")?.site == "b.test")
        #expect(other.holder(serving: "api.shop.test")?.site == "a.test")
        let restarted = decide(
            [Site(dir: "a.test", aliases: ["*.shop.test"]), Site(dir: "b.test", aliases: ["www.shop.test"])], prior: other.remembered)
        #expect(restarted.holder(serving: "www.shop.test")?.site == "b.test")
    }

    @Test("the names a site holds, in its order: its directory's, its symlinks' by entry, its aliases'; not those another holds")
    func heldInOrder() {
        var ownership = HostOwnership()
        let symlinks = ["z.test": host("z.test"), "b.test": host("b.test"), "m.test": host("m.test")]
        ownership.set("a.test", HostOwnership.Names(host: host("a.test"), symlinks: symlinks, aliases: [host("y.test"), host("c.test")]))
        _ = ownership.resolve()
        let all = ["a.test", "b.test", "m.test", "z.test", "y.test", "c.test"].map(host)
        #expect(ownership.held(by: "a.test") == all)
        // A directory of its own takes a site.yaml alias's name.
        ownership.set("c.test", HostOwnership.Names(host: host("c.test")))
        _ = ownership.resolve()
        #expect(ownership.held(by: "a.test") == ["a.test", "b.test", "m.test", "z.test", "y.test"].map(host))
        #expect(ownership.held(by: "nothing.test").isEmpty)
    }

    @Test("what a decision touched: the sites set since, less those removed before it; a first load's every site")
    func touchedSites() {
        var ownership = HostOwnership()
        for name in ["a.test", "b.test", "c.test"] { ownership.set(name, Site(dir: name).names) }
        #expect(ownership.resolve() == ["a.test", "b.test", "c.test"])
        // Set, then removed before the decision: not among the touched.
        ownership.set("d.test", Site(dir: "d.test").names)
        ownership.set("b.test", Site(dir: "b.test", aliases: ["www.b.test"]).names)
        ownership.remove("d.test")
        #expect(ownership.resolve() == ["b.test"])
        // Removed alone: nothing of it left to touch.
        ownership.remove("c.test")
        #expect(ownership.resolve().isEmpty)
        #expect(ownership.held(by: "c.test").isEmpty && ownership.held(by: "b.test") == [host("b.test"), host("www.b.test")])
    }

    @Test("a directory made later for a name an alias holds takes it: the operator's names come first")
    func directoryOverridesAlias() {
        var ownership = HostOwnership()
        ownership.set("b.test", Site(dir: "b.test", aliases: ["shop.test", "www.wild.test"]).names)
        _ = ownership.resolve()
        ownership.set("shop.test", Site(dir: "shop.test").names)
        ownership.set("*.wild.test", Site(dir: "*.wild.test").names)
        _ = ownership.resolve()
        #expect(ownership.holder(serving: "shop.test")?.site == "shop.test")
        #expect(ownership.holder(serving: "www.wild.test")?.site == "*.wild.test")
        #expect(ownership.held(by: "b.test") == [host("b.test")])
        #expect(ownership.refusedCount == 2)
        ownership.remove("*.wild.test")
        _ = ownership.resolve()
        #expect(ownership.holder(serving: "www.wild.test")?.site == "b.test")
    }

    @Test("a prior record naming a site that no longer claims the name, or naming two sites, decides nothing wrong")
    func hostilePrior() {
        let ownership = decide(
            [Site(dir: "a.test", aliases: ["x.test"]), Site(dir: "b.test")], prior: [host("x.test"): "b.test", host("b.test"): "a.test"])
        #expect(ownership.holder(serving: "x.test")?.site == "a.test")
        #expect(ownership.holder(serving: "b.test")?.site == "b.test")
        #expect(ownership.remembered == [host("x.test"): "a.test"])
    }

    @Test("one site's change decides only the names it touches: 10,000 other sites' aliases are not looked at")
    func incremental() {
        var ownership = HostOwnership()
        for i in 0..<10_000 { ownership.set("s\(i).test", Site(dir: "s\(i).test", aliases: ["www.s\(i).test"]).names) }
        _ = ownership.resolve()
        ownership.set("s5.test", Site(dir: "s5.test", aliases: ["www.s5.test", "shop.test"]).names)
        #expect(ownership.resolve() == ["s5.test"])
    }

    @Test("a wildcard's change decides again what it may change: under an entry every alias, under an alias the refused ones")
    func wildcardChangeFindsAliasesUnder() {
        var ownership = HostOwnership()
        for i in 0..<1_000 { ownership.set("s\(i).test", Site(dir: "s\(i).test", aliases: ["www.s\(i).shop.test"]).names) }
        ownership.set("deep.test", Site(dir: "deep.test", aliases: ["a.b.s7.shop.test", "*.x.s7.shop.test"]).names)
        _ = ownership.resolve()
        // A tenant's wildcard alias over names others hold: it takes none of them, and touches none.
        ownership.set("w.test", Site(dir: "w.test", aliases: ["*.s7.shop.test"]).names)
        #expect(ownership.resolve() == ["w.test"])
        #expect(ownership.holder(serving: "www.s7.shop.test")?.site == "s7.test")
        // A later alias under it is refused; when the wildcard goes, that one is decided again.
        ownership.set("late.test", Site(dir: "late.test", aliases: ["new.s7.shop.test"]).names)
        #expect(ownership.resolve() == ["late.test"])
        #expect(ownership.held(by: "late.test") == [host("late.test")])
        ownership.set("w.test", Site(dir: "w.test").names)
        #expect(ownership.resolve() == ["w.test", "late.test"])
        #expect(ownership.holder(serving: "new.s7.shop.test")?.site == "late.test")
        // The operator's wildcard directory: every alias under it is decided again, and refused.
        ownership.set("*.s7.shop.test", Site(dir: "*.s7.shop.test").names)
        #expect(ownership.resolve() == ["*.s7.shop.test", "s7.test", "deep.test", "late.test"])
        #expect(ownership.holder(serving: "www.s7.shop.test")?.site == "*.s7.shop.test")
        // A change to a wildcard site's aliases alone leaves its directory's name undecided.
        ownership.set("*.s7.shop.test", Site(dir: "*.s7.shop.test", aliases: ["other.test"]).names)
        #expect(ownership.resolve() == ["*.s7.shop.test"])
        for (name, domains) in [
            ("www.a.b.test", ["a.b.test", "b.test"]), ("*.x.a.b.test", ["a.b.test", "b.test"]), ("*.a.b.test", ["b.test"]), ("a.test", []),
            ("*.a.test", []),
        ] {
            #expect(HostOwnership.domains(above: host(name)) == domains)
            #expect(HostOwnership.liesUnder(host(name), anyOf: Set(domains.map { Substring($0) })) == !domains.isEmpty)
            let others = Set(["test", name, "c.test", "www.a.b.test"].map { Substring($0) })
            #expect(!HostOwnership.liesUnder(host(name), anyOf: others))
        }
    }

    @Test("rememberedVersion moves when the held aliases do, and only then")
    func rememberedVersion() {
        var ownership = HostOwnership()
        ownership.set("a.test", Site(dir: "a.test", aliases: ["shop.test"]).names)
        _ = ownership.resolve()
        let first = ownership.rememberedVersion
        #expect(first != 0)
        // Another claim that loses, a symlink, an alias on its own name: nothing held changes.
        ownership.set("b.test", Site(dir: "b.test", links: ["www.b.test"], aliases: ["shop.test", "b.test"]).names)
        _ = ownership.resolve()
        ownership.set("a.test", Site(dir: "a.test", aliases: ["shop.test", "a.test"]).names)
        _ = ownership.resolve()
        #expect(ownership.rememberedVersion == first)
        // The holder lets go: b.test holds it now.
        ownership.set("a.test", Site(dir: "a.test").names)
        _ = ownership.resolve()
        #expect(ownership.rememberedVersion != first)
        #expect(ownership.remembered == [host("shop.test"): "b.test"])
    }

    @Test("the fuzz target's seeds pass its checks")
    func fuzzSeeds() {
        for seed in [[0, 0x80, 0, 0, 0x21, 0, 2, 1, 1, 0x20], [0, 0x20, 1, 0, 0x20, 0, 1, 1, 0, 0x20, 1]] as [[UInt8]] {
            #expect(HostOwnershipFuzz.check(seed) == nil)
        }
        // The same bytes as an aliases-allowed file: a quoted control byte is escaped.
        for text in ["a.test x\u{1B}[2J.test\n", "* -\r\n\u{7F}.test x.test", "a.test a.example\n\n*\n"] {
            #expect(HostOwnershipFuzz.checkPolicy(Array(text.utf8)) == nil, "\(text.debugDescription)")
        }
    }
}

@Suite("served-first: the record of who held each alias first")
struct ServedFirstTests {
    static func temporary() -> String { NSTemporaryDirectory() + "aasad-served-first-" + UUID().uuidString }

    @Test("what store writes, load reads back")
    func roundTrip() throws {
        let path = Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let held = [host("shop.test"): "b.test", host("*.x.test"): "A.test"]
        try ServedFirst.store(held, path: path)
        #expect(try ServedFirst.load(path: path).get() == held)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == "aasad served-first 1\n*.x.test A.test\nshop.test b.test\n")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test(
        "a damaged or hostile file is ignored whole, with why",
        arguments: [
            ("", "not a served-first file"),
            ("aasad served-first 2\nshop.test b.test\n", "not a served-first file"),
            ("aasad served-first 1\nshop.test b.test", "cut short"),
            ("aasad served-first 1\nshop.test\n", "line 2: not a host and a site"),
            ("aasad served-first 1\nshop.test b.test extra\n", "line 2: not a host and a site"),
            ("aasad served-first 1\nSHOP.test b.test\n", "line 2: not a host and a site directory name"),
            ("aasad served-first 1\nshop.test ../etc\n", "line 2: not a host and a site directory name"),
            ("aasad served-first 1\nshop.test b.test\u{1B}[31m\n", "line 2: not a host and a site directory name"),
            ("aasad served-first 1\nshop.test b.test\r\n", "line 2: not a host and a site directory name"),
            ("aasad served-first 1\n\n", "line 2: not a host and a site"),
            ("aasad served-first 1\nshop.test a.test\nshop.test b.test\n", "line 3: shop.test appears twice"),
            (
                "aasad served-first 1\nshop.test " + String(repeating: "a", count: 256) + "\n",
                "line 2: not a host and a site directory name"
            ),
        ])
    func hostile(_ text: String, _ why: String) {
        guard case .failure(let problem) = ServedFirst.parse(Array(text.utf8)) else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(problem.description.contains(why), "\(problem)")
        #expect(!problem.isMissing)
    }

    @Test("a file of exactly the limit is read; one byte more is refused unread, and not written")
    func sizeBound() throws {
        let path = Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let held = [host("shop.test"): "b.test"]
        let size = ServedFirst.render(held).count
        try ServedFirst.store(held, path: path, limit: size)
        #expect(try ServedFirst.load(path: path, limit: size).get() == held)
        guard case .failure(let problem) = ServedFirst.load(path: path, limit: size - 1) else {
            Issue.record("a file over the limit was read")
            return
        }
        #expect(problem.description.contains("larger than"))
        #expect(throws: ServedFirst.StoreError.self) { try ServedFirst.store(held, path: path, limit: size - 1) }
    }

    @Test("a missing file is a first start; a directory or a FIFO in its place is refused, never waited on")
    func notAFile() throws {
        let path = Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard case .failure(let missing) = ServedFirst.load(path: path) else {
            Issue.record("loaded nothing")
            return
        }
        #expect(missing.isMissing)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        guard case .failure(let directory) = ServedFirst.load(path: path) else {
            Issue.record("loaded a directory")
            return
        }
        #expect(!directory.isMissing)
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o600) == 0)
        guard case .failure(let fifo) = ServedFirst.load(path: path) else {
            Issue.record("loaded a FIFO")
            return
        }
        #expect(fifo.description.contains("not a regular file"))
    }
}

@Suite("Site registry: host ownership with the served-first record")
struct RegistryOwnershipTests {
    static let aasa = TempConfig.aasa

    func registry(_ c: TempConfig, state: String) -> SiteRegistry {
        SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), servedFirstFile: state)
    }

    @Test("the site that served an alias first keeps it across a restart, though the newcomer's name sorts first")
    func restart() throws {
        let c = try TempConfig()
        let state = c.root + "/served-first"
        try c.write("sites/z.test/apple-app-site-association", Self.aasa)
        try c.write("sites/z.test/site.yaml", "aliases: [shop.test]\n")
        try c.write("sites/a.test/apple-app-site-association", Self.aasa)
        var r = registry(c, state: state)
        r.reloadAll()
        #expect(r.answer(forHost: "shop.test") == .served("z.test"))
        // a.test adds the same alias: refused, and says who holds it.
        try c.write("sites/a.test/site.yaml", "aliases: [shop.test]\n")
        r.reload(["a.test"])
        #expect(r.answer(forHost: "shop.test") == .served("z.test"))
        #expect(
            r.status(of: "a.test")?.refusedHosts == [
                RefusedHost(host: "shop.test", heldBy: "sites/z.test", reason: "sites/z.test/site.yaml names it too and held it first")
            ])
        #expect(try String(contentsOfFile: state, encoding: .utf8) == "aasad served-first 1\nshop.test z.test\n")
        // A new process: the record decides, not the names' order.
        r = registry(c, state: state)
        r.reloadAll()
        #expect(r.answer(forHost: "shop.test") == .served("z.test"))
        // The reporting registry reads the record too, and says the same.
        let inspecting = SiteRegistry.inspecting(root: c.root, servedFirstFile: state)
        inspecting.reloadAll()
        let problems = inspecting.scan().sites.first { $0.directory == "sites/a.test" }?.problems ?? []
        #expect(
            problems.contains {
                $0.file == "sites/a.test/site.yaml" && $0.message.contains("sites/z.test/site.yaml names it too and held it first")
            })
        #expect(!inspecting.scan().problems.contains { $0.message.contains("cannot be read") })
        // Without the record (a corrupt file), the first start's order, said as a warning.
        try c.write("served-first", "garbage")
        let blind = SiteRegistry.inspecting(root: c.root, servedFirstFile: state)
        blind.reloadAll()
        #expect(blind.answer(forHost: "shop.test") == .served("a.test"))
        #expect(blind.scan().problems.contains { $0.severity == .warning && $0.message.contains("cannot be read") })
        // serve with a corrupt record: served, not crashed, and the record written anew.
        r = registry(c, state: state)
        r.reloadAll()
        #expect(try String(contentsOfFile: state, encoding: .utf8) == "aasad served-first 1\nshop.test a.test\n")
    }

    @Test("the record is written after a reload only when the held aliases changed; a stale one is rewritten at start")
    func writtenWhenChanged() throws {
        let c = try TempConfig()
        let state = c.root + "/served-first"
        try c.write("served-first", "aasad served-first 1\ngone.test a.test\n")
        try c.write("sites/a.test/apple-app-site-association", Self.aasa)
        let r = registry(c, state: state)
        r.reloadAll()
        #expect(try String(contentsOfFile: state, encoding: .utf8) == "aasad served-first 1\n")
        // A change that holds nothing new does not write (a removed file would stay removed).
        try FileManager.default.removeItem(atPath: state)
        try c.write("sites/a.test/site.yaml", "cache-control: max-age=5\n")
        r.reload(["a.test"])
        #expect(!FileManager.default.fileExists(atPath: state))
        try c.write("sites/a.test/site.yaml", "aliases: [shop.test]\n")
        r.reload(["a.test"])
        #expect(try String(contentsOfFile: state, encoding: .utf8) == "aasad served-first 1\nshop.test a.test\n")
    }

    @Test("a site that serves nothing holds no alias: an alias counts from when its site serves")
    func refusedSiteHoldsNoAlias() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", "{")
        try c.write("sites/a.test/site.yaml", "aliases: [shop.test]\n")
        try c.write("sites/b.test/apple-app-site-association", Self.aasa)
        try c.write("sites/b.test/site.yaml", "aliases: [shop.test]\n")
        let r = registry(c, state: c.root + "/served-first")
        r.reloadAll()
        #expect(r.answer(forHost: "shop.test") == .served("b.test"))
    }
}

@Suite("aliases-allowed: the operator's bound on what a tenant may alias")
struct AliasPolicyTests {
    static let text = """
        # the operator's
        shop.test   shop.example  *.shop.example   # exactly, or anything under it
        none.test   -
        *           *.tenants.example

        """

    @Test(
        "patterns, case by case",
        arguments: [
            ("shop.test", "shop.example", true), ("shop.test", "www.shop.example", true), ("shop.test", "*.x.shop.example", true),
            ("shop.test", "*.shop.example", true), ("shop.test", "evilshop.example", false), ("shop.test", "example", false),
            ("shop.test", "a.tenants.example", false), ("none.test", "shop.example", false), ("other.test", "a.tenants.example", true),
            ("other.test", "tenants.example", false), ("other.test", "shop.example", false),
        ])
    func allows(_ site: String, _ alias: String, _ allowed: Bool) throws {
        let policy = try AliasPolicy.parse(Self.text).get()
        #expect(policy.allows(host(alias), site: site) == allowed)
    }

    @Test("a file saved with CRLF line ends reads as with LF")
    func crlf() throws {
        let policy = try AliasPolicy.parse(Self.text.replacingOccurrences(of: "\n", with: "\r\n")).get()
        #expect(policy == (try AliasPolicy.parse(Self.text).get()))
        guard case .failure(let problem) = AliasPolicy.parse("a.test x.test\r\nb.test\r\nc.test y.test\r\n") else {
            Issue.record("accepted a line without patterns")
            return
        }
        #expect(problem.line == 2)
    }

    @Test(
        "a bad line is refused with its number, and escaped",
        arguments: [
            ("shop.test\n", "line 1: a site and its patterns"), ("shop.test a..b\n", "line 1: \"a..b\" is not a host name"),
            ("a.test x.test\na.test y.test\n", "line 2: a second line for a.test"), ("* -\n* x.test\n", "line 2: a second line for *"),
            ("bad_site x.test\n", "line 1: \"bad_site\" is not a site"), ("a.test x\u{1B}[2J.test\n", "\\x1B[2J"),
        ])
    func refused(_ text: String, _ message: String) {
        guard case .failure(let problem) = AliasPolicy.parse(text) else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(problem.description.contains(message), "\(problem)")
        #expect(!problem.description.contains("\u{1B}"))
    }

    @Test("an alias outside the bound is refused and says so; the policy's removal gives it back")
    func ownership() {
        var ownership = HostOwnership()
        ownership.setPolicy(try? AliasPolicy.parse("a.test shop.example\n").get())
        ownership.set("a.test", Site(dir: "a.test", aliases: ["shop.example", "other.example"]).names)
        _ = ownership.resolve()
        #expect(ownership.held(by: "a.test") == [host("a.test"), host("shop.example")])
        #expect(ownership.refusals(of: "a.test").map(\.description) == ["aliases-allowed does not allow it to this site"])
        #expect(ownership.refusals(of: "a.test").first?.holder == nil)
        ownership.setPolicy(nil)
        _ = ownership.resolve()
        #expect(ownership.held(by: "a.test").count == 3)
    }

    @Test("the registry reads it at a full reload; a broken one keeps the bound in force and is reported")
    func registry() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", TempConfig.aasa)
        try c.write("sites/a.test/site.yaml", "aliases: [shop.example, other.example]\n")
        try c.write("aliases-allowed", "a.test shop.example\n")
        let r = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        r.reloadAll()
        #expect(r.answer(forHost: "other.example") == .unclaimed)
        #expect(
            r.status(of: "a.test")?.refusedHosts == [
                RefusedHost(host: "other.example", heldBy: nil, reason: "aliases-allowed does not allow it to this site")
            ])
        try c.write("aliases-allowed", "a.test shop.example\na.test other.example\n")
        r.reloadAll()
        #expect(r.answer(forHost: "other.example") == .unclaimed, "a broken file dropped the bound")
        #expect(r.entryErrors.contains { $0.file == "aliases-allowed" && $0.message.contains("line 2") })
        #expect(r.lastReloadProblems > 0)
        try c.remove("aliases-allowed")
        r.reloadAll()
        #expect(r.answer(forHost: "other.example") == .served("a.test"))
        #expect(r.entryErrors.isEmpty)
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.isValid)
    }

    @Test("a broken file at start allows no alias (the bound never lapses into none); fixed, it applies")
    func brokenAtStart() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", TempConfig.aasa)
        try c.write("sites/a.test/site.yaml", "aliases: [shop.example, other.example]\n")
        try c.write("aliases-allowed", "a.test shop.example\na.test other.example\n")
        let r = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        r.reloadAll()
        #expect(r.answer(forHost: "a.test") == .served("a.test"))
        #expect(r.answer(forHost: "shop.example") == .unclaimed)
        #expect(r.answer(forHost: "other.example") == .unclaimed)
        #expect(r.entryErrors.contains { $0.message.contains("line 2") && $0.message.contains("no site.yaml alias is served") })
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites.first?.problems.contains { $0.message.contains("aliases-allowed does not allow it") } == true)
        try c.write("aliases-allowed", "a.test shop.example\n")
        r.reloadAll()
        #expect(r.answer(forHost: "shop.example") == .served("a.test"))
        // Broken again: the bound read last stays (not none, not nothing).
        try c.write("aliases-allowed", "a.test\n")
        r.reloadAll()
        #expect(r.answer(forHost: "shop.example") == .served("a.test"))
        #expect(r.answer(forHost: "other.example") == .unclaimed)
    }

    @Test("a file one byte over the limit is refused unread")
    func sizeBound() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", TempConfig.aasa)
        try c.write("aliases-allowed", "#" + String(repeating: "x", count: AliasPolicy.maximumFileSize - 2) + "\n")
        let r = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        r.reloadAll()
        #expect(r.aliasPolicyProblem == nil)
        try c.write("aliases-allowed", "#" + String(repeating: "x", count: AliasPolicy.maximumFileSize - 1) + "\n")
        r.reloadAll()
        #expect(r.aliasPolicyProblem?.message.contains("larger than") == true)
    }
}

@Suite("Host ownership: incremental decisions equal fresh ones, on shared copies")
struct OwnershipDifferentialTests {
    /// Random programs of changes (directories, symlinks, site.yaml aliases exact and wildcard,
    /// removals, contested names, folds into the shared base) run through the fuzz target's
    /// checks: after each change, each site's names held and refused equal a fresh decision's
    /// and a restart's, and a copy taken before the change answers as before it. Each program
    /// decides from scratch after every step, so a debug build runs a few a second: the suite
    /// runs `seeds`, the `ownership` fuzz campaign millions (docs/reliability.md).
    static let seeds: UInt64 = 100

    @Test("100 seeded random programs")
    func seeded() {
        for seed in UInt64(0)..<Self.seeds {
            var random = SplitMix64(seed: seed)
            let count = Int.random(in: 8...160, using: &random)
            let input = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let failure = HostOwnershipFuzz.check(input)
            #expect(failure == nil, "seed \(seed): \(failure ?? "")")
            if failure != nil { return }
        }
    }

    @Test("a change to a copy never shows in the original, before or after a fold")
    func copies() {
        var ownership = HostOwnership()
        ownership.set("a.test", HostOwnership.Names(host: host("a.test"), aliases: [host("shop.test")]))
        _ = ownership.resolve()
        for fold in [false, true] {
            if fold { ownership.foldAll() }
            var copy = ownership
            copy.set("b.test", HostOwnership.Names(host: host("b.test"), aliases: [host("*.shop.test")]))
            copy.set("shop.test", HostOwnership.Names(host: host("shop.test")))
            copy.remove("a.test")
            _ = copy.resolve()
            #expect(copy.holder(of: host("shop.test"))?.site == "shop.test")
            #expect(ownership.holder(of: host("shop.test")) == HostOwnership.Holder(site: "a.test", source: .alias))
            #expect(ownership.names(of: "b.test") == nil)
            #expect(ownership.held(by: "a.test") == [host("a.test"), host("shop.test")])
            #expect(ownership.remembered == [host("shop.test"): "a.test"])
        }
    }

    @Test("changes fold into the base past the threshold, not at it")
    func foldThreshold() {
        var map = LayeredMap<Int, Int>()
        let threshold = map.foldThreshold
        #expect(threshold == 64)
        for key in 0..<threshold { map[key] = key }
        map.foldIfLarge()
        #expect(map.pendingChanges == threshold)
        let shared = map
        map[threshold] = threshold
        map.foldIfLarge()
        #expect(map.pendingChanges == 0)
        #expect(map.dictionary.count == threshold + 1)
        // The copy taken before the fold keeps its own view.
        #expect(shared[threshold] == nil)
        #expect(shared.dictionary.count == threshold)
        // A removal of a key the base holds is a change; of one it lacks, none.
        map[0] = nil
        map[-1] = nil
        #expect(map.pendingChanges == 1)
        #expect(map[0] == nil)
        #expect(map.keys.count == threshold)
        // 10,000 folded: the threshold is the base's square root.
        var large = LayeredMap<Int, Int>()
        for key in 0..<10_000 { large[key] = key }
        large.fold()
        #expect(large.foldThreshold == 100)
    }

    /// A value that can tell whether it was changed in place: `touch` records whether its storage
    /// was shared with another copy when it was changed, and then copies it (copy on write).
    private struct Probe: Sendable {
        final class Storage: Sendable {}
        var storage = Storage()
        var sharedWhenTouched: [Bool] = []
        mutating func touch() {
            let shared = !isKnownUniquelyReferenced(&storage)
            if shared { storage = Storage() }
            sharedWhenTouched.append(shared)
        }
    }

    @Test("a value is changed in place through both subscripts, not copied out and back (a site's refusals, k of them, cost k, not k²)")
    func changedInPlace() {
        var map = LayeredMap<Int, Probe>()
        map[1] = Probe()
        map[1]?.touch()
        map[1, default: Probe()].touch()
        map[2, default: Probe()].touch()
        #expect(map[1]?.sharedWhenTouched == [false, false])
        #expect(map[2]?.sharedWhenTouched == [false])
        // A value from the base is shared with it (a copy may hold the base): copied on the first
        // change after a fold, in place from then on.
        map.fold()
        map[1]?.touch()
        map[1]?.touch()
        #expect(map[1]?.sharedWhenTouched == [false, false, true, false])
        #expect(map.pendingChanges == 1)
        // Removing through the subscript in place leaves no value, and a key the base lacks no mark.
        map[3, default: Probe()].touch()
        map[3] = nil
        #expect(map[3] == nil)
        #expect(map.pendingChanges == 1)
    }
}
