import ACME
import Check
import Foundation
import HashTreeCollections
import Served
import Synchronization
import TestSupport
import Testing

@testable import Daemon
@testable import SiteStore

/// The status page's index (Sources/Daemon/StatusIndex.swift): the sorted names it keeps across
/// views, the problem list's order, the search's budget, and what a page and a rebuild cost at
/// scale.
@Suite("Status page index: sorted names kept across reloads, problems worst first")
struct StatusIndexTests {
    static func entry(_ hosts: [String], state: SiteState = .serving, refused: Int = 0, own: Bool? = false) -> AdminView.Entry {
        let status = SiteStatus(
            directory: hosts[0], hosts: hosts,
            refusedHosts: (0..<refused).map { RefusedHost(host: "r\($0)." + hosts[0], heldBy: nil, reason: "refused") }, state: state,
            etag: "\"e\"", loadedAt: 1_700_000_000,
            errors: state == .serving ? [] : ["sites/\(hosts[0])/apple-app-site-association: bad"])
        // Served without a pair of its own (`own` false), or not served (nil).
        let served = own.map { _ in
            ServedSite(
                directory: hosts[0], hosts: hosts.map { try! HostName(parsing: $0) }, aasa: nil, assetLinks: nil, certificate: nil,
                loadedAt: 1_700_000_000)
        }
        return AdminView.Entry(directory: hosts[0], served: served, unusual: status)
    }

    static func view(_ generation: UInt64, _ entries: TreeDictionary<String, AdminView.Entry>, journal: NameJournal? = nil) -> AdminView {
        var served: TreeDictionary<String, ServedSite> = [:]
        var unusual: TreeDictionary<String, AdminView.Unusual> = [:]
        for (name, entry) in entries {
            served[name] = entry.served
            unusual[name] = entry.unusual.map { .status($0) }
        }
        return AdminView(
            generation: generation, served: served, unusual: unusual, count: entries.count, sharedCertificate: .development,
            stateCounts: [:], conflictingHosts: 0, reloads: LockedRegistry.ReloadRecord(), journal: journal)
    }

    /// Look-ups into dictionaries the test keeps, as the sources' own storage.
    static func lookups(
        acme: [String: CertificateStatus]? = nil, cdn: [String: CDNWatchSchedule.HostState]? = nil, verification: [String: Bool]? = nil
    ) -> StatusLookups {
        var lookups = StatusLookups()
        if let acme { lookups.acme = { name in acme[name] } }
        if let cdn { lookups.cdn = { site, _ in cdn[site] } }
        if let verification { lookups.verification = { name in verification[name] } }
        return lookups
    }

    static func index(
        _ view: AdminView, previous: StatusIndex? = nil, lookups: StatusLookups = StatusLookups(), now: Int64 = 1_700_000_000
    ) -> StatusIndex {
        StatusIndex(key: .init(generation: view.generation), view: view, previous: previous, lookups: lookups, now: now)
    }

    static func page(_ target: String, _ index: StatusIndex?, view: AdminView, lookups: StatusLookups = StatusLookups()) -> String {
        var html = StatusHTML(now: 1_700_000_000, view: view, lookups: lookups)
        html.overview(index: index, current: true, query: Query(target)!)
        return String(decoding: html.finish(), as: UTF8.self)
    }

    @Test("the names kept sorted through views that add and remove a few, and after one that replaces most")
    func sortedAcrossViews() {
        var random = SplitMix64(seed: 7)
        var entries: TreeDictionary<String, AdminView.Entry> = [:]
        for k in 0..<5000 { entries["s\(k).test"] = Self.entry(["s\(k).test"]) }
        var view = Self.view(0, entries)
        var index = Self.index(view)
        #expect(index.sorted == entries.keys.sorted())
        for generation in 1..<40 {
            // A few changes a reload, some of them many (a full rescan); some names touched
            // twice, some changed in place; indexes skip some views.
            let changes = generation % 10 == 0 ? 3000 : Int(random.next() % 20)
            var touched: [String] = []
            for _ in 0..<changes {
                let name = "s\(random.next() % 8000).test"
                touched.append(name)
                if random.next() % 4 == 0 {
                    entries[name] = Self.entry([name, "www." + name])
                } else {
                    entries[name] = entries[name] == nil ? Self.entry([name]) : nil
                }
            }
            view = Self.view(UInt64(generation), entries, journal: view.journal.appending(generation: UInt64(generation), names: touched))
            guard generation % 3 != 0 else { continue }
            index = Self.index(view, previous: index)
            #expect(index.sorted == entries.keys.sorted(), "generation \(generation)")
        }
    }

