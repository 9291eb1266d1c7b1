import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import SiteStore

/// serve makes its watcher before the first load reads the config directory: a start
/// at 100,000 sites reads for seconds, and a file changed in that time, after its site was read,
/// was lost until the next full rescan when the watches were added after the load.
@Suite("The watcher is made before the first load")
struct WatchBeforeLoadTests {
    private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A published tree of `sites` sites `s0.t.test`…
    private func layout(sites: Int) throws -> GitSyncLayout {
        let layout = try GitSyncLayout()
        try layout.worktree("A", sites: sites, tree: "a")
        layout.publish("A")
        return layout
    }
    @Test("a file changed while the first load runs, after its site was read, is in the watcher's first batch")
    func changeDuringFirstLoad() throws {
        let sites = SiteRegistry.chunkSize + 10
        let layout = try layout(sites: sites)
        let watcher = try ConfigWatcher(root: layout.link, rescanInterval: nil, logger: logger)
        let registry = layout.registry()
        // s0.t.test is in the first chunk: rewritten once that chunk has been read.
        let changed = "\(layout.root)/.worktrees/A/sites/s0.t.test/apple-app-site-association"
        let newBody = GitSyncLayout.body("z", 0)
        var rewritten = false
        registry.chunkRead = {
            guard !rewritten else { return }
            rewritten = true
            try? Data(newBody.utf8).write(to: URL(fileURLWithPath: changed))
        }
        let first = registry.reloadAll()
        #expect(rewritten)
        #expect(first.site(forHost: "s0.t.test")?.aasa.map { String(decoding: $0.body, as: UTF8.self) } == GitSyncLayout.body("a", 0))
        registry.chunkRead = nil

        let batches = Mutex<[ConfigWatcher.Change]>([])
        watcher.start { change in batches.withLock { $0.append(change) } }
        defer { watcher.stop() }
        let seen = eventually(attempts: 500, interval: 0.02) {
            batches.withLock { $0.contains { $0.sites.contains("s0.t.test") || $0.full } }
        }
        #expect(seen, "the change made during the first load was never reported")
        let applied = registry.reload(["s0.t.test"])
        #expect(applied.site(forHost: "s0.t.test")?.aasa.map { String(decoding: $0.body, as: UTF8.self) } == newBody)
    }

    @Test("sites watched on a thread of their own: no site is read before `beforeReading`, and a change to any site is reported")
    func sitesWatchedInBackground() throws {
        let sites = SiteRegistry.chunkSize + 10
        let layout = try layout(sites: sites)
        let watcher = try ConfigWatcher(root: layout.link, rescanInterval: nil, logger: logger, sitesInBackground: true)
        let registry = layout.registry()
        let file = { (site: Int) in "\(layout.root)/.worktrees/A/sites/s\(site).t.test/apple-app-site-association" }
        // Written once the watches are in, before any site is read: the load serves the new
        // bytes (a read before `beforeReading` would serve the old ones).
        let early = GitSyncLayout.body("early", 7)
        var waited = 0
        registry.beforeReading = {
            waited += 1
            watcher.waitForSites()
            try? Data(early.utf8).write(to: URL(fileURLWithPath: file(7)))
        }
        let first = registry.reloadAll()
        #expect(waited == 1)
        #expect(first.site(forHost: "s7.t.test")?.aasa.map { String(decoding: $0.body, as: UTF8.self) } == early)
        // Every site directory is watched: a change to the first and the last is reported.
        let batches = Mutex<[ConfigWatcher.Change]>([])
        watcher.start { change in batches.withLock { $0.append(change) } }
        defer { watcher.stop() }
        for site in [0, sites - 1] { try Data(GitSyncLayout.body("z", site).utf8).write(to: URL(fileURLWithPath: file(site))) }
        let seen = eventually(attempts: 500, interval: 0.02) {
            batches.withLock { changes in
                ["s0.t.test", "s\(sites - 1).t.test"].allSatisfy { name in changes.contains { $0.sites.contains(name) } }
            }
        }
        #expect(seen, "a change to a site watched in the background was not reported")
        #expect(!batches.withLock { $0.contains(where: \.full) })
    }

    @Test("waitForSites returns only once every site listed is watched, however late the watching thread runs")
    func waitsForEverySite() throws {
        // Past the watcher's parallel threshold: watched on every core.
        let sites = ConfigWatcher.parallelThreshold + 44
        let layout = try layout(sites: sites)
        let gate = DispatchSemaphore(value: 0)
        let watcher = try ConfigWatcher(
            root: layout.link, rescanInterval: nil, logger: logger, sitesInBackground: true, holding: { gate.wait() })
        // The watching thread starts only as this one begins to wait.
        DispatchQueue.global().async { gate.signal() }
        watcher.waitForSites()
        #expect(watcher.watchedSites == sites)
        watcher.stop()
    }
}
