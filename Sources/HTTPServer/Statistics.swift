public import HTTPCore
import Synchronization
public import TLS

/// What the server counts, each dimension a small fixed set, so that the metrics built on them
/// have bounded labels whatever clients send.
public enum Traffic {
    /// The protocol a request came over.
    public enum HTTPVersion: Int, CaseIterable, Sendable {
        case http1, http2
        public var label: String { self == .http1 ? "1.1" : "2" }
    }

    /// Whether the request's host is one the server serves.
    public enum SiteClass: Int, CaseIterable, Sendable {
        /// A configured site (or alias) answers for the host.
        case configured
        /// No site for the host, no host, or a request that could not be parsed.
        case unknown
        public var label: String { self == .configured ? "configured" : "unknown" }
    }

    /// Which of the served paths was asked for.
    public enum PathClass: Int, CaseIterable, Sendable {
        case wellKnownAASA, rootAASA, assetLinks, other
        /// ACME's HTTP-01 path (RFC 8555 §8.3), answered on the plain listener when the server has
        /// an HTTP-01 resolver; elsewhere, or without one, it counts as `other`.
        case acmeChallenge
        /// Any other path of a site with `fallback` or `page`, answered by them (a redirect, the
        /// page or its 304); without an answer it counts as `other`.
        case fallback
        public var label: String {
            switch self {
            case .fallback: "fallback"
            case .wellKnownAASA: "/.well-known/apple-app-site-association"
            case .rootAASA: "/apple-app-site-association"
            case .assetLinks: "/.well-known/assetlinks.json"
            case .other: "other"
            case .acmeChallenge: "/.well-known/acme-challenge/"
            }
        }
    }

    /// The first digit of the status.
    public enum StatusClass: Int, CaseIterable, Sendable {
        case success, redirection, clientError, serverError
        public var label: String { ["2xx", "3xx", "4xx", "5xx"][rawValue] }

        init(_ status: Status) {
            switch status.rawValue {
            case ..<300: self = .success
            case ..<400: self = .redirection
            case ..<500: self = .clientError
            default: self = .serverError
            }
        }
    }

    /// Which listener a connection came in on (the admin listener is not counted).
    public enum ListenerClass: Int, CaseIterable, Sendable {
        case https, http
        public var label: String { self == .https ? "https" : "http" }
    }

    /// The phase a connection timed out in.
    public enum TimeoutPhase: Int, CaseIterable, Sendable {
        case handshake, request, idle, write, linger
        public var label: String { ["handshake", "request", "idle", "write", "linger"][rawValue] }
    }

    /// One request's place in the request counters.
    public struct RequestKey: Hashable, Sendable {
        public var version: HTTPVersion
        public var site: SiteClass
        public var path: PathClass
        public var status: StatusClass
    }

    /// One fallback answer's place in the fallback counters: bounded labels, never the path.
    public struct FallbackKey: Hashable, Sendable {
        public var platform: ClientPlatform
        public var status: StatusClass

        public init(platform: ClientPlatform, status: StatusClass) {
            self.platform = platform
            self.status = status
        }
    }

    /// One successful handshake's place in the handshake counters.
    public struct HandshakeKey: Hashable, Sendable {
        public var tls13: Bool
        public var resumed: Bool
        public var http2: Bool
    }
}

/// Counters of one worker. Only that worker writes them (a relaxed load and store: no lock and no
/// atomic read-modify-write on the serving path); the metrics scrape reads them from another
/// thread. Each worker's counters are their own allocation, so workers never share a cache line.
final class WorkerCounters: @unchecked Sendable {
    // @unchecked: the slots are atomics; the pointer is set once and freed in deinit.

    private static let requestSlots =
        Traffic.HTTPVersion.allCases.count * Traffic.SiteClass.allCases.count * Traffic.PathClass.allCases.count
        * Traffic.StatusClass.allCases.count
    private static let handshakeBase = requestSlots
    private static let handshakeSlots = 8
    private static let failureBase = handshakeBase + handshakeSlots
    private static let acceptedBase = failureBase + TLSFailure.allCases.count
    private static let openBase = acceptedBase + Traffic.ListenerClass.allCases.count
    private static let timeoutBase = openBase + Traffic.ListenerClass.allCases.count
    private static let acmeChallengeIndex = timeoutBase + Traffic.TimeoutPhase.allCases.count
    private static let refusedForMemoryIndex = acmeChallengeIndex + 1
    private static let streamsRefusedIndex = refusedForMemoryIndex + 1
    private static let evictedForMemoryIndex = streamsRefusedIndex + 1
    private static let fallbackBase = evictedForMemoryIndex + 1
    private static let count = fallbackBase + ClientPlatform.allCases.count * Traffic.StatusClass.allCases.count

