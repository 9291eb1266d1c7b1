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
///
/// With `google`, the same thread also asks Google's Digital Asset Links API what it lists for
/// every host serving an assetlinks.json (`DALProbe.observation`), kept in a second schedule of
/// the same kind: the same interval, the same one request at a time and the same `rate` shared by
/// both services, each paused on its own by a 429 or by failures in a row
/// (`CDNWatchSchedule.failuresBeforePause`). When both have a host due they share the thread by
/// time, not by turns: a service whose look took T seconds (a timeout) waits until the other had
/// T seconds too, so a hanging service slows the other by half at most, and only until its pause.
public final class CDNWatch: Sendable {
    /// Google's part: the API's endpoint and key.
    public struct Google: Sendable, Equatable {
        /// `statements:list`'s URL (`DALProbe.google`).
        public var url: String
        /// The API key (`DALProbe.keyProblem`); nil: none.
        public var key: String?

        public init(url: String, key: String?) {
            self.url = url
            self.key = key
        }
    }

    public struct Settings: Sendable, Equatable {
        /// The CDN base; the host is appended.
        public var url: String
        /// Seconds between two looks at one host whose copy is current.
        public var interval: Int64
        /// Most requests a second, all hosts together.
        public var rate: Double
        /// Extra roots for the CDN's HTTPS (a test CDN); the system's are trusted too.
        public var caFile: String?
        /// Whether Apple's CDN is asked (off when only Google's view is watched).
        public var apple: Bool
        /// Google's view too, when set.
        public var google: Google?
        /// Seconds a request may take in all (`CDNProbe.configuration`'s timeout; tests shorten it).
        public var timeoutSeconds: Int

        public init(
            url: String, interval: Int64, rate: Double, caFile: String?, apple: Bool = true, google: Google? = nil,
            timeoutSeconds: Int = CDNProbe.timeoutSeconds
        ) {
            self.url = url
            self.interval = interval
            self.rate = rate
            self.caFile = caFile
            self.apple = apple
            self.google = google
            self.timeoutSeconds = timeoutSeconds
        }
    }

    /// What the watch asks about: Apple's targets (a host and its AASA file's digest) and
    /// Google's (a host, its assetlinks.json's apps' digest, `DALListing.digest`, and the apps
    /// themselves with whether the file includes other lists, `DALListing.served`).
    public struct Targets: Sendable {
        public var apple: [CDNWatchSchedule.Target]
        public var google: [CDNWatchSchedule.Target]
        /// By host, for Google's targets.
        public var served: [String: (apps: Set<AndroidApp>, includes: Bool)]

        public init(
            apple: [CDNWatchSchedule.Target], google: [CDNWatchSchedule.Target] = [],
            served: [String: (apps: Set<AndroidApp>, includes: Bool)] = [:]
        ) {
            self.apple = apple
            self.google = google
            self.served = served
        }
    }

