import HTTPCore
public import HashTreeCollections

/// One site as served: its names, its prepared files and its certificate.
public final class ServedSite: Sendable {
    /// The site's directory name under `sites/`.
    public let directory: String
    /// Every name it answers for (its own, its aliases), less any in conflict with another site.
    public let hosts: [HostName]
    public let aasa: PreparedFile?
    public let assetLinks: PreparedFile?
    /// Its own certificate; nil means the default one.
    public let certificate: CertificateFiles?
    /// `certificate?.identity`, computed once.
    public let certificateIdentity: String?
    /// When this version was loaded, seconds since the epoch.
    public let loadedAt: Int64
    /// The page served for other paths (site.yaml `page:`).
    public let page: PreparedFile?
    /// Every page the site serves (its `page:` and its routes' `page:`), by file name: one
    /// prepared file per name, whatever number of routes take it (at most
    /// `SiteSettings.maximumPages`); empty for most sites.
    public let pages: [String: PreparedFile]
    /// Per route (index in `routes:`), the page it answers with, looked up once here so that a
    /// request does no lookup by name; nil for a route without a page, or whose page is gone
    /// (deleted: 404, as for the site's page). Empty without routes.
    public let routePages: [PreparedFile?]
    /// What other paths get, by platform; nil: 404, as without site.yaml's `fallback` and `page`.
    public let fallback: PreparedFallback?
    /// The settings `fallback` was prepared from (to tell whether a reload changed it).
    public let fallbackSettings: FallbackSettings?
    /// Fallback answers by platform, kept across the site's versions; nil without a fallback.
    public let fallbackCounts: FallbackCounts?
    /// The route table (site.yaml `routes:`), prepared; nil without routes.
    public let routes: PreparedRoutes?
    /// The link settings `routes` was prepared from, with the site's preview and interstitial.
    public let links: SiteLinkSettings
    /// Answers per route, kept across versions with the same route paths; nil without routes.
    public let routeCounts: RouteCounts?
    /// site.yaml `certificates:` (a wildcard site's); nil: `acme.wildcard-certificates` decides.
    public let wildcardCertificates: WildcardCertificates?

    public init(
        directory: String, hosts: [HostName], aasa: PreparedFile?, assetLinks: PreparedFile?, certificate: CertificateFiles?,
        loadedAt: Int64, page: PreparedFile? = nil, pages: [String: PreparedFile] = [:], fallback: PreparedFallback? = nil,
        fallbackSettings: FallbackSettings? = nil, fallbackCounts: FallbackCounts? = nil, routes: PreparedRoutes? = nil,
        links: SiteLinkSettings = SiteLinkSettings(), routeCounts: RouteCounts? = nil, wildcardCertificates: WildcardCertificates? = nil
    ) {
        self.wildcardCertificates = wildcardCertificates
        self.directory = directory
        self.hosts = hosts
        self.aasa = aasa
        self.assetLinks = assetLinks
        self.certificate = certificate
        certificateIdentity = certificate?.identity
        self.loadedAt = loadedAt
        self.page = page
        self.pages = pages
        routePages = routes?.settings.map { route in route.page.flatMap { pages[$0] } } ?? []
        self.fallback = fallback
        self.fallbackSettings = fallbackSettings
        self.fallbackCounts = fallbackCounts
        self.routes = routes
        self.links = links
        self.routeCounts = routeCounts
    }

    /// The same site answering for other names (after a conflict appeared or went away).
    package func with(hosts: [HostName]) -> ServedSite {
        ServedSite(
            directory: directory, hosts: hosts, aasa: aasa, assetLinks: assetLinks, certificate: certificate, loadedAt: loadedAt,
            page: page, pages: pages, fallback: fallback, fallbackSettings: fallbackSettings, fallbackCounts: fallbackCounts,
            routes: routes,
            links: links, routeCounts: routeCounts, wildcardCertificates: wildcardCertificates)
    }
}

