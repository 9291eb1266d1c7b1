public import Served

/// How a site stands (the admin view's `/sites` and `aasad sites`).
public enum SiteState: String, Sendable, Codable {
    /// Every file on disk is valid and served.
    case serving
    /// A file on disk is invalid; its previous good version goes on being served.
    case servingLastGood = "serving-last-good"
    /// Nothing good was ever loaded (or the last good file was deleted): not served.
    case refused
}

/// A name a site claims and another site holds.
public struct RefusedHost: Sendable, Codable, Equatable {
    public var host: String
    /// The site that holds it (or the wildcard it lies under), as `sites/<directory>`; nil when
    /// the operator's `aliases-allowed` refuses it.
    public var heldBy: String?
    /// Why, naming the holder: "sites/victim.test is named for it".
    public var reason: String

    public init(host: String, heldBy: String?, reason: String) {
        self.host = host
        self.heldBy = heldBy
        self.reason = reason
    }
}

/// One site's state, as listed for operators.
public struct SiteStatus: Sendable, Codable, Equatable {
    public var directory: String
    /// Names it answers for.
    public var hosts: [String]
    /// Names it claims that another site holds, with who and why (`HostOwnership`).
    public var refusedHosts: [RefusedHost]
    public var state: SiteState
    /// ETag of the AASA file served, if any.
    public var etag: String?
    /// When the served version was loaded, seconds since the epoch.
    public var loadedAt: Int64?
    /// The last problems found, one line each (file, JSON path, rule).
    public var errors: [String]
}

extension SiteStatus {
    /// A site's state as its record and the ownership rule give it.
    init(directory: String, record r: SiteRecord, ownership: HostOwnership) {
        let refused = ownership.refusals(of: directory).map {
            RefusedHost(host: $0.host.name, heldBy: $0.holder.map { "sites/\($0.site)" }, reason: $0.description)
        }
        self.init(
            directory: directory, hosts: ownership.held(by: directory).map(\.name), refusedHosts: refused, state: r.state,
            etag: r.served?.aasa?.etag, loadedAt: r.served?.loadedAt, errors: r.errors)
    }

    /// The state of a site that serves `served` whole: no errors, no name refused, its names
    /// those it is served under (most sites' state, which the admin view derives from the served
    /// site rather than keeping it: Sources/Daemon/AdminView.swift); with nothing served, refused.
    public init(plain served: ServedSite?, directory: String) {
        self.init(
            directory: directory, hosts: served?.hosts.map(\.name) ?? [], refusedHosts: [], state: served == nil ? .refused : .serving,
            etag: served?.aasa?.etag, loadedAt: served?.loadedAt, errors: [])
    }
}

extension SiteRegistry {
    /// Whether a site's state is the plain one `served` (its version in the snapshot) gives,
    /// `SiteStatus(plain:directory:)`, told without making either: what the admin view asks of
    /// every site at a start, and keeps nothing for when true.
    public func isPlain(_ name: String, served: ServedSite) -> Bool {
        guard let record = records[name], record.errors.isEmpty, let own = record.served, own.loadedAt == served.loadedAt,
            own.aasa?.etag == served.aasa?.etag
        else { return false }
        let ownership = claims.ownership
        return ownership.refusals(of: name).isEmpty && ownership.held(by: name) == served.hosts
    }
}