    private let slots: UnsafeMutablePointer<Atomic<Int>>

    init() {
        slots = .allocate(capacity: Self.count)
        for i in 0..<Self.count { (slots + i).initialize(to: Atomic(0)) }
    }

    deinit {
        slots.deinitialize(count: Self.count)
        slots.deallocate()
    }

    @inline(__always)
    private func add(_ index: Int, _ n: Int) {
        let slot = slots + index
        slot.pointee.store(slot.pointee.load(ordering: .relaxed) &+ n, ordering: .relaxed)
    }

    private func value(_ index: Int) -> Int { slots[index].load(ordering: .relaxed) }

    private static func requestIndex(_ k: Traffic.RequestKey) -> Int {
        ((k.version.rawValue * Traffic.SiteClass.allCases.count + k.site.rawValue) * Traffic.PathClass.allCases.count + k.path.rawValue)
            * Traffic.StatusClass.allCases.count + k.status.rawValue
    }

    private static func handshakeIndex(_ k: Traffic.HandshakeKey) -> Int {
        handshakeBase + (k.tls13 ? 4 : 0) + (k.resumed ? 2 : 0) + (k.http2 ? 1 : 0)
    }

    private static func failureIndex(_ f: TLSFailure) -> Int {
        failureBase + TLSFailure.allCases.firstIndex(of: f)!
    }

    func request(_ version: Traffic.HTTPVersion, _ site: Traffic.SiteClass, _ path: Traffic.PathClass, _ status: Status) {
        add(Self.requestIndex(.init(version: version, site: site, path: path, status: .init(status))), 1)
    }

    func handshake(tls13: Bool, resumed: Bool, http2: Bool) {
        add(Self.handshakeIndex(.init(tls13: tls13, resumed: resumed, http2: http2)), 1)
    }

    func handshakeFailed(_ failure: TLSFailure) { add(Self.failureIndex(failure), 1) }

    func opened(_ listener: Traffic.ListenerClass) {
        add(Self.acceptedBase + listener.rawValue, 1)
        add(Self.openBase + listener.rawValue, 1)
    }

    func closed(_ listener: Traffic.ListenerClass) { add(Self.openBase + listener.rawValue, -1) }

    func timedOut(_ phase: Traffic.TimeoutPhase) { add(Self.timeoutBase + phase.rawValue, 1) }

    func acmeChallengeHandshake() { add(Self.acmeChallengeIndex, 1) }

    /// A connection closed as accepted: the process-wide budget for incomplete requests was spent.
    func refusedForMemory() { add(Self.refusedForMemoryIndex, 1) }

    /// An HTTP/2 connection closed, holding the most incomplete requests, to let a new one in.
    func evictedForMemory() { add(Self.evictedForMemoryIndex, 1) }

    /// HTTP/2 streams reset for a budget, a header list over the bound or a malformed request.
    func streamsRefused(_ n: Int) { add(Self.streamsRefusedIndex, n) }

    private static func fallbackIndex(_ k: Traffic.FallbackKey) -> Int {
        fallbackBase + k.platform.rawValue * Traffic.StatusClass.allCases.count + k.status.rawValue
    }

    func fallback(_ platform: ClientPlatform, _ status: Status) {
        add(Self.fallbackIndex(.init(platform: platform, status: .init(status))), 1)
    }

