import Foundation
import Logging
import Synchronization
import TLS
import TestSupport
import Testing

@testable import ACME

/// The manager's demand path without a CA (the thread is never started): what `demand` lets in
/// (wanted names without a certificate only), its bound, and the tiers a pass builds from it.
@Suite("ACME certificate manager: demand and tiers")
struct CertificateDemandTests {
    let folder: TemporaryDirectory
    let manager: CertificateManager
    /// The manager's clock: fixed, so waits are exact.
    static let now: Int64 = 1_800_000_000

    init() throws {
        folder = try TemporaryDirectory(prefix: "acme-demand")
        let configuration = CertificateManager.Configuration(
            directory: try ACMEURL("https://127.0.0.1:1/dir"), storage: folder.path("storage"), ordersPerHour: 8)
        manager = try CertificateManager(
            configuration: configuration, clock: CertificateManager.Clock(now: { Self.now }, monotonic: { 0 }),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// `sites` sites of `perSite` names each: site0.test, n1.site0.test, …
    static func sites(_ sites: Int, perSite: Int) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for s in 0..<sites {
            out["site\(s).test"] = ["site\(s).test"] + (1..<max(perSite, 1)).map { "n\($0).site\(s).test" }
        }
        return out
    }

    @Test("10,000 random SNI names, odd bytes and names the ownership check holds back add nothing; a wanted name is taken once")
    func onlyWantedNames() {
        manager.want(Self.sites(10, perSite: 100))
        for i in 0..<10_000 { manager.demand("r\(i).random\(i % 97).example") }
        let odd = [
            "", "\u{0}", "site0.test\u{0}", "site0.test\r\n", "SITE0.TEST", "site0.test.", String(repeating: "a", count: 256),
            "*.site0.test",
        ]
        for name in odd { manager.demand(name) }
        // held.test: a site the tenant API made, its name not yet verified, so never wanted.
        for _ in 0..<1_000 { manager.demand("held.test") }
        #expect(manager.intake.withLock { $0.pendingCount } == 0)
        for _ in 0..<1_000 { manager.demand("n5.site3.test") }
        #expect(manager.intake.withLock { $0.pendingCount } == 1)
        manager.takeDemand(now: Self.now)
        // Held now: further handshakes for it add nothing.
        for _ in 0..<1_000 { manager.demand("n5.site3.test") }
        #expect(manager.intake.withLock { $0.pendingCount } == 0)
        #expect(manager.demandedNames() == ["n5.site3.test"])
    }

    @Test("a name served a certificate of the manager's is never demanded: Apple's fetches of certified sites cost one look-up, not a pass")
    func certifiedNamesAreNotDemanded() {
        manager.want(Self.sites(10, perSite: 100))
        manager.servedCertificates.withLock {
            $0["n5.site3.test"] = TLSServer.CertificateSource(identity: "n5.site3.test", chainPEM: [], keyPEM: [], label: "acme")
        }
        for _ in 0..<1_000 { manager.demand("n5.site3.test") }
        #expect(manager.intake.withLock { $0.pendingCount } == 0)
        manager.demand("n6.site3.test")
        #expect(manager.intake.withLock { $0.pendingCount } == 1)
    }

    @Test("the intake's bound with wanted names: N pending, the N+1st dropped, taken at the next pass")
    func boundWithWantedNames() {
        let n = DemandIntake.capacity
        manager.want(Self.sites(n + 1, perSite: 1))
        for s in 0...n { manager.demand("site\(s).test") }
        #expect(manager.intake.withLock { $0.pendingCount } == n)
        manager.takeDemand(now: Self.now)
        #expect(manager.demandedNames().count == n)
        // The one dropped gets in at its next handshake.
        manager.demand("site\(n).test")
        #expect(manager.intake.withLock { $0.pendingCount } == 1)
    }

    @Test("a demanded name goes before 1,000 names wanted earlier; the tiers show it; the backlog's share spent holds only the backlog")
    func demandedFirst() {
        manager.want(Self.sites(10, perSite: 100))
        manager.want(Self.sites(10, perSite: 100).merging(["fresh.test": ["fresh.test"]]) { a, _ in a })
        #expect(manager.nextDue(now: Self.now)?.0 == "site0.test")
        manager.demand("fresh.test")
        manager.takeDemand(now: Self.now - 7)
        let next = manager.nextDue(now: Self.now)
        #expect(next?.0 == "fresh.test" && next?.1 == .demanded)
        let tiers = Dictionary(uniqueKeysWithValues: manager.tierWaits().map { ($0.tier, ($0.queued, $0.oldestAge)) })
        #expect(tiers[.demanded]?.0 == 1 && tiers[.demanded]?.1 == 7)
        #expect(tiers[.new]?.0 == 1_000 && tiers[.new]?.1 == 0)
        #expect(tiers[.renewal]?.0 == 0)
        // The backlog's share of the budget spent: names nobody asked for wait, the demanded one not.
        manager.state.withLock { $0.backgroundBlockedUntil = Self.now + 60 }
        #expect(manager.nextDue(now: Self.now)?.0 == "fresh.test")
        manager.state.withLock { $0.entries["fresh.test"]?.demandedAt = nil }
        #expect(manager.nextDue(now: Self.now) == nil)
        // Still queued, and counted: waiting for the budget, not forgotten.
        #expect(manager.counters().queued == 1_001)
        // The whole budget spent: nothing goes.
        manager.state.withLock {
            $0.entries["fresh.test"]?.demandedAt = Self.now
            $0.budgetBlockedUntil = Self.now + 60
        }
        #expect(manager.nextDue(now: Self.now) == nil)
    }

    @Test("a name that leaves the config is released: back, and asked for again, it is demanded again")
    func leavesAndComesBack() {
        manager.want(["a.test": ["a.test"], "b.test": ["b.test"]])
        manager.demand("a.test")
        manager.takeDemand(now: Self.now)
        #expect(manager.intake.withLock { $0.held } == ["a.test"])
        manager.want(["b.test": ["b.test"]])
        #expect(manager.intake.withLock { $0.held }.isEmpty)
        #expect(manager.demandedNames().isEmpty)
        manager.demand("a.test")
        #expect(manager.intake.withLock { $0.pendingCount } == 0)
        manager.want(["a.test": ["a.test"], "b.test": ["b.test"]])
        manager.demand("a.test")
        manager.takeDemand(now: Self.now)
        #expect(manager.nextDue(now: Self.now)?.1 == .demanded)
    }

    @Test(
        "a budget raised while an order is judged against the old one is not lost: the raise waits for the judgement and clears the hold it wrote"
    )
    func raiseDuringSpend() throws {
        manager.want(["fresh.test": ["fresh.test"]])
        // The hour's 8 orders spent (another replica's): at 8 an hour a demanded name waits.
        let log = (0..<8).map { "\(Self.now - 60) other\($0).example\n" }.joined()
        try AtomicFile.write(Array(log.utf8), to: manager.storage.orderLog, mode: 0o644)
        // The raise starts from another thread once this spend has read the budget (8), before it
        // judged. Where the spend holds the state's lock there, the raise waits for it, and
        // clears the hold the judgement writes. Where it does not (a budget read and a hold
        // written in two sections), the raise is let land in between: the hold written after it
        // would stand for the hour.
        let raise = RaiseThread(manager)
        manager.beforeBudgetDecision.withLock {
            $0 = { [manager] in
                raise.start()
                if manager.state.withLockIfAvailable({ _ in true }) != nil {
                    _ = eventually(attempts: 500, interval: 0.01) { manager.ordersPerHour == 14 }
                }
            }
        }
        let spent = try manager.spendBudget(name: "fresh.test", tier: .demanded, now: Self.now)
        manager.beforeBudgetDecision.withLock { $0 = nil }
        // Judged against 8: the order waits.
        #expect(!spent)
        #expect(raise.join())
        #expect(manager.ordersPerHour == 14)
        // The raise cleared the hold: the names behind it go now, 9 of 14.
        #expect(manager.state.withLock { $0.budgetBlockedUntil } == 0)
        #expect(try manager.spendBudget(name: "next.test", tier: .demanded, now: Self.now))
        let placed = try String(contentsOfFile: manager.storage.orderLog, encoding: .utf8).split(separator: "\n")
        #expect(placed.last == "\(Self.now) next.test", "\(placed)")
    }
}

/// The thread that raises the budget to 14 during a spend, and whether it finished.
private final class RaiseThread: Sendable {
    let manager: CertificateManager
    let done = Mutex(false)
    init(_ manager: CertificateManager) { self.manager = manager }
    func start() {
        Thread { [self] in
            manager.setOrdersPerHour(14)
            done.withLock { $0 = true }
        }
        .start()
    }
    /// Waits for the raise to finish (it waits at most for the spend's critical section).
    func join() -> Bool { eventually(attempts: 500, interval: 0.01) { done.withLock { $0 } } }
}
