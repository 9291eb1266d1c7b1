import Foundation
import HTTPCore
import Testing

@testable import Served
@testable import SiteStore

private func host(_ text: String) -> HostName {
    // swift-format-ignore: NeverUseForceTry
    try! HostName(parsing: text)
}

/// The compact forms of what the registry keeps per site (docs/architecture.md, "The registry's
/// records"): each part stored out of line or in a smaller form must read back as it was set.
@Suite("Compact per-site records: served sites, registry records, verdict keys")
struct CompactRecordTests {
    private static func file(_ text: String) throws -> PreparedFile {
        try PreparedFile(body: Array(text.utf8), modified: 1_700_000_000, options: ServingOptions())
    }

    @Test("a served site's names read back as given: none, one, many; with(hosts:) keeps the rest")
    func hosts() throws {
        let aasa = try Self.file("{}")
        for names in [[], [host("a.test")], [host("a.test"), host("*.b.test"), host("c.test")]] {
            let site = ServedSite(directory: "a.test", hosts: names, aasa: aasa, assetLinks: nil, certificate: nil, loadedAt: 1)
            #expect(site.hosts == names)
            var seen: [HostName] = []
            site.forEachHost { seen.append($0) }
            #expect(seen == names)
            #expect(site.hasHosts(names))
            #expect(!site.hasHosts(names + [host("z.test")]))
            #expect(!site.hasHosts(names.reversed()) || names.count < 2)
            let moved = site.with(hosts: [host("d.test")])
            #expect(moved.hosts == [host("d.test")])
            #expect(moved.aasa === aasa && moved.loadedAt == 1 && moved.directory == "a.test")
        }
    }

    @Test("each rare part of a served site alone is kept (behind the one reference), and none costs it nothing")
    func extras() throws {
        let page = try Self.file("<html></html>")
        func site(
            page: PreparedFile? = nil, pages: [String: PreparedFile] = [:], fallbackSettings: FallbackSettings? = nil,
            fallbackCounts: FallbackCounts? = nil, links: SiteLinkSettings = SiteLinkSettings(), routeCounts: RouteCounts? = nil,
            wildcardCertificates: WildcardCertificates? = nil
        ) -> ServedSite {
            ServedSite(
                directory: "a.test", hosts: [host("a.test")], aasa: nil, assetLinks: nil, certificate: nil, loadedAt: 0, page: page,
                pages: pages, fallbackSettings: fallbackSettings, fallbackCounts: fallbackCounts, links: links,
                routeCounts: routeCounts, wildcardCertificates: wildcardCertificates)
        }
        #expect(site(page: page).page === page)
        #expect(site(pages: ["p.html": page]).pages["p.html"] === page)
        var fallback = FallbackSettings()
        fallback.status = .temporaryRedirect
        #expect(site(fallbackSettings: fallback).fallbackSettings == fallback)
        let counts = FallbackCounts()
        #expect(site(fallbackCounts: counts).fallbackCounts === counts)
        var links = SiteLinkSettings()
        links.interstitial = true
        #expect(site(links: links).links == links)
        let routeCounts = RouteCounts(paths: ["/a"])
        #expect(site(routeCounts: routeCounts).routeCounts === routeCounts)
        for choice in WildcardCertificates.allCases {
            #expect(site(wildcardCertificates: choice).wildcardCertificates == choice)
        }
        let plain = site()
        #expect(plain.page == nil && plain.pages.isEmpty && plain.routePages.isEmpty && plain.fallbackSettings == nil)
        #expect(plain.links == SiteLinkSettings() && plain.wildcardCertificates == nil && plain.routes == nil)
        // A site that gets another name keeps its rare parts.
        #expect(site(links: links).with(hosts: []).links == links)
    }

    /// What a record costs in the registry's dictionary, per site: a field added inline (rather
    /// than behind the rare parts' reference) shows here first.
    @Test("a registry record stays 64 bytes inline")
    func recordSize() {
        #expect(MemoryLayout<SiteRecord>.size <= 64, "\(MemoryLayout<SiteRecord>.size)")
    }

