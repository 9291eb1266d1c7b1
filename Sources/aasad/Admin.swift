import Foundation
import HTTPServer
import SiteStore
import Synchronization

/// The admin listener's pages (DESIGN.md "Operations"): liveness, readiness, metrics and every
/// site's state. Answered on the admin worker's thread, never on a serving one.
struct AdminPages: Sendable {
    let sites: LockedRegistry
    let ready: ReadyFlag
    let fetches: FetchLog
    let metrics: MetricsExporter

    func answer(_ path: String) -> AdminEndpoint.Answer? {
        switch path {
        case "/healthz":
            return .init(status: 200, body: Array("ok\n".utf8))
        case "/readyz":
            // Ready once the first snapshot is served; not ready while stopping.
            return ready.isReady
                ? .init(status: 200, body: Array("ready\n".utf8)) : .init(status: 503, body: Array("not ready\n".utf8))
        case "/metrics":
            return .init(status: 200, contentType: MetricsExporter.contentType, body: metrics.scrape())
        case "/sites":
            let statuses = sites.withLock { $0.statuses }
            let fetched = fetches.sites()
            let listing = AdminSites(sites: statuses.map { AdminSites.Site(status: $0, fetches: fetched[$0.directory]) })
            return .init(status: 200, contentType: "application/json", body: JSONOutput.compact(listing))
        default:
            return nil
        }
    }
}

/// The registry, shared by the watcher (which changes it) and the admin endpoint (which reads
/// it); the serving path never touches it. Reloads go through `reload`, which keeps their count.
final class LockedRegistry: @unchecked Sendable {
    // @unchecked: every access goes through the lock.
    private let lock = NSLock()
    private let registry: SiteRegistry
    private var record = ReloadRecord()

    /// Reloads since start, and how the last one went.
    struct ReloadRecord: Sendable {
        var reloads = 0
        /// Reloads that refused something: an invalid file (its last good version kept), a name
        /// that cannot be a site, an unusable certificate.
        var failures = 0
        var lastSuccessful = true
        /// Seconds since the epoch of the last reload that refused nothing (or of start-up).
        var lastSuccessAt = Int64(Date().timeIntervalSince1970)
    }

    init(_ registry: SiteRegistry) {
        self.registry = registry
        record.lastSuccessful = registry.lastReloadProblems == 0
    }

    func withLock<T>(_ body: (SiteRegistry) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(registry)
    }

    /// Applies a change to the registry and counts it as a reload.
    func reload(_ body: (SiteRegistry) -> Snapshot) -> Snapshot {
        lock.lock()
        defer { lock.unlock() }
        let snapshot = body(registry)
        record.reloads += 1
        record.lastSuccessful = registry.lastReloadProblems == 0
        if record.lastSuccessful {
            record.lastSuccessAt = Int64(Date().timeIntervalSince1970)
        } else {
            record.failures += 1
        }
        return snapshot
    }

    var reloads: ReloadRecord {
        lock.lock()
        defer { lock.unlock() }
        return record
    }
}

/// Whether the server is ready for traffic (/readyz): set once serving, cleared when stopping.
final class ReadyFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isReady: Bool { value.load(ordering: .acquiring) }

    func set(_ ready: Bool) { value.store(ready, ordering: .releasing) }
}

/// `/sites`: each site's state as `aasad sites` shows it, plus fetches by Apple's CDN.
struct AdminSites: Encodable {
    struct Site: Encodable {
        var status: SiteStatus
        var fetches: FetchLog.SiteFetches?

        enum CodingKeys: String, CodingKey { case lastAppleFetch, appleFetches }

        func encode(to encoder: any Encoder) throws {
            try status.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            // Seconds since the epoch of the last fetch with User-Agent AASA-Bot; null if none since start.
            try c.encode(fetches?.last, forKey: .lastAppleFetch)
            try c.encode(fetches?.count ?? 0, forKey: .appleFetches)
        }
    }

    var sites: [Site]
}
