import CAASALinux
import Synchronization

/// The C library's allocator, for the reloader and the serving workers.
public enum Memory {
    /// Gives freed memory in glibc's per-thread arenas back to the system (`malloc_trim(0)`):
    /// a full reload parses on every core, and without this the arenas keep their peak size.
    public static func trim() {
        _ = malloc_trim(0)
    }

    /// Seconds between two trims by the serving workers, all of them together. `malloc_trim`
    /// walks the free chunks of every arena (each worker's, and the one that holds the sites),
    /// holding each one's lock: 18 to 210 ms on the calling loop thread for a fragmented heap of
    /// 600 to 900 MB, the size of 100,000 sites (scripts/bench-malloc-trim.c, figures in
    /// docs/benchmarks.md, "What a trim costs"). One
    /// trim covers every arena, so a worker need not trim again after another did, and a client
    /// that opens and closes connections in bursts can make the process pay it at most once in
    /// this many seconds.
    public static let servingTrimInterval: Int64 = 10

    /// The serving workers' trims, all of them together.
    public static let serving = TrimGate(interval: servingTrimInterval)
}

/// Lets trims through at most once in `interval` seconds, whichever thread asks.
public final class TrimGate: Sendable {
    public let interval: Int64
    /// The second of the last trim let through.
    private let last = Atomic<Int64>(.min / 2)

    public init(interval: Int64) { self.interval = interval }

    /// Whether `interval` has passed at second `now` since the last trim.
    public func isDue(now: Int64) -> Bool { now - last.load(ordering: .relaxed) >= interval }

    /// Trims at second `now` unless a trim was let through within `interval` (another thread
    /// may have claimed it since `isDue`). Whether it trimmed.
    public func trim(now: Int64, _ trim: () -> Void = Memory.trim) -> Bool {
        let previous = last.load(ordering: .relaxed)
        guard now - previous >= interval, last.compareExchange(expected: previous, desired: now, ordering: .relaxed).exchanged
        else { return false }
        trim()
        return true
    }
}
