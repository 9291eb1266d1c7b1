import Foundation
public import Logging
public import Outbound
import Synchronization

/// The CDN watch in `serve` (`cdn-watch:` in aasad.yaml): for every host served, Apple's CDN copy
/// is fetched now and then and compared with what aasad serves, so that an operator sees
/// "changed at T, CDN current since T+y" — or not.
///
/// One thread, one request at a time, at most `rate` requests a second in all; each host is
/// asked again `interval` after its last check, so checks stay spread as they started. A host
/// never checked goes first. What is kept of a CDN copy is the digest of its canonical JSON
/// (`JSONComparison.digest`), so that when the origin changes the state is known at once
/// (`stale`, since the change) without asking the CDN again.
public final class CDNWatch: Sendable {
    public struct Settings: Sendable, Equatable {
        /// The CDN base; the host is appended.
        public var url: String
        /// Seconds between two checks of one host.
        public var interval: Int64
        /// Most requests a second, all hosts together.
        public var rate: Double
        /// Extra roots for the CDN's HTTPS (a test CDN); the system's are trusted too.
        public var caFile: String?

        public init(url: String, interval: Int64, rate: Double, caFile: String?) {
            self.url = url
            self.interval = interval
            self.rate = rate
            self.caFile = caFile
        }
    }

    /// One host aasad serves, and what it serves there.
    public struct Target: Sendable {
        public var host: String
        /// The site (directory name) it belongs to.
        public var site: String
        /// The AASA file served; nil when the site serves none.
        public var origin: [UInt8]?
        /// The ETag of that file: the digest is computed again only when it changes.
        public var etag: String?
        /// When the served file last changed (its Last-Modified), seconds since the epoch.
        public var changedAt: Int64

        public init(host: String, site: String, origin: [UInt8]?, etag: String?, changedAt: Int64) {
            self.host = host
            self.site = site
            self.origin = origin
            self.etag = etag
            self.changedAt = changedAt
        }
    }

    /// What the watch knows of one host.
    public struct HostState: Sendable, Equatable {
        public var host: String
        public var site: String
        public var state: CDNState
        /// When the CDN was last asked, seconds since the epoch.
        public var checkedAt: Int64
        /// Since when the state holds: for `stale`, when the origin changed.
        public var since: Int64
        /// The CDN's status at the last check (nil: not reached).
        public var status: Int?
        public var failureReason: String?
    }

    private struct Entry {
        var target: Target
        var originDigest: [UInt8]?
        var cdnDigest: [UInt8]?
        var state: HostState?
        var due: Int64
    }

    private struct Shared {
        var states: [String: HostState] = [:]
        var version: UInt64 = 0
    }

    public let settings: Settings
    private let client: OutboundClient
    private let logger: Logger
    private let generation: @Sendable () -> UInt64
    private let targets: @Sendable () -> [Target]
    private let shared = Mutex(Shared())
    private let stopping = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let connectTo: [String]

    /// `generation` is asked once a loop (cheap: the served snapshot's number); `targets`, the
    /// hosts served, only when it moved.
    public init(
        settings: Settings, connectTo: [String] = [], logger: Logger, generation: @escaping @Sendable () -> UInt64,
        targets: @escaping @Sendable () -> [Target]
    ) throws(OutboundError) {
        var configuration = OutboundClient.Configuration(caFile: settings.caFile)
        configuration.addsSystemRoots = settings.caFile != nil
        configuration.userAgent = "aasad-cdn-watch"
        configuration.connectTimeoutMilliseconds = 10_000
        configuration.totalTimeoutMilliseconds = 20_000
        configuration.maximumBodyBytes = 1 << 20
        client = try OutboundClient(configuration: configuration)
        self.settings = settings
        self.connectTo = connectTo
        self.logger = logger
        self.generation = generation
        self.targets = targets
    }

