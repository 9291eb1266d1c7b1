import Foundation
public import Logging
public import Outbound
import SafeText
import Synchronization

/// The CDN watch in `serve` (`cdn-watch:` in aasad.yaml): for every host served, Apple's CDN copy
/// is asked for now and then and compared with what aasad serves, so that an operator sees
/// "changed at T, CDN current since T+y" — or not. `CDNWatchSchedule` decides what to ask and
/// keeps what is known; this is its thread: one request at a time, at most `rate` a second in
/// all, never on a serving thread. Each replica watches on its own (N replicas ask N times).
public final class CDNWatch: Sendable {
    public struct Settings: Sendable, Equatable {
        /// The CDN base; the host is appended.
        public var url: String
        /// Seconds between two looks at one host whose copy is current.
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

    public let settings: Settings
    private let probe: CDNProbe
    private let logger: Logger
    private let generation: @Sendable () -> UInt64
    private let targets: @Sendable () -> [CDNWatchSchedule.Target]
    private let schedule: Mutex<CDNWatchSchedule>
    private let stopping = StopFlag()
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    /// `generation` is asked once a loop (cheap: the served snapshot's number); `targets`, the
    /// hosts served, only when it moved.
    public init(
        settings: Settings, logger: Logger, generation: @escaping @Sendable () -> UInt64,
        targets: @escaping @Sendable () -> [CDNWatchSchedule.Target]
    ) throws(OutboundError) {
        var configuration = CDNProbe.configuration(caFile: settings.caFile, userAgent: "aasad-cdn-watch")
        // A stop aborts the request in flight instead of waiting out its timeout.
        let flag = stopping
        configuration.isCancelled = { flag.isRaised }
        probe = CDNProbe(client: try OutboundClient(configuration: configuration), base: settings.url)
        self.settings = settings
        self.logger = logger
        self.generation = generation
        self.targets = targets
        schedule = Mutex(CDNWatchSchedule(interval: settings.interval))
    }

    public func start() {
        started.store(true, ordering: .relaxed)
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "aasad-cdn-watch"
        thread.start()
    }

    /// Stops the thread; a request in flight is aborted.
    public func stop() {
        stopping.raise()
        wake.signal()
        if started.load(ordering: .relaxed) { finished.wait() }
    }

    /// Every host's state, by host.
    public var states: [String: CDNWatchSchedule.HostState] { schedule.withLock { $0.states } }

    /// Moves on whenever what `/sites` shows changes.
    public var version: UInt64 { schedule.withLock { $0.version } }

    /// Sites by their worst host; sites not asked about yet are absent.
    public func bySite() -> [String: CDNWatchSchedule.HostState] { schedule.withLock { $0.bySite() } }

    /// One site's worst host among `hosts`, as `bySite()` has it, by a look-up per host instead
    /// of a walk of every host (the status page asks per row).
    public func state(ofSite site: String, hosts: [String]) -> CDNWatchSchedule.HostState? {
        schedule.withLock { $0.state(ofSite: site, hosts: hosts) }
    }

    private func run() {
        var seen: UInt64?
        let spacing = max(1.0 / settings.rate, 0.001)
        while !stopping.isRaised {
            let now = Self.now()
            let current = generation()
            if current != seen {
                seen = current
                let hosts = targets()
                schedule.withLock { $0.reconcile(hosts, now: now) }
            }
            let (host, wait) = schedule.withLock { $0.next(now: now) }
            guard let host else {
                _ = wake.wait(timeout: .now() + .seconds(Int(max(wait, 1))))
                continue
            }
            let observation = probe.observe(host)
            if stopping.isRaised { break }
            let (before, after) = schedule.withLock { schedule in
                let before = schedule.states[host]?.state
                schedule.record(host, observation, now: Self.now())
                return (before, schedule.states[host]?.state)
            }
            if let after, before != after {
                // The first look at each host is not news (10,000 lines at a start).
                let level: Logger.Level = before == nil ? .debug : .info
                logger.log(
                    level: level, "Apple's CDN copy is \(after.rawValue)",
                    metadata: [
                        "host": "\(host)", "status": "\(observation.status.map(String.init) ?? "none")",
                        "reason": "\(TerminalText.escaped(observation.failureReason ?? observation.error ?? ""))",
                    ])
            }
            _ = wake.wait(timeout: .now() + spacing)
        }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}

/// A flag shared with the client's cancel check.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isRaised: Bool { value.load(ordering: .relaxed) }
    func raise() { value.store(true, ordering: .relaxed) }
}