    @Test("the journal keeps maximumNames names: an index that many behind merges, one more behind sorts again (and is right)")
    func journalBound() {
        let bound = NameJournal.maximumNames
        var entries: TreeDictionary<String, AdminView.Entry> = [:]
        for k in 0..<10 { entries["base\(k).test"] = Self.entry(["base\(k).test"]) }
        let first = Self.view(0, entries)
        let index = Self.index(first)
        // One reload of exactly the bound: reachable. One more name in a second reload: the first
        // reload's names are dropped and the journal no longer reaches generation 0.
        var names = (0..<bound).map { "added\($0).test" }
        let full = first.journal.appending(generation: 1, names: names)
        #expect(full.names(after: 0)?.count == bound)
        let over = full.appending(generation: 2, names: ["one-more.test"])
        #expect(over.names(after: 0) == nil && over.names(after: 1) == ["one-more.test"])
        #expect(first.journal.appending(generation: 1, names: names + ["x.test"]).names(after: 0) == nil)
        // Either way the sorted names are right.
        for name in names.prefix(100) { entries[name] = Self.entry([name]) }
        names.removeAll()
        #expect(Self.index(Self.view(1, entries, journal: full), previous: index).sorted == entries.keys.sorted())
        entries["one-more.test"] = Self.entry(["one-more.test"])
        #expect(Self.index(Self.view(2, entries, journal: over), previous: index).sorted == entries.keys.sorted())
        // Reloads kept: at most maximumSegments.
        var journal = NameJournal(from: 0)
        for generation in 1...UInt64(NameJournal.maximumSegments) { journal = journal.appending(generation: generation, names: ["a"]) }
        #expect(journal.names(after: 0)?.count == NameJournal.maximumSegments)
        journal = journal.appending(generation: UInt64(NameJournal.maximumSegments) + 1, names: ["a"])
        #expect(journal.names(after: 0) == nil && journal.names(after: 1)?.count == NameJournal.maximumSegments)
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
            Self.view(1, entries),
            lookups: Self.lookups(
                acme: acme,
                cdn: ["cdn.test": cdn("cdn.test", .missing), "stale.test": cdn("stale.test", .stale), "ok.test": cdn("ok.test", .current)],
                verification: ["www.check.test": false, "check.test": true]), now: now)
        #expect(
            index.problems.map(\.directory) == [
                "z-refused.test", "last.test", "cert.test", "expiring.test", "cdn.test", "stale.test", "names.test", "check.test",
            ])
        #expect(index.counts[StatusIndex.Kind.unverified.rawValue] == 1 && index.counts[StatusIndex.Kind.refused.rawValue] == 1)
        // The cursor of the next page: after a problem, the ones that follow it.
        #expect(index.problemIndex(after: (.certificateFailed, "cert.test")) == 3)
        #expect(index.problemIndex(after: (.refused, "")) == 0)
    }

    @Test(
        "a rebuild after a reload looks again at the touched sites only, unless a state moved or fullWalkEvery passed, and agrees with a full one"
    )
    func touchedOnly() {
        let now: Int64 = 1_700_000_000
        var entries: TreeDictionary<String, AdminView.Entry> = [
            "ok.test": Self.entry(["ok.test"]), "bad.test": Self.entry(["bad.test"], state: .refused, own: nil),
            "later.test": Self.entry(["later.test"]),
        ]
        // later.test's certificate enters the 14-day window one second after the first build.
        let acme: [String: CertificateStatus] = [
            "later.test": .init(name: "later.test", state: .valid, notAfter: now + StatusIndex.expiringWithin + 1)
        ]
        let lookups = Self.lookups(acme: acme)
        let view0 = Self.view(0, entries)
        let first = StatusIndex(key: .init(generation: 0), view: view0, previous: nil, lookups: lookups, now: now)
        #expect(first.problems.map(\.directory) == ["bad.test"])
        // A reload fixes bad.test and breaks ok.test.
        entries["bad.test"] = Self.entry(["bad.test"])
        entries["ok.test"] = Self.entry(["ok.test"], state: .servingLastGood)
        let view1 = Self.view(1, entries, journal: view0.journal.appending(generation: 1, names: ["bad.test", "ok.test"]))
        let second = StatusIndex(key: .init(generation: 1), view: view1, previous: first, lookups: lookups, now: now + 10)
        #expect(second.problems.map(\.directory) == ["ok.test"])
        #expect(second.walkedAt == now, "only the touched sites were looked at")
        // Time alone: later.test is found by the walk that fullWalkEvery brings, not before.
        let view2 = Self.view(2, entries, journal: view1.journal.appending(generation: 2, names: ["ok.test"]))
        let within = StatusIndex(
            key: .init(generation: 2), view: view2, previous: second, lookups: lookups, now: now + StatusIndex.fullWalkEvery - 1)
        #expect(within.problems.map(\.directory) == ["ok.test"])
        let past = StatusIndex(
            key: .init(generation: 2), view: view2, previous: second, lookups: lookups, now: now + StatusIndex.fullWalkEvery)
        #expect(past.problems.map(\.directory) == ["ok.test", "later.test"] && past.walkedAt == now + StatusIndex.fullWalkEvery)
        // A certificate state that moved makes a full walk at once: later.test's order failed.
        let failed = Self.lookups(acme: ["later.test": .init(name: "later.test", state: .failed, error: "rate limited")])
        let moved = StatusIndex(
            key: .init(generation: 2, acme: .init(object: ObjectIdentifier(StatusIndex.self), version: 1)), view: view2,
            previous: second, lookups: failed, now: now + 20)
        #expect(moved.problems.map(\.directory) == ["ok.test", "later.test"] && moved.walkedAt == now + 20)
        #expect(moved.counts[StatusIndex.Kind.certificateFailed.rawValue] == 1)
    }

    /// `count` sites named so they sort by number, each with `hosts` hosts; the site at `match`
    /// has a host containing "needle".
    static func name(_ k: Int) -> String { "s\(String(repeating: "0", count: 7 - String(k).count))\(k).test" }

    static func searchSites(_ count: Int, hosts: Int, match: Int) -> TreeDictionary<String, AdminView.Entry> {
        var entries: TreeDictionary<String, AdminView.Entry> = [:]
        let plain = Self.entry((0..<hosts).map { "h\($0).x.test" })
        for k in 0..<count { entries[name(k)] = plain }
        entries[name(match)] = Self.entry((0..<hosts).map { $0 == hosts - 1 ? "needle.test" : "h\($0).x.test" })
        return entries
    }

    @Test("a search compares searchBudget names a request, directories and hosts: a match at N is found, at N+1 after `Search on`")
    func searchBudget() throws {
        let budget = StatusPages.searchBudget
        // Three hosts a site: a site costs 4 names (its directory and its hosts). The budget is
        // a multiple of 4, so the site that ends at the budget is the budget/4-th.
        #expect(budget % 4 == 0)
        let sites = budget / 4
        let atBudget = Self.view(0, Self.searchSites(sites + 1, hosts: 3, match: sites - 1))
        let found = Self.page("/?q=needle", Self.index(atBudget), view: atBudget)
        #expect(found.contains("href=\"/?site=\(Self.name(sites - 1))\""), "the match at the budget's last name")
        // One name more before it (a site with four hosts): the match's last host is the
        // budget's N+1st name, so the first page stops before its site and links on.
        var entries = Self.searchSites(sites + 1, hosts: 3, match: sites - 1)
        entries[Self.name(0)] = Self.entry((0..<4).map { "h\($0).x.test" })
        let past = Self.view(0, entries)
        let index = Self.index(past)
        let first = Self.page("/?q=needle", index, view: past)
        let previous = Self.name(sites - 2)
        #expect(!first.contains("href=\"/?site=\(Self.name(sites - 1))\""))
        #expect(first.contains("Searched up to \(previous).") && first.contains(">Search on</a>"), "\(first.suffix(400))")
        #expect(Self.page("/?after=\(previous)&q=needle", index, view: past).contains("href=\"/?site=\(Self.name(sites - 1))\""))
        // A site with more names than the budget is still searched when it comes first.
        var huge: TreeDictionary<String, AdminView.Entry> = [:]
        huge["a.test"] = Self.entry(["a.test"])
        huge["big.test"] = Self.entry(["big.test"] + (0..<budget).map { "h\($0).big.test" } + ["needle.big.test"])
        let hugeView = Self.view(0, huge)
        let hugeIndex = Self.index(hugeView)
        let stopped = Self.page("/?q=needle", hugeIndex, view: hugeView)
        #expect(stopped.contains("Searched up to a.test."))
        #expect(Self.page("/?after=a.test&q=needle", hugeIndex, view: hugeView).contains("href=\"/?site=big.test\""))
    }

    @Test("the search field's value is the query as typed, escaped once for the attribute")
    func searchFieldValue() throws {
        let view = Self.view(0, ["a.test": Self.entry(["a.test"])])
        let index = Self.index(view)
        func value(_ query: String) -> String {
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let html = Self.page("/?q=" + encoded, index, view: view)
            let marker = #"name="q" placeholder="host contains" value=""#
            guard let start = html.range(of: marker) else { return "no field" }
            return String(html[start.upperBound...].prefix { $0 != "\"" })
        }
        #expect(value("<script>") == "&lt;script&gt;")
        #expect(value("&amp;") == "&amp;amp;")
        #expect(value(#"a"b'c"#) == "a&quot;b&#39;c")
        #expect(value("shop.example") == "shop.example")
        // Not the visible escapes text content gets: the field holds what was typed.
        #expect(value("a\u{202E}b") == "a\u{202E}b")
        #expect(value("tab\there") == "tab\there")
    }

    /// Sites in the scale tests: 100,000 keeps them to seconds in a debug build; set
    /// AASAD_STATUS_SCALE=1000000 for the figures at 1,000,000 (docs/benchmarks.md).
    static let scale = ProcessInfo.processInfo.environment["AASAD_STATUS_SCALE"].flatMap { Int($0) } ?? 100_000

    /// A view of `count` sites, one host each, and ACME, CDN and ownership states for every name
    /// in the tables a real source would hold.
    static func scaleSources(_ count: Int) -> (view: AdminView, lookups: StatusLookups, tables: Tables) {
        var entries: TreeDictionary<String, AdminView.Entry> = [:]
        var acme: [String: CertificateStatus] = [:]
        var cdn: [String: CDNWatchSchedule.HostState] = [:]
        var verification: [String: Bool] = [:]
        acme.reserveCapacity(count)
        cdn.reserveCapacity(count)
        verification.reserveCapacity(count)
        for k in 0..<count {
            let name = "site\(k).example"
            entries[name] = Self.entry([name])
            acme[name] = CertificateStatus(
                name: name, state: .valid, notAfter: 1_700_000_000 + 60 * 86_400, renewAt: 1_700_000_000 + 30 * 86_400)
            cdn[name] = .init(
                host: name, site: name, state: .current, checkedAt: 1_700_000_000, since: 1_699_000_000, status: 200, failureReason: nil,
                error: nil)
            verification[name] = true
        }
        let tables = Tables(acme: acme, cdn: cdn, verification: verification)
        return (Self.view(0, entries), Self.lookups(acme: acme, cdn: cdn, verification: verification), tables)
    }

    struct Tables: Sendable {
        var acme: [String: CertificateStatus]
        var cdn: [String: CDNWatchSchedule.HostState]
        var verification: [String: Bool]
    }

    @Test(
        "at scale a one-site reload keeps the sorted names without a sort, a page renders in milliseconds, and the index holds no copy of the sources"
    )
    func manySites() {
        let (view, lookups, tables) = Self.scaleSources(Self.scale)
        // Without the sources, as the figures before the index looked names up were taken.
        let bare = Self.index(view)
        // Heap figures are exact when this test runs alone, and printed, not asserted:
        // `mallinfo2` counts every thread's heap, and the suites that run beside this one in the
        // same process allocate and free meanwhile, tens of megabytes at once (the queue suite's
        // own 100,000-site view), more than the 1.6 MB this index holds and as much as the copies
        // it used to hold (65.9 MB): a bound that survived them could not tell the two apart.
        let before = Heap.inUse()
        let first = Self.index(view, lookups: lookups)
        let retained = Heap.since(before)
        var entries = view.entries
        entries["new.example"] = Self.entry(["new.example"], state: .refused)
        let second = Self.index(
            Self.view(1, entries, journal: view.journal.appending(generation: 1, names: ["new.example"])), previous: first, lookups: lookups
        )
        #expect(
            second.sorted.count == Self.scale + 1 && second.sorted[StatusIndex.lowerBound(second.sorted, "new.example")] == "new.example")
        #expect(second.problems.map(\.directory) == ["new.example"])
        let secondView = Self.view(1, entries, journal: view.journal.appending(generation: 1, names: ["new.example"]))
        let bareSecond = Self.index(secondView, previous: bare)
        // A certificate state moved: every site walked again, the names kept.
        let walked = StatusIndex(
            key: .init(generation: 1, acme: .init(object: ObjectIdentifier(StatusIndex.self), version: 1)), view: secondView,
            previous: second, lookups: lookups, now: 1_700_000_000)
        // A reload that only changed a site shares the sorted names as they are.
        entries["site5.example"] = Self.entry(["site5.example", "www.site5.example"])
        let third = Self.index(
            Self.view(
                2, entries,
                journal: view.journal.appending(generation: 1, names: ["new.example"]).appending(generation: 2, names: ["site5.example"])),
            previous: second, lookups: lookups)
        #expect(third.sorted.withUnsafeBufferPointer { $0.baseAddress } == second.sorted.withUnsafeBufferPointer { $0.baseAddress })
        var page = StatusHTML(now: 1_700_000_000, view: Self.view(2, entries), lookups: lookups)
        let renderStart = StatusIndex.monotonic()
        page.overview(index: third, current: true, query: Query("/?after=site5&q=99")!)
        let body = page.finish()
        let render = StatusIndex.monotonic() - renderStart
        // What the index used to keep: a copy of every name's ACME state (the manager's
        // `statusesByName`), of the CDN watch's sites (`bySite`) and of the ownership checks
        // (`verifiedByName`), made per rebuild.
        let copiesBefore = Heap.inUse()
        let copies = (tables.acme.mapValues { $0 }, tables.cdn.mapValues { $0 }, tables.verification.mapValues { $0 })
        let copied = Heap.since(copiesBefore)
        print(
            "status index at \(Self.scale) sites: first build \(Int(first.cost * 1000)) ms (\(Int(bare.cost * 1000)) ms without sources), "
                + "one-site rebuild \(Int(second.cost * 1000)) ms (\(Int(bareSecond.cost * 1000)) ms without sources), "
                + "after a certificate state moved \(Int(walked.cost * 1000)) ms, "
                + "index holds \(retained / 1024) KB, the copies it used to hold \(copied / 1024) KB, page \(Int(render * 1000)) ms, \(body.count) bytes"
        )
        withExtendedLifetime(copies) {}
        #expect(body.count < StatusPages.maximumBodyBytes)
        #expect(render < 2, "a page compares searchBudget names at most")
    }

    @Test("an index keeps no view: the ServedSite a reload replaced is freed while the index built before the reload lives on")
    func pinsNoServedSite() throws {
        let file = try PreparedFile(body: Array(#"{"applinks":{"details":[]}}"#.utf8), modified: 0, options: ServingOptions())
        weak var old: ServedSite?
        var index: StatusIndex?
        do {
            let site = ServedSite(
                directory: "a.test", hosts: [try HostName(parsing: "a.test")], aasa: file, assetLinks: nil, certificate: nil, loadedAt: 0)
            old = site
            var entry = Self.entry(["a.test"])
            entry.served = site
            index = Self.index(Self.view(0, ["a.test": entry]))
        }
        #expect(index?.sorted == ["a.test"])
        #expect(old == nil, "the index keeps the site's served version alive")
        // The same through the queue: nothing of a source is kept once its index is published.
        let pages = StatusPages()
        do {
            let site = ServedSite(
                directory: "b.test", hosts: [try HostName(parsing: "b.test")], aasa: file, assetLinks: nil, certificate: nil, loadedAt: 0)
            old = site
            var entry = Self.entry(["b.test"])
            entry.served = site
            let view = Self.view(0, ["b.test": entry])
            pages.request(StatusSource(key: .init(generation: 0), view: view, lookups: StatusLookups()))
            _ = pages.waitForIndex({ _ in true }, timeout: 60)
        }
        #expect(pages.index?.sorted == ["b.test"])
        // The queue lets go of its work item just after it publishes.
        #expect(eventually { old == nil }, "the queue keeps the source's view alive")
        #expect(eventually { !pages.isBuilding })
    }
}

/// glibc's count of heap bytes in use (`mallinfo2()`): what a structure built between
/// two reads holds, on a thread that allocates nothing else meanwhile. Swift's Glibc module has no
/// malloc.h, so the function is found by name; it returns its ten `size_t` fields through a
/// pointer its caller passes as a hidden first argument (the x86-64 System V rule for a struct
/// that large), which the call below passes. Elsewhere (AArch64 passes that pointer in x8, which
/// a Swift call cannot set) the figure is 0: printed, never asserted.
enum Heap {
    private typealias Call = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer?
    private static let call: Call? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallinfo2").map {
        unsafeBitCast($0, to: Call.self)
    }

    static func inUse() -> Int {
        #if !arch(x86_64)
            return 0
        #endif
        guard let call else { return 0 }
        var fields = [Int](repeating: 0, count: 10)
        fields.withUnsafeMutableBytes { _ = call($0.baseAddress!) }
        // uordblks (bytes in use from the heap) and hblkhd (blocks of 128 KB and more, mapped
        // on their own: a large array's storage).
        return fields[7] + fields[4]
    }

    static func since(_ before: Int) -> Int { inUse() - before }
}

