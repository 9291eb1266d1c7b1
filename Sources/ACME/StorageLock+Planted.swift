import CAASALinux
import Glibc
import Reactor

/// A directory found at a lock's name (planted there, or left by a tool that mistook the name
/// for a folder) is moved aside by the takeover like any stale lock (`StorageLock`), and then
/// removed here, so that neither it nor what it holds stays in the storage. Removal never follows
/// a symbolic link (entries are removed by name with `unlinkat`, which removes a link itself, and
/// a subdirectory is opened with O_NOFOLLOW), never enters another mount (a subdirectory is
/// entered only when its device and its mount id (statx STATX_MNT_ID) are the planted
/// directory's: a bind mount of the same filesystem has the same device but another mount id; a
/// kernel that reports no mount ids gets no subdirectory entered), and is bounded, since it runs
/// on the manager's thread, ahead of the order the lock was taken for. Names are passed as the
/// bytes readdir gave, valid UTF-8 or not.
extension StorageLock {
    /// Most entries removed from one planted directory, at every depth: a directory with no or a
    /// few entries (the usual mistake) goes at once; 1,000 removals take milliseconds on a local
    /// disk and about a second on a network volume (about 1 ms a round trip), which the order
    /// waits for. A larger tree is left aside for the operator, with a warning.
    static let maximumPlantedEntries = 1_000
    /// Deepest directory level removed below the planted one: each level holds one descriptor
    /// open while the levels below it are emptied (its listing is read whole and closed first),
    /// so at most 9 descriptors are open at depth 8, 10 while the deepest level is listed.
    static let maximumPlantedDepth = 8

    /// Which mount an open directory is on: its device and its mount id.
    struct Mount: Equatable {
        let device: UInt64
        let id: UInt64

        /// nil when either cannot be read (a kernel before Linux 5.8 reports no mount id).
        init?(of fd: Int32) {
            guard let device = try? Files.status(of: fd).device else { return nil }
            var id: UInt64 = 0
            guard CAASALinux_mount_id(fd, &id) == 0 else { return nil }
            self.device = device
            self.id = id
        }
    }

    /// Removes what a takeover or a release moved aside at `path`: a file is unlinked; a
    /// directory is emptied and removed within the bounds. Whether nothing is left there.
    @discardableResult
    static func discard(_ path: String) -> Bool { leftover(afterDiscarding: path) == nil }

    /// `discard`, saying why something stays (nil when nothing does), for the operator's warning.
    static func leftover(afterDiscarding path: String) -> String? {
        guard let kind = try? Files.linkStatus(path).kind else { return nil }
        guard kind == .directory else { return removed(path) }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        // Swapped for something else between the look and the open: unlinked by name.
        guard fd >= 0 else { return removed(path) }
        defer { Files.close(fd) }
        // The planted directory itself is on the storage's mount: it was renamed within the locks
        // directory, and a mount point cannot be renamed (EBUSY).
        var budget = maximumPlantedEntries
        if let reason = empty(fd, mount: Mount(of: fd), depth: 0, budget: &budget) { return reason }
        return unlinkat(AT_FDCWD, path, AT_REMOVEDIR) == 0 ? nil : "cannot remove the directory: \(describeErrno(errno))"
    }

    private static func removed(_ path: String) -> String? {
        do {
            try Files.remove(path)
            return nil
        } catch {
            return "cannot remove it: \(error.reason)"
        }
    }

    /// Removes every entry of the open directory `fd` (subdirectories on `mount` emptied first,
    /// down to `maximumPlantedDepth`), spending one of `budget` per entry. Why something stays
    /// (nil when nothing does): the budget or the depth ran out, a subdirectory is on another
    /// mount (or the mount is not known), or a removal failed.
    private static func empty(_ fd: Int32, mount: Mount?, depth: Int, budget: inout Int) -> String? {
        // Counted before anything is removed: a directory of a million names is not listed whole.
        let listed: [[CChar]]?
        do {
            listed = try Files.entryBytes(in: fd, limit: budget)
        } catch {
            return "cannot list a directory: \(error.reason)"
        }
        guard let names = listed else { return "more than \(maximumPlantedEntries) entries" }
        budget -= names.count
        for name in names {
            if unlinkat(fd, name, 0) == 0 { continue }
            // Linux says EISDIR for a directory (POSIX allows EPERM).
            guard errno == EISDIR || errno == EPERM else { return "cannot remove an entry: \(describeErrno(errno))" }
            guard depth < maximumPlantedDepth else { return "deeper than \(maximumPlantedDepth) levels" }
            guard let mount else { return "a subdirectory, and this kernel reports no mount ids (statx STATX_MNT_ID)" }
            let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else { return "cannot open a subdirectory: \(describeErrno(errno))" }
            defer { Files.close(child) }
            guard Mount(of: child) == mount else { return "another mount inside" }
            if let reason = empty(child, mount: mount, depth: depth + 1, budget: &budget) { return reason }
            guard unlinkat(fd, name, AT_REMOVEDIR) == 0 else { return "cannot remove a subdirectory: \(describeErrno(errno))" }
        }
        return nil
    }
}
