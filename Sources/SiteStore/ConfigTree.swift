import Foundation
import Reactor

/// The physical directory a config path names at one moment: `--config` with every symbolic
/// link resolved, and that directory's inode.
///
/// git-sync (kubernetes/git-sync v4) checks each commit out into a directory of its own
/// (`ROOT/.worktrees/HASH`) and publishes it by renaming a new symlink over `ROOT/LINK`, then
/// deletes the previous checkout; a deploy job on a shared volume can do the same. `--config`
/// then names `ROOT/LINK` (or a directory under it). A reload pins the tree once and reads every
/// file through its physical path, so that a swap in the middle of a reload can never give a
/// snapshot made of two trees.
struct ConfigTree: Equatable {
    /// The resolved path (`realpath`).
    var path: String
    /// Its inode: a tree deleted and made again at the same path (a swap back to a commit whose
    /// checkout was removed) is another tree.
    var inode: UInt64

    /// Resolves `root` now; throws when it names nothing (a dangling link), or nothing that can
    /// be searched.
    static func resolve(_ root: String) throws(SystemError) -> ConfigTree {
        let path = try Files.realPath(root)
        return ConfigTree(path: path, inode: try Files.status(path).inode)
    }
}

/// The tree a reload reads: `root` resolved when the reload starts (pinned), and the last tree
/// loaded whole. Every read goes through `readRoot`, so that a reload never mixes two trees.
struct TreePin {
    /// The config directory as named (`--config`).
    let root: String
    /// The physical tree the current reload reads (`root` resolved).
    private(set) var readRoot: String
    /// The tree the current reload pinned, and the last one loaded whole.
    private(set) var pinned: ConfigTree?
    private(set) var loaded: ConfigTree?

    init(root: String) {
        self.root = root
        readRoot = root
    }

    var sitesPath: String { readRoot + "/sites" }

    enum State: Equatable {
        /// The tree last loaded whole: names may be reloaded one by one.
        case same
        /// Another tree (or none loaded yet): only a full reload reads it.
        case moved
        /// `root` resolves to nothing: everything loaded stays in service.
        case unresolved(reason: String)
    }

    /// Resolves `root` and points the reads (`readRoot`) at what it names now.
    mutating func pin() -> State {
        do {
            let tree = try ConfigTree.resolve(root)
            readRoot = tree.path
            pinned = tree
            // The first tree read is the loaded one, whether a full reload or single names read it.
            if loaded == nil { loaded = tree }
            return tree == loaded ? .same : .moved
        } catch {
            guard loaded != nil else {
                // Nothing loaded yet: the load reports the missing directory as it always has.
                readRoot = root
                pinned = nil
                return .moved
            }
            return .unresolved(reason: error.reason)
        }
    }

    /// The pinned tree was loaded whole.
    mutating func markLoaded() { loaded = pinned }

    /// Whether the pinned tree is another than the one last loaded whole.
    var pinnedIsNew: Bool { loaded.map { pinned != $0 } ?? false }

    /// True while `root` still names the tree this reload pinned: checked after each chunk is read
    /// and before it is applied. A tree git-sync has just deleted reads as missing files; those
    /// reads are never applied, because the swap came first and is seen here.
    func stillPinned() -> Bool {
        guard let pinned else { return true }
        return (try? ConfigTree.resolve(root)) == pinned
    }
}
