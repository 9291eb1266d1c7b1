import Foundation
import HashTreeCollections
import Logging
import Served
import TestSupport
import Testing

@testable import Daemon
@testable import SiteStore

/// The admin view keeps no site's JSON and derives a plain site's state from the snapshot's own
/// map (Sources/Daemon/AdminView.swift): what it renders must be, byte for byte, what encoding
/// every site's status from the registry gives (the view encoded them all when it was published).
@Suite("Admin view: each site encoded when rendered, as the registry states it")
struct AdminViewLazyTests {
    static let aasa = Array(#"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "paths": ["*"]}]}}"#.utf8)
    /// A file whose problems quote bytes JSON must escape: quotes, backslashes, control bytes, `</`.
    static let awkward = Array("{\"applinks\": {\"apps\": [], \"details\": [], \"k\\\"\\\\\\u0001\\t</script>\u{7F}é\": 1}}".utf8)
    /// The longest name a site can have: 253 bytes.
    static let longest = [63, 63, 63, 61].map { String(repeating: "x", count: $0) }.joined(separator: ".")

    /// The registry's statuses, sorted, against the view: the same sites, each state equal, the
    /// page made of their eager encodings in order; only the sites that are not plain kept.
    static func check(_ sites: LockedRegistry, _ view: AdminView? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        let view = view ?? sites.current
        let eager = sites.withRegistry { $0.statuses }
        #expect(view.directories.sorted() == eager.map(\.directory), sourceLocation: sourceLocation)
        #expect(view.count == eager.count, sourceLocation: sourceLocation)
        for status in eager { #expect(view[status.directory]?.status == status, sourceLocation: sourceLocation) }
        let plain = eager.filter { $0.state == .serving && $0.errors.isEmpty && $0.refusedHosts.isEmpty }.count
        #expect(view.unusual.count == eager.count - plain, sourceLocation: sourceLocation)
        let page = view.render(fetches: [:])
        var at = page.startIndex
        for status in eager {
            let bytes = AdminView.open(status) + Array(#","certificate":"#.utf8)
            guard let found = Self.find(bytes, in: page, from: at) else {
                Issue.record("\(status.directory)'s eager encoding is not on the page", sourceLocation: sourceLocation)
                return
            }
            at = found + bytes.count
        }
        if eager.isEmpty { #expect(page == Array(#"{"sites":[]}"#.utf8), sourceLocation: sourceLocation) }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count - start else { return nil }
        for i in start...(haystack.count - needle.count) where haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle
        {
            return i
        }
        return nil
    }

    static func registry(_ directory: TemporaryDirectory) -> LockedRegistry {
        let registry = SiteRegistry(root: directory.path, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        registry.reloadAll()
        return LockedRegistry(registry, fallback: .development)
    }

    @Test("no site: an empty list")
    func none() throws {
        let directory = try TemporaryDirectory(prefix: "aasad-admin-lazy")
        try directory.write("sites/.keep", [])
        let sites = Self.registry(directory)
        Self.check(sites)
        #expect(sites.current.count == 0)
    }

    @Test("plain, aliased, own-certificate, refused, last-good, name-refused and awkward sites render as their eager encoding")
    func sameAsEager() throws {
        let d = try TemporaryDirectory(prefix: "aasad-admin-lazy")
        for site in ["a.test", "c.test", "own.test", Self.longest] { try d.write("sites/\(site)/apple-app-site-association", Self.aasa) }
        try FileManager.default.createSymbolicLink(atPath: d.path("sites/www.a.test"), withDestinationPath: "a.test")
        try TestPKI.make(["own.test"]).write(into: d.path("sites/own.test/tls"))
        // Refused from the start, with an error quoting awkward bytes.
        try d.write("sites/bad.test/apple-app-site-association", Self.awkward)
        // Claims a name a.test holds: serving, one name refused.
        try d.write("sites/b.test/apple-app-site-association", Self.aasa)
        try d.write("sites/b.test/site.yaml", Array("aliases: [www.a.test, shop.b.test]\n".utf8))
        let sites = Self.registry(d)
        Self.check(sites)
        #expect(sites.current["b.test"]?.refusedHosts == 1)
        #expect(sites.current["own.test"]?.ownCertificate == true && sites.current["a.test"]?.ownCertificate == false)

        // c.test turns invalid: its last good version stays, with the error.
        try d.write("sites/c.test/apple-app-site-association", Self.awkward)
        _ = sites.reload { $0.reload(["c.test"]) }
        Self.check(sites)
        #expect(sites.current["c.test"]?.state == .servingLastGood)
        // Fixed: plain again, nothing kept.
        try d.write("sites/c.test/apple-app-site-association", Self.aasa)
        _ = sites.reload { $0.reload(["c.test"]) }
        Self.check(sites)
        #expect(sites.current.unusual["c.test"] == nil)
    }

    @Test("a site removed after a view was published: that view still renders it whole, the next has it gone")
    func removedBetweenPublishAndRender() throws {
        let d = try TemporaryDirectory(prefix: "aasad-admin-lazy")
        for site in ["a.test", "b.test"] { try d.write("sites/\(site)/apple-app-site-association", Self.aasa) }
        try d.write("sites/bad.test/apple-app-site-association", Self.awkward)
        let sites = Self.registry(d)
        let before = sites.current
        let beforePage = before.render(fetches: [:])
        try FileManager.default.removeItem(atPath: d.path("sites/a.test"))
        try FileManager.default.removeItem(atPath: d.path("sites/bad.test"))
        _ = sites.reload { $0.reloadAll() }
        #expect(before.render(fetches: [:]) == beforePage)
        #expect(before.count == 3 && before["a.test"] != nil && before["bad.test"] != nil)
        Self.check(sites)
        #expect(sites.current.count == 1 && sites.current["a.test"] == nil && sites.current["bad.test"] == nil)
        #expect(sites.current.unusual.isEmpty)
    }

    @Test("a served directory the registry has no site for is not listed (and counted once listed again)")
    func notASite() {
        let served = ServedSite(
            directory: "a.test", hosts: [try! HostName(parsing: "a.test")], aasa: nil, assetLinks: nil, certificate: nil, loadedAt: 1)
        let map: TreeDictionary<String, ServedSite> = ["a.test": served]
        let hidden = AdminView.applying([AdminView.Change(directory: "a.test", status: nil)], served: map, to: nil)
        #expect(hidden.count == 0)
        let view = AdminView(
            generation: 0, served: map, unusual: hidden.unusual, count: hidden.count, sharedCertificate: .development, stateCounts: [:],
            conflictingHosts: 0, reloads: LockedRegistry.ReloadRecord())
        #expect(view["a.test"] == nil && view.directories.isEmpty)
        let status = SiteStatus(plain: served, directory: "a.test")
        let shown = AdminView.applying([AdminView.Change(directory: "a.test", status: status)], served: map, to: view)
        #expect(shown.count == 1 && shown.unusual.isEmpty)
    }
}
