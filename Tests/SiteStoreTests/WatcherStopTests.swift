import Foundation
import Logging
import TestSupport
import Testing

@testable import SiteStore

/// A stopped watcher is freed, and with it its inotify descriptor: a user has only
/// `fs.inotify.max_user_instances` of them (128 by default), and one process that starts and stops
/// many daemons (Tests/DaemonTesting) once ran out, so its later watchers saw no change.
@Suite("The watcher lets go when stopped")
struct WatcherStopTests {
    @Test("a started and stopped watcher is freed, with whatever its apply closure held")
    func stoppedWatcherIsFreed() throws {
        let layout = try GitSyncLayout()
        try layout.worktree("A", sites: 1, tree: "a")
        layout.publish("A")
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        final class Held {}
        weak var weakWatcher: ConfigWatcher?
        weak var weakHeld: Held?
        do {
            let watcher = try ConfigWatcher(root: layout.link, rescanInterval: nil, logger: logger)
            let held = Held()
            // The closure holds the watcher and an object, as serve's closure holds the registry.
            watcher.start { _ in _ = (watcher, held) }
            weakWatcher = watcher
            weakHeld = held
            watcher.stop()
        }
        // The thread has signalled that it ended; its closure is let go right after.
        #expect(eventually { weakWatcher == nil && weakHeld == nil })
    }
}
