import Glibc

/// Dropping root after binding (`--user`): the process keeps its listening sockets and open files
/// and gives up everything else, as nginx's master does for its workers. glibc applies setuid and
/// setgid to every thread of the process.
enum Privileges {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Hands directories made while root (the ACME storage) to the user about to run the process.
    static func giveOwnership(of paths: [String], to name: String) throws(Failure) {
        guard let entry = getpwnam(name) else { throw Failure(description: "no such user \"\(name)\"") }
        guard geteuid() == 0 else { return }
        for path in paths where chown(path, entry.pointee.pw_uid, entry.pointee.pw_gid) != 0 {
            throw Failure(description: "chown \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The same for one directory, opened with O_NOFOLLOW: a symlink at the path is refused
    /// rather than followed (a path the service user could write before).
    static func giveOwnership(ofDirectory path: String, to name: String) throws(Failure) {
        guard let entry = getpwnam(name) else { throw Failure(description: "no such user \"\(name)\"") }
        guard geteuid() == 0 else { return }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fchown(fd, entry.pointee.pw_uid, entry.pointee.pw_gid) == 0 else {
            throw Failure(description: "chown \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func drop(to name: String) throws(Failure) {
        guard let entry = getpwnam(name) else { throw Failure(description: "no such user \"\(name)\"") }
        let uid = entry.pointee.pw_uid
        let gid = entry.pointee.pw_gid
        if getuid() == uid && geteuid() == uid { return }  // already that user
        guard geteuid() == 0 else { throw Failure(description: "only root can change to another user (running as uid \(geteuid()))") }
        // Supplementary groups first (root's would otherwise stay), then the group, then the user.
        guard initgroups(name, gid) == 0 else { throw Failure(description: "initgroups: \(String(cString: strerror(errno)))") }
        guard setgid(gid) == 0 else { throw Failure(description: "setgid(\(gid)): \(String(cString: strerror(errno)))") }
        guard setuid(uid) == 0 else { throw Failure(description: "setuid(\(uid)): \(String(cString: strerror(errno)))") }
        // The drop must be permanent: getting root back has to fail.
        guard uid == 0 || setuid(0) != 0 else { throw Failure(description: "root could be regained after setuid(\(uid))") }
    }
}
