import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// Wildcard children kept in storage across a restart (`ChildRecords`, `ChildApprovals.adoptStored`):
/// a refused child and one past its grace period are not taken again, a live one is with its
/// last sighting; hostile record files are no records.
@Suite("ACME wildcard children kept in storage")
struct ChildRecordsTests {
    /// Approvals over `storage` with clocks and answers the test moves.
    final class Rig: @unchecked Sendable {  // Mutexes, and a folder only read after init
        let folder: TemporaryDirectory
        let records: ChildRecords
        let clock = Mutex<Int64>(0)
        let wall = Mutex<Int64>(1_800_000_000)
        let answers = Mutex<[String: ChildLedger.Answer]>([:])
        let asked = Mutex<[String]>([])

        init() throws {
            folder = try TemporaryDirectory(prefix: "acme-children")
            _ = try ACMEStorage(root: folder.path("storage"))
            records = ChildRecords(storage: folder.path("storage"))
        }

        func approvals() throws -> ChildApprovals {
            try ChildApprovals(
                childrenPerParent: 100, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), records: records,
                clock: { self.clock.withLock { $0 } }, wallClock: { self.wall.withLock { $0 } }
            ) { name, _, _ in
                self.asked.withLock { $0.append(name) }
                return ChildApprovals.Heard(self.answers.withLock { $0[name] } ?? .no, "test")
            }
        }

        /// Moves both clocks on by `milliseconds`.
        func pass(_ milliseconds: Int64) {
            clock.withLock { $0 += milliseconds }
            wall.withLock { $0 += milliseconds / 1_000 }
        }

