import Glibc
import Reactor
import Synchronization

/// Locks per name in a storage directory that several aasad processes share (docs/acme.md: pods on
/// one volume, processes on one box), so one replica orders a name's certificate and the others
/// wait for its result. The scheme is certmagic's filesystem storage: a lock file created with
/// O_EXCL, refreshed by its holder every `heartbeatInterval`, taken over when stale. Two things
/// differ, both to keep two holders apart:
///
/// - Staleness is judged on the reader's own clock, never on a time written by another machine:
///   a lock is stale when its bytes have not changed for `staleAfter` while this locker watched
///   (every heartbeat changes them). Clock skew between replicas cannot make a live lock look
///   stale; a locker that starts fresh waits one `staleAfter` before taking over a dead lock.
/// - A takeover moves the stale file aside (rename, atomic) and checks that what it moved is the
///   file it judged stale. If the holder refreshed it in between, it is put back (link, which
///   never replaces a newer lock) and the takeover fails.
///
/// A heartbeat rewrites the file in place through the descriptor it opened, so a heartbeat that
/// races a takeover writes into the file moved aside, never over the taker's new lock.
///
/// Which volumes lock correctly: those where O_EXCL create and rename are atomic across clients:
/// local filesystems, NFSv3+ and most CSI volumes in ReadWriteMany mode. Object-store FUSE mounts
/// (s3fs, gcsfuse) are not: they must not be shared.
public final class StorageLock: Sendable {
    /// How often a holder rewrites its lock file (certmagic's lockFreshnessInterval).
    public static let heartbeatInterval: Int64 = 5_000
    /// How long a lock's bytes must stay unchanged before it is taken over: six missed heartbeats,
    /// so a holder stalled by a slow shared volume (EFS, NFS) is not robbed of its lock.
    public static let staleAfter: Int64 = 30_000
    /// Largest lock file read: the holder writes about 100 bytes; a larger file is not ours and
    /// counts as unreadable (stale once unchanged for `staleAfter`).
    static let maximumLockFileBytes = 1024

    /// `<storage>/locks`.
    public let directory: String
    /// This locker's identity in the files it writes: random per instance.
    public let owner: String
    /// Milliseconds, from any fixed origin (tests inject their own; the server passes a
    /// monotonic clock). Only compared with itself.
    private let clock: @Sendable () -> Int64
    /// Per name: the bytes last seen in another holder's lock file, and when this locker first
    /// saw exactly those bytes.
    private let observed = Mutex<[String: (bytes: [UInt8], since: Int64)]>([:])
    /// Per held name: the heartbeat count written into the file.
    private let held = Mutex<[String: Int]>([:])
    /// Tests only: runs between judging a lock stale and moving it aside, where another
    /// process's heartbeat or takeover can land.
    let beforeTakeover: (@Sendable (String) -> Void)?

    public convenience init(directory: String, owner: String? = nil, clock: @escaping @Sendable () -> Int64) throws(ACMEError) {
        try self.init(directory: directory, owner: owner, clock: clock, beforeTakeover: nil)
    }

    init(
        directory: String, owner: String? = nil, clock: @escaping @Sendable () -> Int64, beforeTakeover: (@Sendable (String) -> Void)?
    ) throws(ACMEError) {
        self.directory = directory
        self.owner = owner ?? randomHex(16)
        self.clock = clock
        self.beforeTakeover = beforeTakeover
        do {
            try Files.makeDirectory(directory, mode: 0o700)
        } catch {
            throw .storage("cannot create \(directory): \(error.reason)")
        }
    }

    /// The lock file of `name`: a host name (letters, digits, `-`, `.`, `_`, and `*` written as
    /// `_wildcard_`), never a path.
    public func path(of name: String) throws(ACMEError) -> String {
        directory + "/" + (try StorageName.component(name)) + ".lock"
    }

