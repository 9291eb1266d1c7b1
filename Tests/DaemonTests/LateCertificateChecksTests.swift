import Foundation
import Logging
import SiteStore
import Synchronization
import Testing

@testable import Daemon

@Suite("Certificate pairs checked before or after readiness")
struct LateCertificateChecksTests {
    @Test("up to the bound a start checks every pair before it is ready; one more and it checks them after")
    func bound() {
        let bound = Daemon.certificateChecksBeforeReady
        #expect(Daemon.checksCertificatesBeforeReady(unchecked: 0))
        #expect(Daemon.checksCertificatesBeforeReady(unchecked: bound))
        #expect(!Daemon.checksCertificatesBeforeReady(unchecked: bound + 1))
    }
}

extension LateCertificateChecksTests {
    /// A registry after a deferring first load of `broken` sites whose pair fails (b0.test, ...,
    /// first by name) and z.test, whose pair passes (`brokenKey`).
    /// `shared`: the broken sites all hold one pair.
    /// `check`: the registry's own check of a pair (`brokenKey` unless told).
    func candidates(
        broken: Int, shared: Bool = false, last: String = "z.test", check: @escaping SiteRegistry.CertificateCheck = brokenKey
    ) throws -> (registry: SiteRegistry, root: String) {
        let root = NSTemporaryDirectory() + "aasad-candidates-" + UUID().uuidString
        func site(_ name: String, key: String) throws {
            let directory = root + "/sites/" + name
            try FileManager.default.createDirectory(atPath: directory + "/tls", withIntermediateDirectories: true)
            try Data(
                #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#.utf8
            ).write(to: URL(fileURLWithPath: directory + "/apple-app-site-association"))
            let chain = shared && name.hasPrefix("b") ? "shared chain" : "chain of \(name)"
            try Data(chain.utf8).write(to: URL(fileURLWithPath: directory + "/tls/cert.pem"))
            try Data(key.utf8).write(to: URL(fileURLWithPath: directory + "/tls/key.pem"))
        }
        for i in 0..<broken { try site("b\(i).test", key: shared ? "broken key" : "broken key \(i)") }
        try site(last, key: "key z")
        let registry = SiteRegistry(
            root: root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            checkCertificate: check, knownValidFile: (path: root + "/validated-contents", identity: "x"))
        registry.defersCertificateChecks = true
        registry.reloadAll()
        registry.defersCertificateChecks = false
        return (registry, root)
    }

    @Test("with no default pair, the first sites' pairs by name are checked until one passes, at most defaultCandidateChecks")
    func defaultCandidatesBound() throws {
        let bound = Daemon.defaultCandidateChecks
        for broken in [bound - 1, bound] {
            let (registry, root) = try candidates(broken: broken)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let calls = Mutex(0)
            let (passed, failedEarly) = Daemon.checkDefaultCandidates(registry) { files in
                calls.withLock { $0 += 1 }
                return String(decoding: files.keyPEM, as: UTF8.self).contains("broken") ? "the key does not match" : nil
            }
            #expect(calls.withLock { $0 } == bound, "\(broken) broken first")
            if broken < bound {
                // The pair within the bound passed: the refused ones are sites whose pair failed.
                #expect(failedEarly == Set((0..<broken).map { "b\($0).test" }))
                #expect(passed == registry.snapshot.site(forHost: "z.test")?.certificateIdentity)
                #expect(registry.uncheckedCertificates.isEmpty)
            } else {
                // None passed within the bound: the refused ones count as sites without a pair.
                #expect(failedEarly.isEmpty)
                #expect(passed == nil)
                #expect(registry.uncheckedCertificates.map(\.directory) == ["sites/z.test/tls"])
            }
            #expect(registry.snapshot.site(forHost: "b0.test")?.certificate == nil, "a refused pair is still served")
            // Before readiness nothing is written: the late settling records these verdicts.
            let stored = KnownValid.load(path: root + "/validated-contents", identity: "x")
            #expect(stored.count > 0, "the first load's verdicts were not written")
            // With none passing there is no valid verdict to write (refused pairs never are).
            if let passed { #expect(!stored.contains(.certificate, digestHex: passed), "the verdicts were written before readiness") }
        }
    }
}

extension LateCertificateChecksTests {
    static let brokenKey: SiteRegistry.CertificateCheck = { files in
        String(decoding: files.keyPEM, as: UTF8.self).contains("broken") ? "the key does not match" : nil
    }

