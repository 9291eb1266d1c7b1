import Foundation
import Glibc
import Logging
import Reactor
import TestSupport
import Testing

@testable import ACME

/// How long a replica presenting a challenge waits before the CA is told to come
/// (`ChallengeBook.awaitOthers`, `ReplicaPresence`): not at all alone on its storage; until each
/// other replica has looked twice since the answer was stored, at most the whole pause; the whole
/// pause whenever another replica cannot say it has looked. Books on one storage directory stand
/// for replicas; their threads are never started, so each look is driven here, from the
/// presenting book's pauses, which are recorded and never slept.
@Suite("ACME replicas: the pause before validation")
struct ReplicaPresenceTests {
    let folder: TemporaryDirectory
    let storage: ACMEStorage
    static let bound = Duration.milliseconds(ChallengeBook.propagationMilliseconds)
    static let step = Duration.milliseconds(ChallengeBook.acknowledgementStepMilliseconds)

    init() throws {
        folder = try TemporaryDirectory(prefix: "acme-presence")
        storage = try ACMEStorage(root: folder.path("storage"))
    }

    /// A replica as `CertificateManager.init` makes it: its record written, one look made.
    func replica(log: LogLines? = nil) throws -> ChallengeBook {
        let book = try ChallengeBook(storage: storage, logger: log?.logger)
        book.announce()
        return book
    }

    /// Stores an HTTP-01 answer as the presenting replica does, then waits for the others:
    /// the pauses asked for. `duringPause` runs at each pause (the other replicas' looks).
    func present(
        _ book: ChallengeBook, token: String = "tok0", now: Int64? = nil, duringPause: () -> Void = {}
    ) throws -> [Duration] {
        try storage.storeHTTP01(token: token, keyAuthorization: token + ".key")
        book.addHTTP01(token: token, answer: Array((token + ".key").utf8))
        var pauses: [Duration] = []
        book.awaitOthers(
            pause: { duration in
                pauses.append(duration)
                duringPause()
            }, now: { now ?? WallClock.seconds() })
        return pauses
    }

    /// A record past `ReplicaPresence.maximumRecordBytes`, its number past any bound.
    static let longRecord = Array(("looks " + String(repeating: "9", count: 80) + "\n").utf8)