    /// Adds this worker's counts to a server-wide total.
    func add(to total: inout ServerStatistics) {
        for version in Traffic.HTTPVersion.allCases {
            for site in Traffic.SiteClass.allCases {
                for path in Traffic.PathClass.allCases {
                    for status in Traffic.StatusClass.allCases {
                        let key = Traffic.RequestKey(version: version, site: site, path: path, status: status)
                        total.requests[key, default: 0] += value(Self.requestIndex(key))
                    }
                }
            }
        }
        for tls13 in [false, true] {
            for resumed in [false, true] {
                for http2 in [false, true] {
                    let key = Traffic.HandshakeKey(tls13: tls13, resumed: resumed, http2: http2)
                    total.handshakes[key, default: 0] += value(Self.handshakeIndex(key))
                }
            }
        }
        for failure in TLSFailure.allCases {
            total.handshakeFailures[failure, default: 0] += value(Self.failureIndex(failure))
        }
        for listener in Traffic.ListenerClass.allCases {
            total.accepted[listener, default: 0] += value(Self.acceptedBase + listener.rawValue)
            total.open[listener, default: 0] += value(Self.openBase + listener.rawValue)
        }
        for phase in Traffic.TimeoutPhase.allCases {
            total.timeouts[phase, default: 0] += value(Self.timeoutBase + phase.rawValue)
        }
        total.acmeChallengeHandshakes += value(Self.acmeChallengeIndex)
        total.connectionsRefusedForMemory += value(Self.refusedForMemoryIndex)
        total.connectionsEvictedForMemory += value(Self.evictedForMemoryIndex)
        total.http2StreamsRefused += value(Self.streamsRefusedIndex)
        for platform in ClientPlatform.allCases {
            for status in Traffic.StatusClass.allCases {
                let key = Traffic.FallbackKey(platform: platform, status: status)
                total.fallbacks[key, default: 0] += value(Self.fallbackIndex(key))
            }
        }
    }
}

/// The server's counters summed over its workers at one moment. Counters only grow while the
/// process lives; `open` is a level.
public struct ServerStatistics: Sendable {
    public var requests: [Traffic.RequestKey: Int] = [:]
    public var handshakes: [Traffic.HandshakeKey: Int] = [:]
    public var handshakeFailures: [TLSFailure: Int] = [:]
    /// Connections accepted, by listener.
    public var accepted: [Traffic.ListenerClass: Int] = [:]
    /// Connections open now, by listener.
    public var open: [Traffic.ListenerClass: Int] = [:]
    public var timeouts: [Traffic.TimeoutPhase: Int] = [:]
    /// TLS-ALPN-01 validations answered (`acme-tls/1` handshakes completed with a challenge
    /// certificate, RFC 8737); not in `handshakes`, which counts connections that carry HTTP.
    /// Refused ones are in `handshakeFailures` under `acme_challenge_unavailable`.
    public var acmeChallengeHandshakes = 0
    /// Sites' fallback answers (redirects and pages), by the platform they were chosen for.
    public var fallbacks: [Traffic.FallbackKey: Int] = [:]
    /// Connections closed as accepted because incomplete requests held the whole process budget.
    public var connectionsRefusedForMemory = 0
    /// HTTP/2 connections closed because they held the most incomplete requests when the process
    /// budget was spent and a new connection arrived (`Worker.evictForAsks`).
    public var connectionsEvictedForMemory = 0
    /// HTTP/2 streams reset before being answered: a budget spent, a header list too large, a
    /// malformed request.
    public var http2StreamsRefused = 0
    /// Bytes the fields of incomplete HTTP/2 requests hold now, all workers (a level).
    public var incompleteRequestBytes = 0

    public init() {}
}

/// Every worker's counters, for the metrics scrape. Workers register at start; the lock is taken
/// at start and by each scrape, never on the serving path.
public final class TrafficCounters: Sendable {
    private let workers = Mutex<[WorkerCounters]>([])
    /// The serving workers' budget, once a server has started with these counters.
    private let budget = Mutex<RequestBudget?>(nil)

    public init() {}

    func watch(_ budget: RequestBudget) { self.budget.withLock { $0 = budget } }

    func makeWorkerCounters() -> WorkerCounters {
        let counters = WorkerCounters()
        workers.withLock { $0.append(counters) }
        return counters
    }

    /// The counts summed over the workers now.
    public func statistics() -> ServerStatistics {
        var total = ServerStatistics()
        for worker in workers.withLock({ $0 }) { worker.add(to: &total) }
        total.incompleteRequestBytes = budget.withLock { $0?.inUse ?? 0 }
        return total
    }
}
