import CAASALinux
import Glibc
public import Logging
import Reactor
import SafeText
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
/// A heartbeat (`HeldLock`, HeldLock.swift) rewrites the file in place through the descriptor its
/// holder created it with (the one holding its flock), never by opening its name again: a
/// heartbeat that races a takeover writes into the file moved aside, never over the taker's new
/// lock, and a beat needs no new descriptor (a process at its descriptor limit still beats). Whether the lock is still this
/// holder's is read from the name: the file there must be the held one (same device and inode;
/// the held descriptor keeps the inode from being reused). Another file there (a takeover's new
/// lock, a link) means the lock is lost, and so does a write through the held descriptor that
/// says its file is gone (ESTALE: another NFS client removed it, and its inode number may already
/// name a new file, so the compare alone cannot be trusted there; ENOENT, ENXIO). A beat that
/// fails otherwise (the name not found for a moment, a write refused) throws and keeps the lock
/// and its flock, and the next beat tries again, so one bad beat never makes a live holder look
/// dead; but a holder that has written no beat for `silentAfter` (one heartbeat short of
/// `staleAfter`, on its own clock) calls the lock lost and says so, since its peers take it over.
///
/// A holder that dies on this machine costs a shorter wait: the holder keeps an exclusive
/// `flock(2)` on its lock file while it holds it (the kernel drops it when the process dies,
/// `kill -9` included) and writes this kernel's boot id in it. A locker that finds a lock with
/// its own boot id whose flock is free takes it over once its bytes have stayed unchanged for
/// `deadHolderAfter` (two heartbeats) instead of `staleAfter` (`DeadHolder`), verified as any
/// takeover. A free flock is only a hint, never enough alone: two mounts of one network volume
/// on one machine (NFS `nosharecache` or `local_lock=flock`, a FUSE filesystem without flock),
/// a cloned VM or a restored snapshot can show a live holder's flock as free, and a live holder
/// rewrites its file every `heartbeatInterval`, so its bytes never stay unchanged that long.
/// Between machines (another boot id) only the heartbeat rule above decides. On a volume where
/// flock fails outright (ENOLCK without lockd, EOPNOTSUPP) the lock is held without it, and the
/// heartbeat rule alone decides there too.
///
/// What is not a lock file of ours (a symbolic link, a FIFO, a directory, a file too large or
/// not readable) is never followed or opened for writing: it counts as a lock of unknown bytes,
/// stale once it stays for `staleAfter`, and is then moved aside like any stale lock and removed
/// (a directory within bounds, never following a link: StorageLock+Planted.swift).
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
    /// How long a lock whose holder's flock is free on this kernel must stay unchanged: two
    /// heartbeats, so a live holder (which rewrites it every `heartbeatInterval`) is never taken
    /// for dead on a flock that does not see it.
    public static let deadHolderAfter: Int64 = 2 * heartbeatInterval
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
    /// Per held name: the file created for it (its descriptor, its flock, its heartbeat count).
    private let held = Mutex<[String: HeldLock]>([:])
    /// Tests only: runs between judging a lock stale and moving it aside, where another
    /// process's heartbeat or takeover can land.
    let beforeTakeover: (@Sendable (String) -> Void)?
    /// Where a stale lock that could not be removed, or a lock called lost, is reported.
    let logger: Logger?
    /// Names whose failed release was reported (`unlock`): each once, and at most
    /// `maximumReleaseWarnings` names, so a volume refusing every rename cannot flood the log.
    private let releaseWarned = Mutex<Set<String>>([])
    static let maximumReleaseWarnings = 64
    /// Tests only: an errno a release's rename fails with instead of renaming (nil: renamed).
    let releaseFault = Mutex<(@Sendable (String) -> Int32?)?>(nil)
    /// Tests only: an errno a heartbeat's write fails with instead of writing (nil: written).
    let beatFault = Mutex<(@Sendable (String) -> Int32?)?>(nil)
    /// How long a holder goes without a heartbeat written before it calls its lock lost: peers
    /// take over a lock whose bytes stayed unchanged for `staleAfter` on their own clocks, so a
    /// holder that has written nothing for all but one heartbeat of that stops first.
    static let silentAfter: Int64 = staleAfter - heartbeatInterval

    public convenience init(
        directory: String, owner: String? = nil, clock: @escaping @Sendable () -> Int64, logger: Logger? = nil
    ) throws(ACMEError) {
        try self.init(directory: directory, owner: owner, clock: clock, logger: logger, beforeTakeover: nil)
    }

    init(
        directory: String, owner: String? = nil, clock: @escaping @Sendable () -> Int64, logger: Logger? = nil,
        beforeTakeover: (@Sendable (String) -> Void)?
    ) throws(ACMEError) {
        self.directory = directory
        self.owner = owner ?? randomHex(16)
        self.clock = clock
        self.logger = logger
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
        // The boot id and pid say who holds it to an operator reading the file; the boot id also
        // tells a locker on the same kernel that the flock it probes is this holder's.
        Array(
            #"{"owner":"\#(owner)","updated":\#(clock()),"heartbeat":\#(count),"boot":"\#(DeadHolder.bootID ?? "")","pid":\#(getpid())}"#
                .utf8) + [0x0A]
    }

    /// Takes the lock of `name` if it is free or stale; false when another holder has it.
    public func tryLock(_ name: String) throws(ACMEError) -> Bool {
        let file = try path(of: name)
        if try create(file, name) { return true }
        guard let (current, holderGone) = try DeadHolder.peek(file, limit: Self.maximumLockFileBytes) else {
            // Released between our create and our read: one more try.
            return try create(file, name)
        }
        // Its bytes name this locker, but only the file it holds is its lock (a copy, or a lock
        // lost to ESTALE and left there, is judged as another's).
        if owns(current), let lock = held.withLock({ $0[name] }), lock.isAt(file) { return true }
        // Its holder on this kernel died (or let go and is removing it): a shorter wait, with
        // the same rule of bytes unchanged while this locker watched.
        let after = holderGone ? Self.deadHolderAfter : Self.staleAfter
        let now = clock()
        let stale = observed.withLock { seen -> Bool in
            if let last = seen[name], last.bytes == current { return now - last.since > after }
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
        // The flock before the bytes: a locker that reads this boot id knows the flock is taken.
        // Only a process that opened this new file can hold it; one that does is not ours to
        // fight, and the file goes.
        // A volume without working flock (ENOLCK, EOPNOTSUPP, ENOSYS) holds the lock without
        // it: the heartbeat rule is what keeps holders apart there.
        if flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK {
            Files.close(fd)
            try? Files.remove(file)
            return false
        }
        do {
            try Files.writeAll(fd, contents(count: 0), at: 0)
            try Files.sync(fd)
        } catch {
            try? Files.remove(file)
            Files.close(fd)
            throw .storage("cannot write \(file): \(error.reason)")
        }
        let identity: FileStatus
        do {
            identity = try Files.status(of: fd)
        } catch {
            try? Files.remove(file)
            Files.close(fd)
            throw .storage("cannot read back \(file): \(error.reason)")
        }
        // A lock of this name held before and taken over meanwhile: its descriptor goes.
        let made = HeldLock(descriptor: fd, device: identity.device, inode: identity.inode, written: clock())
        held.withLock { $0.updateValue(made, forKey: name) }?.close()
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
        let moved = (try? DeadHolder.peek(aside, limit: Self.maximumLockFileBytes, probe: false))??.bytes ?? DeadHolder.unreadable
        if moved == expected {
            discardAside(aside)
            return true
        }
        // It changed since we judged it: a live holder's heartbeat or a new lock. Put it back
        // unless a newer lock is already there.
        try? Files.link(aside, to: file)
        discardAside(aside)
        return false
    }

    /// Removes what was moved aside (`discard`: a planted directory too, within bounds); what
    /// cannot be removed stays under its `.stale-` name, and the operator is told.
    private func discardAside(_ aside: String) {
        guard let reason = Self.leftover(afterDiscarding: aside) else { return }
        logger?.warning(
            "a stale lock moved aside could not be removed; remove it by hand",
            metadata: [
                "path": "\(aside)", "reason": "\(reason)", "maximumEntries": "\(Self.maximumPlantedEntries)",
                "maximumDepth": "\(Self.maximumPlantedDepth)",
            ])
    }

    private func owns(_ bytes: [UInt8]) -> Bool {
        let prefix = Array(#"{"owner":"\#(owner)","#.utf8)
        return bytes.starts(with: prefix)
    }

    /// The holder's heartbeat: rewrites the lock file in place through the held descriptor.
    /// False when the lock is known to be no longer this locker's (another file at its name:
    /// taken over after this process stalled; or not held): stop the work it guards. Throws when
    /// this beat failed but the lock may still be ours (its name unreadable, the write refused):
    /// the lock and its flock are kept, and the next beat tries again.
    public func refresh(_ name: String) throws(ACMEError) -> Bool {
        let file = try path(of: name)
        guard let lock = held.withLock({ $0[name] }) else { return false }
        let fault = beatFault.withLock { $0 }
        switch try lock.beat(file, now: clock(), fault: { fault?(name) }, contents: { contents(count: $0) }) {
        case .written: return true
        case .replaced:
            lose(name, lock)
            return false
        case .silent(let reason, let milliseconds):
            lose(name, lock)
            logger?.warning(
                "no heartbeat written for too long: the lock is called lost, since other replicas take it over",
                metadata: ["path": "\(file)", "reason": "\(reason)", "silentMilliseconds": "\(milliseconds)"])
            return false
        }
    }

    /// Forgets a lock this locker lost, and lets its flock go (unless a newer lock of the same
    /// name was taken meanwhile).
    private func lose(_ name: String, _ lock: HeldLock) {
        held.withLock { held in
            if held[name] === lock { held[name] = nil }
        }
        lock.close()
    }

    /// Releases `name` if this locker holds it (moved aside and checked, as a takeover is, so a
    /// lock taken over meanwhile is left to its new holder).
    public func unlock(_ name: String) throws(ACMEError) {
        let file = try path(of: name)
        guard let released = held.withLock({ $0.removeValue(forKey: name) }) else { return }
        // The flock goes last, once the file is no longer at its name: a locker that probes it
        // free meanwhile finds its name empty or another's lock, and its takeover checks that.
        defer { released.close() }
        // Judged by identity, never by the bytes (a copy of them is not this lock): only the held
        // file is moved aside, and only if what was moved is the held file is it removed.
        guard released.isAt(file) else { return }
        let aside = file + ".release-" + randomHex(8)
        var failure: String?
        if let injected = releaseFault.withLock({ $0 })?(name) {
            failure = describeErrno(injected)
        } else {
            do {
                try Files.rename(file, to: aside)
            } catch {
                failure = error.reason
            }
        }
        if let failure {
            // The lock stays at its name: this name's next order here and elsewhere waits until
            // it goes stale (`staleAfter`, or `deadHolderAfter` on this machine).
            let first = releaseWarned.withLock { $0.count < Self.maximumReleaseWarnings && $0.insert(name).inserted }
            if first {
                logger?.warning(
                    "a lock could not be released: its name waits until the lock goes stale (this name's next failures are not logged)",
                    metadata: ["path": "\(file)", "reason": "\(failure)", "staleAfterMilliseconds": "\(Self.staleAfter)"])
            }
            return
        }
        guard released.isAt(aside) else {
            // Another's lock landed in between (or cannot be looked at): put back whole, never
            // replacing a newer one; what cannot go back stays aside, never discarded.
            if CAASALinux_renameat2(aside, file, 1) != 0 {
                logger?.warning(
                    "another holder's lock moved aside at release could not be put back", metadata: ["path": "\(aside)"])
            }
            return
        }
        discardAside(aside)
    }

    /// Whether this locker believes it holds `name` (until a refresh says otherwise).
    public func holds(_ name: String) -> Bool { held.withLock { $0[name] != nil } }
}

/// What a locker reads of another's lock file, and whether its holder is known to be gone: the
/// file names this kernel's boot id and nobody holds its flock (`StorageLock`).
enum DeadHolder {
    /// This kernel's boot id (`/proc/sys/kernel/random/boot_id`, random at each boot): two
    /// processes with the same one share a kernel, and so share flocks exactly. nil without /proc:
    /// the heartbeat rule alone decides.
    static let bootID: String? = {
        guard let bytes = try? Files.readFile("/proc/sys/kernel/random/boot_id", limit: 64) else { return nil }
        let id = String(decoding: bytes.prefix { $0 != 0x0A }, as: UTF8.self)
        return id.count == 36 && id.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || HexDigit.value($0) != nil }) ? id : nil
    }()

    /// What stands for the bytes of a lock file that is not a regular file of ours (a symbolic
    /// link, a FIFO, a directory, too large, not readable): compared like bytes, so it is stale
    /// once it stays `staleAfter`.
    static let unreadable = Array("unreadable".utf8)

    /// The bytes of the lock file at `file` (never following a link, never waiting on a FIFO)
    /// and, with `probe`, whether its holder is gone; nil when there is no file.
    static func peek(_ file: String, limit: Int, probe: Bool = true) throws(ACMEError) -> (bytes: [UInt8], holderGone: Bool)? {
        let fd: Int32
        do {
            fd = try Files.openForReadingNotFollowing(file)
        } catch  where error.isNoSuchFile {
            return nil
        } catch  where error.errno == ELOOP || error.errno == EACCES {
            return (unreadable, false)
        } catch {
            throw .storage("cannot read \(file): \(error.reason)")
        }
        defer { Files.close(fd) }
        let bytes: [UInt8]
        do {
            bytes = try Files.readAll(fd, limit: limit)
        } catch  where error.errno == EFBIG || error.errno == EINVAL || error.errno == EISDIR {
            return (unreadable, false)
        } catch {
            throw .storage("cannot read \(file): \(error.reason)")
        }
        // Read before the probe: a holder writes its boot id only once it holds the flock, so a
        // free flock after reading it means the holder let go.
        guard probe, let bootID, contains(bytes, #""boot":"\#(bootID)""#) else { return (bytes, false) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return (bytes, false) }
        return (bytes, true)
    }

    private static func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard needle.count <= bytes.count else { return false }
        return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
