package import AASA
package import ACME
package import Check
package import Foundation
package import HTTPCore
package import HTTPServer
package import HashTreeCollections
package import Reactor
package import SiteStore
package import Synchronization
import TenantAPI

/// The admin listener's pages: liveness, readiness, metrics and every
/// site's state. Answered on the admin worker's thread, never on a serving one.
///
/// Probes must answer whatever else the admin port is doing: `/healthz` is a constant and
/// `/readyz` one atomic load, and no page takes the registry's lock (a reload holds it while it
/// reads the config directory, which at 100,000 sites takes seconds). `/sites` and `/metrics`
/// read the `AdminView` the reloader published after its last reload. `/sites` is rendered
/// again on a queue of its own (`PageRender`), never on the admin worker's thread: only the page
/// already rendered for the current state is answered there.
struct AdminPages: Sendable {
    let sites: LockedRegistry
    /// Raised once the first snapshot is served, lowered when stopping (`/readyz`).
    let ready: AtomicFlag
    let fetches: FetchLog
    let metrics: MetricsExporter
    /// The certificate manager, once made (after privileges are dropped); nil while off.
    let acme: @Sendable () -> CertificateManager?
    /// The CDN watch in force; nil while off.
    var cdn: @Sendable () -> CDNWatch? = { nil }
    /// The tenant API's ownership checks; nil while no name has one.
    var verification: VerificationStore? = nil
    /// The HTML status page (`/`, StatusPage.swift): its sorted index and problem list, built on
    /// a queue of its own.
    var status = StatusPages()
    /// Wildcard children's approvals, when automatic certificates are on (`/sites`' `acme.children`).
    var children: ChildApprovals? = nil
    /// Where `/sites` is rendered when what it shows changed.
    var sitesRender = PageRender(label: "aasad.sites-page")

    /// `target`: the path, and the query when one was sent. `/sites` is answered now only when
    /// the page for the current state is rendered already; otherwise later, off this thread.
    func reply(_ target: String) -> AdminEndpoint.Reply? {
        guard target == "/sites" || target.hasPrefix("/sites?") else { return answer(target).map(AdminEndpoint.Reply.now) }
        if let cached = sitesAnswer(renderedOnly: true) { return .now(cached) }
        return sitesRender.request { self.sitesAnswer(renderedOnly: false)! }
    }

    /// `/sites`; nil when `renderedOnly` and the page for the current state is not rendered. The
    /// page is the one kept for the next ask, not a copy (what is read now goes in `tail`), so an
    /// answer refused for its size (`AdminEndpoint.frame`) costs no copy of it.
    func sitesAnswer(renderedOnly: Bool) -> AdminEndpoint.Answer? {
        // Fallback answers change the page too: their total is part of its cache key.
        let fallbacks = metrics.traffic.statistics().fallbacks.values.reduce(0, &+)
        let manager = acme()
        let page = sites.sitesPage(
            fetches: fetches, acme: manager, fallbacks: fallbacks, cdn: cdn(), verification: verification, renderedOnly: renderedOnly)
        return page.map {
            var tail = $0.tail
            if manager != nil { tail = Self.withChildren(tail, children) }
            return .init(status: .ok, contentType: "application/json", body: $0.body, tail: tail)
        }
    }

    /// `target`: the path, and the query when one was sent; every page but `/sites` (`reply`
    /// answers it, never rendering on the calling thread): nil for it.
    func answer(_ target: String) -> AdminEndpoint.Answer? {
        let path = target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
        if path == "/" { return status.answer(target: target, source: statusSource()) }
        switch path {
        case "/healthz":
            return .init(status: .ok, body: Array("ok\n".utf8))
        case "/readyz":
            // Ready once the first snapshot is served; not ready while stopping.
            return ready.isRaised
                ? .init(status: .ok, body: Array("ready\n".utf8)) : .init(status: .serviceUnavailable, body: Array("not ready\n".utf8))
        case "/metrics":
            return .init(status: .ok, contentType: MetricsExporter.contentType, body: metrics.scrape())
        default:
            return nil
        }
    }
}

/// Where a site's certificate comes from, as `/sites` shows it (`certificate`).
enum CertificateKind: String, Sendable {
    /// The site's own `tls/` pair.
    case site
    /// The config directory's default pair (`tls/`).
    case `default`
    /// The development certificate: no client trusts it unless told to (`curl --cacert`).
    case development
    /// Another site's pair, the default for connections without SNI when no `tls/` exists.
    case otherSite = "other-site"
}

