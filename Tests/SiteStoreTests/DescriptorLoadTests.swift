import Foundation
import Reactor
import Synchronization
import Testing

@testable import SiteStore

private let aasa = TempConfig.aasa

/// A full load orders `sites/` by the types its listing gave (`ConfigLoader.directoriesFirst`)
/// and opens each plain site directory through the open `sites/` (`ConfigLoader.examine` with
/// `sites`). A type is what the entry was when listed: whatever it is by the time it is read is
/// what counts.
@Suite("A load by readdir's types and descriptors relative to sites/")
struct DescriptorLoadTests {
    /// `examine` through `sites/` open, as a full load calls it.
    private func examine(_ c: TempConfig, _ name: String) throws -> ConfigLoader.Entry {
        let sitesPath = c.root + "/sites"
        let sites = try Files.openDirectory(sitesPath)
        defer { Files.close(sites) }
        return ConfigLoader.examine(
            sitesPath: sitesPath, name: name, isSite: { ConfigLoader.examineKind(sitesPath, $0) == .directory }, sites: sites)
    }

    private func problem(_ entry: ConfigLoader.Entry) -> String? {
        if case .problem(let problem) = entry { problem.message } else { nil }
    }

    @Test("an entry listed without a type (DT_UNKNOWN) is looked at: a directory still comes first, a link or file after")
    func unknownTypes() throws {
        let c = try TempConfig()
        try c.write("sites/z.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/apple-app-site-association", aasa)
        try c.link("sites/a.test", to: "z.test")
        try c.write("sites/c.test", "a file")
        let names: Set = ["z.test", "b.test", "a.test", "c.test"]
        let unknown = names.map { Files.Entry(name: $0, kind: nil) }
        let ordered = ConfigLoader.directoriesFirst(names, sitesPath: c.root + "/sites", listed: unknown)
        #expect(ordered == ["b.test", "z.test", "a.test", "c.test"])
        // Some typed, some not, one not listed at all (a record's name): each in its place.
        let mixed = [Files.Entry(name: "z.test", kind: .directory), Files.Entry(name: "a.test", kind: nil)]
        #expect(ConfigLoader.directoriesFirst(names, sitesPath: c.root + "/sites", listed: mixed) == ordered)
    }

    @Test("a listing that gives a name twice (made again while it was read) still orders each name once, the one it left out in its place")
    func nameListedTwice() throws {
        let c = try TempConfig()
        for name in ["a.test", "b.test", "m.test"] { try c.write("sites/\(name)/apple-app-site-association", aasa) }
        try c.link("sites/l.test", to: "a.test")
        let names: Set = ["a.test", "b.test", "m.test", "l.test"]
        let expected = ["a.test", "b.test", "m.test", "l.test"]
        // As many entries as names, one name twice (as a directory and as a link) and b.test not
        // listed: b.test still comes among the directories, and no name twice.
        let twiceAcross = [
            Files.Entry(name: "a.test", kind: .directory), Files.Entry(name: "m.test", kind: .directory),
            Files.Entry(name: "l.test", kind: .symbolicLink), Files.Entry(name: "a.test", kind: .symbolicLink),
        ]
        #expect(ConfigLoader.directoriesFirst(names, sitesPath: c.root + "/sites", listed: twiceAcross) == expected)
        let twiceAsDirectory = [
            Files.Entry(name: "m.test", kind: .directory), Files.Entry(name: "a.test", kind: .directory),
            Files.Entry(name: "l.test", kind: .symbolicLink), Files.Entry(name: "m.test", kind: .directory),
        ]
        #expect(ConfigLoader.directoriesFirst(names, sitesPath: c.root + "/sites", listed: twiceAsDirectory) == expected)
        // The plain case takes the listing's types as they are.
        let listed = try Files.typedEntries(of: c.root + "/sites")
        #expect(ConfigLoader.directoriesFirst(names, sitesPath: c.root + "/sites", listed: listed) == expected)
        #expect(!ConfigLoader.hasCommonOrRepeated(["a", "c"], ["b", "d"]))
        #expect(ConfigLoader.hasCommonOrRepeated(["a", "c"], ["c"]))
        #expect(ConfigLoader.hasCommonOrRepeated(["a", "a"], []))
        #expect(ConfigLoader.hasCommonOrRepeated([], ["b", "b"]))
    }