    public func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "aasad-cdn-watch"
        thread.start()
    }

    /// Stops the thread (a request in flight ends by its timeout).
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        finished.wait()
    }

    /// Every host's state, by host.
    public var states: [String: HostState] { shared.withLock { $0.states } }

    /// Moves on whenever a state changes (for the admin page's cache).
    public var version: UInt64 { shared.withLock { $0.version } }

    /// Sites by their worst host state (`missing`, `stale`, `error`, then `current`), with that
    /// host's figures; sites not checked yet are absent.
    public func bySite() -> [String: HostState] {
        var out: [String: HostState] = [:]
        for state in states.values {
            if let known = out[state.site], Self.rank(known.state) >= Self.rank(state.state) { continue }
            out[state.site] = state
        }
        return out
    }

    public static func rank(_ state: CDNState) -> Int {
        switch state {
        case .current: 0
        case .error: 1
        case .stale: 2
        case .missing: 3
        }
    }

    // MARK: - The loop

    private func run() {
        var entries: [String: Entry] = [:]
        var seen: UInt64?
        let spacing = max(1.0 / settings.rate, 0.001)
        while !stopping.load(ordering: .relaxed) {
            let now = Self.now()
            let current = generation()
            if current != seen {
                seen = current
                reconcile(&entries, with: targets(), now: now)
            }
            // The host due first; a host never checked has due 0.
            guard let next = entries.values.min(by: { ($0.due, $0.target.host) < ($1.due, $1.target.host) }) else {
                _ = wake.wait(timeout: .now() + 1)
                continue
            }
            if next.due > now {
                _ = wake.wait(timeout: .now() + .milliseconds(Int(min(next.due - now, 1) * 1000)))
                continue
            }
            let host = next.target.host
            if var entry = entries[host] {
                check(&entry, now: now)
                entry.due = now + settings.interval
                entries[host] = entry
            }
            _ = wake.wait(timeout: .now() + spacing)
        }
    }

    /// Takes the hosts served now: new ones are due at once, gone ones are forgotten, and a host
    /// whose served file changed is compared with the CDN copy already seen.
    private func reconcile(_ entries: inout [String: Entry], with targets: [Target], now: Int64) {
        var seen = Set<String>()
        var changed: [HostState] = []
        for target in targets {
            seen.insert(target.host)
            guard var entry = entries[target.host] else {
                entries[target.host] = Entry(target: target, originDigest: target.origin.flatMap(JSONComparison.digest), due: 0)
                continue
            }
            let moved = entry.target.etag != target.etag
            entry.target = target
            if moved {
                entry.originDigest = target.origin.flatMap(JSONComparison.digest)
                if var state = entry.state, let cdn = entry.cdnDigest {
                    let next: CDNState = cdn == entry.originDigest ? .current : .stale
                    if next != state.state {
                        state.state = next
                        state.since = next == .stale ? target.changedAt : now
                        entry.state = state
                        changed.append(state)
                    }
                }
            }
            entries[target.host] = entry
        }
        let gone = entries.keys.filter { !seen.contains($0) }
        for host in gone { entries[host] = nil }
        shared.withLock { shared in
            for host in gone { shared.states[host] = nil }
            for state in changed { shared.states[state.host] = state }
            if !gone.isEmpty || !changed.isEmpty { shared.version &+= 1 }
        }
    }

    /// Asks the CDN for one host and records the state.
    private func check(_ entry: inout Entry, now: Int64) {
        var request = OutboundRequest(url: settings.url + entry.target.host)
        request.connectTo = connectTo
        var status: Int?
        var reason: String?
        let state: CDNState
        do {
            let response = try client.perform(request)
            status = response.status
            reason = response.headers.first("apple-failure-reason").map { String(decoding: $0.prefix(512), as: UTF8.self) }
            switch response.status {
            case 200:
                entry.cdnDigest = JSONComparison.digest(response.body)
                state = entry.cdnDigest != nil && entry.cdnDigest == entry.originDigest ? .current : .stale
            case 404:
                entry.cdnDigest = nil
                state = .missing
            default:
                state = .error
            }
        } catch {
            state = .error
            reason = error.message
        }
        let previous = entry.state
        var since = previous?.state == state ? previous!.since : now
        if state == .stale && previous?.state != .stale { since = max(entry.target.changedAt, 0) }
        let next = HostState(
            host: entry.target.host, site: entry.target.site, state: state, checkedAt: now, since: since, status: status,
            failureReason: reason)
        entry.state = next
        if previous?.state != state {
            logger.info(
                "Apple's CDN copy is \(state.rawValue)",
                metadata: [
                    "host": "\(entry.target.host)", "status": "\(status.map(String.init) ?? "none")", "reason": "\(reason ?? "")",
                ])
        }
        shared.withLock { shared in
            shared.states[next.host] = next
            shared.version &+= 1
        }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
