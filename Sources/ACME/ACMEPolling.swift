import Glibc

/// How `ACMEClient.issue` waits for the CA to settle an authorization or an order (RFC 8555 §7.5.1,
/// §7.4): it reads the resource, and while it is unfinished sleeps the CA's Retry-After (§8.2,
/// §7.4) or, without one, a doubling interval, then reads again. Bounded in reads per resource
/// and in the time slept over the whole issuance, so a CA that never finishes, or asks for
/// hours, cannot hold the ACME thread; the order is then retried by the back-off (which honours
/// the Retry-After carried in `ACMEError.timedOut`). The sleep is injected: tests never wait.
public struct ACMEPolling {
    /// Most reads of one authorization or order while it is unfinished. With the default intervals
    /// (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, then 10 s) 30 reads span under four minutes, under
    /// the total bound; a CA that asks for Retry-After 0 every time is stopped by this count.
    public static let maximumAttempts = 30
    /// Most time slept in one issuance, over all its resources. Let's Encrypt validates and issues
    /// in seconds; five minutes covers a slow CA or DNS propagation check, and a CA slower than
    /// that is better retried later than waited for.
    public static let maximumTotalWait: Duration = .seconds(300)
    /// First interval without a Retry-After; doubled after each read. A CA validates and issues
    /// in well under a second when it can (Let's Encrypt, pebble): a first wait of a whole second,
    /// then of 250 ms, was most of the time from a demanded name's first handshake to its
    /// certificate, twice (authorization, then order). Starting at 50 ms costs four reads more
    /// per resource than starting at 1 s, within `maximumAttempts`; a CA that wants fewer says
    /// so with Retry-After, which always wins.
    ///
    /// RFC 8555 §7.5.1 says a client SHOULD NOT begin polling before it has seen the server's
    /// validation request. Polls start at 50 ms anyway: the CA may validate against another
    /// replica (or any address behind a load balancer), so this process cannot tell when the
    /// request came, and waiting for one it may never see would cost the whole bound. The load
    /// stays small: one order at a time per replica (its manager has one thread for orders),
    /// at most `maximumAttempts` reads per resource within `maximumTotalWait`, and a CA's
    /// Retry-After replaces the interval.
    public static let firstInterval: Duration = .milliseconds(50)
    /// Longest interval without a Retry-After.
    public static let maximumInterval: Duration = .seconds(10)

    let sleep: (Duration) -> Void
    /// Time slept so far in this issuance.
    private(set) var waited: Duration = .zero

    init(sleep: @escaping (Duration) -> Void) { self.sleep = sleep }

    /// Reads with `read` until `isFinished` says the value is settled (it throws for a value that
    /// ends the issuance: invalid, gone backwards), and returns that value. `describe` names what
    /// is awaited and its state, for the timeout error.
    mutating func poll<Value>(
        read: () throws(ACMEError) -> (Value, retryAfter: Int64?),
        isFinished: (Value) throws(ACMEError) -> Bool,
        describe: (Value) -> String
    ) throws(ACMEError) -> Value {
        var interval = Self.firstInterval
        var attempt = 0
        while true {
            let (value, retryAfter) = try read()
            attempt += 1
            if try isFinished(value) { return value }
            let reads = attempt == 1 ? "1 read" : "\(attempt) reads"
            guard attempt < Self.maximumAttempts else { throw .timedOut(what: describe(value) + " after " + reads, retryAfter: nil) }
            let wait = retryAfter.map { Duration.seconds($0) } ?? interval
            guard waited + wait <= Self.maximumTotalWait else {
                throw .timedOut(what: describe(value) + " after " + reads, retryAfter: retryAfter)
            }
            sleep(wait)
            waited += wait
            interval = min(interval * 2, Self.maximumInterval)
        }
    }

    /// A real sleep of `duration` (nanosleep, resumed after signals).
    public static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || attoseconds > 0 else { return }
        var request = timespec(tv_sec: Int(clamping: seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1, errno == EINTR { request = remaining }
    }
}
