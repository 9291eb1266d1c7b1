/// One site as served: its names, its prepared files and its certificate.
public final class ServedSite: Sendable {
    /// The site's directory name.
    public let name: HostName
    /// Every name it answers for: its own and its aliases.
    public let hosts: [HostName]
    public let aasa: PreparedFile?
    public let assetLinks: PreparedFile?
    /// Its own certificate; nil means the default one.
    public let certificate: CertificateFiles?
    /// `certificate?.identity`, computed once.
    public let certificateIdentity: String?

    init(name: HostName, hosts: [HostName], aasa: PreparedFile?, assetLinks: PreparedFile?, certificate: CertificateFiles?) {
        self.name = name
        self.hosts = hosts
        self.aasa = aasa
        self.assetLinks = assetLinks
        self.certificate = certificate
        certificateIdentity = certificate?.identity
    }
}

/// Everything served at one moment, immutable: built off the hot path, published with one atomic
/// store, read once per request (DESIGN.md "Shape of the server").
public final class Snapshot: Sendable {
    /// Increases with every published snapshot.
    public let generation: UInt64
    public let sites: [ServedSite]
    public let defaultCertificate: CertificateFiles?
    public let defaultCertificateIdentity: String?
    private let exact: [String: ServedSite]
    /// Wildcard sites by suffix: `*.users.example.com` is filed under `users.example.com`.
    private let wildcards: [String: ServedSite]

    public init(generation: UInt64, sites: [ServedSite], defaultCertificate: CertificateFiles?) {
        self.generation = generation
        self.sites = sites
        self.defaultCertificate = defaultCertificate
        defaultCertificateIdentity = defaultCertificate?.identity
        var exact: [String: ServedSite] = [:]
        var wildcards: [String: ServedSite] = [:]
        for site in sites {
            for host in site.hosts {
                if let suffix = host.wildcardSuffix {
                    wildcards[suffix] = site
                } else {
                    exact[host.name] = site
                }
            }
        }
        self.exact = exact
        self.wildcards = wildcards
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

    /// Builds a snapshot from a scan: every valid site is served, invalid ones are left out (the
    /// scan's problems say why). Identical files share one prepared file.
    public static func build(from scan: ConfigScan, generation: UInt64, options: ServingOptions = ServingOptions()) -> Snapshot {
        var prepared: [[UInt8]: PreparedFile] = [:]
        func prepare<D>(_ file: SiteFile<D>?) -> PreparedFile? {
            guard let file, file.result.isValid else { return nil }
            if let shared = prepared[file.bytes], shared.lastModified == file.modified { return shared }
            let p = PreparedFile(body: file.bytes, modified: file.modified, options: options)
            prepared[file.bytes] = p
            return p
        }
        let sites = scan.sites.filter(\.isValid).map { source in
            ServedSite(
                name: source.host, hosts: source.hosts, aasa: prepare(source.aasa), assetLinks: prepare(source.assetLinks),
                certificate: source.certificate)
        }
        return Snapshot(generation: generation, sites: sites, defaultCertificate: scan.defaultCertificate)
    }
}
