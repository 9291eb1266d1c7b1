import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// The records replicas share in the storage directory (`ReplicaRecords`, ReplicaRecordsRig.swift)
/// against what may be found there: links, FIFOs, garbage, files renamed in between, a folder
/// filled past its bounds.
@Suite("ACME replicas: hostile record files and the demand folder's bounds")
struct ReplicaRecordsTests: ReplicaRecordsRig {
    let folder: TemporaryDirectory
    let offset = TestClock()

    init() throws { folder = try Self.storageFolder() }

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
