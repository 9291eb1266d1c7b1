import Foundation
import HTTPCore
import Hashing
import Logging
import Served
import Testing

@testable import SiteStore

private let good = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#

/// A certificate check that counts its calls and refuses every pair whose key holds "broken".
final class DeferredChecks: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var calls: Int { lock.withLock { count } }
    func check(_ files: CertificateFiles) -> String? {
        lock.withLock { count += 1 }
        return String(decoding: files.keyPEM, as: UTF8.self).contains("broken") ? "the key does not match" : nil
    }
}

@Suite("Certificate pairs a first load takes unchecked, checked after it")
struct DeferredCertificateTests {
    let c: TempConfig
    let checks = DeferredChecks()
    let verdicts: (path: String, identity: String)

    init() throws {
        c = try TempConfig()
        verdicts = (path: c.root + "/validated-contents", identity: "x")
    }

    func registry() -> SiteRegistry {
        SiteRegistry(
            root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            checkCertificate: { [checks] in checks.check($0) }, knownValidFile: verdicts)
    }

    func site(_ name: String, key: String) throws {
        try c.write("sites/\(name)/apple-app-site-association", good)
        try c.write("sites/\(name)/tls/cert.pem", "chain of \(name)")
        try c.write("sites/\(name)/tls/key.pem", key)
    }

    /// A registry after a first load that took its pairs unchecked.
    func deferringLoad(remembers: Bool = true) -> SiteRegistry {
        let r = registry()
        r.defersCertificateChecks = true
        r.reloadAll(remembers: remembers)
        r.defersCertificateChecks = false
        return r
    }

    /// The certificate verdicts written to the state file.
    func storedCertificateVerdicts() -> Int { KnownValid.load(path: verdicts.path, identity: "x").keys.count { $0.hasPrefix("c") } }

    @Test("a first load of several chunks defers the pair of a site an alias symlink names, and reads it once")
    func aliasedSiteDeferred() throws {
        // a.test sorts into the first chunk; its alias is applied after every directory.
        try site("a.test", key: "broken key a")
        for i in 0..<(SiteRegistry.chunkSize + 10) { try c.write("sites/s\(i).test/apple-app-site-association", good) }
        try FileManager.default.createSymbolicLink(atPath: c.root + "/sites/www.a.test", withDestinationPath: "a.test")
        let r = deferringLoad()
        #expect(checks.calls == 0, "the aliased site's pair was checked during the load")
        #expect(r.uncheckedCertificateCount == 1)
        #expect(r.snapshot.site(forHost: "www.a.test")?.directory == "a.test")
        #expect(r.checkUncheckedCertificates() == ["a.test"])
        #expect(r.snapshot.site(forHost: "www.a.test")?.certificate == nil, "a refused pair stayed in service")
    }

    @Test("a deferring load checks no pair and records none as valid; the late check reports a broken one and takes it out")
    func deferredThenChecked() throws {
        try site("a.test", key: "key a")
        try site("b.test", key: "broken key b")
        let r = deferringLoad()
        #expect(checks.calls == 0)
        #expect(r.uncheckedCertificates.count == 2)
        #expect(r.snapshot.site(forHost: "b.test")?.certificate != nil, "taken unchecked until its check")
        #expect(storedCertificateVerdicts() == 0, "an unchecked pair was written as valid")

        #expect(r.checkUncheckedCertificates() == ["b.test"])
        #expect(r.uncheckedCertificates.isEmpty)
        #expect(r.snapshot.site(forHost: "a.test")?.certificate != nil)
        #expect(r.snapshot.site(forHost: "b.test")?.certificate == nil, "a refused pair stayed in service")
        #expect(r.snapshot.site(forHost: "b.test")?.aasa != nil, "the site itself is still served")
        #expect(r.status(of: "b.test")?.errors.contains { $0.contains("the key does not match") } == true)
        #expect(storedCertificateVerdicts() == 1, "only the valid pair is written")
        // A second round has nothing left to check.
        let calls = checks.calls
        #expect(r.checkUncheckedCertificates().isEmpty)
        #expect(checks.calls == calls)
    }

    @Test("once every pair waiting has its verdict, the table that held them is let go rather than kept empty")
    func settledTableLetGo() {
        var validity = ValidityCache(file: verdicts, keepsSources: false)
        var late = LateCertificateChecks()
        let pairs = (0..<500).map {
            CertificateFiles(directory: "sites/s\($0).test/tls", chainPEM: Array("chain \($0)".utf8), keyPEM: Array("key \($0)".utf8))
        }
        for files in pairs { late.take(files, validity: validity) }
        #expect(late.unchecked.count == 500)
        _ = late.settle(pairs.prefix(499).map { ($0.identity, nil) }, validity: &validity, records: [:])
        #expect(late.unchecked.count == 1)
        #expect(late.unchecked.capacity >= 1)
        _ = late.settle([(pairs[499].identity, "the key does not match")], validity: &validity, records: [:])
        #expect(late.unchecked.isEmpty)
        #expect(late.unchecked.capacity == 0, "the room of 500 pairs stayed")
        #expect(late.isRefused(pairs[499].identity))
    }

