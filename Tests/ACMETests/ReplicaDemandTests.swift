import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// Names asked for, shared through the storage directory's demand records (`ReplicaRecords`,
/// ReplicaRecordsRig.swift): what is written, what another replica makes of it, and when not.
@Suite("ACME replicas: shared demand")
struct ReplicaDemandTests: ReplicaRecordsRig {
    let folder: TemporaryDirectory
    let offset = TestClock()

    init() throws { folder = try Self.storageFolder() }

    @Test("clock skew: a demand time ahead counts as now and expires at most one lifetime ahead; behind, it expires on time")
    func demandSkew() {
        let lifetime = ReplicaRecords.demandLifetime
        #expect(DemandRecord.demandTime(now + lifetime - 1, now: now) == now)
        #expect(DemandRecord.demandTime(now + lifetime, now: now) == nil)
        #expect(DemandRecord.demandTime(now - lifetime + 1, now: now) == now - lifetime + 1)
        #expect(DemandRecord.demandTime(now - lifetime, now: now) == nil)
        #expect(DemandRecord.demandTime(.max, now: now) == nil)
        #expect(DemandRecord.demandTime(0, now: now) == nil)
    }

    @Test("demand seen by replica A makes replica B order that name ahead of 1,000 names nobody asked for; the record expires")
    func demandSeenByOtherReplica() throws {
        let a = try manager()
        let b = try manager()
        let sites = CertificateDemandTests.sites(10, perSite: 100).merging(["fresh.test": ["fresh.test"]]) { x, _ in x }
        a.want(sites)
        b.want(CertificateDemandTests.sites(10, perSite: 100))
        b.want(sites)
        #expect(b.nextDue(now: now)?.0 == "site0.test")
        a.demand("fresh.test")
        a.takeDemand(now: now - 7)
        #expect(demandFiles() == ["fresh.test"])
        b.shareDemand(now: now)
        let next = b.nextDue(now: now)
        #expect(next?.0 == "fresh.test" && next?.1 == .demanded, "\(String(describing: next))")
        #expect(b.tierWaits().first { $0.tier == .demanded }.map { ($0.queued, $0.oldestAge) } ?? (0, 0) == (1, 7))
        // B's demand is A's: B hands none to a successor and never writes the record again.
        #expect(b.demandedNames().isEmpty)
        // A keeps its record fresh while it holds the demand; once A is gone, it expires and the
        // name goes back to its place for B.
        let half = ReplicaRecords.demandLifetime / 2
        a.shareDemand(now: now + half - 8)
        #expect(records.demands(now: now + half) == ["fresh.test": now - 7])
        a.shareDemand(now: now + half - 7)
        #expect(records.demands(now: now + half) == ["fresh.test": now + half - 7])
        let expiry = now + half - 7 + ReplicaRecords.demandLifetime
        b.shareDemand(now: expiry - 1)
        #expect(b.nextDue(now: expiry - 1)?.1 == .demanded)
        b.shareDemand(now: expiry)
        #expect(b.nextDue(now: expiry)?.0 == "site0.test")
        #expect(demandFiles().isEmpty)
        // Asked for on B itself, it is B's own demand and recorded by B.
        b.demand("fresh.test")
        b.takeDemand(now: expiry)
        #expect(b.demandedNames() == ["fresh.test"])
        #expect(records.demands(now: expiry) == ["fresh.test": expiry])
    }

    @Test("a running manager reads the other replicas' demand at its look at storage")
    func runningManagerReadsDemand() throws {
        let a = try manager()
        let b = try manager(rescan: 1)
        defer { b.stop() }
        a.want(["fresh.test": ["fresh.test"], "x.test": ["x.test"]])
        b.want(["fresh.test": ["fresh.test"], "x.test": ["x.test"]])
        // B's budget spent: its thread only passes over the queue, and shows its tiers.
        b.state.withLock { $0.budgetBlockedUntil = .max }
        b.start()
        #expect(eventually(attempts: 100, interval: 0.05) { b.tierWaits().first { $0.tier == .new }?.queued == 2 })
        a.demand("fresh.test")
        a.takeDemand(now: now)
        // B's clock moves a second a try: its next look at storage comes within one.
        #expect(
            eventually(attempts: 100, interval: 0.05) {
                offset.advance(1)
                b.wakeup.wake()
                return b.tierWaits().first { $0.tier == .demanded }?.queued == 1
            })
    }

    @Test("10,000 random SNI names and names no replica holds write no record; a wanted name is written once, refreshed in place")
    func floodWritesNothing() throws {
        let a = try manager()
        a.want(CertificateDemandTests.sites(10, perSite: 100))
        for i in 0..<10_000 { a.demand("r\(i).random\(i % 97).example") }
        for name in ["", "\u{0}", "site0.test\r\n", "SITE0.TEST", "../x", String(repeating: "a", count: 300)] { a.demand(name) }
        a.takeDemand(now: now)
        a.shareDemand(now: now)
        #expect(demandFiles().isEmpty)
        for _ in 0..<3 {
            a.demand("n5.site3.test")
            a.takeDemand(now: now)
        }
        a.shareDemand(now: now + ReplicaRecords.demandLifetime / 2)
        #expect(demandFiles() == ["n5.site3.test"])
        #expect(records.demands(now: now + ReplicaRecords.demandLifetime / 2) == ["n5.site3.test": now + ReplicaRecords.demandLifetime / 2])
    }

    @Test("no demand record for a name no order may serve: capped, a wildcard without a DNS hook, in back-off (written once it ends)")
    func unservableNamesWriteNothing() throws {
        let a = try manager(namesPerSite: 2)
        a.want(["site.test": ["site.test", "www.site.test", "more.site.test"], "w.test": ["*.w.test"], "bo.test": ["bo.test"]])
        a.order("bo.test", tier: .new)
        let next = try #require(a.status(of: "bo.test")?.nextAttempt)
        for name in ["site.test", "more.site.test", "*.w.test", "bo.test"] { a.demand(name) }
        a.takeDemand(now: now)
        #expect(demandFiles() == ["site.test"])
        a.shareDemand(now: next - 1)
        #expect(Set(demandFiles()) == ["site.test"])
        a.shareDemand(now: next)
        #expect(Set(demandFiles()) == ["site.test", "bo.test"])
    }

    @Test("a site's demand records: N written, the N+1st not; a name asked for N-1 seconds ago still written, N ago not, until asked again")
    func demandRecordsPerSiteAndAge() throws {
        let perSite = ReplicaRecords.maximumDemandRecordsPerSite
        let a = try manager()
        a.want(CertificateDemandTests.sites(2, perSite: perSite + 1))
        for i in 1...perSite { a.demand("n\(i).site0.test") }
        a.demand("site0.test")
        a.takeDemand(now: now)
        #expect(demandFiles().count == perSite)
        #expect(records.demands(now: now).keys.allSatisfy { $0.hasSuffix(".site0.test") })
        // The age: one name asked for at `now`, another a second later; both records expired.
        a.demand("site1.test")
        a.takeDemand(now: now)
        a.demand("n1.site1.test")
        a.takeDemand(now: now + 1)
        let age = ReplicaRecords.maximumDemandAge
        a.shareDemand(now: now + age)
        #expect(records.demands(now: now + age).keys.sorted() == ["n1.site1.test"])
        // Asked for again (a handshake while it is held as demanded): written again.
        a.demand("site1.test")
        a.takeDemand(now: now + age)
        a.shareDemand(now: now + age)
        #expect(records.demands(now: now + age).keys.sorted() == ["n1.site1.test", "site1.test"])
    }
}
