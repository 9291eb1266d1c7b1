import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// A failed order's back-off shared through the storage directory (`ReplicaRecords`,
/// ReplicaRecordsRig.swift): which failures are shared, clocks that disagree, two replicas.
@Suite("ACME replicas: shared back-off")
struct ReplicaBackoffTests: ReplicaRecordsRig {
    let folder: TemporaryDirectory
    let offset = TestClock()

    init() throws { folder = try Self.storageFolder() }

    @Test("which failures are the CA's verdict on the name, shared with every replica, and which are one replica's")
    func verdicts() {
        let problem = { (type: String) in ACMEProblem(type: ACMEProblem.namespace + type) }
        var limited = problem("badNonce")
        limited.retryAfter = 60
        let shared: [ACMEError] = [
            .problem(problem("rejectedIdentifier"), status: 400), .problem(problem("caa"), status: 403),
            .problem(problem("compound"), status: 403), .problem(problem("rateLimited"), status: 429),
            .problem(problem("unauthorized"), status: 499), .problem(limited, status: 429), Self.refusal,
            .timedOut(what: "authorization", retryAfter: nil), .timedOut(what: "order", retryAfter: 600),
            .invalid(what: "authorization", problem: nil), .invalid(what: "challenge", problem: problem("incorrectResponse")),
        ]
        let own: [ACMEError] = [
            .transport("Couldn't connect to server"), .request("not a DNS name"), .crypto("EVP_DigestSign failed"),
            .storage("the dns hook failed"), .malformed(what: "directory", reason: "not JSON"),
            .noChallenge(name: "*.a.test", offered: ["dns-01"], answerable: ["http-01"]),
            .problem(problem("accountDoesNotExist"), status: 400), .problem(problem("badNonce"), status: 400),
            .problem(problem("serverInternal"), status: 500), .problem(problem("malformed"), status: 400),
            .problem(problem("badCSR"), status: 400), .problem(problem("orderNotReady"), status: 403),
            .problem(ACMEProblem(type: "about:blank"), status: 403), .problem(ACMEProblem(type: "caa"), status: 403),
            .problem(problem("rejectedIdentifier"), status: 500), .problem(problem("caa"), status: 399),
            .invalid(what: "order", problem: problem("badCSR")), .invalid(what: "order", problem: problem("serverInternal")),
        ]
        for error in shared { #expect(error.isVerdictOnName, "\(error)") }
        for error in own { #expect(!error.isVerdictOnName, "\(error)") }
    }

    @Test("clock skew: a wait is the writer's, cut to the longest back-off; a failure dated past the tolerance ahead is absent")
    func backoffSkew() {
        let longest = Backoff.longestWait
        let tolerance = ReplicaRecords.clockSkewTolerance
        typealias F = ReplicaRecords.Failure
        // The longest wait is kept; one second more is cut to it.
        #expect(BackoffRecord.effectiveNextAttempt(F(failedAt: now, failures: 1, nextAttempt: now + longest), now: now) == now + longest)
        #expect(
            BackoffRecord.effectiveNextAttempt(F(failedAt: now, failures: 1, nextAttempt: now + longest + 1), now: now) == now + longest)
        #expect(BackoffRecord.effectiveNextAttempt(F(failedAt: 0, failures: 1, nextAttempt: .max), now: now) == longest)
        #expect(BackoffRecord.effectiveNextAttempt(F(failedAt: .max, failures: 1, nextAttempt: .max), now: now) == nil)
        // A writer at the tolerance ahead (N): its wait holds, and read again once it has passed,
        // the record lets the order go (the wait does not start again at every read).
        let atTolerance = F(failedAt: now + tolerance, failures: 1, nextAttempt: now + tolerance + 60)
        let first = BackoffRecord.effectiveNextAttempt(atTolerance, now: now)
        #expect(first == now + tolerance + 60)
        for later in [now + 60, now + tolerance, now + tolerance + 60] {
            #expect(BackoffRecord.effectiveNextAttempt(atTolerance, now: later) == first, "\(later - now)")
        }
        // One second further ahead (N+1), or a day ahead: absent, at the first read and later.
        #expect(
            BackoffRecord.effectiveNextAttempt(F(failedAt: now + tolerance + 1, failures: 1, nextAttempt: now + tolerance + 61), now: now)
                == nil)
        let dayAhead = F(failedAt: now + 86_400, failures: 1, nextAttempt: now + 86_460)
        for later in [now, now + 60, now + 120] { #expect(BackoffRecord.effectiveNextAttempt(dayAhead, now: later) == nil) }
        // Written again on the reader's clock: the writer's wait (cut) and count, never negative.
        #expect(BackoffRecord.rebased(dayAhead, now: now) == F(failedAt: now, failures: 1, nextAttempt: now + 60))
        #expect(
            BackoffRecord.rebased(F(failedAt: .max, failures: -3, nextAttempt: .max - 5), now: now)
                == F(failedAt: now, failures: 0, nextAttempt: now))
        #expect(BackoffRecord.rebased(F(failedAt: .min, failures: 9, nextAttempt: .max), now: now).nextAttempt == now + longest)
        // A day behind: the wait is over here (one more order).
        #expect(
            BackoffRecord.effectiveNextAttempt(F(failedAt: now - 86_400, failures: 1, nextAttempt: now - 86_340), now: now)! < now)
        // Going backwards is no wait.
        #expect(BackoffRecord.effectiveNextAttempt(F(failedAt: now, failures: 1, nextAttempt: now - 5), now: now) == now)
    }

    @Test("a writer a day ahead: the reader writes the record again on its clock, waits the writer's wait once, and logs it once")
    func skewedWriterIsRebased() throws {
        let log = LogLines()
        let a = try manager(log: log)
        let ahead = try manager(skew: 86_400)
        a.want(["fail.test": ["fail.test"]])
        ahead.want(["fail.test": ["fail.test"]])
        ahead.failed("fail.test", Self.refusal, lockHeld: true)
        let written = try #require(records.failure("fail.test"))
        #expect(written.failedAt == now + 86_400)
        // A takes the lock: the record is dated past the tolerance; A writes it on its own
        // clock with the writer's wait and count, and waits without an order.
        a.order("fail.test", tier: .new)
        #expect(a.counters().failed == 0)
        let rebased = try #require(records.failure("fail.test"))
        #expect(rebased == ReplicaRecords.Failure(failedAt: now, failures: 1, nextAttempt: now + written.nextAttempt - written.failedAt))
        #expect(a.status(of: "fail.test")?.nextAttempt == rebased.nextAttempt)
        // Read again, the wait is not counted afresh, and nothing more is logged.
        offset.advance(rebased.nextAttempt - now)
        a.order("fail.test", tier: .new)
        #expect(a.counters().failed == 1)
        let skew = log.warnings().filter { $0.message.contains("dated ahead of this clock") }
        #expect(skew.count == 1 && skew.first?.metadata["name"] == "fail.test", "\(skew)")
    }

    @Test("a rebase that cannot be written: the skew and the failed write are logged once, and the wait still holds once")
    func unwritableRebase() throws {
        let log = LogLines()
        let a = try manager(log: log)
        a.failureWriteFault.withLock { $0 = { _ in .storage("the volume refuses writes") } }
        a.want(["fail.test": ["fail.test"]])
        let skewed = ReplicaRecords.Failure(failedAt: now + 86_400, failures: 1, nextAttempt: now + 86_460)
        try records.writeFailure("fail.test", skewed)
        let start = now
        a.order("fail.test", tier: .new)
        #expect(records.failure("fail.test") == skewed)
        #expect(a.status(of: "fail.test")?.nextAttempt == start + 60)
        // Read again with the same record: the first read's rebase holds (no wait counted
        // afresh), and nothing more is logged.
        offset.advance(30)
        a.order("fail.test", tier: .new)
        #expect(a.counters().failed == 0)
        #expect(a.status(of: "fail.test")?.nextAttempt == start + 60)
        let skew = { log.warnings().filter { $0.message.contains("dated ahead of this clock") }.count }
        let unwritten = log.warnings().filter { $0.message.contains("cannot record a failed order's back-off") }
        #expect(skew() == 1 && unwritten.count == 1, "\(log.warnings().map(\.message))")
        // Its wait over, the name is ordered (and refused at once here).
        offset.advance(30)
        a.order("fail.test", tier: .new)
        #expect(a.counters().failed == 1)
        // Another record dated ahead is another skew, logged.
        try records.writeFailure("fail.test", .init(failedAt: now + 86_400, failures: 5, nextAttempt: now + 86_460))
        a.order("fail.test", tier: .new)
        #expect(skew() == 2)
    }

    @Test("a reader 10 minutes slow keeps a correct replica's record: it waits, and the next refusal counts 2 for every replica")
    func slowReaderKeepsTheRecord() throws {
        let b = try manager()
        let slow = try manager(skew: -600)
        b.want(["fail.test": ["fail.test"]])
        slow.want(["fail.test": ["fail.test"]])
        b.failed("fail.test", Self.refusal, lockHeld: true)
        let written = try #require(records.failure("fail.test"))
        let wait = written.nextAttempt - written.failedAt
        slow.order("fail.test", tier: .demanded)
        #expect(slow.counters().failed == 0)
        let kept = try #require(records.failure("fail.test"))
        #expect(kept == ReplicaRecords.Failure(failedAt: now - 600, failures: 1, nextAttempt: now - 600 + wait), "\(kept)")
        #expect(slow.nextDue(now: now - 600 + wait - 1) == nil)
        // Its wait over, the slow replica is refused again: the count carries on, for all.
        offset.advance(wait)
        #expect(slow.nextDue(now: now - 600)?.0 == "fail.test")
        slow.failed("fail.test", Self.refusal, lockHeld: true)
        #expect(records.failure("fail.test")?.failures == 2)
    }

    @Test("a name the CA refuses on replica B is not ordered by replica A before B's back-off ends; A's next refusal doubles it for both")
    func failedOrderBacksOffEveryReplica() throws {
        let a = try manager()
        let b = try manager()
        a.want(["fail.test": ["fail.test"]])
        b.want(["fail.test": ["fail.test"]])
        // B's order, its lock held, refused at the CA.
        b.failed("fail.test", Self.refusal, lockHeld: true)
        #expect(b.counters().failed == 1)
        let next = try #require(b.status(of: "fail.test")?.nextAttempt)
        #expect(next > now && next <= now + Backoff.firstDelay)
        #expect(records.failure("fail.test")?.failures == 1)
        // A takes the lock, reads B's back-off and places no order (it would fail, counted).
        a.order("fail.test", tier: .demanded)
        #expect(a.counters().failed == 0)
        let seen = try #require(a.status(of: "fail.test"))
        #expect(seen.state == .failed && seen.nextAttempt == next, "\(seen)")
        #expect(a.nextDue(now: now) == nil)
        #expect(a.nextDue(now: next - 1) == nil)
        // The back-off over: A orders, is refused, and backs off twice as long, for B too.
        offset.advance(next - now)
        #expect(a.nextDue(now: now)?.0 == "fail.test")
        a.failed("fail.test", Self.refusal, lockHeld: true)
        let second = try #require(records.failure("fail.test"))
        #expect(second.failures == 2 && second.nextAttempt > now + Backoff.firstDelay, "\(second)")
        b.order("fail.test", tier: .new)
        #expect(b.counters().failed == 1)
        #expect(b.status(of: "fail.test")?.nextAttempt == second.nextAttempt)
    }

    @Test("a hostile count at the record's largest value, adopted and counted one more, is written as a record every replica reads")
    func hugeCountStaysReadable() throws {
        let a = try manager()
        a.want(["fail.test": ["fail.test"]])
        let largest = RecordText.maximumValue
        try records.writeFailure("fail.test", .init(failedAt: now - 1_000, failures: Int(largest), nextAttempt: now - 900))
        a.order("fail.test", tier: .new)
        a.failed("fail.test", Self.refusal, lockHeld: true)
        #expect(records.failure("fail.test")?.failures == Int(largest))
        // A time past the largest is written as the largest, and read.
        try records.writeFailure("fail.test", .init(failedAt: .max, failures: 1, nextAttempt: .max))
        #expect(records.failure("fail.test") == .init(failedAt: largest, failures: 1, nextAttempt: largest))
    }

    @Test("a failure of replica B's own (no answer from the CA, its DNS hook) backs the name off on B only")
    func ownFailureStaysOwn() throws {
        let a = try manager()
        let b = try manager()
        a.want(["fail.test": ["fail.test"]])
        b.want(["fail.test": ["fail.test"]])
        b.order("fail.test", tier: .new)
        #expect(b.counters().failed == 1)
        #expect(b.status(of: "fail.test")?.state == .failed)
        b.failed("fail.test", ACMEError.storage("the dns hook add failed (exit 1)"), lockHeld: true)
        #expect(records.failure("fail.test") == nil)
        // A is not held back: it orders (and fails at the CA itself).
        #expect(a.nextDue(now: now)?.0 == "fail.test")
        a.order("fail.test", tier: .new)
        #expect(a.counters().failed == 1)
    }
}
