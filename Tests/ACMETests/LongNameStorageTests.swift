import Foundation
import Glibc
import Logging
import TestSupport
import Testing

@testable import ACME

/// Host names as long as DNS allows (253 bytes, labels of 63) through every file of the shared
/// storage that is named after a host name: each file name, with what the storage adds to it (a
/// lock's `.release-` name, a write's temporary name), must fit in Linux's 255 bytes
/// (`StorageName`, docs/acme.md).
@Suite("ACME storage of the longest host names")
struct LongNameStorageTests {
    /// Labels of `lengths` bytes, each of one letter, joined with dots.
    static func name(_ lengths: [Int], letters: String = "abcdefgh") -> String {
        zip(lengths, letters).map { String(repeating: $1, count: $0) }.joined(separator: ".")
    }

    /// 253 bytes: three labels of 63 and one of 61.
    static let longest = name([63, 63, 63, 61])
    /// `*.` and 251 bytes.
    static let longestWildcard = "*." + name([63, 63, 63, 59], letters: "wxyz")
    /// 253 bytes, the same as `longest` but for its last byte.
    static let longestSibling = String(longest.dropLast()) + "z"
    /// 228 bytes: its lock file is created, but its `.release-` name was once too long.
    static let releaseTooLong = name([63, 63, 63, 36])
    /// Names around the length where the readable form stops fitting.
    static var around: [String] {
        (200...253).flatMap { length in
            let plain = name([63, 63, 63, length - 192])
            return [plain, "*." + String(plain.dropFirst(2))]
        }
    }

