import Foundation
import Logging
import Testing

@testable import SiteStore

/// The layout git-sync (kubernetes/git-sync v4) makes: each commit checked out in
/// `ROOT/.worktrees/HASH`, published by renaming a new symlink over `ROOT/LINK`, the previous
/// checkout deleted right after. `--config` names `ROOT/LINK`.
final class GitSyncLayout {
    let root = NSTemporaryDirectory() + "aasad-gitsync-" + UUID().uuidString
    var link: String { root + "/current" }

    init() throws {
        try FileManager.default.createDirectory(atPath: root + "/.worktrees", withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    static func body(_ tree: String, _ site: Int) -> String {
        #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.\#(tree)\#(site)"], "components": [{"/": "/*"}]}]}}"#
    }

    /// Checks out a tree: sites `s0.t.test`... whose files name `tree`, except those `changed`
    /// maps to another body.
    func worktree(_ name: String, sites: Int, tree: String, changed: [Int: String] = [:]) throws {
        for i in 0..<sites {
            let directory = "\(root)/.worktrees/\(name)/sites/s\(i).t.test"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data((changed[i] ?? Self.body(tree, i)).utf8).write(to: URL(fileURLWithPath: directory + "/apple-app-site-association"))
        }
    }

    /// Publishes a worktree as git-sync does: a new link, renamed over the old one.
    func publish(_ target: String) {
        unlink(root + "/tmp-link")
        symlink(".worktrees/" + target, root + "/tmp-link")
        rename(root + "/tmp-link", link)
    }

    func remove(_ name: String) throws { try FileManager.default.removeItem(atPath: "\(root)/.worktrees/\(name)") }

    func registry() -> SiteRegistry {
        SiteRegistry(root: link, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}

private func body(_ snapshot: Snapshot, _ host: String) -> String? {
    snapshot.site(forHost: host)?.aasa.map { String(decoding: $0.body, as: UTF8.self) }
}

/// The trees each site of a snapshot was read from.
private func trees(_ snapshot: Snapshot, sites: Int) -> [String: Int] {
    var seen: [String: Int] = [:]
    for i in 0..<sites {
        let tree = ["a", "b"].first { body(snapshot, "s\(i).t.test") == GitSyncLayout.body($0, i) } ?? "other"
        seen[tree, default: 0] += 1
    }
    return seen
}

/// More than one chunk of a reload, so that a swap can fall between two chunks' reads.
private let multiChunk = SiteRegistry.chunkSize + 200

/// A registry that has loaded tree A, of `sites` sites, published through the link.
private func loadedTreeA(_ layout: GitSyncLayout, sites: Int) throws -> SiteRegistry {
    try layout.worktree("A", sites: sites, tree: "a")
    layout.publish("A")
    let registry = layout.registry()
    #expect(trees(registry.reloadAll(), sites: sites) == ["a": sites])
    return registry
}

@Suite("A config directory published by swapping a symlink (git-sync)")
struct ConfigTreeTests {
    @Test("a tree swapped in the middle of a full reload, the old one deleted at once, gives a snapshot of the new tree only")
    func swapMidReload() throws {
        let sites = multiChunk
        let layout = try GitSyncLayout()
        let registry = try loadedTreeA(layout, sites: sites)
        try layout.worktree("B", sites: sites, tree: "b")
        var swapped = false
        registry.chunkRead = {
            guard !swapped else { return }
            swapped = true
            layout.publish("B")
            try? layout.remove("A")
        }
        let snapshot = registry.reloadAll()
        #expect(swapped)
        #expect(trees(snapshot, sites: sites) == ["b": sites])
    }

    @Test("a tree swapped during every attempt, each old tree deleted at once, leaves the sites served before, all of them")
    func swapEveryAttempt() throws {
        let sites = multiChunk
        let layout = try GitSyncLayout()
        let registry = try loadedTreeA(layout, sites: sites)
        // Each attempt's first chunk is read from one tree, which is then replaced and deleted:
        // the rest of that tree reads as missing. No attempt may drop or change a served site.
        let names = (0..<SiteRegistry.maximumTreeAttempts + 1).map { "T\($0)" }
        for name in names { try layout.worktree(name, sites: sites, tree: "b") }
        var current = "A"
        var swaps = 0
        registry.chunkRead = {
            guard swaps < names.count else { return }
            let next = names[swaps]
            swaps += 1
            layout.publish(next)
            try? layout.remove(current)
            current = next
        }
        let snapshot = registry.reloadAll()
        #expect(swaps == SiteRegistry.maximumTreeAttempts)
        #expect(trees(snapshot, sites: sites) == ["a": sites])
        // The next reload, with the tree still, reads the tree now published.
        registry.chunkRead = nil
        #expect(trees(registry.reload(["s0.t.test"]), sites: sites) == ["b": sites])
    }

    @Test("a tree swapped in the middle of a first load, the old one deleted at once, gives a snapshot of the new tree only")
    func swapMidFirstLoad() throws {
        // A first load updates each chunk's sites as it goes, reading the next chunk meanwhile
        // (`FirstLoad`): the attempt that saw the swap must leave nothing of tree A behind.
        let sites = multiChunk
        let layout = try GitSyncLayout()
        // A has a site B lacks, which the given-up attempt made a record of.
        try layout.worktree("A", sites: sites + 1, tree: "a")
        try layout.worktree("B", sites: sites, tree: "b")
        layout.publish("A")
        let registry = layout.registry()
        var reads = 0
        registry.chunkRead = {
            reads += 1
            // The second chunk's read: the first chunk's sites are updated by then.
            guard reads == 2 else { return }
            layout.publish("B")
            try? layout.remove("A")
        }
        let snapshot = registry.reloadAll()
        #expect(reads > 2)
        #expect(trees(snapshot, sites: sites) == ["b": sites])
        #expect(registry.stateCounts.values.reduce(0, +) == sites)
        #expect(registry.statuses.count == sites)
        #expect(registry.status(of: "s\(sites).t.test") == nil)
        #expect(registry.distinctContents == sites)
    }

    @Test("a tree swapped during every attempt of a first load leaves nothing served and no site counted")
    func swapEveryFirstAttempt() throws {
        let sites = multiChunk
        let layout = try GitSyncLayout()
        let names = (0...SiteRegistry.maximumTreeAttempts).map { "T\($0)" }
        for name in names { try layout.worktree(name, sites: sites, tree: "b") }
        layout.publish(names[0])
        let registry = layout.registry()
        // Each attempt's second chunk is read from a tree then replaced and deleted.
        var current = 0
        var reads = 0
        registry.chunkRead = {
            reads += 1
            guard reads % 2 == 0, current + 1 < names.count else { return }
            layout.publish(names[current + 1])
            try? layout.remove(names[current])
            current += 1
        }
        let snapshot = registry.reloadAll()
        #expect(current == SiteRegistry.maximumTreeAttempts)
        #expect(snapshot.sites.isEmpty)
        // What the given-up attempts updated is forgotten with them: no status says served.
        #expect(registry.statuses.isEmpty)
        #expect(registry.stateCounts.values.allSatisfy { $0 == 0 })
        #expect(registry.distinctContents == 0)
        registry.chunkRead = nil
        #expect(trees(registry.reloadAll(), sites: sites) == ["b": sites])
        #expect(registry.stateCounts.values.reduce(0, +) == sites)
    }

    @Test("a one-site reload after a swap reads the whole new tree")
    func singleNameAfterSwap() throws {
        let layout = try GitSyncLayout()
        try layout.worktree("A", sites: 20, tree: "a")
        layout.publish("A")
        let registry = layout.registry()
        registry.reloadAll()
        try layout.worktree("B", sites: 20, tree: "b")
        layout.publish("B")
        try layout.remove("A")
        #expect(trees(registry.reload(["s3.t.test"]), sites: 20) == ["b": 20])
    }

    @Test("a link to a missing tree, or a tree without sites/, keeps the last good snapshot and says why")
    func badTrees() throws {
        let layout = try GitSyncLayout()
        try layout.worktree("A", sites: 10, tree: "a")
        layout.publish("A")
        let registry = layout.registry()
        registry.reloadAll()
        layout.publish("missing")
        #expect(trees(registry.reloadAll(), sites: 10) == ["a": 10])
        #expect(trees(registry.reload(["s1.t.test"]), sites: 10) == ["a": 10])
        #expect(registry.lastReloadProblems > 0)
        #expect(registry.scan().problems.contains { $0.message.contains("cannot be resolved") })
        try FileManager.default.createDirectory(atPath: layout.root + "/.worktrees/empty", withIntermediateDirectories: true)
        layout.publish("empty")
        #expect(trees(registry.reloadAll(), sites: 10) == ["a": 10])
        #expect(registry.scan().problems.contains { $0.message.contains("no sites/ directory") })
    }

    @Test("a site invalid in the new tree keeps its last good version; a swap back to an older tree serves it again")
    func lastGoodAndSwapBack() throws {
        let layout = try GitSyncLayout()
        try layout.worktree("A", sites: 10, tree: "a")
        layout.publish("A")
        let registry = layout.registry()
        registry.reloadAll()
        try layout.worktree("B", sites: 10, tree: "b", changed: [4: "{"])
        layout.publish("B")
        try layout.remove("A")
        var snapshot = registry.reloadAll()
        #expect(body(snapshot, "s4.t.test") == GitSyncLayout.body("a", 4))
        #expect(trees(snapshot, sites: 10) == ["b": 9, "a": 1])
        // Back to the first commit: checked out again at the same path (a new directory).
        try layout.worktree("A", sites: 10, tree: "a")
        layout.publish("A")
        try layout.remove("B")
        snapshot = registry.reload(["s0.t.test"])
        #expect(trees(snapshot, sites: 10) == ["a": 10])
    }
}
