package import Foundation

/// Whether another open file holds `path`'s flock(2) (a shared probe that fails while an
/// exclusive one is held elsewhere).
package func flockHeld(_ path: String) -> Bool {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return flock(fd, LOCK_SH | LOCK_NB) != 0
}

/// A process of its own holding an exclusive flock on `path` until it is killed (flock(1) would
/// hand the lock to a child that outlives it): a lock holder to kill with SIGKILL, as a crash
/// would. Returned once the lock is held.
package func processHoldingFlock(_ path: String) throws -> Process {
    let holder = Process()
    holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    holder.arguments = [
        "-c", "import fcntl,os,sys,time\nfd=os.open(sys.argv[1],os.O_RDONLY)\nfcntl.flock(fd,fcntl.LOCK_EX)\ntime.sleep(600)", path,
    ]
    try holder.run()
    guard eventually(attempts: 300, { flockHeld(path) }) else {
        holder.killAndWait()
        throw FlockHolderError(path: path)
    }
    return holder
}

/// The flock holder never took its lock.
package struct FlockHolderError: Error, CustomStringConvertible {
    package let path: String
    package var description: String { "the flock holder did not take \(path)" }
}