    @Test("a broken pair replacing an unchecked one never keeps the unchecked one once that fails")
    func replacedWhileUnchecked() throws {
        try site("b.test", key: "broken first")
        let r = deferringLoad()
        // The tenant puts another broken pair in place before the late check: it is checked at
        // once (the site has a pair in service) and refused, so the unchecked one is kept...
        try c.write("sites/b.test/tls/key.pem", "broken second")
        r.reload(["b.test"])
        #expect(r.snapshot.site(forHost: "b.test")?.certificate?.keyPEM == Array("broken first".utf8))
        // ...until its own check fails: then neither is served.
        #expect(r.checkUncheckedCertificates() == ["b.test"])
        #expect(r.snapshot.site(forHost: "b.test")?.certificate == nil)
    }

    @Test("a site with a pair in service has a new pair checked at load even when the load defers")
    func pairInServiceCheckedAtLoad() throws {
        try site("a.test", key: "key a")
        let r = registry()
        r.reloadAll()
        #expect(checks.calls == 1)
        try c.write("sites/a.test/tls/key.pem", "broken key a")
        r.defersCertificateChecks = true
        r.reloadAll()
        #expect(checks.calls == 2)
        #expect(r.uncheckedCertificates.isEmpty)
        #expect(r.snapshot.site(forHost: "a.test")?.certificate?.keyPEM == Array("key a".utf8), "the last good pair")
    }

    /// A first load and a settling that a record follows add no verdict one by one (their growth
    /// of the added keys left 13 MB more held after a first start at 100,000 sites): the record
    /// (`rememberVerdicts`) adds them all. A settling before readiness, which none follows at
    /// once, adds its own.
    @Test("a first load's verdicts and the late ones are known once recorded; late ones settled without a record at once")
    func verdictsRecordedAtOnce() throws {
        try site("a.test", key: "key a")
        try site("b.test", key: "key b")
        let r = deferringLoad(remembers: false)
        #expect(r.preparer.validity.known?.contains(.aasa, digestHex: Hex.string(Digest.sha256(Array(good.utf8)))) == false)
        r.rememberVerdicts()
        #expect(r.preparer.validity.known?.contains(.aasa, digestHex: Hex.string(Digest.sha256(Array(good.utf8)))) == true)
        let pairs = r.uncheckedCertificates
        try #require(pairs.count == 2)
        r.settleCertificateChecks([(identity: pairs[0].identity, problem: nil)], remembers: false)
        #expect(r.preparer.validity.known?.contains(pair: pairs[0]) == true, "settled before readiness and not known")
        #expect(storedCertificateVerdicts() == 0)
        r.settleCertificateChecks([(identity: pairs[1].identity, problem: nil)])
        #expect(r.preparer.validity.known?.contains(pair: pairs[1]) == true)
        #expect(r.preparer.validity.known?.contains(pair: pairs[0]) == true)
        #expect(storedCertificateVerdicts() == 2)
        // After them, a reload records what it validates at once again.
        try c.write("sites/c.test/apple-app-site-association", good.replacingOccurrences(of: "/a/*", with: "/c/*"))
        r.reload(["c.test"])
        let digest = Hex.string(Digest.sha256(Array(good.replacingOccurrences(of: "/a/*", with: "/c/*").utf8)))
        #expect(r.preparer.validity.known?.contains(.aasa, digestHex: digest) == true)
    }

    @Test("a pair known valid from an earlier run is neither checked nor left waiting")
    func knownPairNotDeferred() throws {
        try site("a.test", key: "key a")
        registry().reloadAll()
        #expect(checks.calls == 1)
        let r = registry()
        r.defersCertificateChecks = true
        r.reloadAll()
        #expect(checks.calls == 1)
        #expect(r.uncheckedCertificates.isEmpty)
    }
}

extension DeferredCertificateTests {
    @Test("a refused pair that stays served (the config root gone when its site is read again) is never written as valid")
    func refusedPairNotStoredWhileServed() throws {
        try site("a.test", key: "key a")
        try site("b.test", key: "broken key b")
        // The verdicts outside the root, which moves away.
        let state = NSTemporaryDirectory() + "aasad-state-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let r = SiteRegistry(
            root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            checkCertificate: { [checks] in checks.check($0) }, knownValidFile: (path: state + "/validated-contents", identity: "x"))
        r.defersCertificateChecks = true
        r.reloadAll()
        r.defersCertificateChecks = false
        let moved = c.root + ".moved"
        try FileManager.default.moveItem(atPath: c.root, toPath: moved)
        defer { if FileManager.default.fileExists(atPath: moved) { try? FileManager.default.moveItem(atPath: moved, toPath: c.root) } }
        r.checkUncheckedCertificates()
        func stored() -> Int { KnownValid.load(path: state + "/validated-contents", identity: "x").keys.count { $0.hasPrefix("c") } }
        #expect(stored() == 1, "the refused pair was written as valid")
        // A full load while the root is still gone cannot pin it and changes nothing: the pair
        // stays served and marked refused, which is what lets the load after the root is back
        // take it out (SitePreparer drops a kept pair marked refused).
        r.reloadAll()
        // With the root back, the next full load takes the refused pair out.
        try FileManager.default.moveItem(atPath: moved, toPath: c.root)
        r.reloadAll()
        #expect(r.snapshot.site(forHost: "b.test")?.certificate == nil, "the refused pair is still served")
        #expect(r.snapshot.site(forHost: "a.test")?.certificate != nil)
        #expect(stored() == 1)
    }
}