    func setModified(_ path: String, secondsAgo: Int64) throws {
        let date = Date(timeIntervalSince1970: TimeInterval(WallClock.seconds() - secondsAgo))
        try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: path)
    }

    @Test("alone on its storage, a replica asks the CA at once: no pause")
    func alone() throws {
        let book = try replica()
        #expect(try present(book).isEmpty)
        #expect(FileManager.default.fileExists(atPath: book.presence.path))
    }

    @Test("another replica that never looks (stopped mid-order, stalled) is waited for the whole pause, no longer")
    func silentOther() throws {
        let book = try replica()
        _ = try replica()
        let pauses = try present(book)
        #expect(pauses.reduce(.zero, +) == Self.bound)
        #expect(pauses.allSatisfy { $0 <= Self.step })
    }

    @Test("another replica that looks at each pause ends the wait after its second look, and has the answer by then")
    func otherLooks() throws {
        let book = try replica()
        let other = try replica()
        let pauses = try present(book) { other.poll() }
        #expect(pauses == [Self.step, Self.step])
        #expect(other.http01(token: "tok0") == Array("tok0.key".utf8))
    }

    @Test("a look that cannot read every answer (one past the size bound) does not count: the whole pause")
    func incompleteLook() throws {
        let book = try replica()
        let other = try replica()
        let big = [UInt8](repeating: 0x41, count: ACMEStorage.maximumChallengeFileBytes + 1)
        try Files.replaceAtomically(folder.path("storage/challenges/http-01/huge"), with: big, mode: 0o644)
        let pauses = try present(book) { other.poll() }
        #expect(pauses.reduce(.zero, +) == Self.bound)
    }

    @Test("a replica that starts during the order, after the records were listed, has the answer before it serves")
    func startsDuringOrder() throws {
        let book = try replica()
        #expect(try present(book).isEmpty)
        let late = try replica()
        #expect(late.http01(token: "tok0") == Array("tok0.key".utf8))
        late.stop()
        // And one that starts while the presenting replica waits for a third is waited for no
        // more than that one: its first look already came after the answer.
        let third = try replica()
        var started: ChallengeBook?
        let more = try present(book, token: "tok1") {
            if started == nil { started = try? replica() }
            third.poll()
        }
        #expect(more == [Self.step, Self.step])
        #expect(started?.http01(token: "tok1") == Array("tok1.key".utf8))
    }

    @Test(
        "a manager made while another replica's order is under way answers its challenge before it is started (before the server listens)")
    func managerAnswersBeforeStart() throws {
        let book = try replica()
        #expect(try present(book).isEmpty)
        let configuration = CertificateManager.Configuration(
            directory: try ACMEURL("https://127.0.0.1:1/dir"), storage: folder.path("storage"), ordersPerHour: 60)
        let manager = try CertificateManager(
            configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        #expect(manager.challenges.http01(token: "tok0") == Array("tok0.key".utf8))
        #expect(FileManager.default.fileExists(atPath: manager.challenges.presence.path))
    }

    @Test("what is not a readable record counts as a replica that has not looked: a directory, a link, a bad or unreadable file")
    func hostileEntries() throws {
        let directory = folder.path("storage/replicas")
        let cases: [(String, () throws -> Void)] = [
            ("dir", { try FileManager.default.createDirectory(atPath: directory + "/dir", withIntermediateDirectories: false) }),
            ("link", { try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "/etc/passwd") }),
            ("bad", { try Files.replaceAtomically(directory + "/bad", with: Array("looks 1\r\nlooks 2\n".utf8), mode: 0o600) }),
            ("fifo", { #expect(mkfifo(directory + "/fifo", 0o600) == 0) }),
            ("huge", { try Files.replaceAtomically(directory + "/huge", with: Self.longRecord, mode: 0o600) }),
        ]
        let book = try replica()
        for (index, (name, make)) in cases.enumerated() {
            try make()
            let pauses = try present(book, token: "tok\(index)")
            #expect(pauses.reduce(.zero, +) == Self.bound, "\(name)")
            try FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }

    @Test("more entries than the bound, or a directory that cannot be listed: the whole pause")
    func unlistable() throws {
        let book = try replica()
        let directory = folder.path("storage/replicas")
        for index in 0..<ReplicaPresence.maximumEntries {
            try Files.replaceAtomically(directory + "/.r\(index).tmp-x", with: [], mode: 0o600)
        }
        #expect(try present(book, token: "tok0").reduce(.zero, +) == Self.bound)
        try FileManager.default.removeItem(atPath: directory)
        #expect(try present(book, token: "tok1").reduce(.zero, +) == Self.bound)
    }

    @Test("a record not rewritten for its lifetime (a replica that stopped without removing it) is ignored and removed")
    func staleRecord() throws {
        let book = try replica()
        let gone = try replica()
        try setModified(gone.presence.path, secondsAgo: ReplicaPresence.lifetime + 1)
        #expect(try present(book).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: gone.presence.path))
        // One rewritten just inside its lifetime still counts.
        let other = try replica()
        try setModified(other.presence.path, secondsAgo: ReplicaPresence.lifetime - 5)
        #expect(try present(book, token: "tok1").reduce(.zero, +) == Self.bound)
    }

    @Test("a replica that stops removes its record: the others no longer wait for it")
    func stopRemoves() throws {
        let book = try replica()
        let other = try replica()
        other.start()
        other.stop()
        #expect(!FileManager.default.fileExists(atPath: other.presence.path))
        #expect(try present(book).isEmpty)
    }

    var directory: String { folder.path("storage/replicas") }

    /// Records of `count` replicas that stopped without removing theirs, older than `lifetime`.
    func staleRecords(_ count: Int) throws {
        for index in 0..<count {
            let path = directory + "/gone\(index)"
            try Files.replaceAtomically(path, with: Array("looks 3\n".utf8), mode: 0o600)
            try setModified(path, secondsAgo: ReplicaPresence.lifetime + 60)
        }
    }

    @Test("more records than the bound, all of stopped replicas: one whole pause, logged once, then they are gone and the next is short")
    func overTheBoundCleaned() throws {
        let log = LogLines()
        let book = try replica(log: log)
        try staleRecords(70)
        #expect(try present(book).reduce(.zero, +) == Self.bound)
        #expect(try present(book, token: "tok1").isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [book.presence.id])
        let warnings = log.warnings().map(\.message)
        #expect(warnings.count == 1 && warnings[0].contains("more than \(ReplicaPresence.maximumEntries) entries"), "\(warnings)")
        #expect(log.messages().contains { $0.contains("ends with the other replicas' looks again") })
    }

    @Test("an unreadable record is logged once however many orders wait for it, and once when it is gone")
    func unreadableLoggedOnce() throws {
        let log = LogLines()
        let book = try replica(log: log)
        try Files.replaceAtomically(directory + "/bad", with: Self.longRecord, mode: 0o600)
        for index in 0..<3 { #expect(try present(book, token: "tok\(index)").reduce(.zero, +) == Self.bound) }
        #expect(log.warnings().count == 1)
        try FileManager.default.removeItem(atPath: directory + "/bad")
        #expect(try present(book, token: "tok9").isEmpty)
        #expect(log.warnings().count == 1 && log.all.count == 2, "\(log.messages())")
    }

    @Test("a presenting replica whose clock runs far ahead neither ignores nor removes a live record")
    func clockAhead() throws {
        let book = try replica()
        let other = try replica()
        let ahead = WallClock.seconds() + 3 * ReplicaPresence.lifetime
        let pauses = try present(book, now: ahead) { other.poll() }
        #expect(pauses == [Self.step, Self.step])
        #expect(FileManager.default.fileExists(atPath: other.presence.path))
    }

    @Test("names that are no record are not waited for: an old temporary file is removed, another dot name left alone")
    func dotNames() throws {
        let book = try replica()
        let temporary = directory + "/.abc.tmp-123"
        let nfs = directory + "/.nfs0000000000001234"
        for path in [temporary, nfs] {
            try Files.replaceAtomically(path, with: Array("looks 1\n".utf8), mode: 0o600)
            try setModified(path, secondsAgo: ReplicaPresence.lifetime + 60)
        }
        // A name that is not valid UTF-8 cannot be read by the name it is listed as.
        let odd = (directory + "/r").utf8.map { CChar(bitPattern: $0) } + [CChar(bitPattern: 0xFF), 0]
        let descriptor = open(odd, O_CREAT | O_WRONLY, 0o600)
        #expect(descriptor >= 0)
        close(descriptor)
        #expect(try present(book).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: temporary))
        #expect(FileManager.default.fileExists(atPath: nfs))
    }

    @Test("a record that cannot be written is logged once, and once when it is written again")
    func writeFailureLogged() throws {
        let log = LogLines()
        let book = try replica(log: log)
        try FileManager.default.removeItem(atPath: directory)
        try Files.replaceAtomically(directory, with: [], mode: 0o600)
        for second in 0..<3 { book.acknowledge(complete: true, found: true, now: WallClock.seconds() + Int64(second)) }
        #expect(log.warnings().count == 1, "\(log.messages())")
        try FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        book.acknowledge(complete: true, found: true, now: WallClock.seconds())
        #expect(log.warnings().count == 1 && log.all.count == 2, "\(log.messages())")
        #expect(FileManager.default.fileExists(atPath: book.presence.path))
    }
}
