import Glibc
import Reactor

/// A directory found at a lock's name (planted there, or left by a tool that mistook the name
/// for a folder) is moved aside by the takeover like any stale lock (`StorageLock`), and then
/// removed here, so that neither it nor what it holds stays in the storage. Removal never follows
/// a symbolic link (entries are removed by name with `unlinkat`, which removes a link itself, and
/// a subdirectory is opened with O_NOFOLLOW), never leaves the directory's filesystem (a mount
/// point inside is left), and is bounded, since it runs on the manager's thread, ahead of the
/// order the lock was taken for.
extension StorageLock {
    /// Most entries removed from one planted directory, at every depth: a directory with no or a
    /// few entries (the usual mistake) goes at once; 1,000 removals take milliseconds on a local
    /// disk and about a second on a network volume (about 1 ms a round trip), which the order
    /// waits for. A larger tree is left aside for the operator, with a warning.
    static let maximumPlantedEntries = 1_000
    /// Deepest directory level removed below the planted one: each level holds a descriptor
    /// open while its entries are removed, so the depth bounds the descriptors too.
    static let maximumPlantedDepth = 8

    /// Removes what a takeover or a release moved aside at `path`: a file is unlinked; a
    /// directory is emptied and removed within the bounds. Whether nothing is left there.
    @discardableResult
    static func discard(_ path: String) -> Bool {
        guard let kind = try? Files.linkStatus(path).kind else { return true }
        guard kind == .directory else { return (try? Files.remove(path)) != nil }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        // Swapped for something else between the look and the open: unlinked by name.
        guard fd >= 0 else { return (try? Files.remove(path)) != nil }
        defer { Files.close(fd) }
        guard let device = try? Files.status(of: fd).device else { return false }
        var budget = maximumPlantedEntries
        guard empty(fd, device: device, depth: 0, budget: &budget) else { return false }
        return unlinkat(AT_FDCWD, path, AT_REMOVEDIR) == 0
    }

    /// Removes every entry of the open directory `fd` (subdirectories emptied first, down to
    /// `maximumPlantedDepth`), spending one of `budget` per entry. False when something stays:
    /// the budget or the depth ran out, another filesystem is mounted inside, or a removal failed.
    private static func empty(_ fd: Int32, device: UInt64, depth: Int, budget: inout Int) -> Bool {
        // fdopendir takes the descriptor it is given: a duplicate, so `fd` stays ours for unlinkat.
        let listing = dup(fd)
        guard listing >= 0, let directory = fdopendir(listing) else {
            if listing >= 0 { Files.close(listing) }
            return false
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != "." && name != ".." else { continue }
            // Counted before it is removed: a directory of a million names is not listed whole.
            guard budget > 0 else { return false }
            budget -= 1
            names.append(name)
        }
        for name in names {
            if unlinkat(fd, name, 0) == 0 { continue }
            // Linux says EISDIR for a directory (POSIX allows EPERM).
            guard errno == EISDIR || errno == EPERM, depth < maximumPlantedDepth else { return false }
            let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else { return false }
            let emptied = (try? Files.status(of: child).device) == device && empty(child, device: device, depth: depth + 1, budget: &budget)
            Files.close(child)
            guard emptied, unlinkat(fd, name, AT_REMOVEDIR) == 0 else { return false }
        }
        return true
    }
}
