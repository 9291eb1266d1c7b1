/// The CDN watch's state and schedule, without I/O or clock (the thread in `CDNWatch` drives it,
/// tests drive it with their own `now`): which host to ask next, and what is known of each.
///
/// - A host never asked is due at once (a start learns every state at the rate's pace).
/// - After its first look a host is next due between half and one and a half intervals later, at
///   a point fixed by its name, so that the hosts of a start that were asked in a burst spread
///   over the interval from the second round on; after that, one interval after each look.
/// - A host whose copy is not current (stale, missing, error) is asked again four times as often,
///   so that "current since" is known to within a quarter interval.
/// - What is kept of a copy is the digest of its canonical JSON: when the served file changes,
///   a known copy is compared with it at once (`stale` since the change) without asking again.
/// - A 429 (Too Many Requests) pauses every host of the schedule: a minute, doubling while the
///   answers stay 429, up to an hour; any other answer ends the pause (`pausedUntil`). A 429 is
///   no news about the host: its state stays what it was, and it is next due when the pause ends.
/// - So do `failuresBeforePause` failures of the service in a row (not reached, timed out, a
///   5xx): each such look may have held the watch's one thread for the whole timeout.
///
/// Google's view of assetlinks.json (`cdn-watch.google`) has a schedule of its own, with the apps
/// the served file names as the digest (`DALListing.digest`).
public struct CDNWatchSchedule: Sendable {
    /// One host aasad serves, and what it serves there.
    public struct Target: Sendable, Equatable {
        public var host: String
        /// The site (directory name) it belongs to.
        public var site: String
        /// The digest of the served AASA file's canonical JSON (`JSONComparison.digest`); nil
        /// when it is not JSON.
        public var digest: [UInt8]?
        /// When the served file last changed (its Last-Modified), seconds since the epoch.
        public var changedAt: Int64

        public init(host: String, site: String, digest: [UInt8]?, changedAt: Int64) {
            self.host = host
            self.site = site
            self.digest = digest
            self.changedAt = changedAt
        }
    }

    /// What is known of one host: `cdn` on `/sites` and in `aasad sites --cdn` (every member
    /// but `site`, absent values as null).
    public struct HostState: Sendable, Equatable, Encodable {
        public var host: String
        public var site: String
        public var state: CDNState
        /// When the CDN was last asked, seconds since the epoch.
        public var checkedAt: Int64
        /// Since when the state holds (as seen by this process): for `stale`, when the served
        /// file changed.
        public var since: Int64
        /// The CDN's status at the last look (nil: not reached).
        public var status: Int?
        /// The CDN's `Apple-Failure-Reason`.
        public var failureReason: String?
        /// Why the CDN could not be asked, or what it answered instead of a file.
        public var error: String?

        public init(
            host: String, site: String, state: CDNState, checkedAt: Int64, since: Int64, status: Int?, failureReason: String?,
            error: String?
        ) {
            self.host = host
            self.site = site
            self.state = state
            self.checkedAt = checkedAt
            self.since = since
            self.status = status
            self.failureReason = failureReason
            self.error = error
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(state, forKey: .state)
            try c.encode(host, forKey: .host)
            try c.encode(checkedAt, forKey: .checkedAt)
            try c.encode(since, forKey: .since)
            try c.encode(status, forKey: .status)
            try c.encode(failureReason, forKey: .failureReason)
            try c.encode(error, forKey: .error)
        }

        private enum Keys: String, CodingKey { case state, host, checkedAt, since, status, failureReason, error }
    }

    private struct Entry: Sendable {
        var target: Target
        var copy: [UInt8]?
        var state: HostState?
        var due: Int64
    }

    public let interval: Int64
    private var entries: [String: Entry] = [:]
    /// Moves on whenever what `states` shows changes (not for a look that changed nothing but
    /// its time), so that the admin page is rendered again only then.
    public private(set) var version: UInt64 = 0
    /// No host is asked before this time (seconds since the epoch): the service answered 429.
    public private(set) var pausedUntil: Int64 = 0
    /// The pause the last 429 or failure began (0: none since the last other answer).
    private var pause: Int64 = 0
    /// The service's failures in a row (`CDNObservation.isServiceFailure`).
    private var failures = 0
    /// How many failures of the service in a row begin a pause: one or two may be a host's or a
    /// network's blip, three in a row (each up to the client's timeout, 20 s) is a service that
    /// is down, and asking it every quarter interval would only hold the thread.
    public static let failuresBeforePause = 3
    /// The first pause after a 429: a minute, long enough for a per-minute quota (the unit Google
    /// Cloud's API quotas are usually counted in) to refill, short beside the watch's interval.
    public static let firstPause: Int64 = 60
    /// The longest pause: a service that keeps answering 429 is still asked once an hour, so the
    /// watch sees it recover without a restart.
    public static let maximumPause: Int64 = 3_600

    public init(interval: Int64) {
        self.interval = max(1, interval)
    }

    /// Every host's state, by host (hosts not asked yet are absent).
    public var states: [String: HostState] {
        var out: [String: HostState] = [:]
        for (host, entry) in entries { if let state = entry.state { out[host] = state } }
        return out
    }

    /// Hosts served now.
    public var count: Int { entries.count }

