import ACME
import Check
import Foundation
import HashTreeCollections
import TestSupport
import Testing

@testable import Daemon
@testable import SiteStore

/// The status page's index (Sources/Daemon/StatusIndex.swift): the sorted names it keeps across
/// views, the problem list's order, and what a page costs at 1,000,000 sites.
@Suite("Status page index: sorted names kept across reloads, problems worst first")
struct StatusIndexTests {
    static func entry(_ hosts: [String], state: SiteState = .serving, refused: Int = 0, own: Bool? = false) -> AdminView.Entry {
        let status = SiteStatus(
            directory: hosts[0], hosts: hosts, refusedHosts: [], state: state, etag: "\"e\"", loadedAt: 1_700_000_000,
            errors: state == .serving ? [] : ["sites/\(hosts[0])/apple-app-site-association: bad"])
        return AdminView.Entry(
            open: AdminView.open(status), ownCertificate: own, hosts: hosts, fallbackCounts: nil, state: state, refusedHosts: refused)
    }

    static func view(_ generation: UInt64, _ entries: TreeDictionary<String, AdminView.Entry>) -> AdminView {
        AdminView(
            generation: generation, entries: entries, sharedCertificate: .development, stateCounts: [:], conflictingHosts: 0,
            reloads: LockedRegistry.ReloadRecord())
    }

    static func index(
        _ view: AdminView, previous: StatusIndex? = nil, acme: [String: CertificateStatus]? = nil,
        cdn: [String: CDNWatchSchedule.HostState]? = nil, verification: [String: Bool]? = nil, now: Int64 = 1_700_000_000
    ) -> StatusIndex {
        StatusIndex(
            key: .init(generation: view.generation, fetches: 0), view: view, previous: previous, acme: acme, cdn: cdn,
            verification: verification, fetches: [:], now: now)
    }

    @Test("the names kept sorted through views that add and remove a few, and after one that replaces most")
    func sortedAcrossViews() {
        var random = SplitMix64(seed: 7)
        var entries: TreeDictionary<String, AdminView.Entry> = [:]
        for k in 0..<5000 { entries["s\(k).test"] = Self.entry(["s\(k).test"]) }
        var index = Self.index(Self.view(0, entries))
        #expect(index.sorted == entries.keys.sorted())
        for generation in 1..<40 {
            // A few changes a reload, some of them many (a full rescan).
            let changes = generation % 10 == 0 ? 3000 : Int(random.next() % 20)
            for _ in 0..<changes {
                let name = "s\(random.next() % 8000).test"
                entries[name] = entries[name] == nil ? Self.entry([name]) : nil
            }
            index = Self.index(Self.view(UInt64(generation), entries), previous: index)
            #expect(index.sorted == entries.keys.sorted(), "generation \(generation)")
        }
    }