    @Test("a symlink alias in the listing is not taken for a directory, and loads as an alias")
    func aliasListedAsLink() throws {
        let c = try TempConfig()
        try c.write("sites/z.test/apple-app-site-association", aasa)
        try c.link("sites/a.test", to: "z.test")
        let listed = try Files.typedEntries(of: c.root + "/sites")
        #expect(listed.contains(Files.Entry(name: "a.test", kind: .symbolicLink)))
        #expect(ConfigLoader.directoriesFirst(["a.test", "z.test"], sitesPath: c.root + "/sites", listed: listed) == ["z.test", "a.test"])
        guard case .alias(_, let target) = try examine(c, "a.test") else {
            Issue.record("not an alias")
            return
        }
        #expect(target == "z.test")
        let r = SiteRegistry.inspecting(root: c.root)
        r.reloadAll()
        #expect(r.answer(forHost: "a.test") == .served("z.test"))
    }

    @Test("a directory replaced by a link, a file or nothing after the listing is read as what it is then")
    func replacedAfterListing() throws {
        let c = try TempConfig()
        for name in ["a.test", "b.test", "c.test", "d.test", "z.test"] { try c.write("sites/\(name)/apple-app-site-association", aasa) }
        try c.write("sites/z.test/tls/apple-app-site-association", aasa)
        let listed = try Files.typedEntries(of: c.root + "/sites")
        #expect(listed.allSatisfy { $0.kind == .directory })
        let ordered = ConfigLoader.directoriesFirst(Set(listed.map(\.name)), sitesPath: c.root + "/sites", listed: listed)
        #expect(ordered == ["a.test", "b.test", "c.test", "d.test", "z.test"])
        for name in ["a.test", "b.test", "c.test", "d.test"] { try FileManager.default.removeItem(atPath: c.root + "/sites/" + name) }
        try c.link("sites/a.test", to: "z.test")
        try c.link("sites/b.test", to: "z.test/tls")
        try c.write("sites/c.test", "a file")
        // a.test: another name for z.test, read as an alias though listed as a directory.
        guard case .alias(_, let target) = try examine(c, "a.test") else {
            Issue.record("a.test is not an alias")
            return
        }
        #expect(target == "z.test")
        // b.test: a link into z.test's tls/ reads nothing from there.
        if case .site(let site) = try examine(c, "b.test") {
            #expect(site.aasa == nil)
            #expect(site.problems.contains { $0.message.contains("tls/ directory") }, "\(site.problems)")
        } else {
            Issue.record("b.test: not examined as a site")
        }
        #expect(problem(try examine(c, "c.test"))?.contains("not a directory") == true)
        guard case .missing = try examine(c, "d.test") else {
            Issue.record("d.test is not missing")
            return
        }
    }

    @Test("a site directory that is a link to another site's directory is an alias; to a folder outside the config, a site")
    func siteDirectoryLinks() throws {
        let c = try TempConfig()
        try c.write("sites/z.test/apple-app-site-association", aasa)
        let outside = try TempConfig()
        try outside.write("site/apple-app-site-association", aasa)
        try c.link("sites/y.test", to: c.root + "/sites/z.test")
        try c.link("sites/x.test", to: outside.root + "/site")
        guard case .alias(_, let target) = try examine(c, "y.test") else {
            Issue.record("y.test is not an alias")
            return
        }
        #expect(target == "z.test")
        guard case .site(let site) = try examine(c, "x.test") else {
            Issue.record("x.test is not a site")
            return
        }
        #expect(site.aasa?.result.isValid == true)
        // A link inside that folder to z.test's files is still refused where it leads into tls/.
        try c.write("sites/z.test/tls/key.pem", "-----BEGIN PRIVATE KEY-----\nSECRET\n")
        try outside.write("site/site.yaml", "page: landing.html\n")
        try outside.link("site/landing.html", to: c.root + "/sites/z.test/tls/key.pem")
        guard case .site(let linked) = try examine(c, "x.test") else {
            Issue.record("x.test is not a site")
            return
        }
        #expect(linked.pages["landing.html"] == nil)
        #expect(linked.problems.contains { $0.message.contains("tls/ directory") || $0.message.contains("outside") }, "\(linked.problems)")
    }

    @Test("a directory of a bad name is a problem, a bad name gone is missing, a name through a link is never read")
    func badNames() throws {
        let c = try TempConfig()
        try c.write("sites/bad_name!/apple-app-site-association", aasa)
        try c.write("sites/z.test/tls/a.test/apple-app-site-association", aasa)
        try c.link("sites/l.test", to: "z.test/tls")
        #expect(problem(try examine(c, "bad_name!"))?.contains("not a valid site name") == true)
        guard case .missing = try examine(c, "gone_name!") else {
            Issue.record("gone_name! is not missing")
            return
        }
        // A name of two components walks through the link l.test into z.test's tls/: not a site.
        #expect(problem(try examine(c, "l.test/a.test"))?.contains("not a valid site name") == true)
    }

