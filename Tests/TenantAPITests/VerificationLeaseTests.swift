import Foundation
import Glibc
import Logging
import TestSupport
import Testing

@testable import TenantAPI

/// One checker per config volume (Sources/TenantAPI/VerificationLease.swift): replicas sharing a
/// config directory each run a checker; only the holder of `.aasad-verify/checker.lock` makes
/// requests, the others read records; when the holder stops, another takes over.
@Suite(.serialized) struct VerificationLeaseTests {
    func checker(_ store: VerificationStore, port: Int) -> VerificationChecker {
        var configuration = VerificationChecker.Configuration(port: port, allowsPrivateAddresses: true)
        configuration.timeoutMilliseconds = 1_000
        return VerificationChecker(store: store, configuration: configuration, logger: Logger(label: "test")) { _ in }
    }

    /// Requests the stand-in server answered on the answer path.
    func hits(_ log: String) -> Int {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.hasPrefix("/.well-known/aasad-verify/") }.count
    }

    func attempted(_ directory: TemporaryDirectory, _ names: [String]) throws -> Bool {
        let look = try VerificationStore(configDirectory: directory.path, creates: false)
        return names.allSatisfy { (look.reread($0)?.attempts ?? 0) >= 1 }
    }

    @Test func twoReplicasOnOneDirectoryCheckEachNameOnceAndTheOtherTakesOverWhenTheHolderStops() throws {
        let directory = try TemporaryDirectory(prefix: "verify-lease")
        let log = directory.path + "/hits.log"
        let server = try StandInServer(mode: "count", body: log)
        let first = try VerificationStore(configDirectory: directory.path)
        let second = try VerificationStore(configDirectory: directory.path, creates: false)
        let names = (1...6).map { "n\($0).localhost" }
        for name in names { try first.create(name, now: 0) }
        second.refresh()
        #expect(second.due(now: 1, limit: 100).count == names.count, "both replicas see every name due")
        let a = checker(first, port: server.port)
        let b = checker(second, port: server.port)
        a.start()
        b.start()
        defer {
            a.stop()
            b.stop()
        }
        #expect(try eventually { try attempted(directory, names) })
        // Both loops turn at least twice more after every name was checked: the one without the
        // lease had its passes, and made no request.
        let turns = (a.passes.load(ordering: .acquiring), b.passes.load(ordering: .acquiring))
        #expect(eventually { a.passes.load(ordering: .acquiring) >= turns.0 + 2 && b.passes.load(ordering: .acquiring) >= turns.1 + 2 })
        #expect(a.holdsLease != b.holdsLease, "exactly one holds the lease")
        #expect(hits(log) == names.count, "each name checked once, by one replica: \(hits(log))")

        // The holder stops (as a replica that exits or dies): the other takes the lease and checks
        // the names added since.
        let (holder, other) = a.holdsLease ? (a, b) : (b, a)
        holder.stop()
        let later = ["m1.localhost", "m2.localhost"]
        for name in later { try first.create(name, now: 0) }
        (other === b ? second : first).refresh()
        #expect(eventually { other.holdsLease })
        #expect(try eventually { try attempted(directory, later) })
        #expect(eventually { hits(log) == names.count + later.count }, "\(hits(log))")
    }

    @Test func aLockHeldByAnotherOpenFileKeepsThisCheckerFromRequestsAndItsFileRemovedIsTakenAnew() throws {
        let directory = try TemporaryDirectory(prefix: "verify-lease")
        let store = try VerificationStore(configDirectory: directory.path)
        let lockPath = store.directory + "/" + CheckerLease.fileName
        // Another process's lock: a descriptor of its own on the same file.
        let other = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(other >= 0 && flock(other, LOCK_EX | LOCK_NB) == 0)
        let lease = CheckerLease(path: lockPath)
        #expect(!lease.take(logger: Logger(label: "test")))
        close(other)
        #expect(lease.take(logger: Logger(label: "test")))
        // Removed under the holder (an operator's rm): a new file another replica could lock;
        // the holder lets its old one go and locks the new one.
        #expect(unlink(lockPath) == 0)
        let intruder = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(intruder >= 0 && flock(intruder, LOCK_EX | LOCK_NB) == 0)
        #expect(!lease.take(logger: Logger(label: "test")), "kept a lock on a file no longer there")
        close(intruder)
        #expect(lease.take(logger: Logger(label: "test")))
        lease.release()
        // A symbolic link planted as the lock file is not followed.
        #expect(unlink(lockPath) == 0)
        #expect(symlink(directory.path + "/elsewhere", lockPath) == 0)
        #expect(!lease.take(logger: Logger(label: "test")))
        #expect(access(directory.path + "/elsewhere", F_OK) != 0)
    }
}