/// Everything served at one moment, immutable: built off the hot path, published through
/// `SnapshotStore` (one reference swap), read once per request (docs/architecture.md).
///
/// The maps are persistent hash tries: a snapshot that differs from the last by one site shares
/// everything else with it, so applying a change costs O(log n) whatever the number of sites.
///
/// Immutable once anyone but its maker holds it: the registry changes a snapshot in place
/// (`replaceInPlace`) only while its reference is the only one (`isKnownUniquelyReferenced`),
/// before it is published, so that a full load of 100,000 sites builds its maps without copying
/// a path of the tries per site. Hence `@unchecked Sendable`: no thread but the maker can see a
/// snapshot that still changes.
public final class Snapshot: @unchecked Sendable {
    /// Increases with every published snapshot.
    public private(set) var generation: UInt64
    /// Served sites by directory name.
    public private(set) var sites: TreeDictionary<String, ServedSite>
    public let defaultCertificate: CertificateFiles?
    public let defaultCertificateIdentity: String?
    private var exact: TreeDictionary<String, ServedSite>
    /// Wildcard sites by suffix: `*.users.example.com` is filed under `users.example.com`.
    private var wildcards: TreeDictionary<String, ServedSite>

    private init(
        generation: UInt64, sites: TreeDictionary<String, ServedSite>, exact: TreeDictionary<String, ServedSite>,
        wildcards: TreeDictionary<String, ServedSite>, defaultCertificate: CertificateFiles?
    ) {
        self.generation = generation
        self.sites = sites
        self.exact = exact
        self.wildcards = wildcards
        self.defaultCertificate = defaultCertificate
        defaultCertificateIdentity = defaultCertificate?.identity
    }

    public convenience init(generation: UInt64, sites: [ServedSite], defaultCertificate: CertificateFiles?) {
        self.init(generation: generation, sites: [:], exact: [:], wildcards: [:], defaultCertificate: defaultCertificate)
        // Build through the same path as incremental changes.
        var snapshot = self
        for site in sites { snapshot = snapshot.replacing(site.directory, with: site, generation: generation) }
        self.init(
            generation: generation, sites: snapshot.sites, exact: snapshot.exact, wildcards: snapshot.wildcards,
            defaultCertificate: defaultCertificate)
    }

    /// An empty snapshot: nothing served.
    public static let empty = Snapshot(generation: 0, sites: [], defaultCertificate: nil)

    /// The site for a host (lower case, no port): the exact name first, then the wildcard with the
    /// longest suffix, found by dropping one label at a time (O(labels), whatever the site count).
    public func site(forHost host: String) -> ServedSite? {
        if let site = exact[host] { return site }
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if let site = wildcards[String(rest)] { return site }
        }
        return nil
    }

    /// A snapshot where the site of `directory` is `site` (nil: not served). O(log n).
    public func replacing(_ directory: String, with site: ServedSite?, generation: UInt64) -> Snapshot {
        var sites = self.sites
        var exact = self.exact
        var wildcards = self.wildcards
        Self.replace(directory, with: site, &sites, &exact, &wildcards)
        return Snapshot(generation: generation, sites: sites, exact: exact, wildcards: wildcards, defaultCertificate: defaultCertificate)
    }

    /// The same change made to this snapshot itself. Only for its maker, while no one else holds
    /// it (see the type's note); the maps, held by this object alone, change without copying.
    package func replaceInPlace(_ directory: String, with site: ServedSite?, generation: UInt64) {
        Self.replace(directory, with: site, &sites, &exact, &wildcards)
        self.generation = generation
    }

    private static func replace(
        _ directory: String, with site: ServedSite?, _ sites: inout TreeDictionary<String, ServedSite>,
        _ exact: inout TreeDictionary<String, ServedSite>, _ wildcards: inout TreeDictionary<String, ServedSite>
    ) {
        if let old = sites[directory] {
            for host in old.hosts {
                if let suffix = host.wildcardSuffix {
                    if wildcards[suffix] === old { wildcards[suffix] = nil }
                } else if exact[host.name] === old {
                    exact[host.name] = nil
                }
            }
        }
        sites[directory] = site
        for host in site?.hosts ?? [] {
            if let suffix = host.wildcardSuffix { wildcards[suffix] = site } else { exact[host.name] = site }
        }
    }

    /// A snapshot with another default certificate.
    public func with(defaultCertificate: CertificateFiles?, generation: UInt64) -> Snapshot {
        Snapshot(generation: generation, sites: sites, exact: exact, wildcards: wildcards, defaultCertificate: defaultCertificate)
    }
}
