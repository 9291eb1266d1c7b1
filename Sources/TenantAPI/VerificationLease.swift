import Glibc
import Logging
import Synchronization

/// One ownership checker per config volume (docs/api.md, "Several replicas"): replicas sharing
/// `<config>/.aasad-verify/` each run a checker thread, but only the one holding an exclusive
/// `flock(2)` on `.aasad-verify/checker.lock` makes requests; the others keep reading the
/// records (the gate needs them) and try the lock, without blocking, on each pass. The kernel
/// drops the lock when its holder closes it, stops or dies (`kill -9` included), so another
/// replica takes over within a pass. flock belongs to the open file, not the process: two
/// daemons in one process exclude each other as two processes do. Linux's NFS client maps flock
/// to a lock the server holds, so replicas on several machines exclude each other too.
final class CheckerLease: Sendable {
    /// The lock file's name in `.aasad-verify/`.
    static let fileName = "checker.lock"

    let path: String
    /// The descriptor holding the lock; -1 while not held.
    private let descriptor = Mutex<Int32>(-1)

    init(path: String) { self.path = path }

    var held: Bool { descriptor.withLock { $0 >= 0 } }

    /// Takes the lock unless held (never waits); whether this checker holds it now. A held lock
    /// whose file was removed or replaced is let go first: a replica that made the file anew
    /// could take that one, and two would check.
    func take(logger: Logger) -> Bool {
        descriptor.withLock { fd in
            if fd >= 0 {
                var openStatus = stat()
                var named = stat()
                if fstat(fd, &openStatus) == 0, stat(path, &named) == 0, openStatus.st_ino == named.st_ino,
                    openStatus.st_dev == named.st_dev
                {
                    return true
                }
                close(fd)
                fd = -1
                logger.notice("the ownership checks' lock file was removed or replaced; taking it again", metadata: ["file": "\(path)"])
            }
            // No O_CREAT through a link: O_NOFOLLOW refuses one planted as the lock file.
            let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard opened >= 0 else { return false }
            guard flock(opened, LOCK_EX | LOCK_NB) == 0 else {
                close(opened)
                return false
            }
            // The file locked must still be the one named: another replica may have removed it
            // and made a new one (and locked that) between this open and this lock.
            var openStatus = stat()
            var named = stat()
            guard fstat(opened, &openStatus) == 0, stat(path, &named) == 0, openStatus.st_ino == named.st_ino,
                openStatus.st_dev == named.st_dev
            else {
                close(opened)
                return false
            }
            fd = opened
            logger.notice("this replica runs the ownership checks of the config directory", metadata: ["lock": "\(path)"])
            return true
        }
    }

    /// Lets the lock go (the checker stops).
    func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }
}
