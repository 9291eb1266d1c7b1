import Dispatch
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Daemon
@testable import SiteStore

/// A start builds the first admin view after it is ready (Sources/Daemon/Daemon.swift,
/// `LockedRegistry.init`'s `builds`): until it is published, every reader of the view and every change to the
/// registry waits, so that no page shows a view without the sites and no reload changes the
/// registry while the build reads it.
@Suite("Admin view: the first one built after readiness, waited for by every reader")
struct AdminFirstViewTests {
    static func loaded(_ sites: Int) throws -> (TemporaryDirectory, SiteRegistry) {
        let directory = try TemporaryDirectory(prefix: "aasad-first-view")
        for index in 0..<sites {
            try directory.write("sites/s\(index).test/apple-app-site-association", AdminViewLazyTests.aasa)
        }
        let registry = SiteRegistry(root: directory.path, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        registry.reloadAll()
        return (directory, registry)
    }

    @Test("readers, reloads and registry calls made before the first view wait for it and then see every site")
    func everyoneWaits() throws {
        let (directory, registry) = try Self.loaded(300)  // past the parallel threshold of the view's walk
        let held = DeferredWork()
        let sites = LockedRegistry(registry, fallback: .development, builds: held.hold)
        let seen = Mutex<[String: Int]>([:])
        let done = DispatchGroup()
        let calls: [(String, @Sendable () -> Int)] = [
            ("current", { sites.current.count }),
            ("withRegistry", { sites.withRegistry { $0.siteNames.count } }),
            ("reload", { sites.reload { $0.reload(["s0.test"]) }.sites.count }),
        ]
        for (name, call) in calls {
            done.enter()
            DispatchQueue.global().async {
                let count = call()
                seen.withLock { $0[name] = count }
                done.leave()
            }
        }
        // None may return while the build is held: a bounded wait that must run out.
        #expect(done.wait(timeout: .now() + .milliseconds(300)) == .timedOut)
        #expect(seen.withLock { $0.isEmpty })
        DispatchQueue.global().async { held.run() }
        #expect(done.wait(timeout: .now() + .seconds(60)) == .success)
        #expect(seen.withLock { $0 } == ["current": 300, "withRegistry": 300, "reload": 300])
        AdminViewLazyTests.check(sites)
        _ = directory
    }

    @Test("the first view built on its own thread is the registry's, site for site")
    func sameAsRegistry() throws {
        let (directory, registry) = try Self.loaded(300)
        let sites = LockedRegistry(registry, fallback: .development)
        AdminViewLazyTests.check(sites)
        #expect(sites.current.count == 300)
        #expect(sites.current.generation == 0)
        _ = directory
    }
}