extension AdminView {
    /// `/sites`: each site's state as `aasad sites` shows it, where its certificate comes from,
    /// and its fetches by Apple's CDN, sorted by directory name. Linear in the sites (plus the
    /// sort), with no lock held but the fetch log's for a dictionary copy.
    func render(
        fetches: [String: FetchLog.SiteFetches], acme: [String: CertificateStatus]? = nil,
        cdn: [String: CDNWatchSchedule.HostState]? = nil, dal: [String: CDNWatchSchedule.HostState]? = nil,
        verification: [String: Bool]? = nil
    ) -> [UInt8] {
        var out = Array(#"{"sites":["#.utf8)
        out.reserveCapacity(64 + count * 500)
        let shared = "\"\(sharedCertificate.rawValue)\""
        let own = "\"\(CertificateKind.site.rawValue)\""
        for (index, site) in sorted.enumerated() {
            guard let entry = entry(site) else { continue }
            let directory = site.directory
            if index > 0 { out.append(UInt8(ascii: ",")) }
            // Encoded now, not kept: the view holds no site's JSON between pages.
            Self.open(entry.status, into: &out)
            var kind = entry.ownCertificate.map { $0 ? own : shared } ?? "null"
            // Automatic certificates, per name: the site's `certificate` is "acme" once every
            // name it has one for is served one.
            // The names are made only for a look-up that needs them.
            let hosts = entry.ownCertificate == false || verification != nil ? entry.hosts : []
            let automatic = entry.ownCertificate == false ? hosts.compactMap { acme?[$0] } : []
            if !automatic.isEmpty && automatic.allSatisfy({ $0.notAfter != nil }) { kind = "\"acme\"" }
            out += #","certificate":"#.utf8
            out += kind.utf8
            if !automatic.isEmpty { out += Array(",\"acme\":".utf8) + Self.json(automatic) }
            // fallback: answers given by the site's fallback (redirects and page), by the
            // platform read from User-Agent, since the site was first loaded.
            if let counts = entry.fallbackCounts {
                let members = ClientPlatform.allCases.map { "\"\($0.label)\":\(counts.value($0))" }
                out += Array(",\"fallback\":{\(members.joined(separator: ","))}".utf8)
            }
            // routes: answers per route, in the table's order (the index is /metrics' label);
            // a path holds only URL bytes, `{`, `}`, `*` and `?` (RoutePattern): no JSON escape.
            if let counts = entry.routeCounts {
                let members = counts.paths.indices.map { "{\"path\":\"\(counts.paths[$0])\",\"answers\":\(counts.value($0))}" }
                out += Array(",\"routes\":[\(members.joined(separator: ","))]".utf8)
                // routeWalksCut: requests whose route walk the work budget cut short
                // (PreparedRoutes.maximumWork), answered by the fallback or a 404.
                out += Array(",\"routeWalksCut\":\(counts.cutWalks)".utf8)
            }
            // cdn: Apple's CDN copy against what is served (the watch's worst host for the
            // site); null until the watch has asked; absent while the watch is off. dal: the
            // same for Google's Digital Asset Links view (cdn-watch.google), null also for a
            // site without an assetlinks.json giving an app handle_all_urls.
            if let cdn {
                out += Array(",\"cdn\":".utf8) + (cdn[directory].map(Self.json) ?? Array("null".utf8))
            }
            if let dal {
                out += Array(",\"dal\":".utf8) + (dal[directory].map(Self.json) ?? Array("null".utf8))
            }
            // verification: the tenant API's ownership check of the site's names (docs/api.md):
            // `unverified` while any name it holds waits for it (no certificate is ordered for
            // that name), `verified` when every name with a check passed it, else `not-required`.
            if let verification {
                let checked = hosts.compactMap { verification[$0] }
                let state = checked.contains(false) ? "unverified" : checked.isEmpty ? "not-required" : "verified"
                out += Array(",\"verification\":\"\(state)\"".utf8)
            }
            let f = fetches[directory]
            // lastAppleFetch: seconds since the epoch of the last fetch with User-Agent AASA-Bot,
            // null if none since start; lastAppleFetchFromAppleNetwork: whether that fetch came
            // from 17.0.0.0/8 (a User-Agent alone can be spoofed; docs/threat-model.md).
            out += #","appleFetches":\#(f?.count ?? 0),"appleFetchesFromAppleNetwork":\#(f?.countFromAppleNetwork ?? 0)"#.utf8
            out += #","lastAppleFetch":"#.utf8
            out += (f.map { "\($0.last)" } ?? "null").utf8
            out += #","lastAppleFetchFromAppleNetwork":"#.utf8
            out += (f.map { "\($0.lastFromAppleNetwork)" } ?? "null").utf8
            out.append(UInt8(ascii: "}"))
        }
        out += Array("]".utf8)
        // The order queue: names due and waiting for the order budget (acme.orders-per-hour),
        // and names past their site's acme.names-per-site, never ordered.
        if let acme {
            let queued = acme.values.count { $0.state == .queued }
            let failed = acme.values.count { $0.state == .failed }
            let capped = acme.values.count { $0.state == .capped }
            out += Array(
                ",\"acme\":{\"names\":\(acme.count),\"queued\":\(queued),\"failed\":\(failed),\"capped\":\(capped)}".utf8)
        }
        out += Array("}".utf8)
        return out
    }
}

extension AdminView {
    /// A site's CDN state as `/sites` shows it.
    static func json(_ state: CDNWatchSchedule.HostState) -> [UInt8] {
        func text(_ value: String?) -> String { value.map(JSONValue.quote) ?? "null" }
        let members = [
            "\"state\":\"\(state.state.rawValue)\"", "\"host\":\(JSONValue.quote(state.host))", "\"checkedAt\":\(state.checkedAt)",
            "\"since\":\(state.since)", "\"status\":\(state.status.map(String.init) ?? "null")",
            "\"failureReason\":\(text(state.failureReason))", "\"error\":\(text(state.error))",
        ]
        return Array(("{" + members.joined(separator: ",") + "}").utf8)
    }

