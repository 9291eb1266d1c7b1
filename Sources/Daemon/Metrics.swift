package import ACME
package import Check
package import CoreMetrics
package import Foundation
package import Glibc
package import HTTPCore
package import HTTPServer
package import Prometheus
package import SiteStore
package import Synchronization
package import TLS

/// `/metrics`: the server's counters as swift-prometheus counters and gauges, each family with
/// its `# HELP` text, rendered by swift-prometheus in Prometheus' text format. The workers count
/// on their own without locks (`TrafficCounters`); each scrape reads those counts and moves the
/// registry's metrics to them, so the serving path never touches a metric. Every label comes from
/// a fixed set. Metrics other libraries emit through swift-metrics land on the same page.
/// About 430 lines: one scrape's families, in the order the page lists them, read best in one place.
final class MetricsExporter: Sendable {
    /// Whether swift-metrics' global factory was set (once per process).
    private static let bootstrapped = Mutex(false)

    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private let registry = PrometheusCollectorRegistry()
    let traffic: TrafficCounters
    private let fetches: FetchLog
    private let sites: LockedRegistry
    private let startTime: Double
    private let state: Mutex<State>

    /// Metrics and the totals last pushed to them (counters only move up, by deltas).
    private struct State: ~Copyable {
        var counters: [String: (metric: Prometheus.Counter, pushed: Int64)] = [:]
        var gauges: [String: Prometheus.Gauge] = [:]
        var cpu: (metric: Prometheus.Counter, pushed: Double)
    }

    /// The certificate manager, once made; its series appear when automatic certificates are on.
    private let acme: @Sendable () -> CertificateManager?

    /// The development CA, when the development certificate is in use.
    private let development: DevelopmentAuthority?

    /// Wildcard children's approvals, when automatic certificates are on (`aasad_acme_ask_*`).
    private let children: ChildApprovals?

    /// The CDN watch, when on: its gauge appears then.
    private let cdn: @Sendable () -> CDNWatch?

    /// What is served now: which sites have an AASA file for Apple's CDN to fetch.
    private let served: @Sendable () -> Snapshot?

    /// The last `appleFetchLook`, with the snapshot generation and fetch log version it was made
    /// from: a scrape with neither changed reuses it (a walk of 100,000 sites took a scrape from
    /// about 1 ms to 40 to 90 ms).
    private let appleLookCache = Mutex<(generation: UInt64, fetches: UInt64, look: (unfetched: Int, oldestLast: Int64?))?>(nil)

