import Testing

@testable import ACME

/// The way from serving threads to the manager for names someone asked for, and the budget's
/// split by tier, as values: their bounds at N and N+1, duplicates, odd names.
@Suite("ACME demand intake and budget tiers")
struct DemandIntakeTests {

    @Test("capacity: N distinct names are pending, the N+1st is dropped until the manager takes them")
    func capacity() {
        var intake = DemandIntake()
        let n = DemandIntake.capacity
        for i in 0..<n {
            let offered = intake.offer("n\(i).test")
            #expect(offered)
        }
        #expect(intake.pendingCount == n)
        let offered1 = intake.offer("one-more.test")
        #expect(!offered1)
        #expect(intake.pendingCount == n)
        let taken = intake.take()
        #expect(taken.count == n && taken.first == "n0.test" && taken.last == "n\(n - 1).test")
        #expect(intake.pendingCount == 0)
        // Room again: the dropped name's next handshake gets in.
        let offered2 = intake.offer("one-more.test")
        #expect(offered2)
    }

    @Test("a name pending or held is offered again at no cost; released, it can be asked for again")
    func duplicates() {
        var intake = DemandIntake()
        let offered3 = intake.offer("a.test")
        #expect(offered3)
        let offered4 = intake.offer("a.test")
        #expect(!offered4)
        let taken = intake.take()
        #expect(taken == ["a.test"])
        // Held (the manager has it in the demanded tier): a flood of its SNI adds nothing.
        for _ in 0..<10_000 {
            let offered = intake.offer("a.test")
            #expect(!offered)
        }
        #expect(intake.pendingCount == 0 && intake.held == ["a.test"])
        // Noted as seen again (its demand record is kept written), once, until taken.
        #expect(intake.takeSeen() == ["a.test"])
        #expect(intake.takeSeen().isEmpty)
        _ = intake.offer("a.test")
        intake.release("a.test")
        #expect(intake.takeSeen().isEmpty)
        #expect(intake.held.isEmpty)
        let offered5 = intake.offer("a.test")
        #expect(offered5)
    }

    @Test("odd names are plain keys: NUL, CR/LF, bytes past ASCII, 255 and 256 bytes; none reaches past the bound")
    func oddNames() {
        var intake = DemandIntake()
        let odd = [
            "", "\u{0}", "a\u{0}.test", "a\r\nb.test", "\u{202E}evil.test", "xn--nxasmq6b.test", String(repeating: "a", count: 255),
            String(repeating: "b", count: 256), "A.TEST", "a.test.",
        ]
        for name in odd {
            let offered = intake.offer(name)
            #expect(offered)
        }
        let taken = intake.take()
        #expect(taken == odd)
    }

    @Test("the budget's reserve for renewals and demanded names: none at 1 an hour, one at 2 to 7, a quarter from 8")
    func reserve() {
        #expect(OrderBudget.reserved(ordersPerHour: 1) == 0)
        #expect(OrderBudget.reserved(ordersPerHour: 2) == 1)
        #expect(OrderBudget.reserved(ordersPerHour: 7) == 1)
        #expect(OrderBudget.reserved(ordersPerHour: 8) == 2)
        #expect(OrderBudget.reserved(ordersPerHour: 60) == 15)
        #expect(OrderBudget.reserved(ordersPerHour: 100_000) == 25_000)
        #expect(OrderBudget.limit(for: .new, ordersPerHour: 60) == 45)
        #expect(OrderBudget.limit(for: .demanded, ordersPerHour: 60) == 60)
        #expect(OrderBudget.limit(for: .renewal, ordersPerHour: 60) == 60)
        #expect(OrderBudget.limit(for: .new, ordersPerHour: 1) == 1)
        #expect(OrderBudget.limit(for: .new, ordersPerHour: 2) == 1)
        // Out of the setting's bounds (refused by the settings' checks): never a limit of 0.
        #expect(OrderBudget.limit(for: .new, ordersPerHour: 0) == 1)
        #expect(OrderBudget.limit(for: .demanded, ordersPerHour: -5) == 1)
    }

    @Test("the budget reopens when enough of the hour's orders have left the window")
    func reopens() {
        // Limit 2, three orders: the second oldest must leave before one fits again.
        #expect(OrderBudget.reopens(times: [300, 100, 200], limit: 2, window: 3600) == 3800)
        // Exactly at the limit: the oldest.
        #expect(OrderBudget.reopens(times: [300, 100], limit: 2, window: 3600) == 3700)
        #expect(OrderBudget.reopens(times: [100], limit: 1, window: 3600) == 3700)
        // Bad inputs never trap.
        #expect(OrderBudget.reopens(times: [], limit: 1, window: 3600) == 3600)
        #expect(OrderBudget.reopens(times: [5], limit: 0, window: 10) == 15)
        #expect(OrderBudget.reopens(times: [5, 6], limit: 9, window: 10) == 15)
    }
}
