/// One site as served: its names, its prepared files and its certificate.
///
/// Compact, since the snapshot holds one per site (100,000 and more): what every site has is
/// stored in the object itself, its first name inline (most sites have one name: no array of
/// their own), and what few sites have (pages, fallback, routes, link settings, their counts,
/// `certificates:`) behind one reference, nil for the others. Laid out in full, the object was
/// 473 bytes a site and its names' array 48 more (heaptrack at 10,000 sites, docs/benchmarks.md).
public final class ServedSite: Sendable {
    /// The site's directory name under `sites/`.
    public let directory: String
    /// Its first name, nil when it holds none (every name it claims is held by another site).
    private let firstHost: HostName?
    /// Its other names; empty (no allocation) for most sites.
    private let otherHosts: [HostName]
    public let aasa: PreparedFile?
    public let assetLinks: PreparedFile?
    /// Its own certificate; nil means the default one.
    public var certificate: CertificateFiles? { ownCertificate?.files }
    /// The same, behind a reference: 8 bytes a site rather than the pair's 72 inline in every
    /// site, with a pair or not (docs/benchmarks.md, "a pair's identity and path").
    private let ownCertificate: CertificateBox?
    /// When this version was loaded, seconds since the epoch.
    public let loadedAt: Int64
    /// What few sites have; nil when the site has none of it.
    private let extras: Extras?

    /// Every name it answers for (its own, its aliases), less any in conflict with another site.
    /// Made on each call: loops over a site's names that run often use `forEachHost`.
    public var hosts: [HostName] {
        guard let firstHost else { return [] }
        return otherHosts.isEmpty ? [firstHost] : [firstHost] + otherHosts
    }

    /// Calls `body` with each of `hosts`, without making the array.
    public func forEachHost(_ body: (HostName) -> Void) {
        guard let firstHost else { return }
        body(firstHost)
        for host in otherHosts { body(host) }
    }

    /// Whether any of `hosts` satisfies `predicate`, without making the array (asked per TLS
    /// handshake).
    public func containsHost(where predicate: (HostName) -> Bool) -> Bool {
        guard let firstHost else { return false }
        return predicate(firstHost) || otherHosts.contains(where: predicate)
    }

    /// Whether it answers for exactly these names, in this order.
    public func hasHosts(_ hosts: [HostName]) -> Bool {
        guard let firstHost else { return hosts.isEmpty }
        return hosts.first == firstHost && hosts.dropFirst().elementsEqual(otherHosts)
    }

    /// `certificate?.identity`: the pair's SHA-256 (computed once by `CertificateFiles`) in hex.
    public var certificateIdentity: String? { certificate?.identity }
    /// The page served for other paths (site.yaml `page:`).
    public var page: PreparedFile? { extras?.page }
    /// Every page the site serves (its `page:` and its routes' `page:`), by file name: one
    /// prepared file per name, whatever number of routes take it (at most
    /// `SiteSettings.maximumPages`); empty for most sites.
    public var pages: [String: PreparedFile] { extras?.pages ?? [:] }
    /// Per route (index in `routes:`), the page it answers with, looked up once here so that a
    /// request does no lookup by name; nil for a route without a page, or whose page is gone
    /// (deleted: 404, as for the site's page). Empty without routes.
    public var routePages: [PreparedFile?] { extras?.routePages ?? [] }
    /// What other paths get, by platform; nil: 404, as without site.yaml's `fallback` and `page`.
    public var fallback: PreparedFallback? { extras?.fallback }
    /// The settings `fallback` was prepared from (to tell whether a reload changed it).
    public var fallbackSettings: FallbackSettings? { extras?.fallbackSettings }
    /// Fallback answers by platform, kept across the site's versions; nil without a fallback.
    public var fallbackCounts: FallbackCounts? { extras?.fallbackCounts }
    /// The route table (site.yaml `routes:`), prepared; nil without routes.
    public var routes: PreparedRoutes? { extras?.routes }
    /// The link settings `routes` was prepared from, with the site's preview and interstitial.
    public var links: SiteLinkSettings { extras?.links ?? SiteLinkSettings() }
    /// Answers per route, kept across versions with the same route paths; nil without routes.
    public var routeCounts: RouteCounts? { extras?.routeCounts }
    /// site.yaml `certificates:` (a wildcard site's); nil: `acme.wildcard-certificates` decides.
    public var wildcardCertificates: WildcardCertificates? { extras?.wildcardCertificates }

