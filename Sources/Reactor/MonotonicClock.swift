import Glibc

/// Seconds and milliseconds since an arbitrary start, never going backwards (CLOCK_MONOTONIC).
public struct MonotonicClock: Sendable {
    public init() {}

    public func milliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// Seconds since the Unix epoch, for Date headers and log lines.
public enum WallClock {
    public static func seconds() -> Int64 { Int64(time(nil)) }
}