    /// Automatic certificate states as a JSON array (`/sites`' `acme`).
    static func json(_ statuses: [CertificateStatus]) -> [UInt8] {
        var parts: [String] = []
        for status in statuses {
            var members = ["\"name\":\(JSONValue.quote(status.name))", "\"state\":\"\(status.state.rawValue)\""]
            if let notAfter = status.notAfter { members.append("\"notAfter\":\(notAfter)") }
            if let renewAt = status.renewAt { members.append("\"renewAt\":\(renewAt)") }
            if let error = status.error { members.append("\"error\":\(JSONValue.quote(error))") }
            if let next = status.nextAttempt { members.append("\"nextAttempt\":\(next)") }
            parts.append("{" + members.joined(separator: ",") + "}")
        }
        return Array(("[" + parts.joined(separator: ",") + "]").utf8)
    }
}

/// The registry, shared by the watcher (which changes it) and the admin endpoint (which reads
/// what the last reload published); the serving path never touches it. Reloads go through
/// `reload`, which keeps their count and publishes the admin view.
final class LockedRegistry: @unchecked Sendable {
    // @unchecked: the registry is touched only inside `reloading`; `view` and `page` are Mutexes
    // held for a reference copy.
    private let registry: SiteRegistry
    /// Held for a whole reload: the registry's change, the count, and building and publishing the
    /// view (a view is built from the previous one, so reloads must publish in the order they
    /// ran). Only reloads take it; the admin pages read `view`.
    private let reloading: Mutex<ReloadRecord>
    /// Where each site's certificate comes from when it has none of its own and the config
    /// directory has no default pair: the start-up fallback (development or another site's).
    private let fallback: CertificateKind
    private let view: Mutex<AdminView>
    /// Which site holds which host as of the last reload (a value copy): the tenant API checks a
    /// new version of a site against it without taking `reloading`.
    private let publishedOwnership: Mutex<HostOwnership>
    /// The last `/sites` page, with the view generation and fetch log version it was made from:
    /// probes and scrapers that ask again get the same bytes without rendering.
    private let page = Mutex<
        (generation: UInt64, fetches: UInt64, acme: Source?, fallbacks: Int, cdn: Source?, verification: UInt64?, bytes: [UInt8])?
    >(nil)

    /// Which manager or watch (a changed aasad.yaml replaces them) and its version.
    private struct Source: Equatable {
        var object: ObjectIdentifier
        var version: UInt64
    }

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

    /// Open once the first view is published. The first view looks at every site (0.3 to 0.4 s of
    /// CPU at 100,000 sites, docs/benchmarks.md), so a start builds it after it is ready
    /// (Daemon.swift); everything that reads the view or touches the registry waits for it first,
    /// so nothing changes the registry while it is read and no page shows a view without sites.
    private let firstView = DispatchGroup()

