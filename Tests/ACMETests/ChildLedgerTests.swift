import Testing

@testable import ACME

/// Wildcard children's bookkeeping as a value, time in milliseconds given by the test: floods of
/// random SNI names with `ask` saying no, down or slow, the caches, the rates, the caps at N and
/// N+1, the grace period.
@Suite("ACME wildcard children: caches, rates and caps")
struct ChildLedgerTests {
    typealias L = ChildLedger

    /// Answers every pending ask with `answer` at `now`; the names asked.
    @discardableResult
    static func answerAll(_ ledger: inout ChildLedger, _ answer: L.Answer, now: Int64) -> [String] {
        var asked: [String] = []
        while let (name, parent) = ledger.nextAsk(now: now) {
            asked.append(name)
            _ = ledger.answered(name, parent: parent, answer, now: now)
        }
        return asked
    }

    @Test("10,000 random names in 10 s with ask saying no: no child, asks bounded by burst plus rate")
    func floodWithNo() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        var asked = 0
        for i in 0..<10_000 {
            let now = Int64(i)  // one a millisecond: 10 s in all
            _ = ledger.offer("r\(i).w.test", parent: "*.w.test", now: now)
            asked += Self.answerAll(&ledger, .no, now: now).count
        }
        // One parent: its own bucket is the tighter one (10, then 20 a minute).
        let bound = L.parentAskBurst + L.parentAsksPerMinute * 10 / 60 + 1
        #expect(asked <= bound, "\(asked) asks")
        #expect(asked >= L.parentAskBurst)
        #expect(ledger.childCount == 0)
        #expect(ledger.counters.dropped[.rate, default: 0] == 10_000 - asked)
        // Refused names sent again are answered from the cache: no ask.
        let again = ledger.offer("r0.w.test", parent: "*.w.test", now: 10_000)
        #expect(again == .refused)
        #expect(ledger.pendingCount == 0)
    }

    @Test("many parents flooded at once: the global rate bounds the asks")
    func floodOverParents() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        var asked = 0
        for i in 0..<10_000 {
            let now = Int64(i)
            _ = ledger.offer("r\(i).p\(i % 500).test", parent: "*.p\(i % 500).test", now: now)
            asked += Self.answerAll(&ledger, .no, now: now).count
        }
        #expect(asked <= L.askBurst + L.asksPerMinute * 10 / 60 + 1, "\(asked) asks")
    }

    @Test("ask down: a failure pauses every ask, doubling; a no for a minute; the children stay")
    func askDown() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        // alice is a child before the outage.
        let r1 = ledger.offer("alice.w.test", parent: "*.w.test", now: 0)
        #expect(r1 == .queued)
        Self.answerAll(&ledger, .yes, now: 0)
        #expect(ledger.childCount == 1)
        let r2 = ledger.offer("r1.w.test", parent: "*.w.test", now: 1)
        #expect(r2 == .queued)
        Self.answerAll(&ledger, .failed, now: 1)
        // Paused for 5 s: new names are dropped without an ask.
        let r3 = ledger.offer("r2.w.test", parent: "*.w.test", now: 2)
        #expect(r3 == .dropped(.paused))
        let r4 = ledger.offer("r2.w.test", parent: "*.w.test", now: 1 + L.failurePauseFirstMilliseconds - 1)
        #expect(r4 == .dropped(.paused))
        let r5 = ledger.offer("r2.w.test", parent: "*.w.test", now: 1 + L.failurePauseFirstMilliseconds)
        #expect(r5 == .queued)
        // A second failure in a row: 10 s.
        let second = 1 + L.failurePauseFirstMilliseconds
        Self.answerAll(&ledger, .failed, now: second)
        let r6 = ledger.offer("r3.w.test", parent: "*.w.test", now: second + 2 * L.failurePauseFirstMilliseconds - 1)
        #expect(r6 == .dropped(.paused))
        let r7 = ledger.offer("r3.w.test", parent: "*.w.test", now: second + 2 * L.failurePauseFirstMilliseconds)
        #expect(r7 == .queued)
        // The failed name counts as a no for a minute.
        let r8 = ledger.offer("r1.w.test", parent: "*.w.test", now: 1 + L.failureMilliseconds - 1)
        #expect(r8 == .refused)
        #expect(ledger.childCount == 1, "an outage of ask takes no child away")
        // The pause never passes its most.
        var now = second + 2 * L.failurePauseFirstMilliseconds
        for _ in 0..<40 {
            Self.answerAll(&ledger, .failed, now: now)
            now += L.failurePauseMostMilliseconds
            _ = ledger.offer("x\(now).w.test", parent: "*.w.test", now: now)
        }
        #expect(ledger.pendingCount == 1, "after the longest pause, asks go again")
    }

    @Test("ask slow: at most maximumAsksInFlight run, at most maximumPendingAsks wait (N and N+1)")
    func slowAsk() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        var taken: [(String, String)] = []
        for _ in 0..<L.maximumAsksInFlight + 1 {
            _ = ledger.offer("s\(taken.count).a.test", parent: "*.a.test", now: 0)
            if let next = ledger.nextAsk(now: 0) { taken.append(next) }
        }
        #expect(taken.count == L.maximumAsksInFlight)
        let r9 = ledger.nextAsk(now: 0)
        #expect(r9 == nil)
        #expect(ledger.pendingCount == 1)
        // One answer frees a place.
        _ = ledger.answered(taken[0].0, parent: taken[0].1, .no, now: 1)
        let r10 = ledger.nextAsk(now: 1)
        #expect(r10 != nil)
    }

    @Test("pending asks: N wait, the N+1st is dropped as full")
    func pendingBound() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        // Spread over parents and time so that no rate stops them first.
        var now: Int64 = 0
        var queued = 0
        var i = 0
        while queued < L.maximumPendingAsks {
            now += 1_000
            if ledger.offer("n\(i).p\(i).test", parent: "*.p\(i).test", now: now) == .queued { queued += 1 }
            i += 1
        }
        #expect(ledger.pendingCount == L.maximumPendingAsks)
        let r11 = ledger.offer("one-more.p.test", parent: "*.p.test", now: now + 1_000)
        #expect(r11 == .dropped(.full))
    }

    @Test("a yes makes a child; a flood of its SNI asks nothing more; the yes runs out and is asked again in the background")
    func approval() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        let r12 = ledger.offer("alice.w.test", parent: "*.w.test", now: 0)
        #expect(r12 == .queued)
        let r13 = ledger.offer("alice.w.test", parent: "*.w.test", now: 1)
        #expect(r13 == .asking)
        let asked = ledger.nextAsk(now: 2)
        let added = asked.map { ledger.answered($0.name, parent: $0.parent, .yes, now: 2) }
        #expect(added == true)
        var children = 0
        for t in 0..<10_000 where ledger.offer("alice.w.test", parent: "*.w.test", now: 3 + Int64(t)) == .child { children += 1 }
        #expect(children == 10_000)
        #expect(ledger.pendingCount == 0)
        // After a day: still a child, and asked again.
        let r15 = ledger.offer("alice.w.test", parent: "*.w.test", now: L.approvalMilliseconds + 2)
        #expect(r15 == .child)
        #expect(ledger.pendingCount == 1)
        // The new answer is no: it is no longer a child.
        let again = ledger.nextAsk(now: L.approvalMilliseconds + 3)
        let removed = again.map { ledger.answered($0.name, parent: $0.parent, .no, now: L.approvalMilliseconds + 3) }
        #expect(removed == true)
        #expect(ledger.childCount == 0)
        let r16 = ledger.offer("alice.w.test", parent: "*.w.test", now: L.approvalMilliseconds + 4)
        #expect(r16 == .refused)
    }

    @Test("a no is kept for refusalMilliseconds (N-1 refused, N asked again)")
    func refusalLifetime() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        _ = ledger.offer("bob.w.test", parent: "*.w.test", now: 0)
        Self.answerAll(&ledger, .no, now: 0)
        let r17 = ledger.offer("bob.w.test", parent: "*.w.test", now: L.refusalMilliseconds - 1)
        #expect(r17 == .refused)
        let r18 = ledger.offer("bob.w.test", parent: "*.w.test", now: L.refusalMilliseconds)
        #expect(r18 == .queued)
    }

    @Test("children per parent: N children, the N+1st approved name is capped; another parent is not")
    func perParentCap() {
        let n = 5
        var ledger = ChildLedger(childrenPerParent: n, now: 0)
        for i in 0..<n + 1 {
            _ = ledger.offer("c\(i).w.test", parent: "*.w.test", now: Int64(i))
            Self.answerAll(&ledger, .yes, now: Int64(i))
        }
        #expect(ledger.childCount == n)
        #expect(ledger.counters.dropped[.capped] == 1)
        let r19 = ledger.offer("c\(n).w.test", parent: "*.w.test", now: 100)
        #expect(r19 == .dropped(.capped))
        _ = ledger.offer("c0.v.test", parent: "*.v.test", now: 101)
        Self.answerAll(&ledger, .yes, now: 101)
        #expect(ledger.childCount == n + 1)
        // A child refused later frees its seat.
        _ = ledger.answered("c0.w.test", parent: "*.w.test", .no, now: 102)
        let r20 = ledger.offer("c\(n).w.test", parent: "*.w.test", now: 103)
        #expect(r20 == .child)
    }

    @Test("new children of one parent: a burst of N, then the parent's rate; the yes is kept for the next handshake")
    func newChildRate() {
        var ledger = ChildLedger(childrenPerParent: 1_000, now: 0)
        var now: Int64 = 0
        for i in 0..<L.parentNewChildrenBurst + 1 {
            // Past the ask rate: 3 s apart.
            now += 3_000
            _ = ledger.offer("c\(i).w.test", parent: "*.w.test", now: now)
            Self.answerAll(&ledger, .yes, now: now)
        }
        #expect(ledger.childCount == L.parentNewChildrenBurst)
        let late = "c\(L.parentNewChildrenBurst).w.test"
        let r21 = ledger.offer(late, parent: "*.w.test", now: now)
        #expect(r21 == .dropped(.rate))
        // One more an hour / 60: a minute later it gets in, without a new ask.
        now += 3_600_000 / Int64(L.parentNewChildrenPerHour)
        let r22 = ledger.offer(late, parent: "*.w.test", now: now)
        #expect(r22 == .child)
        #expect(ledger.pendingCount == 0)
    }

    @Test("children in all: maximumChildren, the next is capped")
    func totalCap() {
        var ledger = ChildLedger(childrenPerParent: L.maximumChildren, now: 0)
        var now: Int64 = 0
        var i = 0
        // Many parents, time moving so that every bucket refills: straight to the cap.
        while ledger.childCount < L.maximumChildren {
            now += 10_000
            let parent = "*.p\(i % 1_000).test"
            _ = ledger.offer("c\(i).p\(i % 1_000).test", parent: parent, now: now)
            Self.answerAll(&ledger, .yes, now: now)
            i += 1
        }
        now += 10_000
        _ = ledger.offer("last.q.test", parent: "*.q.test", now: now)
        Self.answerAll(&ledger, .yes, now: now)
        #expect(ledger.childCount == L.maximumChildren)
        let r23 = ledger.offer("last.q.test", parent: "*.q.test", now: now + 1)
        #expect(r23 == .dropped(.capped))
    }

    @Test("a child nobody asked for in the grace period is forgotten; one seen is kept")
    func grace() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        for name in ["old.w.test", "used.w.test"] {
            _ = ledger.offer(name, parent: "*.w.test", now: 0)
        }
        Self.answerAll(&ledger, .yes, now: 0)
        // A handshake for it (served its own certificate or not) is an offer.
        _ = ledger.offer("used.w.test", parent: "*.w.test", now: L.graceMilliseconds)
        let r24 = ledger.expire(now: L.graceMilliseconds)
        #expect(r24.isEmpty, "at exactly the grace period both stay")
        let gone = ledger.expire(now: L.graceMilliseconds + 1)
        #expect(gone == ["old.w.test"])
        #expect(ledger.allChildren.map(\.name) == ["used.w.test"])
    }

    @Test("answers kept: N; the N+1st drops the oldest")
    func answerBound() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        for i in 0..<L.maximumAnswers + 1 {
            _ = ledger.offer("n\(i).w.test", parent: "*.w.test", now: 0)
            // Straight to `answered`, past the rates: the cache's own bound.
            _ = ledger.answered("n\(i).w.test", parent: "*.w.test", .no, now: 0)
        }
        #expect(ledger.answerCount == L.maximumAnswers)
        let r25 = ledger.offer("n\(L.maximumAnswers).w.test", parent: "*.w.test", now: 1)
        #expect(r25 == .refused)
        let r26 = ledger.offer("n0.w.test", parent: "*.w.test", now: 1)
        #expect(r26 != .refused, "the oldest answer was dropped")
    }

    @Test(
        "children found in storage at start are adopted without an ask, within the caps (N and N+1), and asked about at their first handshake"
    )
    func adoption() {
        let n = 3
        var ledger = ChildLedger(childrenPerParent: n, now: 0)
        var adopted = 0
        for i in 0..<n + 1 where ledger.adopt("c\(i).w.test", parent: "*.w.test", lastSeen: 0, now: 0) { adopted += 1 }
        #expect(adopted == n)
        #expect(ledger.childCount == n && ledger.pendingCount == 0)
        // The first handshake: served as a child at once, and asked about in the background.
        let first = ledger.offer("c0.w.test", parent: "*.w.test", now: 1)
        #expect(first == .child)
        #expect(ledger.pendingCount == 1)
        // A no forgets it.
        Self.answerAll(&ledger, .no, now: 2)
        #expect(ledger.childCount == n - 1)
    }

    @Test("a parent whose allow file cannot be used refuses its own new names for a minute; no other parent pauses")
    func brokenAllowFileRefusesOnlyItsParent() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        // A child of the broken parent from before: it stays one.
        _ = ledger.offer("old.bad.test", parent: "*.bad.test", now: 0)
        Self.answerAll(&ledger, .yes, now: 0)
        let r1 = ledger.offer("r0.bad.test", parent: "*.bad.test", now: 1)
        #expect(r1 == .queued)
        let asked = ledger.nextAsk(now: 1)
        #expect(asked?.name == "r0.bad.test")
        ledger.refusedParent("r0.bad.test", parent: "*.bad.test", detail: "allowed-children: line 1", now: 1)
        #expect(ledger.refusing(now: 1).map(\.parent) == ["*.bad.test"])
        #expect(ledger.refusing(now: 1).map(\.detail) == ["allowed-children: line 1"])
        // Its random names are refused at once: nothing queued, nothing asked, no rate spent.
        var refused = 0
        for i in 1..<1_000 where ledger.offer("r\(i).bad.test", parent: "*.bad.test", now: 2) == .refused { refused += 1 }
        #expect(refused == 999)
        #expect(ledger.pendingCount == 0)
        let old = ledger.offer("old.bad.test", parent: "*.bad.test", now: 2)
        #expect(old == .child)
        // Every other parent is asked at once: no pause.
        let r2 = ledger.offer("alice.good.test", parent: "*.good.test", now: 3)
        #expect(r2 == .queued)
        #expect(ledger.nextAsk(now: 3)?.name == "alice.good.test")
        // A minute later (N-1 still refused, N asked) the file is read again.
        let r3 = ledger.offer("r1.bad.test", parent: "*.bad.test", now: 1 + L.failureMilliseconds - 1)
        #expect(r3 == .refused)
        let r4 = ledger.offer("r1.bad.test", parent: "*.bad.test", now: 1 + L.failureMilliseconds)
        #expect(r4 == .queued)
        #expect(ledger.refusing(now: 1 + L.failureMilliseconds).isEmpty)
    }

    @Test("a parent nothing can approve for costs no token: the global burst is still whole")
    func refusedParentCostsNoToken() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        _ = ledger.offer("x.none.test", parent: "*.none.test", now: 0)
        if let asked = ledger.nextAsk(now: 0) {
            ledger.refusedParent(asked.name, parent: asked.parent, detail: "no allow file and no acme.ask", now: 0)
        }
        // askBurst names of as many parents: all asked at once (N), the N+1st waits.
        for i in 0..<L.askBurst + 1 { _ = ledger.offer("n.p\(i).test", parent: "*.p\(i).test", now: 0) }
        var asked = 0
        while let next = ledger.nextAsk(now: 0) {
            asked += 1
            _ = ledger.answered(next.name, parent: next.parent, .no, now: 0)
        }
        #expect(asked == L.askBurst)
    }

    @Test("after a failed ask the names waiting are not asked during the pause")
    func pauseHoldsTheQueue() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        for i in 0..<3 { _ = ledger.offer("n\(i).p\(i).test", parent: "*.p\(i).test", now: 0) }
        let first = ledger.nextAsk(now: 0)
        #expect(first != nil)
        _ = first.map { ledger.answered($0.name, parent: $0.parent, .failed, now: 1) }
        let during = ledger.nextAsk(now: 2)
        #expect(during == nil)
        #expect(ledger.pendingCount == 0)
        #expect(ledger.counters.dropped[.paused] == 2)
        // After the pause, offered again, asked again.
        let r1 = ledger.offer("n1.p1.test", parent: "*.p1.test", now: 1 + L.failurePauseFirstMilliseconds)
        #expect(r1 == .queued)
        #expect(ledger.nextAsk(now: 1 + L.failurePauseFirstMilliseconds)?.name == "n1.p1.test")
    }

    @Test("six parents flooded at their full rate (twice the global rate) do not starve a quiet parent's real name")
    func floodsShareTheGlobalRate() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        var askedAt: Int64?
        var i = 0
        // Ninety seconds, one random name a millisecond under each flooded parent (each spends its
        // own rate, 20 a minute: 120 a minute in all), every ask a no.
        for now in stride(from: Int64(0), to: 90_000, by: 1) {
            for p in 0..<6 {
                _ = ledger.offer("r\(i).f\(p).test", parent: "*.f\(p).test", now: now)
                i += 1
            }
            if now == 60_500 {
                let r = ledger.offer("alice.q.test", parent: "*.q.test", now: now)
                #expect(r == .queued)
            }
            while let next = ledger.nextAsk(now: now) {
                if next.name == "alice.q.test" { askedAt = now }
                _ = ledger.answered(next.name, parent: next.parent, .no, now: now)
            }
        }
        let waited = askedAt.map { $0 - 60_500 }
        // Six flooded parents ahead of it at most, one name each, at the global rate of one a second.
        #expect(waited != nil && waited! <= 7_000, "asked after \(waited.map(String.init) ?? "never") ms")
        #expect(ledger.pendingCount <= 6 * L.maximumPendingPerParent)
    }

    @Test("one parent holds maximumPendingPerParent waiting names (N), the N+1st is dropped as full")
    func pendingPerParent() {
        var ledger = ChildLedger(childrenPerParent: 100, now: 0)
        for i in 0..<L.maximumPendingPerParent {
            let r = ledger.offer("n\(i).w.test", parent: "*.w.test", now: 0)
            #expect(r == .queued)
        }
        let r = ledger.offer("one-more.w.test", parent: "*.w.test", now: 0)
        #expect(r == .dropped(.full))
        let other = ledger.offer("n.v.test", parent: "*.v.test", now: 0)
        #expect(other == .queued)
    }

    @Test("a token bucket: burst N, the N+1st waits for the rate")
    func bucket() {
        var bucket = TokenBucket(burst: 3, per: 60, milliseconds: 60_000, now: 0)
        for _ in 0..<3 {
            let has1 = bucket.has(now: 0)
            #expect(has1)
            bucket.take()
        }
        let has2 = bucket.has(now: 999)
        #expect(!has2)
        let has3 = bucket.has(now: 1_000)
        #expect(has3)
        // Never more than the burst, however long idle.
        bucket.take()
        let has4 = bucket.has(now: 10_000_000)
        #expect(has4)
        for _ in 0..<3 { bucket.take() }
        let has5 = bucket.has(now: 10_000_000)
        #expect(!has5)
    }
}