    init(
        traffic: TrafficCounters, fetches: FetchLog, sites: LockedRegistry, acme: @escaping @Sendable () -> CertificateManager? = { nil },
        development: DevelopmentAuthority? = nil, cdn: @escaping @Sendable () -> CDNWatch? = { nil },
        served: @escaping @Sendable () -> Snapshot? = { nil }, children: ChildApprovals? = nil
    ) {
        self.children = children
        self.cdn = cdn
        self.served = served
        self.acme = acme
        self.development = development
        self.traffic = traffic
        self.fetches = fetches
        self.sites = sites
        startTime = Date().timeIntervalSince1970
        let registry = self.registry
        state = Mutex(State(cpu: (registry.makeCounter(descriptor: Self.family("process_cpu_seconds_total")), 0)))
        // swift-metrics' global factory can be set once per process: a second daemon in one
        // process (tests run several) keeps the first's. Nothing records through the global API;
        // every series below is made on this exporter's own registry.
        Self.bootstrapped.withLock { done in
            if !done { MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry)) }
            done = true
        }
        registry.makeGauge(descriptor: Self.family("aasad_build_info"), labels: [("version", Daemon.version)]).set(to: 1)
        // Every series exists from the start, at zero, so that rate() and alerts see them.
        // The start makes this before its first admin view, which it builds once it is ready:
        // the site series start from the empty view rather than wait for it, and the Apple
        // fetch series at zero rather than from a walk of every site (0.02 s at 100,000 sites
        // before readiness; the first scrape asked for walks them).
        _ = scrape(firstView: false, walksSites: false)
    }

    /// The page, with every value read now. `firstView`: wait for the first admin view (made
    /// after readiness, `LockedRegistry`), else read the view published now, empty before it.
    /// `walksSites`: false sets the Apple fetch series to zero rather than walking the snapshot.
    func scrape(firstView: Bool = true, walksSites: Bool = true) -> [UInt8] {
        let statistics = traffic.statistics()
        let apple = fetches.buckets()
        // The view the last reload published: a scrape never waits for a reload in progress, only
        // (right after readiness) for the first view.
        let view = firstView ? sites.current : sites.publishedNow
        let (states, conflicts, reloads) = (view.stateCounts, view.conflictingHosts, view.reloads)
        let manager = acme()
        let certificates = manager.map { ($0.counters(), $0.stateCounts(), $0.tierWaits()) }
        let appleLook = served().map { walksSites ? appleFetchLook($0) : (unfetched: 0, oldestLast: nil) }
        let registry = self.registry
        state.withLock { state in
            /// One series: the name and its labels.
            func series(_ name: String, _ labels: [(String, String)]) -> String {
                name + labels.map { "|\($0.0)=\($0.1)" }.joined()
            }
            func count(_ name: String, _ labels: [(String, String)], _ value: Int) {
                let key = series(name, labels)
                let entry = state.counters[key] ?? (registry.makeCounter(descriptor: Self.family(name), labels: labels), 0)
                if Int64(value) > entry.pushed { entry.metric.increment(by: Int64(value) - entry.pushed) }
                state.counters[key] = (entry.metric, max(entry.pushed, Int64(value)))
            }
            func level(_ name: String, _ labels: [(String, String)], _ value: Double) {
                let key = series(name, labels)
                let gauge = state.gauges[key] ?? registry.makeGauge(descriptor: Self.family(name), labels: labels)
                state.gauges[key] = gauge
                gauge.set(value)
            }
            /// Takes away the series of a part turned off while serving (the CDN watch).
            func drop(_ name: String) {
                for (key, gauge) in state.gauges where key.hasPrefix(name + "|") {
                    registry.unregisterGauge(gauge)
                    state.gauges[key] = nil
                }
            }

            // Only combinations that happened: most of the 64 cannot (a 2xx for an unknown host).
            for (key, value) in statistics.requests where value > 0 {
                count(
                    "aasad_requests_total",
                    [("protocol", key.version.label), ("site", key.site.label), ("path", key.path.label), ("status", key.status.label)],
                    value)
            }
            for (key, value) in statistics.handshakes {
                count(
                    "aasad_tls_handshakes_total",
                    [("version", key.tls13 ? "1.3" : "1.2"), ("resumed", "\(key.resumed)"), ("protocol", key.http2 ? "2" : "1.1")],
                    value)
            }
            for (reason, value) in statistics.handshakeFailures {
                count("aasad_tls_handshake_failures_total", [("reason", reason.rawValue)], value)
            }
            for listener in Traffic.ListenerClass.allCases {
                count("aasad_connections_accepted_total", [("listener", listener.label)], statistics.accepted[listener] ?? 0)
                level("aasad_connections_open", [("listener", listener.label)], Double(statistics.open[listener] ?? 0))
            }
            count("aasad_acme_challenge_handshakes_total", [], statistics.acmeChallengeHandshakes)
            count("aasad_connections_refused_for_memory_total", [], statistics.connectionsRefusedForMemory)
            count("aasad_connections_evicted_for_memory_total", [], statistics.connectionsEvictedForMemory)
            count("aasad_http2_streams_refused_total", [], statistics.http2StreamsRefused)
            level("aasad_incomplete_request_bytes", [], Double(statistics.incompleteRequestBytes))
            count("aasad_development_leaves_issued_total", [], development?.leavesIssued ?? 0)
            // Every combination (12), so that a rate is defined before the first answer.
            for platform in ClientPlatform.allCases {
                for status in Traffic.StatusClass.allCases {
                    count(
                        "aasad_fallback_responses_total", [("platform", platform.label), ("status", status.label)],
                        statistics.fallbacks[Traffic.FallbackKey(platform: platform, status: status)] ?? 0)
                }
            }
            // route: the index in a site's `routes:` (never its path), summed over the sites with
            // routes; at most RouteSettings.maximumCount values. Per site: /sites. Only the sites
            // with routes are looked at (`AdminView.routed`).
            var routes: [Int: Int] = [:]
            for (_, counts) in view.routed {
                for i in 0..<counts.count { routes[i, default: 0] += counts.value(i) }
            }
            for (route, value) in routes where value > 0 {
                count("aasad_route_responses_total", [("route", "\(route)")], value)
            }
            // Walks the work budget cut short (PreparedRoutes.maximumWork), summed over the sites
            // with routes; per site: /sites' routeWalksCut.
            if !view.routed.isEmpty {
                count("aasad_route_walks_cut_total", [], view.routed.values.reduce(0) { $0 &+ $1.cutWalks })
            }
            for (phase, value) in statistics.timeouts {
                count("aasad_connection_timeouts_total", [("phase", phase.label)], value)
            }
            // apple_network: whether the client was in 17.0.0.0/8 (two values, so bounded); a
            // fetch that only claims to be Apple's by its User-Agent counts under "false".
            for status in Traffic.StatusClass.allCases {
                for fromApple in [false, true] {
                    count(
                        "aasad_apple_fetches_total", [("status", status.label), ("apple_network", "\(fromApple)")],
                        apple[FetchLog.Bucket(status: status, fromAppleNetwork: fromApple)] ?? 0)
                }
            }
            for siteState in [SiteState.serving, .servingLastGood, .refused] {
                level("aasad_sites", [("state", siteState.rawValue)], Double(states[siteState] ?? 0))
            }
            level("aasad_conflicting_hosts", [], Double(conflicts))
            count("aasad_config_reloads_total", [], reloads.reloads)
            count("aasad_config_reload_failures_total", [], reloads.failures)
            level("aasad_config_last_reload_successful", [], reloads.lastSuccessful ? 1 : 0)
            level("aasad_config_last_reload_success_timestamp_seconds", [], Double(reloads.lastSuccessAt))
            if let appleLook {
                level("aasad_apple_unfetched_sites", [], Double(appleLook.unfetched))
                level("aasad_apple_fetch_oldest_last_timestamp_seconds", [], Double(appleLook.oldestLast ?? 0))
            }

            if let (counters, names, tiers) = certificates {
                count("aasad_acme_orders_total", [("result", "issued")], counters.issued)
                count("aasad_acme_orders_total", [("result", "failed")], counters.failed)
                count("aasad_acme_certificates_picked_up_total", [], counters.pickedUp)
                for nameState in CertificateStatus.State.allCases {
                    level("aasad_acme_names", [("state", nameState.rawValue)], Double(names[nameState] ?? 0))
                }
                level("aasad_acme_queue_length", [], Double(counters.queued))
                // The budget's tiers (docs/acme.md): three series each, whatever the names.
                for wait in tiers {
                    level("aasad_acme_tier_queue_length", [("tier", wait.tier.label)], Double(wait.queued))
                    level("aasad_acme_tier_oldest_wait_seconds", [("tier", wait.tier.label)], Double(wait.oldestAge))
                }
                level("aasad_acme_earliest_not_after_timestamp_seconds", [], Double(counters.earliestNotAfter ?? 0))
            }
            // Wildcard children (docs/acme.md): labels from fixed sets, whatever the names.
            if let summary = children?.summary() {
                for answer in ChildLedger.Answer.allCases {
                    count("aasad_acme_ask_total", [("answer", answer.rawValue)], summary.counters.asks[answer] ?? 0)
                }
                for reason in ChildLedger.Drop.allCases {
                    count("aasad_acme_ask_dropped_total", [("reason", reason.rawValue)], summary.counters.dropped[reason] ?? 0)
                }
                count("aasad_acme_ask_cached_total", [], summary.counters.cached)
                level("aasad_acme_ask_in_flight", [], Double(summary.inFlight))
                level("aasad_acme_ask_pending", [], Double(summary.pending))
                level("aasad_acme_ask_children", [], Double(summary.children))
                count("aasad_acme_ask_children_forgotten_total", [], summary.counters.forgotten)
            }

            /// A watched service's sites by state, and since when the site longest in each state has been.
            func watched(_ prefix: String, _ bySite: [String: CDNWatchSchedule.HostState]?) {
                guard let bySite else {
                    drop(prefix + "_sites")
                    drop(prefix + "_oldest_since_timestamp_seconds")
                    return
                }
                var counts = Dictionary(uniqueKeysWithValues: CDNState.allCases.map { ($0, 0) })
                var oldest: [CDNState: Int64] = [:]
                for state in bySite.values {
                    counts[state.state, default: 0] += 1
                    oldest[state.state] = min(oldest[state.state] ?? .max, state.since)
                }
                for cdnState in CDNState.allCases {
                    level(prefix + "_sites", [("state", cdnState.rawValue)], Double(counts[cdnState] ?? 0))
                    level(prefix + "_oldest_since_timestamp_seconds", [("state", cdnState.rawValue)], Double(oldest[cdnState] ?? 0))
                }
            }
            let cdn = cdn()
            watched("aasad_cdn", cdn.flatMap { $0.settings.apple ? $0.bySite() : nil })
            watched("aasad_dal", cdn.flatMap { $0.watchesGoogle ? $0.googleBySite() : nil })

            let process = ProcessFigures.read()
            level("process_start_time_seconds", [], startTime)
            level("process_resident_memory_bytes", [], Double(process.residentBytes))
            level("process_virtual_memory_bytes", [], Double(process.virtualBytes))
            level("process_open_fds", [], Double(process.openDescriptors))
            level("process_max_fds", [], Double(process.maxDescriptors))
            level("process_threads", [], Double(process.threads))
            if process.cpuSeconds > state.cpu.pushed {
                state.cpu.metric.increment(by: process.cpuSeconds - state.cpu.pushed)
                state.cpu.pushed = process.cpuSeconds
            }
        }
        return registry.emitToBuffer()
    }

    /// `appleFetchLook` of the snapshot and the fetch log now, made again only when either changed.
    private func appleFetchLook(_ snapshot: Snapshot) -> (unfetched: Int, oldestLast: Int64?) {
        // The version is read before the log: a fetch in between makes the next scrape walk again.
        let version = fetches.version
        if let cached = appleLookCache.withLock({ $0 }), cached.generation == snapshot.generation, cached.fetches == version {
            return cached.look
        }
        let look = Self.appleFetchLook(snapshot, fetches.sites())
        appleLookCache.withLock { $0 = (snapshot.generation, version, look) }
        return look
    }

    /// Of the sites serving an AASA file now: how many no request with User-Agent AASA-Bot fetched
    /// since start, and the earliest last fetch among the others. Two numbers whatever the count
    /// of sites (a label per site would be unbounded), enough for an alert on a site Apple's CDN
    /// stopped fetching; `/sites` names it. A site removed since its fetch is not counted. Linear
    /// in the sites, on the admin thread: 100,000 sites cost a scrape a walk of the snapshot.
    static func appleFetchLook(_ snapshot: Snapshot, _ fetches: [String: FetchLog.SiteFetches]) -> (unfetched: Int, oldestLast: Int64?) {
        var unfetched = 0
        var oldestLast: Int64?
        for site in snapshot.sites.values where site.aasa != nil {
            if let last = fetches[site.directory]?.last {
                oldestLast = min(oldestLast ?? last, last)
            } else {
                unfetched += 1
            }
        }
        return (unfetched, oldestLast)
    }

    /// A family's name with its `# HELP` text from `helpTexts`. swift-prometheus requires one text
    /// per name, so every metric of a family is made with this descriptor.
    static func family(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: helpTexts[name] ?? "")
    }

    /// Families that exist only while automatic certificates are on (the manager's figures).
    static let automaticCertificateFamilies: Set<String> = [
        "aasad_acme_orders_total", "aasad_acme_certificates_picked_up_total", "aasad_acme_names", "aasad_acme_queue_length",
        "aasad_acme_earliest_not_after_timestamp_seconds", "aasad_acme_tier_queue_length", "aasad_acme_tier_oldest_wait_seconds",
        "aasad_acme_ask_total", "aasad_acme_ask_dropped_total", "aasad_acme_ask_cached_total", "aasad_acme_ask_in_flight",
        "aasad_acme_ask_pending", "aasad_acme_ask_children", "aasad_acme_ask_children_forgotten_total",
    ]

    /// Families that exist only once a site's route has answered (site.yaml `routes:`).
    static let routeFamilies: Set<String> = ["aasad_route_responses_total", "aasad_route_walks_cut_total"]

    /// Families that exist only while the CDN watch is on.
    static let cdnWatchFamilies: Set<String> = [
        "aasad_cdn_sites", "aasad_cdn_oldest_since_timestamp_seconds", "aasad_dal_sites", "aasad_dal_oldest_since_timestamp_seconds",
    ]

    /// What each metric means, as its family's `# HELP` line.
    static let helpTexts: [String: String] = [
        "aasad_requests_total": "Requests answered on the HTTPS and HTTP listeners, by protocol, site class, path and status class.",
        "aasad_tls_handshakes_total": "TLS handshakes completed, by TLS version, resumption and the HTTP version ALPN chose.",
        "aasad_tls_handshake_failures_total": "TLS handshakes that did not complete, by reason.",
        "aasad_connections_accepted_total": "Connections accepted, by listener.",
        "aasad_connections_open": "Connections open now, by listener.",
        "aasad_connection_timeouts_total": "Connections closed by a timeout, by the phase they were in.",
        "aasad_connections_refused_for_memory_total":
            "Connections closed as accepted because incomplete requests held the whole limits.incomplete-request-kb and no connection held 1 KB to be closed for them.",
        "aasad_connections_evicted_for_memory_total":
            "HTTP/2 connections closed, holding the most incomplete requests, to let a new connection in while limits.incomplete-request-kb was spent.",
        "aasad_http2_streams_refused_total":
            "HTTP/2 streams reset unanswered: a memory budget spent, a header list over 16 KB, or a malformed request.",
        "aasad_incomplete_request_bytes": "Bytes the fields of incomplete HTTP/2 requests hold now, all workers together.",
        "aasad_apple_fetches_total":
            "Requests for an AASA path with User-Agent AASA-Bot, by status class and whether the client was in Apple's 17.0.0.0/8.",
        "aasad_apple_unfetched_sites":
            "Sites serving an AASA file that no request with User-Agent AASA-Bot fetched since start.",
        "aasad_apple_fetch_oldest_last_timestamp_seconds":
            "Among sites serving an AASA file and fetched since start with User-Agent AASA-Bot, the earliest last fetch, in seconds since the epoch (0: none).",
        "aasad_sites": "Sites in the config directory, by state.",
        "aasad_conflicting_hosts": "Names a site claims that another site holds (refused to it).",
        "aasad_config_reloads_total": "Reloads of the config directory (watched changes, SIGHUP, rescans).",
        "aasad_config_reload_failures_total":
            "Reloads that refused something: an invalid file kept its last good version, or a name or certificate was unusable.",
        "aasad_config_last_reload_successful": "1 if the last reload refused nothing, else 0.",
        "aasad_config_last_reload_success_timestamp_seconds":
            "When a reload (or start-up) last refused nothing, in seconds since the epoch.",
        "aasad_build_info": "The running version, as a label; always 1.",
        "aasad_route_responses_total":
            "Answers of site.yaml routes by the route's index in its table, summed over sites (per site: /sites).",
        "aasad_route_walks_cut_total":
            "Requests whose walk of a site's routes passed the work budget and stopped, answered by the fallback or 404, summed over sites (per site: /sites routeWalksCut).",
        "aasad_fallback_responses_total":
            "Sites' fallback answers (redirects, and the page with its 304s) by the platform read from User-Agent and status class.",
        "aasad_acme_challenge_handshakes_total": "TLS-ALPN-01 validation handshakes answered (RFC 8737), closed after the handshake.",
        "aasad_development_leaves_issued_total":
            "Development leaves signed for hosts without a certificate, on their first SNI (and again before they end); 0 without the development certificate.",
        "aasad_acme_orders_total": "ACME orders since start, by result (issued: a certificate stored; failed: any cause).",
        "aasad_acme_certificates_picked_up_total": "Certificates loaded from the ACME storage (at start, or stored by another replica).",
        "aasad_acme_names": "Names wanting an automatic certificate, by state.",
        "aasad_acme_queue_length": "Names due for an order and waiting for the order budget (acme.orders-per-hour).",
        "aasad_acme_tier_queue_length":
            "Names due for an order by tier: renewal (served certificates), demanded (asked for by a handshake, Apple's CDN or the tenant API), new (the rest).",
        "aasad_acme_tier_oldest_wait_seconds":
            "How long the oldest queued name of each tier has waited, in seconds (0 when the tier is empty).",
        "aasad_acme_ask_total":
            "Approvals asked for wildcard children (the allow file, acme.ask), by answer: yes (200, exit 0, listed), no (anything else), failed (no answer, 5xx).",
        "aasad_acme_ask_dropped_total":
            "Child names not asked about, by reason: rate (the ask or new-child rate spent), full (asks waiting), paused (after a failed ask), capped (children per site or in all).",
        "aasad_acme_ask_cached_total": "Child names refused from the cache of answers, without an ask.",
        "aasad_acme_ask_in_flight": "Approvals being asked now.",
        "aasad_acme_ask_pending": "Child names waiting for an approval to be asked.",
        "aasad_acme_ask_children": "Children of per-name wildcard sites approved, each wanting a certificate of its own.",
        "aasad_acme_ask_children_forgotten_total":
            "Children forgotten (not renewed): refused on a later ask, or asked for by no handshake in the grace period.",
        "aasad_cdn_sites":
            "Sites by the state of Apple's CDN copy against what is served (the site's worst host), once the CDN watch has asked; only with cdn-watch.enabled.",
        "aasad_cdn_oldest_since_timestamp_seconds":
            "For each CDN state, since when the site longest in it has been (seconds since the epoch; 0: no site in it); only with cdn-watch.enabled.",
        "aasad_dal_sites":
            "Sites by the state of Google's Digital Asset Links view against the served assetlinks.json (the site's worst host), once the watch has asked; only with cdn-watch.google.",
        "aasad_dal_oldest_since_timestamp_seconds":
            "For each Digital Asset Links state, since when the site longest in it has been (seconds since the epoch; 0: no site in it); only with cdn-watch.google.",
        "aasad_acme_earliest_not_after_timestamp_seconds":
            "The earliest end of validity among automatic certificates served, in seconds since the epoch (0: none).",
        "process_start_time_seconds": "Start time of the process, in seconds since the epoch.",
        "process_resident_memory_bytes": "Resident memory size in bytes.",
        "process_virtual_memory_bytes": "Virtual memory size in bytes.",
        "process_open_fds": "Open file descriptors.",
        "process_max_fds": "The limit on open file descriptors.",
        "process_threads": "Threads of the process.",
        "process_cpu_seconds_total": "User and system CPU time spent, in seconds.",
    ]
}

/// The process's own figures from /proc, as the Prometheus client libraries report them.
struct ProcessFigures {
    var residentBytes = 0
    var virtualBytes = 0
    var cpuSeconds = 0.0
    var threads = 0
    var openDescriptors = 0
    var maxDescriptors = 0

    static func read() -> ProcessFigures {
        var figures = ProcessFigures()
        // /proc/self/stat: fields after the command name in parentheses (proc(5)).
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // fields[0] is field 3 (state): utime is field 14, stime 15, threads 20, vsize 23, rss 24.
            func field(_ n: Int) -> Double { fields.count > n - 3 ? Double(fields[n - 3]) ?? 0 : 0 }
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            figures.cpuSeconds = (field(14) + field(15)) / ticks
            figures.threads = Int(field(20))
            figures.virtualBytes = Int(field(23))
            figures.residentBytes = Int(field(24)) * Int(sysconf(Int32(_SC_PAGESIZE)))
        }
        figures.openDescriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 { figures.maxDescriptors = Int(limit.rlim_cur) }
        return figures
    }
}
