import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import SiteStore

/// The watcher's table of watches (Sources/SiteStore/ConfigWatcher.swift): one entry a site, one
/// kind inline a watch. Each event names the site whose directory (or `tls/`) it happened in,
/// through removals, re-creations, renames and alias symlinks that share a directory's watch.
@Suite("The watcher maps each directory's events to its site")
struct WatcherTableTests {
    /// A config directory with a watcher started on it, and the sites of every batch it handed over.
    final class Watched {
        let directory: TemporaryDirectory
        let watcher: ConfigWatcher
        let batches = Mutex<[Set<String>]>([])

        init(sites: [String]) throws {
            directory = try TemporaryDirectory(prefix: "aasad-watcher-table")
            try directory.write("sites/.keep", [])
            for site in sites {
                try directory.write("sites/\(site)/apple-app-site-association", Array("{}".utf8))
                try directory.write("sites/\(site)/tls/cert.pem", Array("x".utf8))
            }
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            watcher = try ConfigWatcher(root: directory.path, rescanInterval: nil, logger: logger)
            watcher.start { [weak self] change in self?.batches.withLock { $0.append(change.sites) } }
        }

        deinit { watcher.stop() }

        func path(_ relative: String) -> String { directory.path(relative) }

        /// Runs `change`, then waits for a batch holding `site` and returns every site reported
        /// since `change` ran, up to and including that batch.
        func reported(after change: () throws -> Void, awaiting site: String) throws -> Set<String> {
            let before = batches.withLock { $0.count }
            try change()
            var seen = Set<String>()
            let arrived = eventually(attempts: 500, interval: 0.02) {
                seen = batches.withLock { Set($0[before...].joined()) }
                return seen.contains(site)
            }
            #expect(arrived, "no batch named \(site)")
            return seen
        }

        func write(_ relative: String) throws { try directory.write(relative, Array("{\"x\":1}".utf8)) }
    }

    @Test("a file written in a site's directory or its tls/ is reported for that site alone")
    func rightSite() throws {
        let long = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + ".test"
        let w = try Watched(sites: ["a.test", "b.test", long])
        #expect(try w.reported(after: { try w.write("sites/b.test/apple-app-site-association") }, awaiting: "b.test") == ["b.test"])
        #expect(try w.reported(after: { try w.write("sites/a.test/tls/cert.pem") }, awaiting: "a.test") == ["a.test"])
        #expect(try w.reported(after: { try w.write("sites/\(long)/apple-app-site-association") }, awaiting: long) == [long])
    }

    @Test("a site directory removed and made again is watched again: its next write is reported")
    func removedAndRecreated() throws {
        let w = try Watched(sites: ["a.test", "b.test"])
        _ = try w.reported(after: { try FileManager.default.removeItem(atPath: w.path("sites/a.test")) }, awaiting: "a.test")
        _ = try w.reported(after: { try w.write("sites/a.test/apple-app-site-association") }, awaiting: "a.test")
        // The new directory's own watch: a write inside it alone.
        #expect(try w.reported(after: { try w.write("sites/a.test/tls/cert.pem") }, awaiting: "a.test") == ["a.test"])
        // Removed and made again within one batch (the kernel gives the new directory a new watch).
        _ = try w.reported(
            after: {
                try FileManager.default.removeItem(atPath: w.path("sites/b.test"))
                try w.write("sites/b.test/apple-app-site-association")
            }, awaiting: "b.test")
        #expect(try w.reported(after: { try w.write("sites/b.test/apple-app-site-association") }, awaiting: "b.test") == ["b.test"])
    }

    @Test("a renamed site directory is reported under its new name only, once renamed")
    func renamed() throws {
        let w = try Watched(sites: ["a.test", "b.test"])
        let both = try w.reported(
            after: { try FileManager.default.moveItem(atPath: w.path("sites/a.test"), toPath: w.path("sites/c.test")) },
            awaiting: "c.test")
        #expect(both.contains("a.test"))
        #expect(try w.reported(after: { try w.write("sites/c.test/apple-app-site-association") }, awaiting: "c.test") == ["c.test"])
        #expect(try w.reported(after: { try w.write("sites/c.test/tls/cert.pem") }, awaiting: "c.test") == ["c.test"])
    }

    @Test("an alias symlink shares its site's watch: both are reported until the link goes, then the site alone")
    func aliasSharesWatch() throws {
        let w = try Watched(sites: ["a.test"])
        _ = try w.reported(
            after: { try FileManager.default.createSymbolicLink(atPath: w.path("sites/www.a.test"), withDestinationPath: "a.test") },
            awaiting: "www.a.test")
        #expect(
            try w.reported(after: { try w.write("sites/a.test/apple-app-site-association") }, awaiting: "a.test") == [
                "a.test", "www.a.test",
            ])
        _ = try w.reported(after: { try FileManager.default.removeItem(atPath: w.path("sites/www.a.test")) }, awaiting: "www.a.test")
        #expect(try w.reported(after: { try w.write("sites/a.test/tls/cert.pem") }, awaiting: "a.test") == ["a.test"])
        // The site's watch stayed when the alias let go of it; removing the site lets go of it too.
        _ = try w.reported(after: { try FileManager.default.removeItem(atPath: w.path("sites/a.test")) }, awaiting: "a.test")
    }
}