    /// `candidates(broken: 1)` with the config root moved away (to the path returned, for the
    /// caller to remove): a refused pair's site cannot be read again, so it keeps serving the
    /// pair (SiteRegistry `reload`).
    func rootGone(
        last: String = "z.test", check: @escaping SiteRegistry.CertificateCheck = brokenKey
    ) throws -> (registry: SiteRegistry, moved: String) {
        let (registry, root) = try candidates(broken: 1, last: last, check: check)
        let moved = root + ".moved"
        try FileManager.default.moveItem(atPath: root, toPath: moved)
        return (registry, moved)
    }

    func defaultCertificates(
        _ registry: SiteRegistry, passed: String? = nil, failedEarly: Set<String> = []
    ) throws -> Daemon.Certificates {
        let state = NSTemporaryDirectory() + "aasad-state-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: state) }
        return try Daemon.certificates(
            snapshot: registry.snapshot, state: state, isUnchecked: registry.isUnchecked,
            isRefused: registry.isRefused, defaultPair: passed, failedEarly: failedEarly,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func defaultSite(_ registry: SiteRegistry, passed: String? = nil, failedEarly: Set<String> = []) throws -> String {
        try defaultCertificates(registry, passed: passed, failedEarly: failedEarly).defaultSource.label
    }

    @Test("past the bound, a refused candidate still served (its site cannot be read again) is not the default: the one that passed is")
    func refusedCandidateStillServedNotDefault() throws {
        let (registry, moved) = try rootGone()
        defer { try? FileManager.default.removeItem(atPath: moved) }
        let (passed, failedEarly) = Daemon.checkDefaultCandidates(registry, check: Self.brokenKey)
        #expect(registry.snapshot.site(forHost: "b0.test")?.certificate != nil, "the refused pair was taken out")
        #expect(try defaultSite(registry, passed: passed, failedEarly: failedEarly) == "sites/z.test/tls")
    }

    @Test("up to the bound, a refused pair that stays served is not the default")
    func refusedPairStillServedNotDefault() throws {
        let (registry, moved) = try rootGone()
        defer { try? FileManager.default.removeItem(atPath: moved) }
        registry.checkUncheckedCertificates()
        #expect(registry.snapshot.site(forHost: "b0.test")?.certificate != nil, "the refused pair was taken out")
        #expect(try defaultSite(registry) == "sites/z.test/tls")
    }

    @Test("the development CA made while refused pairs are still served does not name their sites' public hosts")
    func refusedPairStillServedNotInAuthority() throws {
        // Every pair refused, none can be taken out: the development certificate is the default.
        let (registry, moved) = try rootGone(last: "refused.example.org") { _ in "the key does not match" }
        defer { try? FileManager.default.removeItem(atPath: moved) }
        registry.checkUncheckedCertificates()
        #expect(registry.snapshot.site(forHost: "refused.example.org")?.certificate != nil, "the refused pair was taken out")
        let certificates = try defaultCertificates(registry)
        let permitted = try #require(certificates.development?.issued.permittedNames, "no development CA")
        // Names under .test are permitted only as the `test` subtree; a public name one by one.
        #expect(!permitted.contains("refused.example.org"), "the CA names a host whose pair was refused: \(permitted)")
    }

    @Test("sites sharing one broken pair first by name cost one check: the next pair is checked and passes")
    func sharedBrokenCandidate() throws {
        let (registry, root) = try candidates(broken: Daemon.defaultCandidateChecks + 1, shared: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let calls = Mutex(0)
        let (passed, failedEarly) = Daemon.checkDefaultCandidates(registry) { files in
            calls.withLock { $0 += 1 }
            return Self.brokenKey(files)
        }
        #expect(calls.withLock { $0 } == 2)
        #expect(passed == registry.snapshot.site(forHost: "z.test")?.certificateIdentity)
        #expect(failedEarly.count == Daemon.defaultCandidateChecks + 1)
    }
}
