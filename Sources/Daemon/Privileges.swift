package import Glibc

/// Dropping root after binding (`--user`): the process keeps its listening sockets and open files
/// and gives up everything else, as nginx's master does for its workers. glibc applies setuid and
/// setgid to every thread of the process.
package enum Privileges {
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

    /// The state directory and the development CA in it (`dev-tls/`: `ca.pem`, `ca-key.pem` and
    /// the default leaf's `cert.pem`, `key.pem`), made while root, handed to the user the process
    /// is about to run as. The process an upgrade (SIGUSR2) starts runs as that user from its
    /// first instruction, and reads the CA again (or makes a new one) there; aasad makes the
    /// state directory 0700, so without this it cannot even enter it. The keys keep their mode
    /// (0600): only that user and root read them.
    ///
    /// The state directory is the operator's path and is followed; below it nothing is: each
    /// entry is opened with O_NOFOLLOW relative to its parent's descriptor, and a file is handed
    /// over only when it is a regular file with one name, so root never changes the owner of
    /// what a symlink or hard link planted there (by whoever had the directory before) leads to.
    /// The state directory itself changes owner only when its mode is 0700 (made by aasad, or
    /// by an operator for it alone): a shared directory given as `--state` by mistake (`/var/lib`,
    /// `/tmp`) never does; when the user then cannot enter it, the error says so.
    static func giveOwnership(ofState path: String, to name: String) throws(Failure) {
        guard let entry = getpwnam(name) else { throw Failure(description: "no such user \"\(name)\"") }
        guard geteuid() == 0 else { return }
        let (uid, gid) = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        let state = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard state >= 0 else { throw Failure(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(state) }
        var info = stat()
        guard fstat(state, &info) == 0 else { throw Failure(description: "stat \(path): \(String(cString: strerror(errno)))") }
        // Said once the development CA is handed over: this process serves on either way.
        var unenterable: Failure?
        if info.st_mode & 0o7777 == 0o700 {
            guard fchown(state, uid, gid) == 0 else { throw Failure(description: "chown \(path): \(String(cString: strerror(errno)))") }
        } else if info.st_uid != uid && !(info.st_gid == gid && info.st_mode & 0o010 != 0) && info.st_mode & 0o001 == 0 {
            unenterable = Failure(
                description: "\(path) is not 0700 (mode \(String(info.st_mode & 0o7777, radix: 8))), so it keeps its owner, and \(name) "
                    + "cannot enter it: give it to \(name) or choose another --state")
        }
        let development = openat(state, "dev-tls", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard development >= 0 else {
            if errno == ENOENT {  // no development certificate was made
                if let unenterable { throw unenterable }
                return
            }
            throw Failure(description: "open \(path)/dev-tls: \(String(cString: strerror(errno))) (a symlink is not followed)")
        }
        defer { close(development) }
        guard fchown(development, uid, gid) == 0 else {
            throw Failure(description: "chown \(path)/dev-tls: \(String(cString: strerror(errno)))")
        }
        for file in ["ca.pem", "ca-key.pem", "cert.pem", "key.pem"] {
            let fd = openat(development, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { continue }
                throw Failure(description: "open \(path)/dev-tls/\(file): \(String(cString: strerror(errno))) (a symlink is not followed)")
            }
            defer { close(fd) }
            var status = stat()
            guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_nlink == 1 else {
                throw Failure(description: "\(path)/dev-tls/\(file) is not a regular file with one name; it is not handed over")
            }
            guard fchown(fd, uid, gid) == 0 else {
                throw Failure(description: "chown \(path)/dev-tls/\(file): \(String(cString: strerror(errno)))")
            }
        }
        if let unenterable { throw unenterable }
    }

    /// Refuses, under root, a symbolic link among the entries a start reads and writes in a state
    /// directory that another user owns: `giveOwnership(ofState:to:)` handed it to the `--user`
    /// at an earlier start, and that user could otherwise have root write the verdict cache, the
    /// ACME storage or the development CA wherever a link leads (`/etc/sudoers.d`). `entries`:
    /// the names used (`cache`, `dev-tls`, and `acme` when the ACME storage is the default one).
    /// A state directory that root owns, or one not made yet, is the operator's and is not looked at.
    static func refuseLinks(inState path: String, _ entries: [String]) throws(Failure) {
        guard geteuid() == 0 else { return }
        let state = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard state >= 0 else { return }
        defer { close(state) }
        var info = stat()
        guard fstat(state, &info) == 0, info.st_uid != 0 else { return }
        for name in entries {
            var entry = stat()
            guard fstatat(state, name, &entry, AT_SYMLINK_NOFOLLOW) == 0, entry.st_mode & S_IFMT == S_IFLNK else { continue }
            throw Failure(
                description: "\(path)/\(name) is a symbolic link in a state directory owned by uid \(info.st_uid); aasad, as root, "
                    + "does not follow it: remove it (a storage elsewhere is set with acme.storage)")
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