    @Test("a record's Last-Modified per file: none, zero and times before 1970 are told apart")
    func lastModified() {
        var times = SiteRecord.LastModified()
        for file in [SiteRecord.FileKind.aasa, .assetLinks, .page] { #expect(times[file] == nil) }
        times[.aasa] = 0
        times[.assetLinks] = -86_400
        #expect(times[.aasa] == 0)
        #expect(times[.assetLinks] == -86_400)
        #expect(times[.page] == nil)
        times[.page] = 1_700_000_000
        times[.aasa] = nil
        #expect(times[.aasa] == nil)
        #expect(times[.page] == 1_700_000_000)
    }

    @Test("a record's rare parts are set, kept and dropped each on its own, and a copy never sees another's change")
    func rareParts() {
        let name = host("a.test")
        var record = SiteRecord(host: name, source: SiteSource(host: name, directory: "sites/a.test", aliases: [], problems: []))
        #expect(record.source.directory == "sites/a.test")
        record.errors = ["sites/a.test/apple-app-site-association: broken"]
        let counts = FallbackCounts()
        record.fallbackCounts = counts
        let copy = record
        record.dropSource()
        // The source goes; the errors and the counts stay.
        #expect(record.source.directory == "")
        #expect(record.errors.count == 1)
        #expect(record.fallbackCounts === counts)
        #expect(copy.source.directory == "sites/a.test")
        record.errors = []
        record.fallbackCounts = nil
        #expect(record.state == .refused)
        #expect(record.errors.isEmpty && record.fallbackCounts == nil && record.routeCounts == nil)
        #expect(copy.errors.count == 1 && copy.fallbackCounts === counts)
        let routeCounts = RouteCounts(paths: ["/r"])
        record.routeCounts = routeCounts
        #expect(record.routeCounts === routeCounts && copy.routeCounts == nil)
    }

    @Test("a source taken moves out of the record, which keeps its other rare parts; a copy holding the same box keeps its own")
    func sourceTaken() {
        let name = host("a.test")
        let source = SiteSource(host: name, directory: "sites/a.test", aliases: [], problems: [])
        // Alone in its box: moved out, and the box goes with it.
        var alone = SiteRecord(host: name, source: source)
        #expect(alone.takeSource().directory == "sites/a.test")
        #expect(alone.source.directory == "")
        #expect(alone.takeSource().directory == "")
        // With errors beside it, alone in its box: moved out in place, the errors stay.
        var withErrors = SiteRecord(host: name, source: source)
        withErrors.errors = ["sites/a.test/apple-app-site-association: broken"]
        #expect(withErrors.takeSource().directory == "sites/a.test")
        #expect(withErrors.source.directory == "" && withErrors.errors.count == 1)
        // Shared with a copy: the record's source goes, the copy's stays.
        var record = SiteRecord(host: name, source: source)
        record.errors = ["sites/a.test/apple-app-site-association: broken"]
        let copy = record
        #expect(record.takeSource().directory == "sites/a.test")
        #expect(record.source.directory == "" && record.errors.count == 1)
        // The copy shared the box when the source was taken: it still has everything.
        #expect(copy.source.directory == "sites/a.test" && copy.errors.count == 1)
        var other = copy
        #expect(other.takeSource().directory == "sites/a.test")
        #expect(other.source.directory == "" && copy.source.directory == "sites/a.test")
    }

    @Test("a verdict key keeps its kind and digest, sorts as its text, and refuses what is no lower-case SHA-256")
    func verdictKeys() throws {
        let digests = ["00", "0f", "a0", "ff", "7f"].map { String(repeating: $0, count: 32) }
        var keys: [KnownValid.Key] = []
        for kind in [KnownValid.Kind.aasa, .assetLinks, .certificate] {
            for digest in digests {
                let key = try #require(KnownValid.Key(kind, digestHex: digest.utf8))
                #expect(key.text == String(kind.rawValue) + digest)
                keys.append(key)
            }
        }
        #expect(keys.sorted().map(\.text) == keys.map(\.text).sorted())
        #expect(Set(keys).count == keys.count)
        let valid = String(repeating: "ab", count: 32)
        for bad in [String(valid.dropLast()), valid + "0", valid.uppercased(), String(valid.dropLast()) + "g", ""] {
            #expect(KnownValid.Key(.aasa, digestHex: bad.utf8) == nil, "\(bad)")
        }
        // Stored and read back: the same verdicts, the file's lines in order.
        let directory = FileManager.default.temporaryDirectory.path + "/compact-keys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var known = KnownValid()
        for key in keys.reversed() {
            known.insert(KnownValid.Kind(rawValue: Character(UnicodeScalar(key.kind)))!, digestHex: String(key.text.dropFirst()))
        }
        try known.store(path: directory + "/v", identity: "x")
        let text = try String(contentsOfFile: directory + "/v", encoding: .utf8)
        #expect(text == KnownValid.header(identity: "x") + keys.map(\.text).sorted().map { $0 + "\n" }.joined())
        #expect(KnownValid.load(path: directory + "/v", identity: "x").sortedKeys == known.sortedKeys)
    }
}