    /// `builds`: given the first view's build, runs it once, now or later (`DeferredWork.hold`;
    /// by default on a global queue).
    init(_ registry: SiteRegistry, fallback: CertificateKind, builds: (@escaping @Sendable () -> Void) -> Void = LockedRegistry.elsewhere) {
        self.registry = registry
        self.fallback = fallback
        var record = ReloadRecord()
        record.lastSuccessful = registry.lastReloadProblems == 0
        reloading = Mutex(record)
        publishedOwnership = Mutex(registry.hostOwnership)
        _ = registry.takeTouched()
        view = Mutex(
            AdminView(
                generation: 0, served: [:], unusual: [:], count: 0, sharedCertificate: fallback, stateCounts: [:], conflictingHosts: 0,
                reloads: record))
        firstView.enter()
        // Only this thread reads the registry until `firstView` opens: every other way in waits.
        nonisolated(unsafe) let registry = registry
        let reloads = record
        builds { [self] in
            let taken = Self.take(registry, names: registry.siteNames, fallback: fallback)
            let kept = AdminView.applying(taken.changes, served: taken.served, to: nil)
            let first = AdminView(
                generation: 0, served: taken.served, unusual: kept.unusual, count: kept.count, sharedCertificate: taken.shared,
                stateCounts: taken.stateCounts, conflictingHosts: taken.conflicts, reloads: reloads,
                routed: AdminView.routing(taken.changes, to: [:]))
            view.withLock { $0 = first }
            firstView.leave()
        }
    }

    /// The first view built on a global queue.
    static func elsewhere(_ body: @escaping @Sendable () -> Void) { DispatchQueue.global().async(execute: body) }

    /// Waits until the first view is published (at once after that).
    func waitForFirstView() { firstView.wait() }

    /// Applies a change to the registry, counts it as a reload and publishes the admin view, in
    /// one hold of `reloading`. Only the sites the reload touched are looked at for the new view.
    /// Sets how files are served (a changed cache-control); the next full reload prepares every
    /// file under it.
    func setOptions(_ options: ServingOptions) {
        waitForFirstView()
        return reloading.withLock { _ in registry.options = options }
    }

    /// Reads or changes the registry under the reloads' lock without counting a reload or
    /// publishing a view: for changes no site's state shows (verdicts on certificate pairs).
    func withRegistry<Result: Sendable>(_ body: (SiteRegistry) -> Result) -> Result {
        waitForFirstView()
        return reloading.withLock { _ in body(registry) }
    }

    func reload(_ body: (SiteRegistry) -> Snapshot) -> Snapshot {
        waitForFirstView()
        return reloading.withLock { record in
            let snapshot = body(registry)
            record.reloads += 1
            record.lastSuccessful = registry.lastReloadProblems == 0
            if record.lastSuccessful {
                record.lastSuccessAt = Int64(Date().timeIntervalSince1970)
            } else {
                record.failures += 1
            }
            let taken = Self.take(registry, names: registry.takeTouched(), fallback: fallback)
            let previous = current
            let kept = AdminView.applying(taken.changes, served: taken.served, to: previous)
            let fresh = AdminView(
                generation: previous.generation + 1, served: taken.served, unusual: kept.unusual, count: kept.count,
                sharedCertificate: taken.shared, stateCounts: taken.stateCounts, conflictingHosts: taken.conflicts, reloads: record,
                journal: previous.journal.appending(generation: previous.generation + 1, names: taken.changes.map(\.directory)),
                routed: AdminView.routing(taken.changes, to: previous.routed))
            view.withLock { $0 = fresh }
            publishedOwnership.withLock { $0 = registry.hostOwnership }
            return snapshot
        }
    }

    /// What the admin pages show, as of the last reload.
    var current: AdminView {
        waitForFirstView()
        return publishedNow
    }

    /// The view published now, without waiting for the first: before it, one without sites.
    var publishedNow: AdminView { view.withLock { $0 } }

    /// Host ownership as of the last reload.
    var ownership: HostOwnership { publishedOwnership.withLock { $0 } }

