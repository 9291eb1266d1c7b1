import Synchronization

/// Fetches of AASA files by Apple's CDN (User-Agent `AASA-Bot/…`, spec §3): per site the last
/// fetch and a count, for `/sites`; in all, by status class, for `/metrics`. Such fetches are
/// rare (a few a day per site), so a lock on that path costs nothing; other requests never touch it.
public final class FetchLog: Sendable {
    /// One site's fetches since start.
    public struct SiteFetches: Sendable, Equatable {
        /// Seconds since the epoch of the last fetch.
        public var last: Int64
        public var count: Int
    }

    private struct State {
        var sites: [String: SiteFetches] = [:]
        var byStatus: [Traffic.StatusClass: Int] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The user agent Apple's CDN sends.
    static let applePrefix = Array("AASA-Bot".utf8)

    static func isApple(_ userAgent: some Collection<UInt8>) -> Bool {
        userAgent.starts(with: applePrefix)
    }

    /// Notes one fetch; `site` is nil when no configured site answers for the host.
    func record(site: String?, status: Status, at seconds: Int64) {
        state.withLock { state in
            state.byStatus[Traffic.StatusClass(status), default: 0] += 1
            guard let site else { return }
            let count = state.sites[site]?.count ?? 0
            state.sites[site] = SiteFetches(last: seconds, count: count + 1)
        }
    }

    /// Fetches per site directory.
    public func sites() -> [String: SiteFetches] {
        state.withLock { $0.sites }
    }

    /// Fetches in all (configured sites or not), by status class.
    public func byStatus() -> [Traffic.StatusClass: Int] {
        state.withLock { $0.byStatus }
    }
}
