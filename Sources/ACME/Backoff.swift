/// When to try a name's order again after a failure: one minute, doubling per failure up to one
/// day (docs/acme.md), never sooner than a Retry-After the CA sent (RFC 8555 §6.6, capped by
/// `ACMELimits.maximumRetryAfterSeconds`), and jittered so that many replicas or many names that
/// failed together (a CA outage) do not all return in the same second. A pure value: the caller
/// passes the clock (`now`, seconds since the epoch) and the random draw, so tests pin both.
public struct Backoff: Sendable, Equatable {
    /// The first wait after a failure.
    public static let firstDelay: Int64 = 60
    /// The longest scheduled wait: a name is retried at least daily (a longer Retry-After wins).
    public static let maximumDelay: Int64 = 86_400
    /// Jitter takes up to this fraction off a scheduled wait: waits stay within 10 % of the
    /// schedule (never longer, so the one-day bound holds), enough to spread a burst of failures
    /// over minutes to hours.
    public static let jitterFraction = 0.1
    /// The longest wait `delay` ever gives: the CA's longest Retry-After honoured (a week), past
    /// the one-day schedule. A wait read from another replica's record is cut to it.
    public static let longestWait = max(maximumDelay, ACMELimits.maximumRetryAfterSeconds)

    /// Failures since the last success.
    public private(set) var failures = 0
    /// The earliest time of the next attempt; nil before any failure.
    public private(set) var nextAttempt: Int64?

    public init() {}

    /// Whether an attempt may start at `now`.
    public func mayAttempt(now: Int64) -> Bool { nextAttempt.map { now >= $0 } ?? true }

    /// Records a failure at `now`; returns the next attempt's time. `random` is a draw in [0, 1)
    /// (anything else is clamped into it).
    @discardableResult
    public mutating func failed(now: Int64, retryAfter: Int64? = nil, random: Double) -> Int64 {
        if failures < Int.max { failures += 1 }
        let next = now.addingReportingOverflow(Self.delay(failures: failures, retryAfter: retryAfter, random: random))
        nextAttempt = next.overflow ? Int64.max : next.partialValue
        return nextAttempt ?? now
    }

    /// Takes on what another replica recorded for the name (ReplicaRecords.swift): its failures,
    /// when more than this one's, so the next failure here waits as long as the next one there
    /// would; and its next attempt (already clamped by the reader), when later than this one's.
    public mutating func adopt(failures: Int, nextAttempt: Int64?) {
        self.failures = max(self.failures, max(failures, 0))
        if let nextAttempt { self.nextAttempt = max(self.nextAttempt ?? nextAttempt, nextAttempt) }
    }

    /// Records a success: the schedule starts over.
    public mutating func succeeded() {
        failures = 0
        nextAttempt = nil
    }

    /// The wait after the `failures`-th failure in a row (1 is the first).
    public static func delay(failures: Int, retryAfter: Int64?, random: Double) -> Int64 {
        // 60 s << 11 is past a day already, so the shift never overflows.
        let doublings = min(max(failures, 1) - 1, 11)
        let scheduled = min(firstDelay << Int64(doublings), maximumDelay)
        let draw = random.isFinite ? min(max(random, 0), 0.999_999) : 0
        let jittered = scheduled - Int64(Double(scheduled) * jitterFraction * draw)
        guard let retryAfter else { return jittered }
        return max(jittered, min(max(retryAfter, 0), ACMELimits.maximumRetryAfterSeconds))
    }
}