/// The checker's pass takes due names from a heap by next check (VerificationStore.Records.due),
/// kept as records change, instead of copying and sorting every record each second.
@Suite struct VerificationDueOrderTests {
    func record(_ name: String, next: Double, verified: Bool = false, token: String = "t") -> VerificationRecord {
        VerificationRecord(name: name, token: token, verified: verified, attempts: 0, lastCheck: nil, lastError: nil, nextCheck: next)
    }

    @Test func dueNamesComeEarliestFirstUpToTheLimitAndNeverTwice() {
        var r = VerificationStore.Records()
        for (i, next) in [50.0, 10, 40, 30, 20, 60, 5].enumerated() { r.set("n\(i).test", record("n\(i).test", next: next)) }
        r.set("v.test", record("v.test", next: 1, verified: true))
        r.set("p.test", record("p.test", next: 1, token: ""))
        // Ties broken by name, as bytes.
        r.set("b.test", record("b.test", next: 20))
        #expect(r.due(now: 30, limit: 16).map(\.name) == ["n6.test", "n1.test", "b.test", "n4.test", "n3.test"])
        #expect(r.due(now: 30, limit: 2).map(\.name) == ["n6.test", "n1.test"])
        #expect(r.due(now: 4, limit: 16).isEmpty)
        // A record written again (a check's outcome): only its new time counts, once.
        r.set("n6.test", record("n6.test", next: 100))
        r.set("n1.test", record("n1.test", next: 10))
        r.set("n1.test", record("n1.test", next: 10))
        #expect(r.due(now: 30, limit: 16).map(\.name) == ["n1.test", "b.test", "n4.test", "n3.test"])
        // Verified, removed: gone from the order.
        r.set("n1.test", record("n1.test", next: 10, verified: true))
        r.set("b.test", nil)
        #expect(r.due(now: 1000, limit: 16).map(\.name) == ["n4.test", "n3.test", "n2.test", "n0.test", "n5.test", "n6.test"])
    }

    @Test func staleEntriesAreDroppedWhenTheHeapGrowsPastItsBound() {
        var r = VerificationStore.Records()
        for i in 0..<10 { r.set("n\(i).test", record("n\(i).test", next: 1)) }
        for round in 0..<VerificationStore.staleEntriesKept + 100 {
            r.set("n0.test", record("n0.test", next: 2 + Double(round)))
        }
        #expect(r.dueHeap.count <= 2 * 10 + VerificationStore.staleEntriesKept + 1)
        #expect(r.due(now: 1, limit: 16).count == 9)
    }

    @Test func aStoreOrdersWhatItWritesAndWhatARefreshReads() throws {
        let directory = try TemporaryDirectory(prefix: "verify-due")
        let store = try VerificationStore(configDirectory: directory.path)
        try store.write(record("b.test", next: 20, token: "x"))
        try store.write(record("a.test", next: 30, token: "y"))
        let other = try VerificationStore(configDirectory: directory.path, creates: false)
        try store.write(record("c.test", next: 10, token: "z"))
        other.refresh()
        #expect(other.due(now: 100, limit: 16).map(\.name) == ["c.test", "b.test", "a.test"])
        #expect(store.due(now: 25, limit: 16).map(\.name) == ["c.test", "b.test"])
    }

    /// The cost of a pass at 100,000 unverified names, before (a copy, a filter and a sort of
    /// every record, as the checker did) and after (the heap). Run by hand, it prints both:
    /// `AASAD_BENCH=1 swift test --skip-build --filter VerificationDueOrderTests/passCost`
    @Test(.enabled(if: ProcessInfo.processInfo.environment["AASAD_BENCH"] != nil)) func passCost() throws {
        let directory = try TemporaryDirectory(prefix: "verify-cost")
        let store = try VerificationStore(configDirectory: directory.path)
        let names = store.directory + "/names/"
        let encoder = JSONEncoder()
        for i in 0..<100_000 {
            let name = "n\(i).test"
            let data = try encoder.encode(record(name, next: Double(1_000 + (i * 7919) % 100_000), token: "t\(i)"))
            try data.write(to: URL(fileURLWithPath: names + name + ".json"))
        }
        store.refresh()
        for now in [0.0, 1e9] {
            let clock = ContinuousClock()
            let before = clock.measure {
                for _ in 0..<10 {
                    _ = store.all().filter { !$0.verified && $0.nextCheck <= now }.sorted { $0.nextCheck < $1.nextCheck }.prefix(16)
                }
            }
            let after = clock.measure { for _ in 0..<10 { _ = store.due(now: now, limit: 16) } }
            print("pass at 100,000 unverified, \(now == 0 ? "none due" : "all due"): before \(before / 10), after \(after / 10)")
        }
    }
}
