import Foundation

/// Polls `condition` every `interval` seconds, at most `attempts` times (10 s by default); whether
/// it became true. The one way tests wait for something a server or a thread does in the
/// background (a reload, a certificate swap, a counter moving): never a fixed sleep.
package func eventually(attempts: Int = 100, interval: Double = 0.1, _ condition: () throws -> Bool) rethrows -> Bool {
    for attempt in 0..<attempts {
        if try condition() { return true }
        if attempt + 1 < attempts { usleep(useconds_t(interval * 1_000_000)) }
    }
    return false
}
