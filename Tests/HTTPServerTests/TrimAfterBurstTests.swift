import HTTPCore
import Testing

@testable import HTTPServer

/// When a worker gives memory back (`Worker.burstIsOver`), and when a spent request budget closes
/// new connections (`RequestBudget.isExhausted`): each bound at N and N + 1.
@Suite("Memory after a burst: the bounds that start a trim, and the budget's room for a connection")
struct TrimAfterBurstTests {
    @Test("connections: a drop of trimConnectionDrop that is half the peak starts a trim, one fewer does not")
    func connectionDrop() {
        let drop = Worker.trimConnectionDrop
        #expect(Worker.burstIsOver(peakConnections: 2 * drop, openConnections: drop, heldHighWater: 0, held: 0))
        #expect(!Worker.burstIsOver(peakConnections: 2 * drop, openConnections: drop + 1, heldHighWater: 0, held: 0))
        // Steady churn: a drop of 32 from 1,000 is not half the peak.
        #expect(!Worker.burstIsOver(peakConnections: 1_000, openConnections: 1_000 - drop, heldHighWater: 0, held: 0))
        #expect(Worker.burstIsOver(peakConnections: 1_000, openConnections: 500, heldHighWater: 0, held: 0))
        #expect(!Worker.burstIsOver(peakConnections: 1_000, openConnections: 501, heldHighWater: 0, held: 0))
    }

    @Test(
        "held bytes: a high-water mark of trimHeldBytes fallen to half starts a trim; one byte less, or one byte more than half left, does not"
    )
    func heldBytes() {
        let high = Worker.trimHeldBytes
        #expect(Worker.burstIsOver(peakConnections: 0, openConnections: 0, heldHighWater: high, held: high / 2))
        #expect(!Worker.burstIsOver(peakConnections: 0, openConnections: 0, heldHighWater: high, held: high / 2 + 1))
        #expect(!Worker.burstIsOver(peakConnections: 0, openConnections: 0, heldHighWater: high - 1, held: 0))
    }

    @Test("still closing: a burst over by its bounds waits while connections or held bytes fell since the last check")
    func stillClosing() {
        let high = Worker.trimHeldBytes
        // Held bytes a second ago: the same is settled, one byte more then is still falling (the
        // other worker's connections of the burst are closing).
        #expect(Worker.burstIsOver(peakConnections: 0, openConnections: 0, heldHighWater: high, held: 0, heldBefore: 0))
        #expect(!Worker.burstIsOver(peakConnections: 0, openConnections: 0, heldHighWater: high, held: 0, heldBefore: 1))
        let drop = Worker.trimConnectionDrop
        #expect(Worker.burstIsOver(peakConnections: 2 * drop, openConnections: drop, heldHighWater: 0, held: 0, openBefore: drop))
        #expect(!Worker.burstIsOver(peakConnections: 2 * drop, openConnections: drop, heldHighWater: 0, held: 0, openBefore: drop + 1))
    }

    @Test("a budget with connectionRoom left takes a new connection; one byte less left refuses it")
    func connectionRoom() {
        let budget = RequestBudget(limit: 1 << 20)
        budget.add(budget.limit - RequestBudget.connectionRoom)
        #expect(!budget.isExhausted)
        budget.add(1)
        #expect(budget.isExhausted)
        budget.add(-(budget.limit - RequestBudget.connectionRoom + 1))
        #expect(budget.inUse == 0 && !budget.isExhausted)
    }
}