    /// The parts few sites have, in one object shared by a site's versions that differ only in
    /// their names (`with(hosts:)`).
    final class Extras: Sendable {
        let page: PreparedFile?
        let pages: [String: PreparedFile]
        let routePages: [PreparedFile?]
        let fallback: PreparedFallback?
        let fallbackSettings: FallbackSettings?
        let fallbackCounts: FallbackCounts?
        let routes: PreparedRoutes?
        let links: SiteLinkSettings
        let routeCounts: RouteCounts?
        let wildcardCertificates: WildcardCertificates?

        /// nil when every part is absent or the default: the site needs no extras.
        init?(
            page: PreparedFile?, pages: [String: PreparedFile], fallback: PreparedFallback?, fallbackSettings: FallbackSettings?,
            fallbackCounts: FallbackCounts?, routes: PreparedRoutes?, links: SiteLinkSettings, routeCounts: RouteCounts?,
            wildcardCertificates: WildcardCertificates?
        ) {
            guard
                page != nil || !pages.isEmpty || fallback != nil || fallbackSettings != nil || fallbackCounts != nil || routes != nil
                    || links != SiteLinkSettings() || routeCounts != nil || wildcardCertificates != nil
            else { return nil }
            self.page = page
            self.pages = pages
            routePages = routes?.settings.map { route in route.page.flatMap { pages[$0] } } ?? []
            self.fallback = fallback
            self.fallbackSettings = fallbackSettings
            self.fallbackCounts = fallbackCounts
            self.routes = routes
            self.links = links
            self.routeCounts = routeCounts
            self.wildcardCertificates = wildcardCertificates
        }
    }

    public init(
        directory: String, hosts: [HostName], aasa: PreparedFile?, assetLinks: PreparedFile?, certificate: CertificateFiles?,
        loadedAt: Int64, page: PreparedFile? = nil, pages: [String: PreparedFile] = [:], fallback: PreparedFallback? = nil,
        fallbackSettings: FallbackSettings? = nil, fallbackCounts: FallbackCounts? = nil, routes: PreparedRoutes? = nil,
        links: SiteLinkSettings = SiteLinkSettings(), routeCounts: RouteCounts? = nil, wildcardCertificates: WildcardCertificates? = nil
    ) {
        self.directory = directory
        firstHost = hosts.first
        otherHosts = hosts.count > 1 ? Array(hosts.dropFirst()) : []
        self.aasa = aasa
        self.assetLinks = assetLinks
        ownCertificate = certificate.map(CertificateBox.init)
        self.loadedAt = loadedAt
        extras = Extras(
            page: page, pages: pages, fallback: fallback, fallbackSettings: fallbackSettings, fallbackCounts: fallbackCounts,
            routes: routes, links: links, routeCounts: routeCounts, wildcardCertificates: wildcardCertificates)
    }

    private init(_ site: ServedSite, hosts: [HostName]) {
        directory = site.directory
        firstHost = hosts.first
        otherHosts = hosts.count > 1 ? Array(hosts.dropFirst()) : []
        aasa = site.aasa
        assetLinks = site.assetLinks
        ownCertificate = site.ownCertificate
        loadedAt = site.loadedAt
        extras = site.extras
    }

    /// The same site answering for other names (after a conflict appeared or went away).
    package func with(hosts: [HostName]) -> ServedSite { ServedSite(self, hosts: hosts) }
}

/// A site's own certificate pair, held by reference (`ServedSite.certificate`).
private final class CertificateBox: Sendable {
    let files: CertificateFiles

    init(_ files: CertificateFiles) { self.files = files }
}
