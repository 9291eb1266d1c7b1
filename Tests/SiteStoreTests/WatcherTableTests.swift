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

    @Test(
        "past the parallel threshold, each site directory and its tls/ is watched by its name in sites/, the config given by a relative path too"
    )
    func manySitesByName() throws {
        let directory = try TemporaryDirectory(prefix: "aasad-watcher-many")
        let count = ConfigWatcher.parallelThreshold + 40
        let names = (0..<count).map { "s\($0).test" }
        for (i, name) in names.enumerated() {
            try directory.write("sites/\(name)/apple-app-site-association", Array("{}".utf8))
            if i % 2 == 1 { try directory.write("sites/\(name)/tls/cert.pem", Array("x".utf8)) }
        }
        // The same directory by a path relative to the process's working directory.
        let cwd = FileManager.default.currentDirectoryPath
        let depth = cwd.split(separator: "/").count
        let relative = String(repeating: "../", count: depth) + directory.path.drop { $0 == "/" }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        for root in [directory.path, relative] {
            let watcher = try ConfigWatcher(root: root, rescanInterval: nil, logger: logger, sitesInBackground: true)
            defer { watcher.stop() }
            watcher.waitForSites()
            #expect(watcher.watchedSites == count, "\(root)")
            let batches = Mutex<[Set<String>]>([])
            watcher.start { change in batches.withLock { $0.append(change.sites) } }
            // A site's file, and the tls/ of the first and the last site with one.
            let changed = [names[0], names[1], names[count - 1]]
            try directory.write("sites/\(names[0])/apple-app-site-association", Array("{\"x\":1}".utf8))
            try directory.write("sites/\(names[1])/tls/cert.pem", Array("y".utf8))
            try directory.write("sites/\(names[count - 1])/tls/cert.pem", Array("y".utf8))
            let seen = eventually(attempts: 500, interval: 0.02) {
                batches.withLock { Set($0.joined()) }.isSuperset(of: changed)
            }
            #expect(seen, "\(root): \(batches.withLock { Set($0.joined()) }) lacks one of \(changed)")
        }
    }
}

