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

    /// The state directory and the development CA in it (`dev-tls/`: `ca.pem`, `ca-key.pem`),
    /// made while root, handed to the user the process is about to run as. The process an upgrade
    /// (SIGUSR2) starts runs as that user from its first instruction, and reads the CA again (or
    /// makes a new one) there; the state directory is 0700, so without this it cannot even enter
    /// it. The key keeps its mode (0600): only that user and root read it.
    ///
    /// The state directory is the operator's path and is followed; below it nothing is: each
    /// entry is opened with O_NOFOLLOW relative to its parent's descriptor, and a file is handed
    /// over only when it is a regular file with one name, so root never changes the owner of
    /// what a symlink or hard link planted there (by whoever had the directory before) leads to.
    static func giveOwnership(ofState path: String, to name: String) throws(Failure) {
        guard let entry = getpwnam(name) else { throw Failure(description: "no such user \"\(name)\"") }
        guard geteuid() == 0 else { return }
        let (uid, gid) = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        let state = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard state >= 0 else { throw Failure(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(state) }
        guard fchown(state, uid, gid) == 0 else { throw Failure(description: "chown \(path): \(String(cString: strerror(errno)))") }
        let development = openat(state, "dev-tls", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard development >= 0 else {
            if errno == ENOENT { return }  // no development certificate was made
            throw Failure(description: "open \(path)/dev-tls: \(String(cString: strerror(errno))) (a symlink is not followed)")
        }
        defer { close(development) }
        guard fchown(development, uid, gid) == 0 else {
            throw Failure(description: "chown \(path)/dev-tls: \(String(cString: strerror(errno)))")
        }
        for file in ["ca.pem", "ca-key.pem"] {
            let fd = openat(development, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { continue }
                throw Failure(description: "open \(path)/dev-tls/\(file): \(String(cString: strerror(errno))) (a symlink is not followed)")
            }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else {
                throw Failure(description: "\(path)/dev-tls/\(file) is not a regular file with one name; it is not handed over")
            }
            guard fchown(fd, uid, gid) == 0 else {
                throw Failure(description: "chown \(path)/dev-tls/\(file): \(String(cString: strerror(errno)))")
            }
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