    public let settings: Settings
    private let probe: CDNProbe
    private let dal: DALProbe?
    private let logger: Logger
    private let generation: @Sendable () -> UInt64
    private let targets: @Sendable () -> Targets
    private let schedule: Mutex<CDNWatchSchedule>
    private let googleSchedule: Mutex<CDNWatchSchedule>
    /// Google's targets' served apps, by host (the thread's own, read only between looks).
    private let served = Mutex<[String: (apps: Set<AndroidApp>, includes: Bool)]>([:])
    private let stopping = StopFlag()
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    /// `generation` is asked once a loop (cheap: the served snapshot's number); `targets`, the
    /// hosts served, only when it moved.
    public init(
        settings: Settings, logger: Logger, generation: @escaping @Sendable () -> UInt64,
        targets: @escaping @Sendable () -> Targets
    ) throws(OutboundError) {
        var configuration = CDNProbe.configuration(
            caFile: settings.caFile, userAgent: "aasad-cdn-watch", timeoutSeconds: settings.timeoutSeconds)
        // A stop aborts the request in flight instead of waiting out its timeout.
        let flag = stopping
        configuration.isCancelled = { flag.isRaised }
        // One client for both services, used by this thread only, one request at a time.
        let client = try OutboundClient(configuration: configuration)
        probe = CDNProbe(client: client, base: settings.url)
        dal = settings.google.map { DALProbe(client: client, base: $0.url, key: $0.key) }
        self.settings = settings
        self.logger = logger
        self.generation = generation
        self.targets = targets
        schedule = Mutex(CDNWatchSchedule(interval: settings.interval))
        googleSchedule = Mutex(CDNWatchSchedule(interval: settings.interval))
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

    /// Takes over `previous`'s pauses (a reload of the watch's settings makes a new watch): a
    /// service that answered 429 or kept failing is not asked again at once. Only for the same
    /// service (the same URL); call before `start()`.
    public func takePauses(from previous: CDNWatch) {
        if previous.settings.url == settings.url {
            let pause = previous.schedule.withLock { $0.pauseState }
            schedule.withLock { $0.carryPause(pause) }
        }
        if let url = settings.google?.url, previous.settings.google?.url == url {
            let pause = previous.googleSchedule.withLock { $0.pauseState }
            googleSchedule.withLock { $0.carryPause(pause) }
        }
    }

    /// Whether Google's view is watched.
    public var watchesGoogle: Bool { dal != nil }

    /// Every host's state, by host.
    public var states: [String: CDNWatchSchedule.HostState] { schedule.withLock { $0.states } }

    /// Google's view, every host's state, by host.
    public var googleStates: [String: CDNWatchSchedule.HostState] { googleSchedule.withLock { $0.states } }

    /// Moves on whenever what `/sites` shows changes (either service's states).
    public var version: UInt64 { schedule.withLock { $0.version } &+ googleSchedule.withLock { $0.version } }

    /// Sites by their worst host; sites not asked about yet are absent.
    public func bySite() -> [String: CDNWatchSchedule.HostState] { schedule.withLock { $0.bySite() } }

    /// Google's view, sites by their worst host.
    public func googleBySite() -> [String: CDNWatchSchedule.HostState] { googleSchedule.withLock { $0.bySite() } }

    /// One site's worst host among `hosts`, as `bySite()` has it, by a look-up per host instead
    /// of a walk of every host (the status page asks per row).
    public func state(ofSite site: String, hosts: [String]) -> CDNWatchSchedule.HostState? {
        schedule.withLock { $0.state(ofSite: site, hosts: hosts) }
    }

    /// Google's view of one site, as `state(ofSite:hosts:)`.
    public func googleState(ofSite site: String, hosts: [String]) -> CDNWatchSchedule.HostState? {
        googleSchedule.withLock { $0.state(ofSite: site, hosts: hosts) }
    }

    private func run() {
        var seen: UInt64?
        let spacing = max(1.0 / settings.rate, 0.001)
        // Whose turn it is when both services have a host due: a start with 10,000 hosts must not
        // hold Google's first looks back until every Apple host was asked.
        var googleTurn = false
        // Seconds Google's looks took beyond Apple's while both had hosts due (negative: Apple's
        // beyond Google's); within one spacing of even the two alternate.
        var lead = 0.0
        while !stopping.isRaised {
            let now = Self.now()
            let current = generation()
            if current != seen {
                seen = current
                let hosts = targets()
                schedule.withLock { $0.reconcile(settings.apple ? hosts.apple : [], now: now) }
                if dal != nil {
                    googleSchedule.withLock { $0.reconcile(hosts.google, now: now) }
                    served.withLock { $0 = hosts.served }
                }
            }
            let apple = schedule.withLock { $0.next(now: now) }
            let google = dal == nil ? (host: nil, wait: 1) : googleSchedule.withLock { $0.next(now: now) }
            let useGoogle: Bool
            switch (apple.host, google.host) {
            case (nil, nil):
                lead = 0
                _ = wake.wait(timeout: .now() + .seconds(Int(max(min(apple.wait, google.wait), 1))))
                continue
            case (_?, nil):
                useGoogle = false
                lead = 0
            case (nil, _?):
                useGoogle = true
                lead = 0
            case (_?, _?):
                useGoogle = abs(lead) < spacing ? googleTurn : lead < 0
            }
            googleTurn = !useGoogle
            let began = Date()
            if useGoogle, let dal, let host = google.host {
                let observation = dal.observation(host, served: served.withLock { $0[host] } ?? (apps: [], includes: false))
                if stopping.isRaised { break }
                look(googleSchedule, host, observation, service: "Google's Digital Asset Links view")
            } else if let host = apple.host {
                let observation = probe.observe(host)
                if stopping.isRaised { break }
                look(schedule, host, observation, service: "Apple's CDN copy")
            }
            _ = wake.wait(timeout: .now() + spacing)
            // The turn's whole time, the spacing after the look included: a look that took T
            // seconds is worth T × rate of the other's looks.
            let took = Date().timeIntervalSince(began)
            lead += useGoogle ? took : -took
        }
    }

    /// Records a look and logs a change of state (every value escaped: a service's reason or
    /// error may hold any byte).
    private func look(_ schedule: borrowing Mutex<CDNWatchSchedule>, _ host: String, _ observation: CDNObservation, service: String) {
        let (before, after, pausedBefore) = schedule.withLock { schedule in
            let before = schedule.states[host]?.state
            let pausedBefore = schedule.pausedUntil
            schedule.record(host, observation, now: Self.now())
            return (before, schedule.states[host]?.state, pausedBefore)
        }
        if let after, before != after {
            // The first look at each host is not news (10,000 lines at a start).
            let level: Logger.Level = before == nil ? .debug : .info
            logger.log(
                level: level, "\(service) is \(after.rawValue)",
                metadata: [
                    "host": "\(host)", "status": "\(observation.status.map(String.init) ?? "none")",
                    "reason": "\(TerminalText.escaped(observation.failureReason ?? observation.error ?? ""))",
                ])
        }
        let (until, paused) = schedule.withLock { ($0.pausedUntil, $0.pausedUntil > pausedBefore) }
        if paused {
            let why = observation.isThrottled ? "429" : "failing"
            logger.warning("\(service): \(why), paused", metadata: ["until": "\(until)"])
        }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}

/// Google's part as `"\(google)"`, `String(reflecting:)` and `dump` show it (in `Settings` too):
/// the URL, and whether a key is set, never the key.
extension CDNWatch.Google: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: ["url": url, "key": key == nil ? "none" : "<hidden>"], displayStyle: .struct)
    }
}

