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

/// The lines of the file at `path` once it has at least `count` of them (5 s at most; what it
/// holds then, otherwise): for a log the server writes in the background.
package func fileLines(_ path: String, atLeast count: Int) -> [String] {
    var lines: [String] = []
    _ = eventually(attempts: 50) {
        lines = ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        return lines.count >= count
    }
    return lines
}
