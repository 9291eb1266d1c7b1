import HTTPCore
import Hashing
import Logging
import Testing

@testable import SiteStore

/// A load records the verdict of each content it validated (`ContentCache.choose`), and skips the
/// record for one whose verdict it found known when reading it (`SiteFile.verdictKnown`).
@Suite("Verdicts recorded by a reload between full loads")
struct VerdictRecordTests {
    private static func aasa(_ path: String) -> String {
        #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/\#(path)/*"}]}]}}"#
    }

    private static func digest(_ text: String) -> String { Hex.string(Digest.sha256(Array(text.utf8))) }

    @Test("a content validated by a reload of some sites is known at once; one known already stays known and served")
    func recordedByReload() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", Self.aasa("a"))
        let registry = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        registry.reloadAll()
        #expect(registry.preparer.validity.known?.contains(.aasa, digestHex: Self.digest(Self.aasa("a"))) == true)
        // A reload of some sites records no verdicts afterwards (`rememberVerdicts` is a full
        // load's): what it validated is known from its apply on.
        try c.write("sites/b.test/apple-app-site-association", Self.aasa("b"))
        try c.write("sites/c.test/apple-app-site-association", Self.aasa("a"))
        let snapshot = registry.reload(["b.test", "c.test"])
        #expect(registry.preparer.validity.known?.contains(.aasa, digestHex: Self.digest(Self.aasa("b"))) == true)
        #expect(registry.preparer.validity.known?.contains(.aasa, digestHex: Self.digest(Self.aasa("a"))) == true)
        #expect(snapshot.site(forHost: "b.test")?.aasa != nil)
        #expect(snapshot.site(forHost: "c.test")?.aasa != nil)
    }

    @Test("a site added where none was served before (a first load by a reload) has its verdict known at once")
    func recordedByFirstReload() throws {
        let c = try TempConfig()
        let registry = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        registry.reloadAll()
        try c.write("sites/a.test/apple-app-site-association", Self.aasa("a"))
        #expect(registry.reload(["a.test"]).site(forHost: "a.test")?.aasa != nil)
        #expect(registry.preparer.validity.known?.contains(.aasa, digestHex: Self.digest(Self.aasa("a"))) == true)
    }
}