        static func parent(_ name: String) -> String? { name.hasSuffix(".w.test") ? "*.w.test" : nil }
    }

    @Test("approve, then refuse: a restart takes back only the child still approved, and asks nothing for it")
    func refusedIsNotTakenBack() throws {
        let rig = try Rig()
        rig.answers.withLock { $0 = ["alice.w.test": .yes, "bob.w.test": .yes] }
        let first = try rig.approvals()
        first.offer("alice.w.test", parent: "*.w.test")
        first.offer("bob.w.test", parent: "*.w.test")
        while first.step() {}
        #expect(Set(first.children().map(\.name)) == ["alice.w.test", "bob.w.test"])
        #expect(rig.records.all().map(\.name) == ["alice.w.test", "bob.w.test"])
        // A day later both yeses have run out; their next handshakes ask again: alice yes, bob no.
        rig.answers.withLock { $0["bob.w.test"] = .no }
        rig.pass(ChildLedger.approvalMilliseconds + 1_000)
        first.offer("alice.w.test", parent: "*.w.test")
        first.offer("bob.w.test", parent: "*.w.test")
        while first.step() {}
        #expect(first.children().map(\.name) == ["alice.w.test"])
        #expect(rig.records.all().map(\.name) == ["alice.w.test"])
        // The restart: only alice is a child (so only alice is wanted and ordered); her yes
        // is still fresh, so her first handshake asks nothing.
        rig.asked.withLock { $0 = [] }
        let second = try rig.approvals()
        #expect(second.adoptStored(parent: Rig.parent) == 1)
        #expect(second.children().map(\.name) == ["alice.w.test"])
        second.offer("alice.w.test", parent: "*.w.test")
        while second.step() {}
        #expect(rig.asked.withLock { $0 }.isEmpty)
        // A name no longer a per-name site's child is not taken.
        let third = try rig.approvals()
        #expect(third.adoptStored { _ in nil } == 0)
    }

    @Test("grace: a restart past it takes nothing back and removes the record; one before it keeps the stored last sighting")
    func graceOutlivesARestart() throws {
        let rig = try Rig()
        rig.answers.withLock { $0 = ["alice.w.test": .yes] }
        let first = try rig.approvals()
        first.offer("alice.w.test", parent: "*.w.test")
        while first.step() {}
        #expect(rig.records.all().count == 1)
        // Ten seconds before the end of the grace period: taken back...
        rig.pass(ChildLedger.graceMilliseconds - 10_000)
        let second = try rig.approvals()
        #expect(second.adoptStored(parent: Rig.parent) == 1)
        // ...and forgotten at the end of it, not a grace period after the restart.
        rig.pass(11_000)
        second.expireIfDue()
        #expect(second.children().isEmpty)
        #expect(rig.records.all().isEmpty)
        // Past the grace period at start: nothing taken, the record removed.
        let rig2 = try Rig()
        rig2.answers.withLock { $0 = ["carol.w.test": .yes] }
        let before = try rig2.approvals()
        before.offer("carol.w.test", parent: "*.w.test")
        while before.step() {}
        rig2.pass(ChildLedger.graceMilliseconds + 1_000)
        let after = try rig2.approvals()
        #expect(after.adoptStored(parent: Rig.parent) == 0)
        #expect(after.children().isEmpty)
        #expect(rig2.records.all().isEmpty)
    }

    @Test("no asker thread runs until a name is offered for an ask, or children were taken back from storage")
    func threadsOnlyWhenNeeded() throws {
        let rig = try Rig()
        let idle = try rig.approvals()
        idle.start()
        #expect(idle.threadCount == 0)
        // The first name to ask about starts them.
        idle.offer("alice.w.test", parent: "*.w.test")
        #expect(idle.threadCount == ChildLedger.maximumAsksInFlight)
        idle.stop()
        try rig.records.write("bob.w.test", ChildRecords.Record(approvedUntil: 0, lastSeen: rig.wall.withLock { $0 }))
        let restarted = try rig.approvals()
        #expect(restarted.adoptStored(parent: Rig.parent) == 1)
        #expect(restarted.threadCount == 0, "not before start")
        restarted.start()
        #expect(restarted.threadCount == ChildLedger.maximumAsksInFlight)
        restarted.stop()
    }

    @Test("stop cuts an ask under way short: the ask sees isCancelled turn true")
    func stopCancelsTheAsk() throws {
        let sawCancel = Mutex(false)
        let approvals = try ChildApprovals(
            childrenPerParent: 10, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        ) { _, _, isCancelled in
            // An ask that answers only when cancelled (at most 30 s: the input, not an order of events).
            let start = Date()
            while !isCancelled() && Date().timeIntervalSince(start) < 30 { usleep(1_000) }
            sawCancel.withLock { $0 = isCancelled() }
            return ChildApprovals.Heard(.failed, "cancelled")
        }
        approvals.start()
        approvals.offer("slow.w.test", parent: "*.w.test")
        #expect(eventually(attempts: 100, interval: 0.05) { approvals.summary().inFlight == 1 })
        let start = Date()
        approvals.stop()
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(sawCancel.withLock { $0 })
    }

    @Test("hostile record files: a symlink, garbage, CR/LF, a number too long (N and N+1 digits), a file too large")
    func hostileRecords() throws {
        let rig = try Rig()
        let directory = rig.records.directory
        func put(_ name: String, _ text: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let n = ChildRecords.maximumDigits
        try put("ok.w.test", "approved-until \(String(repeating: "9", count: n))\nlast-seen 1\n")
        try put("long.w.test", "approved-until \(String(repeating: "9", count: n + 1))\nlast-seen 1\n")
        try put("crlf.w.test", "approved-until 1\r\nlast-seen 1\r\n")
        try put("minus.w.test", "approved-until -1\nlast-seen 1\n")
        try put("extra.w.test", "approved-until 1\nlast-seen 1\n\n")
        try put("big.w.test", String(repeating: "#", count: ChildRecords.maximumRecordBytes + 1))
        try put("Upper.w.test", "approved-until 1\nlast-seen 1\n")
        try put("elsewhere", "approved-until 1\nlast-seen 1\n")
        try FileManager.default.createSymbolicLink(atPath: directory + "/link.w.test", withDestinationPath: directory + "/elsewhere")
        #expect(rig.records.all().map(\.name) == ["elsewhere", "ok.w.test"])
        #expect(rig.records.read("link.w.test") == nil)
    }

    @Test("digested records (names past 225 bytes) older than the grace period are removed, 64 a pass; a fresh one and a link stay")
    func staleDigestedRecordsAreRemoved() throws {
        let rig = try Rig()
        let wall = rig.wall.withLock { $0 }
        let grace = ChildLedger.graceMilliseconds / 1_000
        let directory = rig.records.directory
        func name(_ i: Int) -> String {
            let label = String(format: "%03d", i) + String(repeating: "a", count: 60)
            return [
                label, String(repeating: "b", count: 63), String(repeating: "c", count: 63), String(repeating: "d", count: 40), "w.test",
            ]
            .joined(separator: ".")
        }
        func put(_ i: Int, writtenAt time: Int64) throws {
            try rig.records.write(name(i), .init(approvedUntil: wall, lastSeen: wall))
            let path = directory + "/" + (try StorageName.component(name(i)))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: Double(time))], ofItemAtPath: path)
        }
        func digested() -> Set<String> {
            Set(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter(StorageName.isDigested))
        }
        let n = ChildRecords.maximumStaleRemovals
        for i in 0...n { try put(i, writtenAt: wall - grace - 1) }
        try put(900, writtenAt: wall - grace)
        try put(901, writtenAt: wall)
        // A link at a digested name, to a file outside: neither is removed.
        try Data("approved-until 1\nlast-seen 1\n".utf8).write(to: URL(fileURLWithPath: rig.folder.path("outside")))
        let link = try StorageName.component(name(902))
        try FileManager.default.createSymbolicLink(atPath: directory + "/" + link, withDestinationPath: rig.folder.path("outside"))
        #expect(digested().count == n + 4)
        // At start: N of the N+1 past the grace period go, the one at it stays.
        let approvals = try rig.approvals()
        #expect(approvals.adoptStored(parent: Rig.parent) == 0)
        #expect(digested().count == 4)
        // The asker's first look takes the last one; the next sweep comes an hour later.
        approvals.expireIfDue()
        let kept = try Set([900, 901].map { try StorageName.component(name($0)) } + [link])
        #expect(digested() == kept)
        rig.pass(ChildApprovals.sweepIntervalMilliseconds - 1_000)
        approvals.expireIfDue()
        #expect(digested() == kept)
        rig.pass(1_000)
        approvals.expireIfDue()
        #expect(digested() == kept.subtracting([try StorageName.component(name(900))]))
        #expect(FileManager.default.fileExists(atPath: rig.folder.path("outside")))
    }
}
