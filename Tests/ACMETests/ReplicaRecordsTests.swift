import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// What replicas sharing a storage directory tell each other (`ReplicaRecords`): a failed order's
/// back-off and the names asked for. Two managers on one directory stand for two replicas; their
/// threads are never started, so each step is driven here, and the CA (127.0.0.1:1) refuses
/// every connection, which makes an order fail at once, before the budget is spent.
@Suite("ACME replicas: shared back-off and demand")
struct ReplicaRecordsTests {
    let folder: TemporaryDirectory
    /// Seconds added to `start`: the managers' clock.
    let offset = TestClock()
    static let start: Int64 = 1_800_000_000

    init() throws {
        folder = try TemporaryDirectory(prefix: "acme-replicas")
        _ = try ACMEStorage(root: folder.path("storage"))
    }

    /// `skew`: seconds this manager's clock runs ahead of the others'. `log`: where its warnings go.
    func manager(
        rescan: Int64 = CertificateManager.Configuration.defaultRescanInterval, namesPerSite: Int = 100, skew: Int64 = 0,
        log: LogLines? = nil
    ) throws -> CertificateManager {
        let configuration = CertificateManager.Configuration(
            directory: try ACMEURL("https://127.0.0.1:1/dir"), storage: folder.path("storage"), ordersPerHour: 60,
            namesPerSite: namesPerSite, rescanInterval: rescan)
        let offset = self.offset
        return try CertificateManager(
            configuration: configuration, clock: CertificateManager.Clock(now: { Self.start + offset() + skew }, monotonic: { 0 }),
            logger: log?.logger ?? Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    }

    /// The CA's refusal of a name (an authorization it found invalid): what every replica meets.
    static let refusal = ACMEError.invalid(what: "authorization", problem: ACMEProblem(type: ACMEProblem.namespace + "unauthorized"))

    var now: Int64 { Self.start + offset() }
    var records: ReplicaRecords { ReplicaRecords(storage: try! ACMEStorage(root: folder.path("storage"))) }

    /// The demand folder's names as readdir gives them (a name that is not UTF-8 with U+FFFD).
    func demandFiles() -> [String] {
        guard let directory = opendir(folder.path("storage/demand")) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Sets a file's modification time (seconds since the epoch, on the tests' clock).
    func touch(_ path: String, at time: Int64) throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(time))], ofItemAtPath: path)
    }

    // MARK: - Hostile records first

    @Test("a record that is a symlink, a FIFO, a directory, a huge file or garbage is absent: nothing blocks, nothing is followed")
    func hostileRecords() throws {
        let one = try manager()
        let dir = folder.path("storage/backoff")
        let bait = folder.path("bait")
        try Array("failed-at \(now)\nfailures 3\nnext-attempt \(now + 600)\n".utf8).write(to: bait)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link.test", withDestinationPath: bait)
        #expect(mkfifo(dir + "/fifo.test", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: dir + "/dir.test", withIntermediateDirectories: false)
        try Array(repeating: UInt8(ascii: "1"), count: ReplicaRecords.maximumRecordBytes + 1).write(to: dir + "/huge.test")
        let garbage: [String] = [
            "", "failed-at 1\nfailures 1\n", "failed-at 1\nfailures 1\nnext-attempt 9\nextra 1\n",
            "failed-at -1\nfailures 1\nnext-attempt 9\n",
            "failed-at 1\nfailures 1\nnext-attempt 9", "failed-at 1\r\nfailures 1\r\nnext-attempt 9\r\n",
            "failed-at 1\nfailures 1\nnext-attempt 1234567890123\n", "failed-at 1\nfailures 99999999999999999999\nnext-attempt 9\n",
            "\u{0}\u{ff}\n\n\n",
        ]
        for (i, text) in garbage.enumerated() { try Array(text.utf8).write(to: dir + "/g\(i).test") }
        for name in ["link.test", "fifo.test", "dir.test", "huge.test"] + garbage.indices.map({ "g\($0).test" }) {
            #expect(records.failure(name) == nil, "\(name)")
            // Absent: the order goes ahead (here it fails at the CA at once, as an order would).
            #expect(!one.adoptSharedBackoff(name, now: now), "\(name)")
        }
        // A hard link to another file: written over, the name gets a new file and the other
        // file keeps its bytes.
        try FileManager.default.linkItem(atPath: bait, toPath: dir + "/hard.test")
        try records.writeFailure("hard.test", .init(failedAt: now, failures: 1, nextAttempt: now + 60))
        #expect(records.failure("hard.test") == .init(failedAt: now, failures: 1, nextAttempt: now + 60))
        // The bait behind the links is untouched.
        #expect(records.failure("bait.test") == nil)
        #expect(try String(contentsOfFile: bait, encoding: .utf8) == "failed-at \(now)\nfailures 3\nnext-attempt \(now + 600)\n")
        // Names that are not host names never name a file.
        for name in ["../bait", "a/b.test", "A.TEST", "a.test\u{0}", ".hidden", "_wildcard_.a.test", ""] {
            #expect(throws: ACMEError.self) { try records.writeFailure(name, .init(failedAt: 1, failures: 1, nextAttempt: 2)) }
            #expect(throws: ACMEError.self) { try records.writeDemand(name, at: 1) }
        }
        // A wildcard's record is spelled as its certificate's file is.
        try records.writeDemand("*.w.test", at: now)
        #expect(demandFiles() == ["_wildcard_.w.test"])
        #expect(records.demands(now: now) == ["*.w.test": now])
    }

    @Test("demand records: a symlink, FIFO, garbage or expired record is no demand and is removed; a stray file is left")
    func hostileDemandRecords() throws {
        let dir = folder.path("storage/demand")
        let bait = folder.path("bait")
        try Array("demanded-at \(now)\n".utf8).write(to: bait)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link.test", withDestinationPath: bait)
        #expect(mkfifo(dir + "/fifo.test", 0o600) == 0)
        try Array("demanded-at x\n".utf8).write(to: dir + "/garbage.test")
        try Array(repeating: UInt8(ascii: "1"), count: ReplicaRecords.maximumRecordBytes + 1).write(to: dir + "/huge.test")
        try records.writeDemand("old.test", at: now - ReplicaRecords.demandLifetime)
        try records.writeDemand("live.test", at: now - ReplicaRecords.demandLifetime + 1)
        // A directory at a record's name, a name that is not UTF-8, temporary files: no record,
        // never counted; a temporary file is removed once `temporaryLifetime` old (N), not before.
        try FileManager.default.createDirectory(atPath: dir + "/dir.test", withIntermediateDirectories: false)
        let badName: [CChar] = Array((dir + "/").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0x2E, 0x74, 0]
        let fd = open(badName, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        close(fd)
        let lifetime = ReplicaRecords.temporaryLifetime
        for (file, age) in [(".live.test.tmp-1", lifetime - 1), (".old.test.tmp-2", lifetime)] {
            try Array("x".utf8).write(to: dir + "/" + file)
            try touch(dir + "/" + file, at: now - age)
        }
        #expect(records.demandRecordCount() == 6)
        #expect(records.demands(now: now) == ["live.test": now - ReplicaRecords.demandLifetime + 1])
        #expect(Set(demandFiles()) == ["live.test", ".live.test.tmp-1", "dir.test", "\u{FFFD}.t"])
        #expect(records.demandRecordCount() == 1)
        #expect(FileManager.default.fileExists(atPath: bait))
    }

    @Test("an expired record is removed only while it is still the file that was read, never one renamed there since")
    func removalSparesAFreshRecord() throws {
        let path = folder.path("storage/demand/race.test")
        try records.writeDemand("race.test", at: now - ReplicaRecords.demandLifetime)
        let read = try #require(ReplicaRecords.linkStatus(path))
        // Another replica's fresh record lands between the read and the unlink.
        try records.writeDemand("race.test", at: now)
        ReplicaRecords.removeIfUnchanged(path, read)
        #expect(records.demands(now: now) == ["race.test": now])
        ReplicaRecords.removeIfUnchanged(path, try #require(ReplicaRecords.linkStatus(path)))
        #expect(demandFiles().isEmpty)
    }

    @Test("a look at storage spares a fresh record renamed in between its read of the expired one and the removal")
    func demandsSpareAFreshRecord() throws {
        try records.writeDemand("race.test", at: now - ReplicaRecords.demandLifetime)
        let writer = records
        let fresh = now
        var reader = records
        reader.beforeRemoval = { _ in try? writer.writeDemand("race.test", at: fresh) }
        #expect(reader.demands(now: now).isEmpty)
        #expect(records.demands(now: now) == ["race.test": now])
    }

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

    // MARK: - Two replicas

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

    @Test("the demand records' bound: with N-1 files one more is written, with N none; the name stays demanded on its replica")
    func demandRecordBound() throws {
        let n = ReplicaRecords.maximumDemandRecords
        let a = try manager()
        a.want(["x.test": ["x.test"], "y.test": ["y.test"]])
        // Another replica's records (written plainly: 255 atomic writes would sync 510 times),
        // and what is no record, which does not count: a directory, temporary files.
        for i in 0..<(n - 1) { try Array("demanded-at \(now)\n".utf8).write(to: folder.path("storage/demand/other\(i).test")) }
        try FileManager.default.createDirectory(atPath: folder.path("storage/demand/dir.test"), withIntermediateDirectories: false)
        for i in 0..<3 {
            try Array("x".utf8).write(to: folder.path("storage/demand/.x\(i).test.tmp-\(i)"))
            try touch(folder.path("storage/demand/.x\(i).test.tmp-\(i)"), at: now)
        }
        a.demand("x.test")
        a.demand("y.test")
        a.takeDemand(now: now)
        #expect(demandFiles().count == n + 4)
        #expect(records.demands(now: now).count == n)
        #expect(Set(a.demandedNames()) == ["x.test", "y.test"])
        #expect(FileManager.default.fileExists(atPath: folder.path("storage/demand/x.test")))
        #expect(!FileManager.default.fileExists(atPath: folder.path("storage/demand/y.test")))
        // Full, x's own record is still rewritten in place when due (it adds no file).
        let half = ReplicaRecords.demandLifetime / 2
        a.shareDemand(now: now + half)
        #expect(records.demands(now: now + half)["x.test"] == now + half)
        #expect(demandFiles().count == n + 4)
        // A slot freed: the next look at storage writes the one left out.
        try FileManager.default.removeItem(atPath: folder.path("storage/demand/other0.test"))
        a.shareDemand(now: now + half)
        #expect(FileManager.default.fileExists(atPath: folder.path("storage/demand/y.test")))
    }

    @Test("the demand folder's listing bound: with N entries (few records) one more is written, past N it counts as full")
    func demandEntriesBound() throws {
        let n = ReplicaRecords.maximumDemandEntries
        let a = try manager()
        a.want(["x.test": ["x.test"], "y.test": ["y.test"]])
        for i in 0..<(n - 1) { try Array("x".utf8).write(to: folder.path("storage/demand/.t\(i).test.tmp-\(i)")) }
        #expect(records.demandRecordCount() == 0)
        a.demand("x.test")
        a.takeDemand(now: now)
        #expect(demandFiles().count == n)
        #expect(records.demandRecordCount() == 1)
        try Array("x".utf8).write(to: folder.path("storage/demand/.u.test.tmp-1"))
        #expect(records.demandRecordCount() == ReplicaRecords.maximumDemandRecords)
        a.demand("y.test")
        a.takeDemand(now: now)
        #expect(!FileManager.default.fileExists(atPath: folder.path("storage/demand/y.test")))
    }
}

extension Array where Element == UInt8 {
    /// A plain write (Foundation's may sync: 255 of them took seconds on a loaded machine).
    fileprivate func write(to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        guard withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == count else { throw POSIXError(.EIO) }
    }
}