    private func contents(count: Int) -> [UInt8] {
        Array(#"{"owner":"\#(owner)","updated":\#(clock()),"heartbeat":\#(count)}"#.utf8) + [0x0A]
    }

    /// Takes the lock of `name` if it is free or stale; false when another holder has it.
    public func tryLock(_ name: String) throws(ACMEError) -> Bool {
        let file = try path(of: name)
        if try create(file, name) { return true }
        let current: [UInt8]
        do {
            current = try Files.readFile(file, limit: Self.maximumLockFileBytes)
        } catch  where error.isNoSuchFile {
            // Released between our create and our read: one more try.
            return try create(file, name)
        } catch  where error.errno == EFBIG {
            current = Array("oversized".utf8)
        } catch {
            throw .storage("cannot read \(file): \(error.reason)")
        }
        if owns(current) { return true }
        let now = clock()
        let stale = observed.withLock { seen -> Bool in
            if let last = seen[name], last.bytes == current { return now - last.since > Self.staleAfter }
            seen[name] = (current, now)
            return false
        }
        guard stale else { return false }
        beforeTakeover?(name)
        guard try takeOver(file, expected: current) else { return false }
        observed.withLock { _ = $0.removeValue(forKey: name) }
        return try create(file, name)
    }

    /// O_EXCL create with this locker's contents; false when the file exists.
    private func create(_ file: String, _ name: String) throws(ACMEError) -> Bool {
        let fd: Int32
        do {
            fd = try Files.createExclusive(file, mode: 0o644)
        } catch  where error.errno == EEXIST {
            return false
        } catch {
            throw .storage("cannot create \(file): \(error.reason)")
        }
        defer { Files.close(fd) }
        do {
            try Files.writeAll(fd, contents(count: 0), at: 0)
            try Files.sync(fd)
        } catch {
            try? Files.remove(file)
            throw .storage("cannot write \(file): \(error.reason)")
        }
        held.withLock { $0[name] = 0 }
        return true
    }

    /// Moves `file` aside and removes it if it still holds `expected`; otherwise puts it back.
    /// Whether the stale lock is gone.
    private func takeOver(_ file: String, expected: [UInt8]) throws(ACMEError) -> Bool {
        let aside = file + ".stale-" + randomHex(8)
        do {
            try Files.rename(file, to: aside)
        } catch  where error.isNoSuchFile {
            return true  // someone else removed it: try to create
        } catch {
            throw .storage("cannot move the stale lock \(file) aside: \(error.reason)")
        }
        let moved = (try? Files.readFile(aside, limit: Self.maximumLockFileBytes)) ?? Array("oversized".utf8)
        if moved == expected {
            try? Files.remove(aside)
            return true
        }
        // It changed since we judged it: a live holder's heartbeat or a new lock. Put it back
        // unless a newer lock is already there.
        try? Files.link(aside, to: file)
        try? Files.remove(aside)
        return false
    }

    private func owns(_ bytes: [UInt8]) -> Bool {
        let prefix = Array(#"{"owner":"\#(owner)","#.utf8)
        return bytes.starts(with: prefix)
    }

    /// The holder's heartbeat: rewrites the lock file in place. False when the lock is no longer
    /// this locker's (taken over after this process stalled, or removed): stop the work it guards.
    public func refresh(_ name: String) throws(ACMEError) -> Bool {
        let file = try path(of: name)
        guard let count = held.withLock({ $0[name] }) else { return false }
        let fd: Int32
        do {
            fd = try Files.openForUpdating(file)
        } catch {
            held.withLock { _ = $0.removeValue(forKey: name) }
            return false
        }
        defer { Files.close(fd) }
        guard let current = try? Files.readAll(fd, limit: Self.maximumLockFileBytes), owns(current) else {
            held.withLock { _ = $0.removeValue(forKey: name) }
            return false
        }
        let next = contents(count: count + 1)
        do {
            try Files.writeAll(fd, next, at: 0)
            try Files.truncate(fd, length: Int64(next.count))
            try Files.sync(fd)
        } catch {
            throw .storage("cannot refresh \(file): \(error.reason)")
        }
        held.withLock { $0[name] = count + 1 }
        return true
    }

    /// Releases `name` if this locker holds it (moved aside and checked, as a takeover is, so a
    /// lock taken over meanwhile is left to its new holder).
    public func unlock(_ name: String) throws(ACMEError) {
        let file = try path(of: name)
        guard held.withLock({ $0.removeValue(forKey: name) }) != nil else { return }
        let aside = file + ".release-" + randomHex(8)
        do {
            try Files.rename(file, to: aside)
        } catch {
            return
        }
        if let moved = try? Files.readFile(aside, limit: Self.maximumLockFileBytes), !owns(moved) {
            try? Files.link(aside, to: file)
        }
        try? Files.remove(aside)
    }

    /// Whether this locker believes it holds `name` (until a refresh says otherwise).
    public func holds(_ name: String) -> Bool { held.withLock { $0[name] != nil } }
}
