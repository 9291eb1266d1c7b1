import Testing

@testable import ACME

/// A name offered again under a wildcard site (a client retrying) before names sent once (a
/// scanner's): the parent's last `ChildLedger.parentAskReserve` ask tokens are for names the
/// rate turned away before (`TurnedAwayNames`), within the same bucket, so no flood, repeated or
/// not, gets more asks than the parent's rate.
@Suite("ACME wildcard children: a retried name before a flood's")
struct ChildRetryTests {
    typealias L = ChildLedger
    static let parent = "*.w.test"

    /// Offers `count` new names at `now`, answering each ask with no; the asks made.
    static func flood(_ ledger: inout ChildLedger, _ count: Int, from first: Int = 0, now: Int64, times: Int = 1) -> Int {
        var asked = 0
        for i in first..<(first + count) {
            for _ in 0..<times { _ = ledger.offer("r\(i).w.test", parent: parent, now: now) }
            asked += ChildLedgerTests.answerAll(&ledger, .no, now: now).count
        }
        return asked
    }

    @Test("after a flood of names sent once, a real name is asked about at its second try, not at the next refill")
    func retryAfterFlood() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        let asked = Self.flood(&ledger, 2_000, now: 0)
        #expect(asked == L.parentAskBurst - L.parentAskReserve)
        #expect(ledger.offer("a.w.test", parent: Self.parent, now: 1) == .dropped(.rate))
        #expect(ledger.offer("a.w.test", parent: Self.parent, now: 50) == .queued)
        #expect(ChildLedgerTests.answerAll(&ledger, .yes, now: 50) == ["a.w.test"])
        #expect(ledger.isChild("a.w.test"))
    }

    @Test("a scanner sending every name twice gets no more asks than the parent's burst and rate")
    func repeatingScanner() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        var asked = 0
        for second in 0..<60 {
            asked += Self.flood(&ledger, 100, from: second * 100, now: Int64(second) * 1_000, times: 2)
        }
        #expect(asked <= L.parentAskBurst + L.parentAsksPerMinute, "\(asked) asks")
        // The reserve is spent by the repeats: a real name then waits for a refill, as before.
        #expect(ledger.offer("a.w.test", parent: Self.parent, now: 60_000) == .dropped(.rate))
    }

    @Test("the table of names turned away stays at its size whatever the flood, and forgets a name it overwrote")
    func boundedTable() {
        var names = TurnedAwayNames()
        for i in 0..<100_000 { names.insert("r\(i).w.test") }
        #expect(names.count <= TurnedAwayNames.slots)
        #expect(names.contains("r99999.w.test"))
        #expect(!names.contains("never.w.test"))
        names.remove("r99999.w.test")
        #expect(!names.contains("r99999.w.test"))
    }

    @Test("without a flood a new name is asked about at its first try, the reserve untouched")
    func quiet() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        #expect(ledger.offer("a.w.test", parent: Self.parent, now: 0) == .queued)
    }
}
