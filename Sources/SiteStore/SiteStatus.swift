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
public struct SiteStatus: Sendable, Codable {
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

extension SiteRegistry {
    /// Every site's state, sorted by directory name.
    public var statuses: [SiteStatus] { records.keys.sorted().compactMap(status(of:)) }

    /// Every site's directory name, in no order.
    public var siteNames: [String] { Array(records.keys) }

    /// One site's state; nil if no site has that directory name.
    public func status(of name: String) -> SiteStatus? {
        guard let r = records[name] else { return nil }
        let refused = claims.ownership.refusals(of: name).map {
            RefusedHost(host: $0.host.name, heldBy: $0.holder.map { "sites/\($0.site)" }, reason: $0.description)
        }
        return SiteStatus(
            directory: name, hosts: claims.ownership.held(by: name).map(\.name), refusedHosts: refused, state: r.state,
            etag: r.served?.aasa?.etag,
            loadedAt: r.served?.loadedAt, errors: r.errors)
    }

    /// The sites whose status may have changed since the last call (a full reload: all of them,
    /// and any removed), and forgets them. Costs nothing on the serving path: it is bookkeeping
    /// of the reloader's own changes.
    public func takeTouched() -> Set<String> { tracking.take() }

    /// Names under `sites/` that are not sites, and aliases of a directory that is not one, with
    /// why (by name); first, `sites/` itself when it could not be listed.
    public var entryErrors: [ConfigProblem] {
        let entries =
            (Array(entryProblems.values) + claims.aliasesOfNoSite { records[$0] != nil } + (aliasPolicyProblem.map { [$0] } ?? []))
            .sorted { $0.file < $1.file }
        return (sitesDirectoryProblem.map { [$0] } ?? []) + entries
    }

    /// Distinct prepared contents held (identical files counted once).
    public var distinctContents: Int { contents.count }
}
