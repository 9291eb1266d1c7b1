import CAASALinux
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// A clock the test moves by hand (milliseconds).
final class TestClock: Sendable {
    private let value = Mutex<Int64>(0)
    func callAsFunction() -> Int64 { value.withLock { $0 } }
    func advance(_ ms: Int64) { value.withLock { $0 += ms } }
}

/// The shared storage directory's per-name locks and atomic writes: separate lockers (each its
/// own owner, as separate processes are) on one directory, with an injected clock.
@Suite("ACME storage lock")
struct StorageLockTests {
    static func lockers(_ n: Int, in dir: TemporaryDirectory, clock: TestClock) throws -> [StorageLock] {
        try (0..<n).map { _ in try StorageLock(directory: dir.path("locks"), clock: { clock() }) }
    }

    @Test("two lockers: one holds, the other waits; after unlock the other takes it; names are independent")
    func exclusion() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock")
        let clock = TestClock()
        let l = try Self.lockers(2, in: dir, clock: clock)
        #expect(try l[0].tryLock("a.test"))
        #expect(try !l[1].tryLock("a.test"))
        #expect(try l[1].tryLock("b.test"))
        #expect(try l[0].tryLock("a.test"))  // the holder asking again
        try l[0].unlock("a.test")
        #expect(try l[1].tryLock("a.test"))
        #expect(try !l[0].tryLock("a.test"))
        #expect(try !l[0].refresh("a.test"))
        try l[0].unlock("a.test")  // not held: leaves l[1]'s lock alone
        #expect(try l[1].refresh("a.test"))
    }

    @Test("many lockers racing on threads: exactly one wins each round")
    func race() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-race")
        let clock = TestClock()
        let l = try Self.lockers(8, in: dir, clock: clock)
        for round in 0..<20 {
            let winners = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: l.count) { i in
                if (try? l[i].tryLock("race.test")) == true { winners.add(1, ordering: .relaxed) }
            }
            #expect(winners.load(ordering: .relaxed) == 1, "round \(round)")
            for locker in l { try locker.unlock("race.test") }
        }
    }

    @Test("a stale lock is taken over only after staleAfter with its bytes unchanged; the old holder learns it lost")
    func staleTakeover() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-stale")
        let clock = TestClock()
        let l = try Self.lockers(2, in: dir, clock: clock)
        #expect(try l[0].tryLock("a.test"))
        #expect(try !l[1].tryLock("a.test"))
        clock.advance(StorageLock.staleAfter)
        #expect(try !l[1].tryLock("a.test"))  // at the bound: still held
        clock.advance(1)
        #expect(try l[1].tryLock("a.test"))
        #expect(try !l[0].refresh("a.test"))
        #expect(!l[0].holds("a.test"))
        #expect(try l[1].refresh("a.test"))
    }

    @Test("heartbeats keep a lock: the watcher's timer restarts whenever the bytes change")
    func heartbeat() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-beat")
        let clock = TestClock()
        let l = try Self.lockers(2, in: dir, clock: clock)
        #expect(try l[0].tryLock("a.test"))
        for _ in 0..<10 {
            #expect(try !l[1].tryLock("a.test"))
            clock.advance(StorageLock.heartbeatInterval)
            #expect(try l[0].refresh("a.test"))
        }
        clock.advance(StorageLock.staleAfter)
        #expect(try !l[1].tryLock("a.test"))  // first sight of the last heartbeat's bytes
        clock.advance(StorageLock.staleAfter + 1)
        #expect(try l[1].tryLock("a.test"))
    }

    @Test("two takers of one stale lock racing: exactly one gets it")
    func takeoverRace() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-takeover")
        let clock = TestClock()
        let l = try Self.lockers(7, in: dir, clock: clock)
        for round in 0..<10 {
            #expect(try l[0].tryLock("t.test"))
            for taker in l.dropFirst() { #expect(try !taker.tryLock("t.test")) }
            clock.advance(StorageLock.staleAfter + 1)
            let winners = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: l.count - 1) { i in
                if (try? l[i + 1].tryLock("t.test")) == true { winners.add(1, ordering: .relaxed) }
            }
            #expect(winners.load(ordering: .relaxed) == 1, "round \(round)")
            for locker in l { try locker.unlock("t.test") }
        }
    }

    @Test("a heartbeat that lands between a taker's judgment and its move keeps the lock with its holder")
    func heartbeatDuringTakeover() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-late-beat")
        let clock = TestClock()
        let holder = try StorageLock(directory: dir.path("locks"), clock: { clock() })
        let taker = try StorageLock(
            directory: dir.path("locks"), clock: { clock() },
            beforeTakeover: { name in
                clock.advance(1)
                _ = try? holder.refresh(name)
            })
        #expect(try holder.tryLock("a.test"))
        #expect(try !taker.tryLock("a.test"))
        clock.advance(StorageLock.staleAfter + 1)
        #expect(try !taker.tryLock("a.test"))
        #expect(try holder.refresh("a.test"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("locks")) == ["a.test.lock"])
    }

    @Test("an empty or oversized lock file (a holder that died writing it) is stale after the interval")
    func unreadable() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-empty")
        let clock = TestClock()
        let l = try Self.lockers(1, in: dir, clock: clock)
        try dir.write("locks/e.test.lock", [])
        try dir.write("locks/o.test.lock", [UInt8](repeating: 0x41, count: StorageLock.maximumLockFileBytes + 1))
        #expect(try !l[0].tryLock("e.test") && !l[0].tryLock("o.test"))
        clock.advance(StorageLock.staleAfter + 1)
        #expect(try l[0].tryLock("e.test") && l[0].tryLock("o.test"))
        #expect(try !FileManager.default.contentsOfDirectory(atPath: dir.path("locks")).contains { $0.contains("stale") })
    }

    @Test(
        "a holder on this kernel that dies (its flock gone) loses its lock after deadHolderAfter, not staleAfter; a live one, heartbeats and all, never does"
    )
    func deadHolder() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-dead")
        let clock = TestClock()
        let l = try Self.lockers(2, in: dir, clock: clock)
        try #require(DeadHolder.bootID != nil)
        #expect(try l[0].tryLock("a.test"))
        #expect(try l[0].refresh("a.test"))  // a heartbeat's own descriptor leaves the flock held
        #expect(try !l[1].tryLock("a.test"))
        #expect(try !l[1].tryLock("a.test"))

        // A live holder whose flock this locker cannot see (two mounts of one volume): its
        // heartbeats change the bytes, so two heartbeats' time never takes it.
        clock.advance(StorageLock.deadHolderAfter + 1)
        #expect(try l[0].refresh("a.test"))
        #expect(try !l[1].tryLock("a.test"))

        // A real process holding a lock of this kernel, killed (-9): taken once its bytes stayed
        // unchanged for deadHolderAfter, not staleAfter.
        let lock = dir.path("locks/k.test.lock")
        try dir.write(
            "locks/k.test.lock", Array(#"{"owner":"gone","updated":1,"heartbeat":0,"boot":"\#(DeadHolder.bootID!)","pid":1}"#.utf8))
        let holder = try processHoldingFlock(lock)
        #expect(try !l[1].tryLock("k.test"))
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        #expect(try !l[1].tryLock("k.test"), "a free flock alone is only a hint")
        clock.advance(StorageLock.deadHolderAfter)
        #expect(try !l[1].tryLock("k.test"))
        clock.advance(1)
        #expect(try l[1].tryLock("k.test"))
        #expect(try !l[0].tryLock("k.test"))

        // Another kernel's lock (another machine on a shared volume): its flock says nothing
        // here, so only the heartbeat rule takes it (at staleAfter + 1, not at staleAfter).
        try dir.write(
            "locks/o.test.lock",
            Array(#"{"owner":"far","updated":1,"heartbeat":0,"boot":"00000000-0000-0000-0000-000000000000","pid":1}"#.utf8))
        #expect(try !l[1].tryLock("o.test"))
        clock.advance(StorageLock.staleAfter)
        #expect(try !l[1].tryLock("o.test"))
        clock.advance(1)
        #expect(try l[1].tryLock("o.test"))
    }

    @Test(
        "a lock file that is a symbolic link, a FIFO or a directory is never followed or waited on: a lock of unknown bytes, stale after the interval"
    )
    func notAFile() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-link")
        let clock = TestClock()
        let l = try Self.lockers(1, in: dir, clock: clock)
        try #require(DeadHolder.bootID != nil)
        // The link leads to a file that looks like a dead holder's lock of this kernel (no
        // flock): following it would take the lock at once, and a takeover could write there.
        let target = #"{"owner":"bait","updated":1,"heartbeat":0,"boot":"\#(DeadHolder.bootID!)","pid":1}"#
        try dir.write("elsewhere/bait", Array(target.utf8))
        try FileManager.default.createDirectory(atPath: dir.path("locks"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.path("locks/s.test.lock"), withDestinationPath: dir.path("elsewhere/bait"))
        #expect(mkfifo(dir.path("locks/f.test.lock"), 0o600) == 0)
        try FileManager.default.createDirectory(atPath: dir.path("locks/d.test.lock"), withIntermediateDirectories: false)
        for name in ["s.test", "f.test", "d.test"] { #expect(try !l[0].tryLock(name), "\(name)") }
        clock.advance(StorageLock.staleAfter)
        for name in ["s.test", "f.test", "d.test"] { #expect(try !l[0].tryLock(name), "\(name)") }
        clock.advance(1)
        for name in ["s.test", "f.test", "d.test"] { #expect(try l[0].tryLock(name), "\(name)") }
        #expect(try String(contentsOfFile: dir.path("elsewhere/bait"), encoding: .utf8) == target)
        let kind = try FileManager.default.attributesOfItem(atPath: dir.path("locks/s.test.lock"))[.type] as? FileAttributeType
        #expect(kind == .typeRegular)
        // What was moved aside is gone, the directory too.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dir.path("locks")).sorted() == [
                "d.test.lock", "f.test.lock", "s.test.lock",
            ])
    }

    /// The heartbeat count written in a lock file at `path` (nil when it is not there or not one).
    static func beats(_ path: String) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let range = text.range(of: #""heartbeat":"#) else {
            return nil
        }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    @Test(
        "a heartbeat that fails keeps the lock, its flock and its beats: its name gone for a beat, then unreadable (a link loop), then back; a taker watching never takes it"
    )
    func failedBeatKeepsLock() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-failed-beat")
        let clock = TestClock()
        let l = try Self.lockers(2, in: dir, clock: clock)
        let locks = dir.path("locks")
        #expect(try l[0].tryLock("a.test"))
        #expect(try !l[1].tryLock("a.test"))

        // The lock's name not found (the directory moved away, as a volume's blip shows it): the
        // beat is written through the held descriptor, into the held file wherever it is.
        #expect(rename(locks, dir.path("away")) == 0)
        clock.advance(StorageLock.heartbeatInterval)
        #expect(try l[0].refresh("a.test"))
        #expect(Self.beats(dir.path("away/a.test.lock")) == 1)
        #expect(flockHeld(dir.path("away/a.test.lock")))

        // The name cannot be looked at (ELOOP): this beat fails, the lock stays.
        #expect(symlink("locks", locks) == 0)
        clock.advance(StorageLock.heartbeatInterval)
        #expect(throws: ACMEError.self) { try l[0].refresh("a.test") }
        #expect(l[0].holds("a.test"))
        #expect(flockHeld(dir.path("away/a.test.lock")))
        #expect(unlink(locks) == 0)
        #expect(rename(dir.path("away"), locks) == 0)

        // Back: beats go on, so a taker on this kernel never finds it unchanged for two
        // heartbeats (nor for the stale rule's six).
        for _ in 0..<(2 * StorageLock.staleAfter / StorageLock.heartbeatInterval) {
            #expect(try !l[1].tryLock("a.test"))
            clock.advance(StorageLock.heartbeatInterval)
            #expect(try l[0].refresh("a.test"))
            #expect(flockHeld(dir.path("locks/a.test.lock")))
        }
        #expect(try !l[1].tryLock("a.test"))
        #expect(l[0].holds("a.test"))
    }

    @Test("another file at the lock's name ends it: a link to the held file, or a taker's new lock; the flock goes with it")
    func replacedLockIsLost() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-replaced")
        let clock = TestClock()
        let l = try Self.lockers(2, in: dir, clock: clock)
        #expect(try l[0].tryLock("a.test"))
        // A symbolic link at the name, leading to the held file itself: not the held file.
        #expect(rename(dir.path("locks/a.test.lock"), dir.path("held")) == 0)
        #expect(symlink(dir.path("held"), dir.path("locks/a.test.lock")) == 0)
        #expect(try !l[0].refresh("a.test"))
        #expect(!l[0].holds("a.test"))
        #expect(!flockHeld(dir.path("held")))
        #expect(Self.beats(dir.path("held")) == 0, "nothing written after the lock was lost")
        #expect(try !l[0].refresh("a.test"))

        // A taker's new lock (the held file moved aside while this holder stalled).
        #expect(try l[0].tryLock("b.test"))
        #expect(rename(dir.path("locks/b.test.lock"), dir.path("aside")) == 0)
        #expect(try l[1].tryLock("b.test"))
        #expect(try !l[0].refresh("b.test"))
        #expect(!flockHeld(dir.path("aside")))
        #expect(try l[1].refresh("b.test"))
    }

    @Test("the order's heartbeat thread beats on through a failed beat and keeps the lock")
    func heartbeatThreadKeepsBeating() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-beat-thread")
        let l = try StorageLock(directory: dir.path("locks"), clock: { Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000) })
        let locks = dir.path("locks")
        #expect(try l.tryLock("a.test"))
        #expect(symlink("loop", dir.path("loop")) == 0)
        let heartbeat = try Heartbeat(locks: l, name: "a.test", interval: 10)
        defer { heartbeat.stop() }
        #expect(eventually(attempts: 500, interval: 0.01) { (Self.beats(dir.path("locks/a.test.lock")) ?? 0) >= 1 })
        // The locks directory a link loop: every beat fails while it is.
        #expect(rename(locks, dir.path("away")) == 0)
        #expect(symlink("loop", locks) == 0)
        let before = Self.beats(dir.path("away/a.test.lock")) ?? 0
        // Failed beats still write through the held descriptor: two of them seen.
        #expect(eventually(attempts: 500, interval: 0.01) { (Self.beats(dir.path("away/a.test.lock")) ?? 0) >= before + 2 })
        #expect(unlink(locks) == 0)
        #expect(rename(dir.path("away"), locks) == 0)
        let back = Self.beats(dir.path("locks/a.test.lock")) ?? 0
        #expect(eventually(attempts: 500, interval: 0.01) { (Self.beats(dir.path("locks/a.test.lock")) ?? 0) >= back + 2 })
        #expect(heartbeat.held)
        #expect(l.holds("a.test"))
        #expect(flockHeld(dir.path("locks/a.test.lock")))
    }

    @Test(
        "a directory planted at a lock's name is removed once stale, never following a link in it: files, a FIFO, links out, subdirectories"
    )
    func plantedDirectoryRemoved() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-planted")
        let clock = TestClock()
        let l = try Self.lockers(1, in: dir, clock: clock)
        try dir.write("outside/keep/file", Array("kept".utf8))
        try dir.write("outside/linked", Array("kept".utf8))
        try dir.write("locks/d.test.lock/a", [1])
        try dir.write("locks/d.test.lock/sub/deeper/b", [2])
        #expect(mkfifo(dir.path("locks/d.test.lock/sub/fifo"), 0o600) == 0)
        #expect(symlink(dir.path("outside/keep"), dir.path("locks/d.test.lock/to-dir")) == 0)
        #expect(symlink(dir.path("outside/keep/file"), dir.path("locks/d.test.lock/sub/to-file")) == 0)
        #expect(link(dir.path("outside/linked"), dir.path("locks/d.test.lock/hard")) == 0)
        // A name that is not UTF-8 is removed by its exact bytes (`Files.entryBytes`).
        let oddName = Array(dir.path("locks/d.test.lock/sub/").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0x41, 0]
        let odd = open(oddName, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(odd >= 0)
        close(odd)
        #expect(try !l[0].tryLock("d.test"))
        clock.advance(StorageLock.staleAfter + 1)
        #expect(try l[0].tryLock("d.test"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("locks")) == ["d.test.lock"])
        #expect(try String(contentsOfFile: dir.path("outside/keep/file"), encoding: .utf8) == "kept")
        #expect(try String(contentsOfFile: dir.path("outside/linked"), encoding: .utf8) == "kept")
    }

    @Test("a planted directory's removal is bounded: N entries and N levels go, N+1 of either is left aside")
    func plantedDirectoryBounds() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-planted-bounds")
        let n = StorageLock.maximumPlantedEntries
        for (name, count) in [("at", n), ("over", n + 1)] {
            try FileManager.default.createDirectory(atPath: dir.path(name), withIntermediateDirectories: true)
            for i in 0..<count { #expect(FileManager.default.createFile(atPath: dir.path("\(name)/\(i)"), contents: nil)) }
        }
        #expect(StorageLock.discard(dir.path("at")))
        #expect(!FileManager.default.fileExists(atPath: dir.path("at")))
        #expect(!StorageLock.discard(dir.path("over")))
        #expect(FileManager.default.fileExists(atPath: dir.path("over")))

        let depth = StorageLock.maximumPlantedDepth
        for (name, levels) in [("deep-at", depth), ("deep-over", depth + 1)] {
            let path = ([name] + (0..<levels).map { "l\($0)" }).joined(separator: "/")
            try FileManager.default.createDirectory(atPath: dir.path(path), withIntermediateDirectories: true)
        }
        #expect(StorageLock.discard(dir.path("deep-at")))
        #expect(!FileManager.default.fileExists(atPath: dir.path("deep-at")))
        #expect(!StorageLock.discard(dir.path("deep-over")))
        #expect(FileManager.default.fileExists(atPath: dir.path("deep-over")))
        // A file and a link are unlinked by name; a name already gone is no failure.
        #expect(symlink(dir.path("over"), dir.path("link")) == 0)
        #expect(StorageLock.discard(dir.path("link")))
        #expect(FileManager.default.fileExists(atPath: dir.path("over/0")))
        #expect(StorageLock.discard(dir.path("gone")))
    }

    @Test(
        "a planted directory's removal never enters another mount: a bind mount of the same filesystem (same device) inside is left whole"
    )
    func plantedDirectoryBindMount() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-planted-mount")
        try dir.write("outside/keep", Array("kept".utf8))
        try dir.write("outside/sub/keep", Array("kept".utf8))
        try dir.write("planted/a", [1])
        try FileManager.default.createDirectory(atPath: dir.path("planted/mnt"), withIntermediateDirectories: true)
        // The mount lives in a namespace of one thread's own, gone when the thread ends.
        let result = BindResult()
        let (outside, mountPoint, planted) = (dir.path("outside"), dir.path("planted/mnt"), dir.path("planted"))
        Thread {
            let bound = CAASALinux_bind_in_private_namespace(outside, mountPoint)
            let error = errno
            let discarded = bound == 0 && StorageLock.discard(planted)
            result.value.withLock { $0 = (bound, error, discarded) }
        }
        .start()
        #expect(eventually(attempts: 500, interval: 0.01) { result.value.withLock { $0 != nil } })
        guard let (bound, error, discarded) = result.value.withLock({ $0 }) else { return }
        // Without CAP_SYS_ADMIN (an unprivileged container) there is no mount to test against.
        guard bound == 0 else {
            #expect(error == EPERM, "bind mount: errno \(error)")
            return
        }
        #expect(!discarded)
        #expect(try String(contentsOfFile: dir.path("outside/keep"), encoding: .utf8) == "kept")
        #expect(try String(contentsOfFile: dir.path("outside/sub/keep"), encoding: .utf8) == "kept")
    }

    @Test(
        "a beat whose write finds the held file gone (ESTALE, ENOENT, ENXIO) loses the lock; other failed beats keep it until none was written for silentAfter: N-1 kept, N lost"
    )
    func failedBeats() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-failed-beats")
        let clock = TestClock()
        let l = try Self.lockers(1, in: dir, clock: clock)
        for (name, gone) in [("a.test", ESTALE), ("b.test", ENOENT), ("c.test", ENXIO)] {
            #expect(try l[0].tryLock(name))
            l[0].beatFault.withLock { $0 = { _ in gone } }
            #expect(try !l[0].refresh(name), "errno \(gone)")
            #expect(!l[0].holds(name))
        }
        l[0].beatFault.withLock { $0 = nil }
        #expect(try l[0].tryLock("d.test"))
        clock.advance(StorageLock.heartbeatInterval)
        #expect(try l[0].refresh("d.test"))
        // From the last beat written, EIO beats keep the lock up to silentAfter - 1 ms …
        l[0].beatFault.withLock { $0 = { _ in EIO } }
        clock.advance(StorageLock.silentAfter - 1)
        #expect(throws: ACMEError.self) { try l[0].refresh("d.test") }
        #expect(l[0].holds("d.test"))
        // … and at silentAfter the holder calls it lost, one heartbeat before peers take it over.
        clock.advance(1)
        #expect(try !l[0].refresh("d.test"))
        #expect(!l[0].holds("d.test"))
        #expect(!flockHeld(dir.path("locks/d.test.lock")))
    }

    @Test("release and re-lock judge by the held file, never by its bytes: a copy of them at the name is another's lock")
    func identityNotBytes() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-identity")
        let clock = TestClock()
        let l = try Self.lockers(1, in: dir, clock: clock)
        let file = dir.path("locks/a.test.lock")
        #expect(try l[0].tryLock("a.test"))
        // The held file replaced by a copy of its bytes (another file at the name).
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
        try dir.write("copy", bytes)
        #expect(rename(dir.path("copy"), file) == 0)
        try l[0].unlock("a.test")
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: file))) == bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("locks")) == ["a.test.lock"])
        // A lock lost (its write said ESTALE) and left at its name is not taken back by its bytes.
        #expect(try l[0].tryLock("b.test"))
        l[0].beatFault.withLock { $0 = { _ in ESTALE } }
        #expect(try !l[0].refresh("b.test"))
        l[0].beatFault.withLock { $0 = nil }
        #expect(try !l[0].tryLock("b.test"))
        #expect(!l[0].holds("b.test"))
    }

    @Test("names are host names, never paths")
    func names() throws {
        let dir = try TemporaryDirectory(prefix: "acme-lock-names")
        let l = try Self.lockers(1, in: dir, clock: TestClock())
        #expect(try l[0].path(of: "*.a.test").hasSuffix("/locks/_wildcard_.a.test.lock"))
        for bad in ["", "../x", "a/b", ".hidden", "A.test", "a\u{0}b", String(repeating: "a", count: 254)] {
            #expect(throws: ACMEError.self, "\(bad)") { try l[0].tryLock(bad) }
        }
    }

    @Test("atomic writes: replaced whole, with the mode asked for, no temporary file left; a failure throws")
    func atomicWrite() throws {
        let dir = try TemporaryDirectory(prefix: "acme-atomic")
        let path = dir.path("key.pem")
        try AtomicFile.write(Array("one".utf8), to: path, mode: 0o600)
        try AtomicFile.write(Array("two".utf8), to: path, mode: 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "two")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["key.pem"])
        #expect(throws: ACMEError.self) { try AtomicFile.write([1], to: dir.path("missing/x"), mode: 0o600) }
    }
}

/// What the thread that bound a mount in its own namespace found: the mount's result, its errno,
/// and whether the planted directory was removed whole.
private final class BindResult: Sendable {
    let value = Mutex<(bound: Int32, error: Int32, discarded: Bool)?>(nil)
}