    static let chain = Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8)
    static let key = Array("-----BEGIN PRIVATE KEY-----\nCCCC\n-----END PRIVATE KEY-----\n".utf8)

    @Test("every name's file, with the longest addition the storage makes, fits in 255 bytes; no two names share one")
    func fileNamesFit() throws {
        #expect(Self.longest.utf8.count == 253)
        #expect(Self.longestWildcard.utf8.count == 253)
        var seen: [String: String] = [:]
        for name in Self.around + [Self.longest, Self.longestWildcard, Self.longestSibling, "a.test", "*.a.test"] {
            let component = try StorageName.component(name)
            #expect(component.utf8.count + StorageName.longestAddition <= 255, "\(name.utf8.count) bytes")
            #expect(seen.updateValue(name, forKey: component) == nil || seen[component] == name)
            // A name whose readable form fits keeps it (what earlier versions wrote).
            let readable = name.hasPrefix("*.") ? "_wildcard_." + name.dropFirst(2) : name
            if readable.utf8.count <= StorageName.maximumComponentBytes { #expect(component == readable) }
        }
        #expect(try StorageName.component(Self.longest) != StorageName.component(Self.longestSibling))
    }

    @Test("a lock of the longest names is taken, released and taken by another locker")
    func lock() throws {
        let dir = try TemporaryDirectory(prefix: "acme-long-lock")
        let clock = TestClock()
        let first = try StorageLock(directory: dir.path("locks"), clock: { clock() })
        let second = try StorageLock(directory: dir.path("locks"), clock: { clock() })
        for name in [Self.releaseTooLong, Self.longest, Self.longestWildcard, Self.longestSibling] {
            #expect(try first.tryLock(name))
            #expect(try !second.tryLock(name))
            #expect(try first.refresh(name))
            try first.unlock(name)
            #expect(try second.tryLock(name), "\(name.prefix(8)): still locked after its release")
        }
        try second.unlock(Self.releaseTooLong)
        // The sibling's lock is its own: both held at once by different lockers.
        try second.unlock(Self.longest)
        #expect(try first.tryLock(Self.longest))
        #expect(try second.refresh(Self.longestSibling))
    }

    @Test("back-off, demand and child records of the longest names are written, read and removed")
    func records() throws {
        let dir = try TemporaryDirectory(prefix: "acme-long-records")
        let storage = try ACMEStorage(root: dir.path("s"))
        let replica = ReplicaRecords(storage: storage)
        let children = ChildRecords(storage: storage.root)
        let failure = BackoffRecord(failedAt: 1_800_000_000, failures: 2, nextAttempt: 1_800_000_600)
        for name in [Self.longest, Self.longestWildcard] {
            try replica.writeFailure(name, failure)
            #expect(replica.failure(name) == failure)
            #expect(replica.failure(Self.longestSibling) == nil)
            replica.removeFailure(name)
            #expect(replica.failure(name) == nil)
        }
        try replica.writeDemand(Self.longest, at: 1_800_000_000)
        try replica.writeDemand(Self.longestSibling, at: 1_800_000_010)
        #expect(replica.demandRecordCount() == 2)
        let live = replica.demands(now: 1_800_000_020)
        #expect(live[try StorageName.component(Self.longest)] == 1_800_000_000)
        #expect(live[try StorageName.component(Self.longestSibling)] == 1_800_000_010)
        // A replica puts the digested components back to the names it holds; one it does not
        // hold is dropped, and a readable name is left as it is.
        var resolved = live
        resolved["a.test"] = 1_800_000_005
        CertificateManager.resolveDigested(&resolved, names: [Self.longest, "a.test", Self.longestWildcard])
        #expect(resolved == [Self.longest: 1_800_000_000, "a.test": 1_800_000_005])
        replica.removeDemand(Self.longest)
        #expect(replica.demandRecordCount() == 1)
        let record = ChildRecord(approvedUntil: 1_800_086_400, lastSeen: 1_800_000_000)
        try children.write(Self.longest, record)
        #expect(children.read(Self.longest) == record)
        #expect(children.read(Self.longestSibling) == nil)
        children.remove(Self.longest)
        #expect(children.read(Self.longest) == nil)
    }

    @Test("a certificate and a TLS-ALPN-01 answer of the longest names are stored, found by another replica and removed")
    func certificateAndAnswer() throws {
        let dir = try TemporaryDirectory(prefix: "acme-long-certificates")
        let storage = try ACMEStorage(root: dir.path("s"))
        for name in [Self.longest, Self.longestWildcard] {
            try storage.storeCertificate(name: name, chainPEM: Self.chain, keyPEM: Self.key)
            let stored = try #require(try storage.certificate(for: name))
            #expect(ACMEStorage.split(stored.bytes)?.keyPEM == Self.key)
            #expect(try storage.certificateVersion(for: name) == stored.version)
            #expect(try storage.certificate(for: Self.longestSibling) == nil)

            try storage.storeTLSALPNChallenge(name: name, chainPEM: Self.chain, keyPEM: Self.key)
            #expect(storage.tlsALPNChallenge(for: name)?.keyPEM == Self.key)
            // Another replica's book finds it at its look at storage, by the name a handshake gives.
            let book = try ChallengeBook(storage: storage)
            book.poll()
            #expect(book.tlsALPN(for: name) != nil)
            #expect(book.tlsALPN(for: Self.longestSibling) == nil)
            storage.removeTLSALPNChallenge(name: name)
            book.poll()
            #expect(book.tlsALPN(for: name) == nil)
        }
    }

    @Test("the account key of a CA whose host is as long as DNS allows is made and read back")
    func accountKeyOfLongHost() throws {
        let dir = try TemporaryDirectory(prefix: "acme-long-account")
        let storage = try ACMEStorage(root: dir.path("s"))
        let long = try ACMEURL("https://" + Self.longest + "/directory")
        let other = try ACMEURL("https://" + Self.longest + "/staging")
        #expect(storage.accountKeyPath(for: long) != storage.accountKeyPath(for: other))
        let made = try storage.accountKey(for: long)
        #expect(try storage.accountKey(for: long).thumbprint == made.thumbprint)
        // A host that fits is named as before.
        #expect(storage.accountKeyPath(for: try ACMEURL("https://ca.test/dir")).hasPrefix(storage.root + "/accounts/ca.test-"))
    }

    @Test("a release that fails is logged once per name, for a bounded number of names, and the lock goes stale")
    func failedReleaseLogged() throws {
        let dir = try TemporaryDirectory(prefix: "acme-release-fault")
        let clock = TestClock()
        let log = LogLines()
        let first = try StorageLock(directory: dir.path("locks"), clock: { clock() }, logger: log.logger)
        let second = try StorageLock(directory: dir.path("locks"), clock: { clock() })
        first.releaseFault.withLock { $0 = { _ in EIO } }
        for round in 0..<3 {
            // The lock left by the failed release is this locker's own only by its bytes: taken
            // back once stale, as anyone's.
            if round > 0 {
                #expect(try !first.tryLock("a.test"))
                clock.advance(StorageLock.staleAfter + 1)
            }
            #expect(try first.tryLock("a.test"))
            try first.unlock("a.test")
        }
        #expect(log.warnings().count == 1)
        #expect(log.warnings().first?.metadata["path"]?.description.hasSuffix("/a.test.lock") == true)
        // The lock left behind is taken over once stale, as a dead holder's is.
        #expect(try !second.tryLock("a.test"))
        clock.advance(StorageLock.staleAfter + 1)
        #expect(try second.tryLock("a.test"))
        for index in 0..<(2 * StorageLock.maximumReleaseWarnings) {
            #expect(try first.tryLock("n\(index).test"))
            try first.unlock("n\(index).test")
        }
        #expect(log.warnings().count == StorageLock.maximumReleaseWarnings)
    }
}
