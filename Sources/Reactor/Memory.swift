import CAASALinux
import Synchronization

/// The C library's allocator, for the reloader and the serving workers.
public enum Memory {
    /// Gives freed memory in glibc's per-thread arenas back to the system (`malloc_trim(0)`):
    /// a full reload parses on every core, and without this the arenas keep their peak size.
    public static func trim() {
        _ = malloc_trim(0)
    }

    /// Keeps every block of 128 KB or more in a mapping of its own (`mallopt(M_MMAP_THRESHOLD)`),
    /// whatever was freed before. Left to itself, glibc raises that threshold to the size of each
    /// mapped block freed, up to 32 MB, and its trim threshold to twice that: after a start has
    /// built and dropped its large tables, blocks of megabytes come from the heap, where what
    /// lives on between them keeps their pages, and the trims leave them. A first start at
    /// 100,000 sites held 356.9 MB three seconds after readiness with the threshold left to move,
    /// 344.1 MB with it fixed; a restart held 337 MB either way, and spent 3 % more system time
    /// with it fixed (docs/benchmarks.md, "A restart's serial tail and its copies"). For the
    /// whole process: the start calls it before a first load that validates every file.
    public static func keepLargeBlocksMapped() {
        _ = mallopt(M_MMAP_THRESHOLD, largeBlock)
    }

    /// The smallest block `keepLargeBlocksMapped` keeps mapped: glibc's own starting threshold.
    public static let largeBlock: Int32 = 128 * 1024

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
