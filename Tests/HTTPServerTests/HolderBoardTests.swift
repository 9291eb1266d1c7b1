import Dispatch
import Synchronization
import Testing

@testable import HTTPServer

/// Which worker closes a holder for a newcomer taken with the process budget spent, and how many
/// newcomers a worker's holders let in (`HolderBoard`), without a server: each slot's count is set
/// as its worker would publish it.
@Suite("HTTP/2 holder board")
struct HolderBoardTests {
    /// A board of `counts.count` workers holding those many holders each.
    static func board(_ counts: [Int]) -> (HolderBoard, [HolderBoard.Slot]) {
        let board = HolderBoard()
        let slots = counts.map { _ in board.join(wake: {}) }
        for (slot, count) in zip(slots, counts) { slot.holders.store(count, ordering: .relaxed) }
        return (board, slots)
    }

    @Test("no worker holds a holder: refused, no ask left anywhere")
    func noneAnywhere() {
        let (board, slots) = Self.board([0, 0, 0, 0])
        #expect(board.reserve(for: slots[0]) == nil)
        #expect(slots.allSatisfy { $0.asked.load(ordering: .relaxed) == 0 })
    }

    @Test("the accepting worker's own holder goes first, whoever holds more")
    func ownFirst() {
        let (board, slots) = Self.board([1, 5, 0])
        #expect(board.reserve(for: slots[0]) === slots[0])
        #expect(slots[0].asked.load(ordering: .relaxed) == 1)
        // Its one holder claimed: the next ask goes to the worker with the most.
        #expect(board.reserve(for: slots[0]) === slots[1])
    }

    @Test("with none of its own: the worker with the most unclaimed holders, not the lowest-numbered")
    func mostUnclaimed() {
        let (board, slots) = Self.board([0, 1, 3, 2])
        #expect(board.reserve(for: slots[0]) === slots[2])
        #expect(board.reserve(for: slots[0]) === slots[2])
        // Now 1, 1 and 2 unclaimed: worker 3.
        #expect(board.reserve(for: slots[0]) === slots[3])
    }

    @Test("N holders let in N newcomers, not N + 1; closing them frees no claim, a new holder does")
    func reservationBound() {
        let n = 3
        let (board, slots) = Self.board([0, n])
        for _ in 0..<n { #expect(board.reserve(for: slots[0]) === slots[1]) }
        #expect(board.reserve(for: slots[0]) == nil, "newcomer N + 1 let in")
        #expect(slots[1].asked.load(ordering: .relaxed) == n)
        // The worker closes its N holders, then lowers its asks (`Worker.evictForAsks`).
        slots[1].holders.store(0, ordering: .relaxed)
        slots[1].asked.subtract(n, ordering: .relaxed)
        #expect(board.reserve(for: slots[0]) == nil)
        slots[1].holders.store(1, ordering: .relaxed)
        #expect(board.reserve(for: slots[0]) === slots[1])
        #expect(board.reserve(for: slots[0]) == nil)
    }

    @Test("holders that let go by themselves claim nothing more: asks past the count are refused")
    func holdersLetGo() {
        let (board, slots) = Self.board([0, 2])
        #expect(board.reserve(for: slots[0]) === slots[1])
        #expect(board.reserve(for: slots[0]) === slots[1])
        slots[1].holders.store(1, ordering: .relaxed)
        #expect(board.reserve(for: slots[0]) == nil)
    }

    @Test("eight workers claiming at once against 100 holders: exactly 100 let in")
    func concurrentClaims() {
        let holders = 100
        let (board, slots) = Self.board([holders, 0, 0, 0, 0, 0, 0, 0])
        let granted = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for _ in 0..<50 where board.reserve(for: slots[i]) != nil { granted.add(1, ordering: .relaxed) }
        }
        #expect(granted.load(ordering: .relaxed) == holders)
        #expect(slots[0].asked.load(ordering: .relaxed) == holders)
    }
}
