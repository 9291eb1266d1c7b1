import HTTPCore
public import Reactor
import Synchronization

/// Fetches of AASA files by Apple's CDN (User-Agent `AASA-Bot/…`, spec §3): per site the last
/// fetch and a count, for `/sites`; in all, by status class, for `/metrics`. Such fetches are
/// rare (a few a day per site), so a lock on that path costs nothing; other requests never touch it.
///
/// The User-Agent alone is spoofable: anyone can send `AASA-Bot`. Each fetch also records whether
/// the client address is in Apple's own network (17.0.0.0/8), so an operator can tell a fetch
/// that came from Apple from one that only claims to (docs/threat-model.md). It is an
/// observation, never a decision: every client gets the same answer.
public final class FetchLog: Sendable {
    /// One site's fetches since start.
    public struct SiteFetches: Sendable, Equatable {
        /// Seconds since the epoch of the last fetch.
        public var last: Int64
        public var count: Int
        /// Whether the last fetch came from Apple's network (17.0.0.0/8).
        public var lastFromAppleNetwork: Bool
        /// Of `count`, the fetches that came from Apple's network.
        public var countFromAppleNetwork: Int
    }

    /// A bucket of `/metrics`: the status class and whether the client was in Apple's network.
    public struct Bucket: Hashable, Sendable {
        public var status: Traffic.StatusClass
        public var fromAppleNetwork: Bool

        public init(status: Traffic.StatusClass, fromAppleNetwork: Bool) {
            self.status = status
            self.fromAppleNetwork = fromAppleNetwork
        }
    }

    private struct State {
        var sites: [String: SiteFetches] = [:]
        var buckets: [Bucket: Int] = [:]
    }

    private let state = Mutex(State())
    private let recorded = Atomic<UInt64>(0)
    /// Told the host of each fetch of a configured site's file (the certificate manager puts
    /// the name ahead of names nobody asked for: docs/acme.md).
    private let appleFetched: (@Sendable (String) -> Void)?

    public init(appleFetched: (@Sendable (_ host: String) -> Void)? = nil) {
        self.appleFetched = appleFetched
    }

    /// The user agent Apple's CDN sends.
    static let applePrefix = Array("AASA-Bot".utf8)

    static func isApple(_ userAgent: some Collection<UInt8>) -> Bool {
        userAgent.starts(with: applePrefix)
    }

    /// The first octet of Apple's IPv4 network, 17.0.0.0/8 (ARIN: APPLE-WWNET, held by Apple since
    /// 1990). Apple's CDN fetches AASA files from addresses in it.
    static let appleNetworkOctet: UInt8 = 17

    /// Whether a client address is in 17.0.0.0/8, as IPv4 or as an IPv4-mapped IPv6 address
    /// (`::ffff:17.x.x.x`, RFC 4291 §2.5.5.2, which a dual-stack listener reports for IPv4 clients).
    public static func isAppleNetwork(_ address: SocketAddress) -> Bool {
        switch address.family {
        case .ipv4(let networkOrder):
            // s_addr is in network byte order: its first byte in memory is the first octet.
            return withUnsafeBytes(of: networkOrder) { $0.first == appleNetworkOctet }
        case .ipv6(let bytes):
            guard bytes.count == 16 else { return false }
            let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
            return bytes.prefix(12).elementsEqual(mappedPrefix) && bytes[12] == appleNetworkOctet
        }
    }

    /// Notes one fetch; `site` is nil when no configured site answers for the host, `host` the
    /// configured site's host it was for.
    func record(site: String?, host: String? = nil, status: Status, at seconds: Int64, fromAppleNetwork: Bool) {
        if site != nil, let host, let appleFetched { appleFetched(host) }
        state.withLock { state in
            state.buckets[Bucket(status: Traffic.StatusClass(status), fromAppleNetwork: fromAppleNetwork), default: 0] += 1
            guard let site else { return }
            let previous = state.sites[site]
            state.sites[site] = SiteFetches(
                last: seconds, count: (previous?.count ?? 0) + 1, lastFromAppleNetwork: fromAppleNetwork,
                countFromAppleNetwork: (previous?.countFromAppleNetwork ?? 0) + (fromAppleNetwork ? 1 : 0))
        }
        recorded.add(1, ordering: .releasing)
    }

    /// Fetches recorded since start: a page made from the log is current while this is unchanged.
    public var version: UInt64 { recorded.load(ordering: .acquiring) }

    /// Fetches per site directory.
    public func sites() -> [String: SiteFetches] {
        state.withLock { $0.sites }
    }

    /// One site's fetches: what a page row shows, without a reference to the whole dictionary
    /// (held while the next fetch is recorded, it would make that serving thread copy it).
    public func site(_ directory: String) -> SiteFetches? {
        state.withLock { $0.sites[directory] }
    }

    /// Fetches in all (configured sites or not), by status class and Apple's network or not.
    public func buckets() -> [Bucket: Int] {
        state.withLock { $0.buckets }
    }
}
