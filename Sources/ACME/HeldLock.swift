import Glibc
import Reactor
import Synchronization

/// A lock file this locker created and holds: its descriptor (opened at the exclusive create,
/// holding the file's flock), which file it is (device and inode, to tell it from another file
/// put at its name), and the heartbeats written. A beat and the close take its own mutex, so a
/// beat never writes through a descriptor closed (and reused) meanwhile.
final class HeldLock: Sendable {
    /// What a beat found at the lock's name.
    enum Beat {
        /// The held file is there (or nothing is, for now): the beat was written.
        case written
        /// Another file is there, or the held file is gone (ESTALE, ENOENT, ENXIO from the held
        /// descriptor: unlinked by another NFS client, whose inode may be reused): the lock is lost.
        case replaced
        /// This beat failed and none was written for `StorageLock.silentAfter`: the lock is lost.
        case silent(reason: String, milliseconds: Int64)
    }

    /// What a write or fsync through the held descriptor fails with once its file is gone: NFS
    /// says ESTALE when another client removed it; its inode number may then name a new file, so
    /// the device and inode compare alone cannot be trusted.
    static let goneErrnos: Set<Int32> = [ESTALE, ENOENT, ENXIO]

    let device: UInt64
    let inode: UInt64
    /// The descriptor (nil once closed), the heartbeats written through it, and when the last
    /// one was written (the locker's clock).
    private let state: Mutex<(descriptor: Int32?, count: Int, written: Int64)>

    init(descriptor: Int32, device: UInt64, inode: UInt64, written: Int64) {
        self.device = device
        self.inode = inode
        state = Mutex((descriptor, 0, written))
    }

    /// One heartbeat: `contents(count)` written over the file through the held descriptor,
    /// unless another file is at `path` now. A missing name (a taker between its rename and its
    /// check, which a fresh beat makes it undo) still gets the beat: the held file is the lock
    /// until another one is at the name. Throws when the name cannot be looked at or the write
    /// fails: the caller keeps the lock.
    func beat(_ path: String, now: Int64, fault: () -> Int32?, contents: (Int) -> [UInt8]) throws(ACMEError) -> Beat {
        try state.withLock { state throws(ACMEError) -> Beat in
            guard let fd = state.descriptor else { return .replaced }
            var lookError: SystemError?
            do throws(SystemError) {
                // lstat: a symbolic link planted at the name is another file, never followed.
                let there = try Files.linkStatus(path)
                if there.kind != .regular || there.device != device || there.inode != inode { return .replaced }
            } catch  where error.isNoSuchFile {
                // Nobody's lock is at the name: the held file is still the lock.
            } catch {
                lookError = error
            }
            let next = contents(state.count + 1)
            var failure: (errno: Int32, reason: String)?
            if let injected = fault() {
                failure = (injected, describeErrno(injected))
            } else {
                do throws(SystemError) {
                    try Files.writeAll(fd, next, at: 0)
                    try Files.truncate(fd, length: Int64(next.count))
                    try Files.sync(fd)
                } catch {
                    failure = (error.errno, error.reason)
                }
            }
            if let failure {
                if Self.goneErrnos.contains(failure.errno) { return .replaced }
                if now - state.written >= StorageLock.silentAfter {
                    return .silent(reason: failure.reason, milliseconds: now - state.written)
                }
                throw .storage("cannot refresh \(path): \(failure.reason); the lock is kept and the next heartbeat tries again")
            }
            state.count += 1
            state.written = now
            // Written, but which file is at the name is not known: this beat counts as failed.
            if let lookError {
                throw .storage("cannot look at \(path): \(lookError.reason); the lock is kept and the next heartbeat tries again")
            }
            return .written
        }
    }

    /// Whether the file at `path` (not followed) is the held one.
    func isAt(_ path: String) -> Bool {
        guard let there = try? Files.linkStatus(path) else { return false }
        return there.kind == .regular && there.device == device && there.inode == inode
    }

    /// Closes the descriptor, letting the flock go; later beats find the lock gone.
    func close() {
        state.withLock { state in
            if let fd = state.descriptor { Files.close(fd) }
            state.descriptor = nil
        }
    }
}
