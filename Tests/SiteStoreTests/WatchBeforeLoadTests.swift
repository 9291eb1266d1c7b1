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

    @Test(
        "tls/ watched by the load: none by the watcher's first pass, each one a listing shows before its pair is read, a later one from its site's event"
    )
    func tlsWatchedByLoad() throws {
        let directory = try TemporaryDirectory(prefix: "aasad-tls-by-load")
        // Past the watcher's parallel threshold and the load's chunk: the batch paths of both.
        let count = SiteRegistry.chunkSize + 20
        let aasa = Array(TempConfig.aasa.utf8)
        for i in 0..<count {
            try directory.write("sites/s\(i).test/apple-app-site-association", aasa)
            if i % 2 == 1 {
                try directory.write("sites/s\(i).test/tls/cert.pem", Array("chain \(i)".utf8))
                try directory.write("sites/s\(i).test/tls/key.pem", Array("key \(i)".utf8))
            }
        }
        let watcher = try ConfigWatcher(
            root: directory.path, rescanInterval: nil, logger: logger, sitesInBackground: true, tlsByLoad: true)
        defer { watcher.stop() }
        let registry = SiteRegistry(
            root: directory.path, logger: logger, checkCertificate: { _ in nil },
            knownValidFile: (path: directory.path("validated-contents"), identity: "x"))
        registry.beforeReading = {
            watcher.waitForSites()
            // The watcher's own pass watched the site directories, no tls/.
            #expect(watcher.watchedSites == count && watcher.watchedSiteTLS == 0)
        }
        let asked = Mutex<[String]>([])
        let firstCert = directory.path("sites/s1.test/tls/cert.pem")
        // Each tls/ is watched before its pair is read: rewritten here, the load reads the new bytes.
        registry.watchesTLS = { name in
            asked.withLock { $0.append(name) }
            watcher.watchTLS(ofSite: name)
            if name == "s1.test" { try? Data("chain rewritten".utf8).write(to: URL(fileURLWithPath: firstCert)) }
        }
        let first = registry.reloadAll()
        registry.watchesTLS = nil
        #expect(Set(asked.withLock { $0 }) == Set((0..<count).filter { $0 % 2 == 1 }.map { "s\($0).test" }))
        #expect(first.site(forHost: "s1.test")?.certificate?.chainPEM == Array("chain rewritten".utf8))
        let batches = Mutex<[Set<String>]>([])
        watcher.start { change in batches.withLock { $0.append(change.sites) } }
        func reported(_ name: String) -> Bool {
            eventually(attempts: 500, interval: 0.02) { batches.withLock { $0.contains { $0.contains(name) } } }
        }
        // The rewrite during the load is reported first (its watch was in before the read).
        #expect(reported("s1.test"))
        batches.withLock { $0 = [] }
        // A pair changed after the load read it, in the first and the last site with one.
        try directory.write("sites/s1.test/tls/key.pem", Array("key changed".utf8))
        try directory.write("sites/s\(count - 1).test/tls/cert.pem", Array("chain changed".utf8))
        #expect(reported("s1.test"), "a change to a tls/ the load watched was not reported")
        #expect(reported("s\(count - 1).test"))
        // A site without one gets a tls/ after the load: its directory's event, then its files'.
        try directory.write("sites/s0.test/tls/cert.pem", Array("chain new".utf8))
        #expect(reported("s0.test"))
        batches.withLock { $0 = [] }
        try directory.write("sites/s0.test/tls/key.pem", Array("key new".utf8))
        #expect(reported("s0.test"), "a change in a tls/ made after the load was not reported")
    }
}