/// The status page's queue (StatusPage.swift): builds off the calling thread, one waiting at
/// most, and a page that shows a whole index or the previous one.
@Suite("Status page index: built on its own queue, coalesced, published whole", .serialized)
struct StatusIndexQueueTests {
    /// A source for `view` with a key of its own.
    static func source(_ view: AdminView, lookups: StatusLookups = StatusLookups()) -> StatusSource {
        StatusSource(key: .init(generation: view.generation), view: view, lookups: lookups)
    }

    @Test("a page answers at once with the previous index while a rebuild of 100,000 sites runs, and never shows it half-built")
    func answersWhileBuilding() throws {
        let (view, lookups, _) = StatusIndexTests.scaleSources(StatusIndexTests.scale)
        let pages = StatusPages()
        let small = StatusIndexTests.view(0, ["only.test": StatusIndexTests.entry(["only.test"])])
        // The first index, of one site.
        _ = pages.answer(target: "/", source: Self.source(small))
        // The first request waits for the first index a little; a loaded machine may take longer.
        #expect(pages.waitForIndex({ _ in true }, timeout: 60) != nil)
        let page0 = pages.answer(target: "/", source: Self.source(small))
        #expect(String(decoding: page0.body, as: UTF8.self).contains("All sites (1)"))
        let gate = Gate()
        pages.beforePublish.withLock { $0 = { gate.hold() } }
        // A reload to 100,000 sites: the page asks for a rebuild and answers with the old index.
        let big = StatusIndexTests.view(1, view.entries, journal: small.journal.appending(generation: 1, names: Array(view.entries.keys)))
        let source = Self.source(big, lookups: lookups)
        let start = StatusIndex.monotonic()
        let stale = String(decoding: pages.answer(target: "/", source: source).body, as: UTF8.self)
        let took = StatusIndex.monotonic() - start
        #expect(stale.contains("All sites (1)") && stale.contains("a newer index is being built"), "\(stale.prefix(600))")
        #expect(pages.isBuilding)
        // Built but held before publishing: still the old index, whole, on every page.
        #expect(gate.waitHeld())
        for _ in 0..<3 {
            let held = String(decoding: pages.answer(target: "/?q=site", source: source).body, as: UTF8.self)
            #expect(held.contains("All sites (1)") && held.contains("a newer index is being built"))
        }
        #expect(pages.answer(target: "/?site=site7.example", source: source).status == .ok, "a site's page needs no index")
        pages.beforePublish.withLock { $0 = nil }
        gate.release()
        let published = pages.waitForIndex({ $0.generation == 1 }, timeout: 120)
        let fresh = try #require(published)
        #expect(fresh.sorted.count == StatusIndexTests.scale)
        let after = String(decoding: pages.answer(target: "/", source: source).body, as: UTF8.self)
        #expect(after.contains("All sites (\(StatusIndexTests.scale))") && !after.contains("a newer index is being built"))
        print(
            "status page answered in \(Int(took * 1000)) ms while a \(Int(fresh.cost * 1000)) ms rebuild of \(StatusIndexTests.scale) sites ran"
        )
    }

