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

extension SiteRegistry {
    /// How many times one reload starts again on a tree that was swapped while it read: a swap
    /// per reload is git-sync's `--period` at most (seconds), so three are plenty; past them the
    /// reload gives up, serving what it served before (never a mix of trees, never sites of a
    /// deleted tree taken as deleted), and the watcher's event for the last swap starts the next.
    static let maximumTreeAttempts = 3

    enum TreeState: Equatable {
        /// The tree last loaded whole: names may be reloaded one by one.
        case same
        /// Another tree (or none loaded yet): only a full reload reads it.
        case moved
        /// `root` resolves to nothing: everything loaded stays in service.
        case unresolved
    }

    /// Resolves `root` and points the reads (`readRoot`) at what it names now.
    func pinTree() -> TreeState {
        do {
            let tree = try ConfigTree.resolve(root)
            readRoot = tree.path
            pinnedTree = tree
            // The first tree read is the loaded one, whether a full reload or single names read it.
            if loadedTree == nil { loadedTree = tree }
            return tree == loadedTree ? .same : .moved
        } catch {
            guard loadedTree != nil else {
                // Nothing loaded yet: the load reports the missing directory as it always has.
                readRoot = root
                pinnedTree = nil
                return .moved
            }
            let problem = ConfigProblem(
                severity: .error, file: ".",
                message: "the config directory \(root) cannot be resolved (\(error.reason)); the sites loaded before stay in service")
            if sitesDirectoryProblem != problem { logger.error("\(problem.message)") }
            sitesDirectoryProblem = problem
            lastReloadProblems = 1
            return .unresolved
        }
    }

    /// True while `root` still names the tree this reload pinned: checked after each chunk is read
    /// and before it is applied. A tree git-sync has just deleted reads as missing files; those
    /// reads are never applied, because the swap came first and is seen here.
    func treeStillPinned() -> Bool {
        guard let pinned = pinnedTree else { return true }
        return (try? ConfigTree.resolve(root)) == pinned
    }
}
