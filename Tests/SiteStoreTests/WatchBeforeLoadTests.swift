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
    @Test("a file changed while the first load runs, after its site was read, is in the watcher's first batch")
    func changeDuringFirstLoad() throws {
        let layout = try GitSyncLayout()
        let sites = SiteRegistry.chunkSize + 10
        try layout.worktree("A", sites: sites, tree: "a")
        layout.publish("A")
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
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
}