    @Test("while the queue waits out the cost share one source waits: a newer one frees the older's view at once, and is built")
    func oneSourceWaits() throws {
        let pages = StatusPages()
        let first = StatusIndexTests.view(0, ["a.test": StatusIndexTests.entry(["a.test"])])
        pages.request(Self.source(first))
        #expect(eventually { pages.builds == 1 && !pages.isBuilding })
        // The next build waits 4 s, as after one that took 0.4 s: long enough for the steps
        // below to run within it on a loaded machine.
        pages.spaceNextBuild(4)
        weak var older: AdminView?
        do {
            let view = StatusIndexTests.view(1, ["b.test": StatusIndexTests.entry(["b.test"])])
            older = view
            pages.request(Self.source(view))
        }
        #expect(eventually { pages.waitsForCostShare })
        #expect(older != nil, "the source waiting to be built was dropped")
        let newest = StatusIndexTests.view(2, ["c.test": StatusIndexTests.entry(["c.test"])])
        pages.request(Self.source(newest))
        #expect(older == nil, "the queue holds an older view beside the newest while it waits")
        #expect(pages.waitsForCostShare, "the wait ended before the views were looked at: the check above proves nothing")
        let published = pages.waitForIndex({ $0.generation == 2 }, timeout: 60)
        #expect(published?.sorted == ["c.test"])
        // Generation 1 was never built: the one that waited was replaced.
        #expect(pages.builds == 2)
        #expect(eventually { !pages.isBuilding && !pages.waitsForCostShare })
    }

