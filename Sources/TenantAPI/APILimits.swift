import Foundation
import Synchronization

/// Requests per token over time: a token bucket per token name holding at most a minute's
/// requests (`requestsPerMinute`), refilled continuously. A request finding it empty is answered
/// 429 with the seconds until one is back (`Retry-After`, RFC 9110 §10.2.3).
final class APIRateLimiter: Sendable {
    let requestsPerMinute: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    private struct Bucket {
        var available: Double
        var at: ContinuousClock.Instant
    }

    init(requestsPerMinute: Int) {
        self.requestsPerMinute = max(1, requestsPerMinute)
    }

    /// Takes one request for `token`: nil when allowed, else the seconds to wait.
    func take(_ token: String, now: ContinuousClock.Instant = .now) -> Int? {
        let capacity = Double(requestsPerMinute)
        let perSecond = capacity / 60
        return buckets.withLock { buckets in
            var bucket = buckets[token] ?? Bucket(available: capacity, at: now)
            let elapsed = now - bucket.at
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.available = min(capacity, bucket.available + max(0, seconds) * perSecond)
            bucket.at = now
            defer { buckets[token] = bucket }
            if bucket.available >= 1 {
                bucket.available -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.available) / perSecond).rounded(.up)))
        }
    }
}

/// One lock per host for the writers in this process: the current state's check (If-Match),
/// the write and the rename happen with no other writer of the same site between them. Entries
/// live while a writer holds or waits for them, so the table holds at most one per request.
final class HostLocks: Sendable {
    private let table = Mutex<[String: Entry]>([:])

    private final class Entry: Sendable {
        let lock = NSLock()
        let users = Atomic<Int>(0)
    }

    func withLock<T>(_ host: String, _ body: () throws -> T) rethrows -> T {
        let entry = table.withLock { table in
            let entry = table[host] ?? Entry()
            table[host] = entry
            entry.users.add(1, ordering: .relaxed)
            return entry
        }
        entry.lock.lock()
        defer {
            entry.lock.unlock()
            table.withLock { table in
                if entry.users.subtract(1, ordering: .relaxed).newValue == 0 { table[host] = nil }
            }
        }
        return try body()
    }
}