    @Test("a plain site directory read through its descriptor: a file linked into another site's tls/ or hard-linked to a key is refused")
    func plainDirectoryFilesChecked() throws {
        let c = try TempConfig()
        try c.write("sites/z.test/tls/key.pem", "-----BEGIN PRIVATE KEY-----\nSECRET\n")
        try c.write("sites/z.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/site.yaml", "page: landing.html\n")
        try c.link("sites/a.test/apple-app-site-association", to: "../z.test/tls/key.pem")
        #expect(link(c.root + "/sites/z.test/tls/key.pem", c.root + "/sites/a.test/landing.html") == 0)
        guard case .site(let site) = try examine(c, "a.test") else {
            Issue.record("a.test is not a site")
            return
        }
        #expect(site.aasa == nil && site.pages["landing.html"] == nil)
        #expect(site.problems.contains { $0.message.contains("tls/ directory") }, "\(site.problems)")
        #expect(site.problems.contains { $0.message.contains("hard link") }, "\(site.problems)")
        #expect(!site.problems.map(\.message).joined().contains("SECRET"))
    }

    @Test("a site directory swapped, again and again, for a link into another site's tls/ never serves that tls/ file")
    func swappedForLinkIntoTLS() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/z.test/apple-app-site-association", aasa)
        try c.write("sites/z.test/tls/apple-app-site-association", "SECRET")
        try c.link("sites/.swap", to: "z.test/tls")
        let sitesPath = c.root + "/sites"
        let sites = try Files.openDirectory(sitesPath)
        defer { Files.close(sites) }
        // Renamed in turn: a.test is the real directory, then the link, then the directory again.
        let stop = Atomic<Bool>(false)
        let flipped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let path = sitesPath + "/"
            while !stop.load(ordering: .relaxed) {
                rename(path + "a.test", path + ".held")
                rename(path + ".swap", path + "a.test")
                rename(path + "a.test", path + ".swap")
                rename(path + ".held", path + "a.test")
            }
            flipped.signal()
        }
        var served = 0
        var leaked = 0
        let end = Date().addingTimeInterval(2)
        while Date() < end {
            let entry = ConfigLoader.examine(sitesPath: sitesPath, name: "a.test", isSite: { _ in true }, sites: sites)
            guard case .site(let site) = entry, let bytes = site.aasa?.bytes else { continue }
            served += 1
            if bytes == Array("SECRET".utf8) { leaked += 1 }
        }
        stop.store(true, ordering: .relaxed)
        flipped.wait()
        #expect(served > 0, "the race never read the site")
        #expect(leaked == 0, "\(leaked) of \(served) reads served the other site's tls/ file")
    }
    /// `loadSite` of the directory open at `descriptor` (listed through it), as a full load reads
    /// a plain site directory, while `path` may name another directory by then.
    private func loadOpened(_ c: TempConfig, _ name: String, descriptor: Int32) throws -> SiteSource {
        let path = c.root + "/sites/" + name
        return ConfigLoader.loadSite(
            host: try HostName(parsing: name), directory: path, relative: "sites/" + name, known: nil, options: nil,
            configRoot: c.root, plainDirectory: true, shared: nil,
            opened: ConfigLoader.OpenedDirectory(descriptor: descriptor, names: try Files.entries(in: descriptor)), siteName: name)
    }

    @Test("a site's tls/ is read through its open directory: the pair of the directory opened, whatever its path names by then")
    func pairThroughDescriptor() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/tls/cert.pem", "OPENED CHAIN")
        try c.write("sites/a.test/tls/key.pem", "OPENED KEY")
        let descriptor = try Files.openDirectory(c.root + "/sites/a.test")
        defer { Files.close(descriptor) }
        // The directory moved away and another put at its path, with a pair of its own.
        #expect(rename(c.root + "/sites/a.test", c.root + "/sites/.old") == 0)
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/tls/cert.pem", "PATH CHAIN")
        try c.write("sites/a.test/tls/key.pem", "PATH KEY")
        let site = try loadOpened(c, "a.test", descriptor: descriptor)
        #expect(site.certificate?.chainPEM == Array("OPENED CHAIN".utf8))
        #expect(site.certificate?.keyPEM == Array("OPENED KEY".utf8))
        #expect(site.certificate?.directory == "sites/a.test/tls")
        #expect(site.problems.isEmpty, "\(site.problems)")
    }

    @Test("linked files in an open site directory (a Kubernetes Secret's cert.pem, a shared file) are followed from that directory")
    func linksThroughDescriptor() throws {
        let c = try TempConfig()
        for (directory, tag) in [("sites/a.test", "OPENED"), ("sites/.next", "PATH")] {
            try c.write("\(directory)/shared.json", TempConfig.aasa.replacingOccurrences(of: "/*", with: "/\(tag.lowercased())/*"))
            try c.link("\(directory)/apple-app-site-association", to: "shared.json")
            try c.write("\(directory)/tls/..data/cert.pem", "\(tag) CHAIN")
            try c.write("\(directory)/tls/..data/key.pem", "\(tag) KEY")
            try c.link("\(directory)/tls/cert.pem", to: "..data/cert.pem")
            try c.link("\(directory)/tls/key.pem", to: "..data/key.pem")
        }
        let descriptor = try Files.openDirectory(c.root + "/sites/a.test")
        defer { Files.close(descriptor) }
        // The directory swapped for another by the time its files are opened.
        #expect(rename(c.root + "/sites/a.test", c.root + "/sites/.old") == 0)
        #expect(rename(c.root + "/sites/.next", c.root + "/sites/a.test") == 0)
        let site = try loadOpened(c, "a.test", descriptor: descriptor)
        #expect(site.certificate?.chainPEM == Array("OPENED CHAIN".utf8))
        #expect(site.certificate?.keyPEM == Array("OPENED KEY".utf8))
        #expect(site.aasa.map { String(decoding: $0.bytes, as: UTF8.self).contains("/opened/") } == true)
    }

    @Test(
        "a site's tls/ through its descriptor: a link to a folder is followed, a file, FIFO or dangling link is no pair and no error, a file linked to a device is refused"
    )
    func tlsKindsThroughDescriptor() throws {
        let c = try TempConfig()
        try c.write("pairs/p/cert.pem", "LINKED CHAIN")
        try c.write("pairs/p/key.pem", "LINKED KEY")
        for name in ["link.test", "file.test", "fifo.test", "dangling.test", "device.test"] {
            try c.write("sites/\(name)/apple-app-site-association", aasa)
        }
        try c.link("sites/link.test/tls", to: c.root + "/pairs/p")
        try c.write("sites/file.test/tls", "not a folder")
        #expect(mkfifo(c.root + "/sites/fifo.test/tls", 0o644) == 0)
        try c.link("sites/dangling.test/tls", to: c.root + "/pairs/gone")
        try c.write("sites/device.test/tls/key.pem", "KEY")
        try c.link("sites/device.test/tls/cert.pem", to: "/dev/zero")
        func load(_ name: String) throws -> SiteSource {
            let descriptor = try Files.openDirectory(c.root + "/sites/" + name)
            defer { Files.close(descriptor) }
            return try loadOpened(c, name, descriptor: descriptor)
        }
        let linked = try load("link.test")
        #expect(linked.certificate?.chainPEM == Array("LINKED CHAIN".utf8))
        #expect(linked.problems.isEmpty, "\(linked.problems)")
        for name in ["file.test", "fifo.test", "dangling.test"] {
            let site = try load(name)
            #expect(site.certificate == nil, "\(name)")
            #expect(site.problems.isEmpty && site.unreadable.isEmpty, "\(name): \(site.problems)")
        }
        let device = try load("device.test")
        #expect(device.certificate == nil)
        #expect(
            device.problems.contains { $0.file == "sites/device.test/tls/cert.pem" && $0.message.contains("not a regular file") },
            "\(device.problems)")
    }

    @Test(
        "a site's files are opened through its descriptor by their place in the path in bytes: a config path with multibyte names, and what is no entry of the site"
    )
    func entryOffsets() throws {
        #expect(
            ConfigLoader.entryOffset("/tmp/é-конфиг/sites/a.test/apple-app-site-association", in: "/tmp/é-конфиг/sites/a.test")
                == "/tmp/é-конфиг/sites/a.test/".utf8.count)
        #expect(ConfigLoader.entryOffset("/d/a/f", in: "/d/a/") == 5)
        #expect(ConfigLoader.entryOffset("/f", in: "/") == 1)
        // Not one entry of the directory: nested, the directory itself, a sibling sharing its start, elsewhere.
        for (path, directory) in [
            ("/d/a/tls/key.pem", "/d/a"), ("/d/a", "/d/a"), ("/d/a/", "/d/a"), ("/d/ab/f", "/d/a"), ("/e/a/f", "/d/a"),
        ] {
            #expect(ConfigLoader.entryOffset(path, in: directory) == nil, "\(path) in \(directory)")
        }
        let parent = NSTemporaryDirectory() + "aasad-é-конфиг-" + UUID().uuidString + "/"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let c = try TempConfig(parent: parent)
        try c.write("sites/a.test/apple-app-site-association", aasa)
        guard case .site(let site) = try examine(c, "a.test") else {
            Issue.record("not read as a site")
            return
        }
        #expect(site.aasa?.bytes == Array(aasa.utf8))
        #expect(site.problems.isEmpty, "\(site.problems)")
    }
}
