import Testing

@testable import ACME

/// The order queue as a value: round robin by site, renewals first, the per-site cap at N and
/// N+1, and one site's junk names against another's, with orders simulated by plain values.
@Suite("ACME order queue")
struct OrderQueueTests {
    /// A run of the manager's passes: every wanted name not served and not capped is due as new,
    /// `renewals` are due as renewals; each pick is ordered and then served (no longer due).
    struct Run {
        var queue: OrderQueue
        var served: Set<String> = []
        var renewals: Set<String> = []
        /// Names someone asked for (not served): due in the demanded tier.
        var demanded: Set<String> = []

        init(namesPerSite: Int = 100, _ sites: [String: [String]]) {
            queue = OrderQueue(namesPerSite: namesPerSite)
            queue.want(sites)
        }

        var capped: Set<String> { queue.capped { served.contains($0) } }

        /// The next pick, ordered and served; nil when nothing is due.
        mutating func step() -> String? {
            let capped = self.capped
            var due: [(String, OrderQueue.Class)] = []
            for name in queue.names where !capped.contains(name) {
                if renewals.contains(name) {
                    due.append((name, .renewal))
                } else if demanded.contains(name) && !served.contains(name) {
                    due.append((name, .demanded))
                } else if !served.contains(name) {
                    due.append((name, .new))
                }
            }
            guard let next = queue.next(among: due) else { return nil }
            queue.ordered(next)
            served.insert(next)
            renewals.remove(next)
            demanded.remove(next)
            return next
        }

        mutating func steps(_ count: Int) -> [String] { (0..<count).compactMap { _ in step() } }
    }

    @Test("inside the demanded tier, the name asked for first goes first, whenever each was first wanted; other tiers ignore it")
    func demandedByAsked() {
        var queue = OrderQueue(namesPerSite: 100)
        queue.want(["old.test": ["old.test"]])
        queue.want(["old.test": ["old.test"], "new.test": ["new.test"]])
        // old.test was wanted first; new.test was asked for first.
        #expect(queue.next(asked: [("old.test", .demanded, 200), ("new.test", .demanded, 100)]) == "new.test")
        #expect(queue.next(asked: [("old.test", .demanded, 100), ("new.test", .demanded, 200)]) == "old.test")
        // Asked at the same second: first wanted first.
        #expect(queue.next(asked: [("new.test", .demanded, 100), ("old.test", .demanded, 100)]) == "old.test")
        #expect(queue.next(asked: [("old.test", .new, 200), ("new.test", .new, 100)]) == "old.test")
        #expect(queue.next(asked: [("old.test", .renewal, 200), ("new.test", .renewal, 100)]) == "old.test")
        // Site turns still go first: a site that just had its turn waits behind the other.
        queue.ordered("new.test")
        #expect(queue.next(asked: [("old.test", .demanded, 200), ("new.test", .demanded, 100)]) == "old.test")
    }