    /// `/sites` for the current view and fetches; rendered again only when either changed, and
    /// then nil if `renderedOnly`.
    func sitesPage(
        fetches: FetchLog, acme: CertificateManager? = nil, fallbacks: Int = 0, cdn: CDNWatch? = nil,
        verification: VerificationStore? = nil,
        renderedOnly: Bool = false
    ) -> (body: [UInt8], tail: [UInt8])? {
        let view = current
        let version = fetches.version
        // Cut route walks change the page too (one answered by a 404 moves no fallback count).
        let fallbacks = fallbacks &+ view.routed.values.reduce(0) { $0 &+ $1.cutWalks }
        let acmeVersion = acme.map { Source(object: ObjectIdentifier($0), version: $0.version) }
        let cdnVersion = cdn.map { Source(object: ObjectIdentifier($0), version: $0.version) }
        if let cached = page.withLock({ $0 }), cached.generation == view.generation, cached.fetches == version,
            cached.acme == acmeVersion, cached.fallbacks == fallbacks, cached.cdn == cdnVersion,
            cached.verification == verification?.version
        {
            return Self.withTiers(cached.bytes, acme)
        }
        if renderedOnly { return nil }
        let statuses = acme?.statusesByName()
        let checks = verification.map { ($0.version, $0.verifiedByName()) }
        var bytes = view.render(
            fetches: fetches.sites(), acme: statuses?.statuses, cdn: cdn.flatMap { $0.settings.apple ? $0.bySite() : nil },
            dal: cdn.flatMap { $0.watchesGoogle ? $0.googleBySite() : nil }, verification: checks?.1)
        // With a manager the page is kept open before its `acme` summary's `}` and its own (in
        // place: the array is this render's alone), for what is read at each ask (`withTiers`).
        if acme != nil, bytes.count >= 2, bytes[bytes.count - 1] == UInt8(ascii: "}"), bytes[bytes.count - 2] == UInt8(ascii: "}") {
            bytes.removeLast(2)
        }
        let acmeSource = acme.flatMap { manager in statuses.map { Source(object: ObjectIdentifier(manager), version: $0.version) } }
        page.withLock { $0 = (view.generation, version, acmeSource, fallbacks, cdnVersion, checks?.0, bytes) }
        return Self.withTiers(bytes, acme)
    }

    /// The page kept and what ends it: with a manager, the order budget's tiers added to its
    /// `acme` summary (each tier's queued names and how long the oldest has waited, read now: the
    /// rest of the page is rebuilt only when something changed; waits grow every second), then
    /// the summary's `}` and the page's own; without one, nothing (the page is whole).
    static func withTiers(_ page: [UInt8], _ manager: CertificateManager?) -> (body: [UInt8], tail: [UInt8]) {
        // A page rendered without statuses is whole (it ends with its `}`; an open one with a count).
        guard let manager, page.last != UInt8(ascii: "}") else { return (page, []) }
        let tiers = manager.tierWaits().map { "\"\($0.tier.label)\":{\"queued\":\($0.queued),\"oldestWaitSeconds\":\($0.oldestAge)}" }
        return (page, Array(",\"tiers\":{\(tiers.joined(separator: ","))}}}".utf8))
    }

    /// The named sites' statuses and served versions, the snapshot's map of served sites, and the
    /// counts: taken under the registry lock in O(names).
    private static func take<Names: Sequence<String>>(
        _ registry: SiteRegistry, names: Names, fallback: CertificateKind
    ) -> (
        changes: [AdminView.Change], served: TreeDictionary<String, ServedSite>, shared: CertificateKind,
        stateCounts: [SiteState: Int], conflicts: Int
    ) {
        let snapshot = registry.snapshot
        // Reads only, under the registry's lock: on every core for a start's 100,000 sites.
        nonisolated(unsafe) let registry = registry
        let changes = Parallel.map(Array(names), threshold: 256) { name in
            let served = snapshot.sites[name]
            // Most sites: plain, told without making their status (a start asks of every site).
            if let served, registry.isPlain(name, served: served) {
                // The derived state must be the registry's own (SiteStatus.swift `isPlain`,
                // `init(plain:directory:)`): checked in debug builds, where tests run.
                assert(
                    registry.status(of: name) == SiteStatus(plain: served, directory: name),
                    "a plain site's derived status differs from the registry's: \(name)")
                return AdminView.Change(directory: name, status: nil, served: served, routeCounts: served.routeCounts, plain: true)
            }
            return AdminView.Change(directory: name, status: registry.status(of: name), served: served, routeCounts: served?.routeCounts)
        }
        let shared: CertificateKind = snapshot.defaultCertificate != nil ? .default : fallback
        return (changes, snapshot.sites, shared, registry.stateCounts, registry.conflictingHosts)
    }
}

/// Work handed over to be run later, at most once, on the thread that calls `run`.
final class DeferredWork: Sendable {
    private let work = Mutex<(@Sendable () -> Void)?>(nil)

    /// Keeps `body` for `run` (a second hold replaces a first not yet run).
    func hold(_ body: @escaping @Sendable () -> Void) { work.withLock { $0 = body } }

    /// Runs what was held, if anything, and forgets it.
    func run() {
        let body = work.withLock { kept in
            defer { kept = nil }
            return kept
        }
        body?()
    }
}