/// A flag shared with the client's cancel check.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isRaised: Bool { value.load(ordering: .relaxed) }
    func raise() { value.store(true, ordering: .relaxed) }
}

extension DALProbe {
    /// What the watch keeps of a `debugString` (`/sites`' `failureReason`), as much as of Apple's
    /// `Apple-Failure-Reason`: enough for Google's first error line.
    static let maximumWatchReasonCharacters = 512

    /// A reason or error as the watch keeps it: at most `maximumWatchReasonCharacters` (an
    /// error's message holds the request's URL and whatever a proxy answered).
    static func watchText(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(maximumWatchReasonCharacters)))
    }

    /// One look for the CDN watch, in its terms (`CDNWatchSchedule` keeps Google's view as it
    /// keeps Apple's copy): a listing read is a 200 whose digest is its apps'
    /// (`DALListing.digest`), or `listsNothing` when it names none (`missing`); anything else is
    /// an error with its message. `served` is the site's file's apps and whether it includes
    /// other lists: Google lists an included list's apps too, which the watch does not fetch, so
    /// a listing that holds every served app and more is taken as the served file's own (as
    /// `aasad check` makes it a warning, `dal-include`, not `dal-stale`).
    public func observation(_ host: String, served: (apps: Set<AndroidApp>, includes: Bool)) -> CDNObservation {
        let (status, result) = observe(host)
        switch result {
        case .failure(let refusal):
            return CDNObservation(status: status, error: Self.watchText(refusal.message), refused: true)
        case .success(let listing):
            let reason = listing.debugString.map(Self.watchText)
            if listing.apps.isEmpty { return CDNObservation(status: 200, failureReason: reason, listsNothing: true) }
            let asServed = DALComparison.mayComeFromIncludes(listed: listing.apps, served: served)
            return CDNObservation(
                status: 200, failureReason: listing.apps == served.apps ? nil : reason,
                digest: DALListing.digest(asServed ? served.apps : listing.apps))
        }
    }
}
