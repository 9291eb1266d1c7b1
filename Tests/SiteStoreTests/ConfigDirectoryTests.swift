import AASA
import Foundation
import Logging
import Testing

@testable import SiteStore

/// A throw-away config directory on disk.
final class TempConfig {
    let root: String

    /// `parent`: where the directory is made (a test of what only some filesystems allow).
    init(parent: String = NSTemporaryDirectory()) throws {
        root = parent + "aasad-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root + "/sites", withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func write(_ relative: String, _ text: String) throws {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func link(_ relative: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: root + "/" + relative, withDestinationPath: target)
    }

    static let aasa = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}}"#
}

@Suite("Config directory scan")
struct ConfigDirectoryTests {
    @Test("each site directory becomes a site with its validated files")
    func loadsSites() throws {
        let c = try TempConfig()
        try c.write("sites/a.example/apple-app-site-association", TempConfig.aasa)
        try c.write("sites/a.example/assetlinks.json", "[]")
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites.map(\.host.name) == ["a.example"])
        #expect(scan.sites[0].aasa?.result.isValid == true)
        #expect(scan.sites[0].assetLinks?.result.isValid == false)
        #expect(scan.sites[0].aasa?.relativePath == "sites/a.example/apple-app-site-association")
        #expect(!scan.isValid)
    }

    @Test("a symlink to a sibling site is an alias of it")
    func symlinkAlias() throws {
        let c = try TempConfig()
        try c.write("sites/a.example/apple-app-site-association", TempConfig.aasa)
        try c.link("sites/www.a.example", to: "a.example")
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites.count == 1)
        #expect(scan.sites[0].aliases.map(\.name) == ["www.a.example"])
        let registry = SiteRegistry.inspecting(root: c.root)
        registry.reloadAll()
        #expect(registry.answer(forHost: "WWW.A.EXAMPLE") == .served("a.example"))
        #expect(scan.isValid)
    }

    @Test("an exact host beats a wildcard, and the longest wildcard wins")
    func hostLookup() throws {
        let c = try TempConfig()
        for name in ["*.example.com", "*.users.example.com", "bob.users.example.com"] {
            try c.write("sites/\(name)/apple-app-site-association", TempConfig.aasa)
        }
        let registry = SiteRegistry.inspecting(root: c.root)
        registry.reloadAll()
        #expect(registry.answer(forHost: "bob.users.example.com") == .served("bob.users.example.com"))
        #expect(registry.answer(forHost: "emily.users.example.com") == .served("*.users.example.com"))
        #expect(registry.answer(forHost: "a.b.users.example.com") == .served("*.users.example.com"))
        #expect(registry.answer(forHost: "shop.example.com") == .served("*.example.com"))
        #expect(registry.answer(forHost: "example.com") == .unclaimed)
    }

    @Test("two directories for one host: the one spelled as the host holds it; the other is an error that names it")
    func twoDirectoriesOneHost() throws {
        let c = try TempConfig()
        try c.write("sites/a.example/apple-app-site-association", TempConfig.aasa)
        try c.write("sites/A.example/apple-app-site-association", TempConfig.aasa)
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites.count == 2)
        let loser = try #require(scan.sites.first { $0.directory == "sites/A.example" })
        #expect(
            loser.problems.contains {
                $0.severity == .error
                    && $0.message == "the host a.example is not served by sites/A.example: sites/a.example is named for it"
            })
        #expect(scan.sites.first { $0.directory == "sites/a.example" }?.isValid == true)
        #expect(!scan.isValid)
        let registry = SiteRegistry.inspecting(root: c.root)
        registry.reloadAll()
        #expect(registry.answer(forHost: "a.example") == .served("a.example"))
    }

    @Test("a host whose only site never had a valid file is refused, unless a wildcard answers it as serve does")
    func refusedHost() throws {
        let c = try TempConfig()
        try c.write("sites/bad.example.com/apple-app-site-association", "{")
        let registry = SiteRegistry.inspecting(root: c.root)
        registry.reloadAll()
        #expect(registry.answer(forHost: "bad.example.com") == .refused("bad.example.com"))
        try c.write("sites/*.example.com/apple-app-site-association", TempConfig.aasa)
        registry.reloadAll()
        #expect(registry.answer(forHost: "bad.example.com") == .served("*.example.com"))
    }

    @Test("a Unicode directory name is refused with its xn-- form")
    func unicodeName() throws {
        let c = try TempConfig()
        try c.write("sites/bücher.example/apple-app-site-association", TempConfig.aasa)
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites.isEmpty)
        #expect(scan.problems.contains { $0.message.contains("xn--bcher-kva.example") })
    }

    @Test(
        "common mistakes in a site directory are named",
        arguments: [
            ("apple-app-site-association.json", "without .json"),
            (".well-known/apple-app-site-association", "directly in the site directory"),
        ])
    func misplacedFiles(_ file: String, _ advice: String) throws {
        let c = try TempConfig()
        try c.write("sites/a.example/\(file)", TempConfig.aasa)
        let scan = ConfigLoader.scan(directory: c.root)
        let messages = scan.sites.flatMap(\.problems).map(\.message)
        #expect(messages.contains { $0.contains(advice) }, "\(messages)")
        #expect(messages.contains { $0.contains("neither apple-app-site-association nor assetlinks.json") })
    }

    /// A tenant's directory full of files costs a reload one bounded listing and a few warnings,
    /// and what the site serves is read all the same, file by file.
    @Test(
        "a site directory of many entries: a few named, the rest counted; past the listing's bound, not listed",
        arguments: [20, 62, 63, 3000])
    func crowdedSiteDirectory(_ junk: Int) throws {
        let c = try TempConfig()
        try c.write("sites/a.example/apple-app-site-association", TempConfig.aasa)
        try c.write(
            "sites/a.example/assetlinks.json",
            #"[{"relation":["delegate_permission/common.handle_all_urls"],"target":{"namespace":"android_app","package_name":"com.example","sha256_cert_fingerprints":["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
        )
        for index in 0..<junk { try c.write("sites/a.example/junk-\(index)", "") }
        let scan = ConfigLoader.scan(directory: c.root)
        let problems = scan.sites.flatMap(\.problems)
        #expect(scan.sites.first?.aasa?.isValid == true)
        #expect(scan.sites.first?.assetLinks?.isValid == true)
        #expect(!problems.contains { $0.severity == .error }, "\(problems)")
        let named = problems.count { $0.message.hasPrefix("ignored:") }
        if junk <= ConfigLoader.maximumListedEntries - 2 {
            #expect(named == ConfigLoader.maximumIgnoredNamed)
            #expect(problems.contains { $0.message == "\(junk - ConfigLoader.maximumIgnoredNamed) more entries ignored, not named here" })
        } else {
            #expect(named == 0)
            #expect(problems.count == 1, "\(problems)")
            #expect(problems.first?.message.contains("holds more than \(ConfigLoader.maximumListedEntries) entries") == true)
        }
        let registry = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let snapshot = registry.reloadAll()
        #expect(snapshot.site(forHost: "a.example")?.aasa != nil)
        #expect(snapshot.site(forHost: "a.example")?.assetLinks != nil)
        #expect(registry.status(of: "a.example")?.errors == [])
    }

    @Test("a missing sites/ directory is an error that says what to create")
    func missingSites() throws {
        let scan = ConfigLoader.scan(directory: NSTemporaryDirectory() + "does-not-exist-" + UUID().uuidString)
        #expect(!scan.isValid)
        #expect(scan.problems.first?.message.contains("sites/<host>") == true)
    }

    @Test("an unreadable file is reported, not skipped")
    func unreadable() throws {
        guard getuid() != 0 else { return }  // root reads everything; CI runs as root
        let c = try TempConfig()
        try c.write("sites/a.example/apple-app-site-association", TempConfig.aasa)
        chmod(c.root + "/sites/a.example/apple-app-site-association", 0)
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites[0].problems.contains { $0.message.contains("cannot read") })
    }

    @Test("an oversized file is read only to one byte past the limit")
    func boundedRead() throws {
        let c = try TempConfig()
        try c.write("big", String(repeating: " ", count: 1_000_000))
        let bytes = try ConfigLoader.readBounded(path: c.root + "/big", limit: 1000).get()
        #expect(bytes.count == 1001)
    }

    @Test("a file whose size fstat gives as 0 is read whole: a kernel value under /proc, an empty file, one larger than a chunk")
    func sizeZeroRead() throws {
        // sysctl files report 0 bytes and end at any read past offset 0: read in small pieces,
        // "500\n" came back as "5" (the watcher's limit warning said limit=5).
        let path = "/proc/sys/fs/inotify/max_user_watches"
        let expected = try String(contentsOfFile: path, encoding: .utf8)
        #expect(try ConfigLoader.readBounded(path: path, limit: 64).get() == Array(expected.utf8))
        let c = try TempConfig()
        try c.write("empty", "")
        #expect(try ConfigLoader.readBounded(path: c.root + "/empty", limit: 64).get().isEmpty)
        let large = String(repeating: "x", count: 3 * 64 * 1024 + 17)
        try c.write("large", large)
        #expect(try ConfigLoader.readBounded(path: c.root + "/large", limit: 1 << 20).get() == Array(large.utf8))
    }

    @Test("a sparse file claiming Int64.max bytes is read to the limit, not trapped on")
    func sparseHugeFile() throws {
        // `truncate -s 9223372036854775807` on tmpfs: fstat's size + 1 overflowed Int.
        let path = "/dev/shm/aasad-sparse-\(getpid())"
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { unlink(path) }
        let truncated = ftruncate(fd, off_t.max)
        close(fd)
        try #require(truncated == 0, "tmpfs refused a sparse file of Int64.max bytes")
        let bytes = try ConfigLoader.readBounded(path: path, limit: 1024).get()
        #expect(bytes.count == 1025)
        #expect(bytes.allSatisfy { $0 == 0 })
    }

    @Test("dot entries such as Kubernetes' ..data are not sites")
    func skipsDotEntries() throws {
        let c = try TempConfig()
        try c.write("sites/..data/x", "")
        try c.write("sites/a.example/apple-app-site-association", TempConfig.aasa)
        #expect(ConfigLoader.scan(directory: c.root).isValid)
    }

    @Test("the shipped example config is valid")
    func shippedExample() throws {
        let config = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config").path
        let scan = ConfigLoader.scan(directory: config)
        #expect(scan.isValid, "\(scan.problems) \(scan.sites.flatMap(\.problems))")
        #expect(scan.sites.allSatisfy { $0.aasa?.result.diagnostics.isEmpty ?? true })
        #expect(scan.sites.flatMap(\.hosts).allSatisfy { $0.name.hasSuffix(".localhost") })
    }
}
