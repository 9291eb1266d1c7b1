import Synchronization

/// The bytes every worker together holds for requests not yet complete, against one limit for the
/// process: past it, new HTTP/2 streams that would hold fields and new connections are refused
/// before anything is allocated for them. One counter shared by all worker threads (an atomic,
/// as `AtomicFlag` is), so that a client cannot multiply one connection's bound by opening many.
///
/// Sessions report what they hold when a read or a write is done with (`HTTP2Session`), not per
/// field: a request that arrives whole is answered within that read and never touches the
/// counter. A check reads the counter and adds what the session has not reported yet, so the
/// limit can be passed only by what other workers are deciding at the same instant: at most one
/// session budget (`HTTP2Session.maximumHeldBytes`) per worker.
///
/// In HTTPCore rather than Reactor: HTTP2 reaches it, and the HTTP/2 fuzz target compiles HTTP2
/// with HTTPCore alone (scripts/fuzz.sh).
public final class RequestBudget: Sendable {
    /// Bytes all incomplete requests may hold together. 32 MB: the per-session budget of 512
    /// attacking connections, a sixteenth of the 512 Mi the Kubernetes manifest allows, and
    /// thousands of the usual incomplete requests (a request split across reads holds a few
    /// hundred bytes).
    public static let defaultLimit = 32 * 1024 * 1024

    public let limit: Int
    private let used = Atomic<Int>(0)
    /// The most `used` has been since `takeHighWater` last asked (for returning a burst's memory
    /// to the system).
    private let highWater = Atomic<Int>(0)

    public init(limit: Int = RequestBudget.defaultLimit) {
        self.limit = max(0, limit)
    }

    /// Bytes held now, all workers together.
    public var inUse: Int { used.load(ordering: .relaxed) }

    /// Room a new connection needs, or it is refused: one full header list (16 KB, the HTTP/2
    /// SETTINGS_MAX_HEADER_LIST_SIZE and the HTTP/1.1 head bound). With less left, the
    /// connection could not hold even one large request, and its TLS state would come on top.
    public static let connectionRoom = 16 * 1024

    /// Less than `connectionRoom` is left: a new connection is refused.
    public var isExhausted: Bool { used.load(ordering: .relaxed) > limit - Self.connectionRoom }

    /// Counts `delta` more bytes held (negative: released).
    public func add(_ delta: Int) {
        guard delta != 0 else { return }
        let now = used.wrappingAdd(delta, ordering: .relaxed).newValue
        if delta > 0 { _ = highWater.max(now, ordering: .relaxed) }
    }

    /// The most `used` has been since `takeHighWater` last asked, without starting a new period.
    public var highWaterMark: Int { highWater.load(ordering: .relaxed) }

    /// The highest use since the last call, which starts the next period at the current use.
    public func takeHighWater() -> Int {
        highWater.exchange(used.load(ordering: .relaxed), ordering: .relaxed)
    }
}
