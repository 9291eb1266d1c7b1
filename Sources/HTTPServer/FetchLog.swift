import Synchronization

/// When Apple's CDN last fetched each site's AASA file (User-Agent `AASA-Bot/…`, spec §3), for
/// `/sites`. Such fetches are rare (a few a day per site), so a lock on that path costs nothing;
/// other requests never touch it.
public final class FetchLog: Sendable {
    private let last = Mutex<[String: Int64]>([:])

    public init() {}

    /// The user agent Apple's CDN sends.
    static let applePrefix = Array("AASA-Bot".utf8)

    static func isApple(_ userAgent: some Collection<UInt8>) -> Bool {
        userAgent.starts(with: applePrefix)
    }

    func record(site: String, at seconds: Int64) {
        last.withLock { $0[site] = seconds }
    }

    /// Last fetch per site directory, seconds since the epoch.
    public func lastFetches() -> [String: Int64] {
        last.withLock { $0 }
    }
}