    @Test("a burst of reloads and requests during a build gives one more build, of the newest source")
    func coalesced() throws {
        let pages = StatusPages()
        var entries: TreeDictionary<String, AdminView.Entry> = ["a.test": StatusIndexTests.entry(["a.test"])]
        var view = StatusIndexTests.view(0, entries)
        _ = pages.answer(target: "/", source: Self.source(view))
        // The first request waits for the first index a little; a loaded machine may take longer.
        #expect(eventually { pages.builds == 1 && !pages.isBuilding })
        let gate = Gate()
        pages.beforePublish.withLock { $0 = { gate.hold() } }
        view = StatusIndexTests.view(1, entries, journal: view.journal)
        pages.request(Self.source(view))
        #expect(gate.waitHeld())
        // 50 reloads, each seen by a page request, while the build of generation 1 is held.
        for generation in 2...51 {
            entries["s\(generation).test"] = StatusIndexTests.entry(["s\(generation).test"])
            view = StatusIndexTests.view(
                UInt64(generation), entries, journal: view.journal.appending(generation: UInt64(generation), names: ["s\(generation).test"])
            )
            _ = pages.answer(target: "/", source: Self.source(view))
        }
        pages.beforePublish.withLock { $0 = nil }
        gate.release()
        let published = pages.waitForIndex({ $0.generation == 51 }, timeout: 60)
        let last = try #require(published)
        #expect(last.sorted == entries.keys.sorted())
        // The held build, then one of the newest: two, not fifty.
        #expect(pages.builds == 3)
        // The queue clears its state just after it publishes.
        #expect(eventually { !pages.isBuilding })
        // The same source again builds nothing.
        _ = pages.answer(target: "/", source: Self.source(view))
        #expect(pages.builds == 3 && !pages.isBuilding)
    }
}

extension AdminView {
    /// Every site as one map, for a test that builds a view from another.
    var entries: TreeDictionary<String, Entry> {
        var entries: TreeDictionary<String, Entry> = [:]
        for directory in directories { entries[directory] = self[directory] }
        return entries
    }
}