    @Test("problems in the page's order: not served, refused file, certificate failing, expiring, CDN, names refused, unverified")
    func problemOrder() {
        let now: Int64 = 1_700_000_000
        let entries: TreeDictionary<String, AdminView.Entry> = [
            "ok.test": Self.entry(["ok.test"]),
            "z-refused.test": Self.entry(["z-refused.test"], state: .refused, own: nil),
            "last.test": Self.entry(["last.test"], state: .servingLastGood),
            "cert.test": Self.entry(["cert.test"]),
            "expiring.test": Self.entry(["expiring.test"]),
            "expiring-later.test": Self.entry(["expiring-later.test"]),
            "cdn.test": Self.entry(["cdn.test"]),
            "stale.test": Self.entry(["stale.test"]),
            "names.test": Self.entry(["names.test"], refused: 1),
            "check.test": Self.entry(["check.test", "www.check.test"]),
        ]
        let acme: [String: CertificateStatus] = [
            "ok.test": .init(name: "ok.test", state: .valid, notAfter: now + 60 * 86_400),
            "cert.test": .init(name: "cert.test", state: .failed, error: "rate limited"),
            // At the bound: 14 days left is not yet a problem; a second less is.
            "expiring-later.test": .init(name: "expiring-later.test", state: .valid, notAfter: now + StatusIndex.expiringWithin),
            "expiring.test": .init(name: "expiring.test", state: .valid, notAfter: now + StatusIndex.expiringWithin - 1),
        ]
        func cdn(_ site: String, _ state: CDNState) -> CDNWatchSchedule.HostState {
            .init(host: site, site: site, state: state, checkedAt: now, since: now - 100, status: 404, failureReason: nil, error: nil)
        }
        let index = Self.index(
            Self.view(1, entries), acme: acme,
            cdn: ["cdn.test": cdn("cdn.test", .missing), "stale.test": cdn("stale.test", .stale), "ok.test": cdn("ok.test", .current)],
            verification: ["www.check.test": false, "check.test": true], now: now)
        #expect(
            index.problems.map(\.directory) == [
                "z-refused.test", "last.test", "cert.test", "expiring.test", "cdn.test", "stale.test", "names.test", "check.test",
            ])
        #expect(index.counts[.unverified] == 1 && index.counts[.refused] == 1)
        // The cursor of the next page: after a problem, the ones that follow it.
        #expect(index.problemIndex(after: (.certificateFailed, "cert.test")) == 3)
        #expect(index.problemIndex(after: (.refused, "")) == 0)
    }

    @Test("a search looks at searchBudget names a request: a match at N is found on the first page, one at N+1 after `Search on`")
    func searchBudget() throws {
        let budget = StatusPages.searchBudget
        var entries: TreeDictionary<String, AdminView.Entry> = [:]
        let one = Self.entry(["x.test"])
        // Names sort by their zero-padded number; the only matches are the ones named "needle".
        for k in 0..<(budget + 1) {
            let name = "s\(String(repeating: "0", count: 7 - String(k).count))\(k).test"
            entries[name] = one
        }
        func page(_ target: String, _ entries: TreeDictionary<String, AdminView.Entry>) -> String {
            var html = StatusHTML(now: 1_700_000_000)
            html.overview(index: Self.index(Self.view(0, entries)), query: Query(target)!)
            return String(decoding: html.finish(), as: UTF8.self)
        }
        // The match is the budget's last name: found.
        var atBudget = entries
        atBudget["s\(String(repeating: "0", count: 7 - String(budget - 1).count))\(budget - 1).test"] = Self.entry(["needle.test"])
        #expect(page("/?q=needle", atBudget).contains("href=\"/?site=s0099999.test\""))
        // One past it: the first page says where it stopped and links on; the next finds it.
        var past = entries
        past["s\(String(repeating: "0", count: 7 - String(budget).count))\(budget).test"] = Self.entry(["needle.test"])
        let first = page("/?q=needle", past)
        #expect(!first.contains("href=\"/?site=s0100000.test\""))
        #expect(first.contains("Searched up to s0099999.test") && first.contains(">Search on</a>"))
        #expect(page("/?after=s0099999.test&q=needle", past).contains("href=\"/?site=s0100000.test\""))
    }

    /// Sites in the scale test: 100,000 keeps it near 5 s in a debug build; with 1,000,000 (the
    /// figures in docs/reliability.md) it takes a minute.
    static let scale = 100_000

    @Test("at scale a one-site reload keeps the sorted names without a sort, and a page renders in milliseconds")
    func manySites() {
        var entries: TreeDictionary<String, AdminView.Entry> = [:]
        let one = Self.entry(["x.test"])
        for k in 0..<Self.scale { entries["site\(k).example"] = one }
        let first = Self.index(Self.view(0, entries))
        entries["new.example"] = Self.entry(["new.example"], state: .refused)
        let start = StatusIndex.monotonic()
        let second = Self.index(Self.view(1, entries), previous: first)
        let rebuild = StatusIndex.monotonic() - start
        #expect(
            second.sorted.count == Self.scale + 1 && second.sorted[StatusIndex.lowerBound(second.sorted, "new.example")] == "new.example")
        #expect(second.problems.map(\.directory) == ["new.example"])
        var page = StatusHTML(now: 1_700_000_000)
        let renderStart = StatusIndex.monotonic()
        page.overview(index: second, query: Query("/?after=site5&q=99")!)
        let body = page.finish()
        let render = StatusIndex.monotonic() - renderStart
        print(
            "status index at \(Self.scale) sites: one-site rebuild \(Int(rebuild * 1000)) ms, page \(Int(render * 1000)) ms, \(body.count) bytes"
        )
        #expect(body.count < StatusPages.maximumBodyBytes)
        #expect(render < 2, "a page looks at searchBudget names at most")
    }
}