    /// Takes the hosts served now: new ones are due at once, gone ones are forgotten, a host that
    /// moved to another site follows it, and a host whose served file changed is compared with
    /// the copy already seen.
    public mutating func reconcile(_ targets: [Target], now: Int64) {
        var seen = Set<String>()
        var changed = false
        for target in targets {
            seen.insert(target.host)
            guard var entry = entries[target.host] else {
                entries[target.host] = Entry(target: target, due: 0)
                continue
            }
            let moved = entry.target.digest != target.digest
            entry.target = target
            if var state = entry.state {
                if state.site != target.site {
                    state.site = target.site
                    changed = true
                }
                // Only a copy seen (a 200 that was JSON) can be compared: an error or a 404
                // stays what it was until the CDN is asked again.
                if moved, state.state == .current || state.state == .stale, entry.copy != nil {
                    let next: CDNState = entry.copy == target.digest ? .current : .stale
                    if next != state.state {
                        state.state = next
                        state.since = next == .stale ? min(target.changedAt, now) : now
                        if next == .stale { entry.due = min(entry.due, now + recheck) }
                        changed = true
                    }
                }
                entry.state = state
            }
            entries[target.host] = entry
        }
        let before = entries.count
        entries = entries.filter { seen.contains($0.key) }
        if changed || entries.count != before { version &+= 1 }
    }

    /// The host to ask now, or how many seconds to wait (at most a second: hosts may change).
    public func next(now: Int64) -> (host: String?, wait: Int64) {
        if now < pausedUntil { return (nil, min(pausedUntil - now, 1)) }
        var best: Entry?
        for entry in entries.values {
            if let known = best, (known.due, known.target.host) <= (entry.due, entry.target.host) { continue }
            best = entry
        }
        guard let best else { return (nil, 1) }
        if best.due <= now { return (best.target.host, 0) }
        return (nil, min(best.due - now, 1))
    }

    /// Records a look at `host`'s copy.
    public mutating func record(_ host: String, _ observation: CDNObservation, now: Int64) {
        if observation.isThrottled {
            beginPause(now: now)
            // The answer says nothing of the host: its state stays, and it is asked again first
            // when the pause ends (not a quarter interval later, as an error would be).
            if var entry = entries[host] {
                entry.due = pausedUntil
                entries[host] = entry
            }
            return
        }
        if observation.isServiceFailure {
            failures += 1
            if failures >= Self.failuresBeforePause { beginPause(now: now) }
        } else {
            failures = 0
            pause = 0
        }
        guard var entry = entries[host] else { return }
        let state = observation.state(against: entry.target.digest)
        entry.copy = observation.status == 200 ? observation.digest : nil
        let previous = entry.state
        var since = now
        if let previous, previous.state == state {
            since = previous.since
        } else if state == .stale {
            since = min(entry.target.changedAt, now)
        }
        let next = HostState(
            host: host, site: entry.target.site, state: state, checkedAt: now, since: since, status: observation.status,
            failureReason: observation.failureReason, error: observation.error)
        entry.state = next
        let wait = state == .current ? interval : recheck
        entry.due = now + (previous == nil ? Int64(Double(wait) * (0.5 + Self.fraction(host))) : wait)
        entries[host] = entry
        var unchangedLook = next
        unchangedLook.checkedAt = previous?.checkedAt ?? -1
        if previous != unchangedLook { version &+= 1 }
    }

    /// Pauses every host: `firstPause`, doubling while the pauses go on, at most `maximumPause`.
    private mutating func beginPause(now: Int64) {
        pause = pause == 0 ? Self.firstPause : min(pause * 2, Self.maximumPause)
        pausedUntil = now + pause
    }

    /// The pause in force, to carry over to a schedule made anew (a reload of the watch's
    /// settings): a service that answered 429 is not asked again at once.
    public var pauseState: (until: Int64, pause: Int64) { (pausedUntil, pause) }

    /// Takes over another schedule's pause (`pauseState`).
    public mutating func carryPause(_ state: (until: Int64, pause: Int64)) {
        pausedUntil = state.until
        pause = state.pause
    }

    /// A quarter interval (at least a second): how soon a copy that is not current is asked again.
    var recheck: Int64 { max(1, interval / 4) }

    /// A stable number in [0, 1) from a host name (FNV-1a), to place its checks in the interval.
    static func fraction(_ host: String) -> Double {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in host.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Double(hash % 1_000_003) / 1_000_003
    }

    /// Sites by their worst host (`missing`, `stale`, `error`, then `current`; among equals the
    /// one in that state longest, then by name), with that host's figures.
    public func bySite() -> [String: HostState] {
        var out: [String: HostState] = [:]
        for entry in entries.values {
            guard let state = entry.state else { continue }
            if let known = out[state.site], !Self.worse(state, than: known) { continue }
            out[state.site] = state
        }
        return out
    }

    /// `site`'s worst host among `hosts` (those the schedule holds for that site), as `bySite()`
    /// picks it.
    public func state(ofSite site: String, hosts: [String]) -> HostState? {
        var worst: HostState?
        for host in hosts {
            guard let state = entries[host]?.state, state.site == site else { continue }
            if let known = worst, !Self.worse(state, than: known) { continue }
            worst = state
        }
        return worst
    }

    /// Whether `a` is to stand for its site rather than `b`.
    public static func worse(_ a: HostState, than b: HostState) -> Bool {
        let (x, y) = (rank(a.state), rank(b.state))
        if x != y { return x > y }
        if a.since != b.since { return a.since < b.since }
        return a.host < b.host
    }

    /// How bad a state is for a site, worst highest.
    public static func rank(_ state: CDNState) -> Int {
        switch state {
        case .current: 0
        case .error: 1
        case .stale: 2
        case .missing: 3
        }
    }
}