    @Test("sites take turns: one name per site per round, a site's own names oldest first (its directory name first)")
    func roundRobin() {
        var run = Run([
            "a.test": ["a.test", "x1.a.test", "x2.a.test", "x3.a.test"], "b.test": ["b.test", "www.b.test"], "c.test": ["c.test"],
        ])
        #expect(
            run.steps(8) == ["a.test", "b.test", "c.test", "x1.a.test", "www.b.test", "x2.a.test", "x3.a.test"])
    }

    @Test("a site that arrives later goes before every site that has had a turn")
    func newcomerGoesNext() {
        var run = Run(["a.test": ["a.test", "x1.a.test", "x2.a.test", "x3.a.test"]])
        #expect(run.steps(2) == ["a.test", "x1.a.test"])
        run.queue.want(["a.test": ["a.test", "x1.a.test", "x2.a.test", "x3.a.test"], "new.test": ["new.test"]])
        #expect(run.steps(3) == ["new.test", "x2.a.test", "x3.a.test"])
    }

    @Test("due renewals go before new names, whichever site had the last turn")
    func renewalsFirst() {
        var run = Run(["a.test": ["a.test", "x1.a.test", "x2.a.test"], "b.test": ["b.test", "www.b.test"]])
        #expect(run.steps(2) == ["a.test", "b.test"])
        // b.test's certificate comes due: it goes before a.test's new names, though b.test had
        // the last turn.
        run.renewals = ["b.test"]
        #expect(run.steps(1) == ["b.test"])
        // Renewals of both sites: in turn, and before any new name.
        run.renewals = ["a.test", "b.test"]
        #expect(run.steps(4) == ["a.test", "b.test", "x1.a.test", "www.b.test"])
    }

    @Test("the tiers: renewals, then names asked for, then the rest; sites take turns inside each tier")
    func tiers() {
        var run = Run([
            "a.test": ["a.test", "x1.a.test", "x2.a.test"], "b.test": ["b.test", "www.b.test"], "c.test": ["c.test", "www.c.test"],
            "new.test": ["new.test", "www.new.test"],
        ])
        #expect(run.steps(3) == ["a.test", "b.test", "c.test"])
        // new.test never had a turn and sorts last by site among those due; asked for, it goes
        // before every name nobody asked for, though x1.a.test was wanted first.
        run.demanded = ["www.new.test"]
        #expect(run.steps(1) == ["www.new.test"])
        // A renewal and demanded names together: the renewal first (a served site losing its
        // certificate is an outage), then the demanded ones, sites in turn (a.test's two asked-for
        // names do not both go before c.test's), then the rest.
        run.renewals = ["b.test"]
        run.demanded = ["x1.a.test", "x2.a.test", "www.c.test"]
        #expect(run.steps(5) == ["b.test", "x1.a.test", "www.c.test", "x2.a.test", "new.test"])
        #expect(run.steps(2) == ["www.b.test"])
        // Each tier's order does not depend on the raw values' spelling: the tiers compare as listed.
        #expect(OrderQueue.Class.allCases == [.renewal, .demanded, .new])
        #expect(OrderQueue.Class.renewal < .demanded && OrderQueue.Class.demanded < .new)
    }

    @Test("a demanded name past its site's cap stays capped: asking for it buys no seat")
    func demandedCapped() {
        var run = Run(namesPerSite: 2, ["a.test": ["a.test", "x1.a.test", "x2.a.test"], "b.test": ["b.test"]])
        run.demanded = ["x2.a.test"]
        #expect(run.capped == ["x2.a.test"])
        #expect(run.steps(5) == ["a.test", "b.test", "x1.a.test"])
    }

    @Test("the cap: N names are all ordered, of N+1 the last wanted is capped and never ordered")
    func capAtNAndNPlusOne() {
        let n = 3
        let atN = Run(namesPerSite: n, ["a.test": ["a.test", "x1.a.test", "x2.a.test"]])
        #expect(atN.capped.isEmpty)
        var past = Run(namesPerSite: n, ["a.test": ["a.test", "x1.a.test", "x2.a.test", "x3.a.test"], "b.test": ["b.test"]])
        #expect(past.capped == ["x3.a.test"])
        #expect(past.steps(10) == ["a.test", "b.test", "x1.a.test", "x2.a.test"])
        #expect(past.step() == nil)
        #expect(past.capped == ["x3.a.test"])
        // An alias added later, even first in the site's list, never takes a served name's seat.
        past.queue.want(["a.test": ["0.a.test", "a.test", "x1.a.test", "x2.a.test", "x3.a.test"], "b.test": ["b.test"]])
        #expect(past.capped == ["0.a.test", "x3.a.test"])
        // A name leaving frees its seat for the next in the site's order.
        past.queue.want(["a.test": ["0.a.test", "a.test", "x2.a.test", "x3.a.test"], "b.test": ["b.test"]])
        #expect(past.capped == ["x3.a.test"])
        #expect(past.steps(10) == ["0.a.test"])
    }

    @Test("seats without a certificate follow the site's order, as a restart and aasad sites see it, not when a name came")
    func seatsFollowTheSiteOrder() {
        var live = Run(namesPerSite: 2, ["a.test": ["x1.a.test", "x2.a.test", "x3.a.test"]])
        #expect(live.capped == ["x3.a.test"])
        // The directory name arrives last (its own tls/ pair removed, or no longer covered by the
        // default pair): it is first in the site's order, so it takes a seat from an alias.
        let sites = ["a.test": ["a.test", "x1.a.test", "x2.a.test", "x3.a.test"]]
        live.queue.want(sites)
        #expect(live.capped == ["x2.a.test", "x3.a.test"])
        // A fresh queue (a restart, or `aasad sites`) given the same names seats the same ones.
        #expect(Run(namesPerSite: 2, sites).capped == live.capped)
    }

    @Test("a site that leaves the queue and comes back keeps its last turn: it does not go first again")
    func departedSiteKeepsItsTurn() {
        let a = ["a.test": ["a.test", "x1.a.test", "x2.a.test"]]
        let b = ["b.test": ["b.test", "www.b.test", "shop.b.test"]]
        var run = Run(a.merging(b) { $1 })
        #expect(run.steps(3) == ["a.test", "b.test", "x1.a.test"])
        // a.test's tenant adds a tls/ pair of its own (the site leaves the queue), then removes it.
        run.queue.want(b)
        run.queue.want(a.merging(b) { $1 })
        #expect(run.steps(4) == ["www.b.test", "x2.a.test", "shop.b.test"])
    }

    @Test("departed sites' turns: maximumDepartedTurns are kept, past it the oldest is forgotten (N and N+1); present sites' never")
    func departedTurnsBound() {
        let n = OrderQueue.maximumDepartedTurns
        for departing in [n, n + 1] {
            var queue = OrderQueue(namesPerSite: 1)
            let sites = ["keep.test"] + (0..<departing).map { "s\($0).test" }
            queue.want(Dictionary(uniqueKeysWithValues: sites.map { ($0, [$0]) }))
            for site in sites { queue.ordered(site) }  // keep.test has turn 1, s0.test turn 2, …
            queue.want(["keep.test": ["keep.test"]])
            #expect(queue.lastTurn.count == 1 + n)
            queue.want(["keep.test": ["keep.test"], "s0.test": ["s0.test"], "s1.test": ["s1.test"]])
            #expect(queue.rank(of: "keep.test", .new)?.lastTurn == 1)
            #expect(queue.rank(of: "s0.test", .new)?.lastTurn == (departing == n ? 2 : 0), "\(departing) departed")
            #expect(queue.rank(of: "s1.test", .new)?.lastTurn == 3)
        }
    }

    @Test("seats go to names holding a certificate first: a restart with another order keeps the served names seated")
    func servedNamesKeepTheirSeats() {
        var run = Run(namesPerSite: 2, ["a.test": ["a.test", "b.a.test", "c.a.test"]])
        // As after a restart where storage held certificates for a.test and c.a.test.
        run.served = ["a.test", "c.a.test"]
        #expect(run.capped == ["b.a.test"])
        #expect(run.step() == nil)
        // One of them due for renewal is ordered; the capped name still is not.
        run.renewals = ["c.a.test"]
        #expect(run.steps(3) == ["c.a.test"])
    }

    @Test("a site's junk names never starve another's: eight junk aliases and eight orders leave no other site waiting")
    func junkNeverStarves() {
        let junk = ["junk.test"] + (1...8).map { "alias\($0).junk.test" }
        var run = Run(["junk.test": junk, "new.test": ["new.test"]])
        let eight = run.steps(8)
        #expect(eight.contains("new.test"), "\(eight)")
        #expect(eight.firstIndex(of: "new.test") == 1)
        // At scale: 10,000 junk names wanted before a customer's site, and a cap of 100.
        var big = Run(namesPerSite: 100, ["junk.test": ["junk.test"] + (1...10_000).map { "j\($0).junk.test" }])
        _ = big.steps(5)
        big.queue.want([
            "junk.test": ["junk.test"] + (1...10_000).map { "j\($0).junk.test" }, "customer.test": ["customer.test", "www.customer.test"],
        ])
        #expect(big.steps(4).filter { $0.hasSuffix("customer.test") }.count == 2)
        // The junk site had 7 of its 100 seats ordered: 93 are left, then nothing.
        #expect(big.steps(200).count == 93)
        #expect(big.capped.count == 10_001 - 100)
    }

    @Test("names moving, leaving, given twice: each name has one site, and counts once against the cap")
    func membership() {
        var queue = OrderQueue(namesPerSite: 100)
        queue.want(["a.test": ["a.test", "shared.test"], "b.test": ["b.test", "shared.test"]])
        #expect(queue.site(of: "shared.test") == "a.test")
        let gone = queue.want(["b.test": ["b.test", "shared.test"]])
        #expect(gone == ["a.test"])
        #expect(queue.site(of: "shared.test") == "b.test")
        #expect(queue.want([:]).sorted() == ["b.test", "shared.test"])
        // A name listed twice counts once against the cap; one another site holds, not at all.
        var two = OrderQueue(namesPerSite: 2)
        two.want(["a.test": ["a.test", "a.test", "shared.test", "www.a.test"], "0.test": ["0.test", "shared.test"]])
        #expect(two.capped { _ in false }.isEmpty)
        two.want(["a.test": ["a.test", "a.test", "shared.test", "www.a.test", "x.a.test"], "0.test": ["0.test", "shared.test"]])
        #expect(two.capped { _ in false } == ["x.a.test"])
        #expect(queue.names.isEmpty)
        // A hostile bound: a cap of 0 or below still lets a site's first name be ordered.
        #expect(OrderQueue(namesPerSite: 0).namesPerSite == 1)
        #expect(OrderQueue(namesPerSite: .min).namesPerSite == 1)
    }
}
