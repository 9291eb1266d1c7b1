public import AASA
import HTTPCore
import Hashing
import Served

/// A finding about the config directory itself or one of its files, outside any JSON document:
/// a bad directory name, a missing file, an unreadable file, a host claimed twice.
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    public var severity: Diagnostic.Severity
    /// The file or directory, relative to the config directory (e.g. `sites/a.com`).
    public var file: String
    public var message: String

    public init(severity: Diagnostic.Severity, file: String, message: String) {
        self.severity = severity
        self.file = file
        self.message = message
    }

    public var description: String { "\(file): \(message)" }
}

/// One file of a site as read from disk, with its validation.
public struct SiteFile<Document: Sendable>: Sendable {
    /// Relative to the config directory, e.g. `sites/a.com/apple-app-site-association`.
    public var relativePath: String
    public var bytes: [UInt8]
    /// The file's time, seconds since the epoch: the later of its mtime and ctime (the basis of
    /// `Last-Modified`; see `ConfigLoader.readFile`).
    public var modified: Int64
    public var result: ValidationResult<Document>
    /// SHA-256 of `bytes`, when the load computed it (serve's loads, which look verdicts up by it).
    public var sha256: [UInt8]? = nil
    /// The bytes were not validated again: the same content of the same kind passed before
    /// (`KnownValid`); `result` then holds no document and no finding.
    public var validatedEarlier = false
    /// The verdicts known when it was read held this content's already (`KnownValid.contains`):
    /// the registry need not record it again (a verdict is never dropped between a read and its
    /// apply), which spared parsing its digest back into a key for every file of a restart.
    var verdictKnown = false
    /// The file prepared for serving by the read itself (serve's loads, on every core), with the
    /// file's own time and the options its site.yaml asks for: what the registry serves when it
    /// picks that time and those options, as it does for every file of a first load. Set only by
    /// the read; the registry checks it holds these bytes before serving it.
    public internal(set) var prepared: PreparedFile? = nil

    /// True when the file may be served.
    public var isValid: Bool { result.isValid || (validatedEarlier && result.diagnostics.isValid) }
}

/// One site directory (or symlinked site) found under `sites/`.
public struct SiteSource: Sendable {
    public var host: HostName
    /// Relative to the config directory, e.g. `sites/links.example.com`.
    public var directory: String
    /// More names for the same site: symlinks in `sites/` pointing at this directory.
    public var aliases: [HostName]
    public var aasa: SiteFile<AppSiteAssociation>?
    public var assetLinks: SiteFile<AssetLinks>?
    /// The pages site.yaml names (`page:` and the routes' `page:`), as read, by file name; a page
    /// that is missing or cannot be read is absent (its problem says why).
    public var pages: [String: SiteFile<LandingPage>] = [:]
    /// The site's own page (`page:` of `settings`), as read.
    public var page: SiteFile<LandingPage>? { settings.page.flatMap { pages[$0] } }
    /// What takes each page of `pages`, as the site.yaml read with them says (the settings in
    /// force may be older ones): for reports.
    public var pageUses: [String: PageUse] = [:]
    /// The site's own certificate (`tls/cert.pem` and `tls/key.pem`), if it has one.
    public var certificate: CertificateFiles?
    /// The TLS layer's verdict on `certificate` when the read asked for it already (serve's
    /// loads, on every core): its identity, and why it cannot be used (nil: it can).
    public var checkedCertificate: (identity: String, problem: String?)?
    /// The read left `certificate` unchecked (`SiteRegistry.defersCertificateChecks`): it is taken
    /// for now and checked after the load (`SiteRegistry.settleCertificateChecks`).
    var certificateCheckDeferred = false
    /// What `site.yaml` says (more host names, cache policy).
    public var settings = SiteSettings()
    /// Problems with the site's directory (missing files, unreadable files, conflicts).
    public var problems: [ConfigProblem]
    /// Entries of the site that exist but could not be read (`apple-app-site-association`,
    /// `assetlinks.json`, `site.yaml`, `tls`): their last good versions stay in service, since
    /// only ENOENT means gone.
    public var unreadable: Set<String> = []
    /// Of `unreadable`, the files whose read failed for a reason that may pass
    /// (`ReadError.isTransient`): a page among them is no reason to refuse its site.yaml.
    public var transientlyUnreadable: Set<String> = []

    /// Every host name the site claims: its directory's, its alias symlinks', site.yaml's.
    public var hosts: [HostName] { [host] + aliases + settings.aliases }
    /// Those of `hosts` that another site holds (`HostOwnership`, as the registry's scan decided).
    public var refusedHosts: Set<HostName> = []
    /// Those of `hosts` it would answer for: the others (what its certificate must cover).
    public var unrefusedHosts: [HostName] { hosts.filter { !refusedHosts.contains($0) } }

    /// The directory's own name, e.g. `links.example.com` for `sites/links.example.com`.
    public var name: String { String(directory.split(separator: "/").last ?? Substring(directory)) }

    /// True when everything the site has may be served.
    public var isValid: Bool {
        !problems.contains { $0.severity == .error } && aasa?.isValid != false && assetLinks?.isValid != false
            && pages.values.allSatisfy(\.isValid)
    }
}

/// What takes one page of a site.
public struct PageUse: Sendable, Equatable {
    /// "the site's page" and/or "the page of routes[i] (PATH), …" (`SiteSettings.takers`).
    public var takenBy: String
    /// The routes that answer with it (indices in `routes:`).
    public var routes: [Int]
}

/// Everything found in a config directory: the sites and the problems. `aasad validate` prints it;
/// `serve` builds its snapshot from the valid sites (validate runs serve's own load code).
public struct ConfigScan: Sendable {
    public var root: String
    public var sites: [SiteSource]
    /// Problems not tied to one site (missing `sites/`, bad names in it).
    public var problems: [ConfigProblem]
    /// The default certificate (`tls/` at the top of the config directory), for sites without
    /// their own and for connections without SNI.
    public var defaultCertificate: CertificateFiles?

    public init(root: String, sites: [SiteSource], problems: [ConfigProblem], defaultCertificate: CertificateFiles? = nil) {
        self.root = root
        self.sites = sites
        self.problems = problems
        self.defaultCertificate = defaultCertificate
    }

    public var isValid: Bool {
        !problems.contains { $0.severity == .error } && sites.allSatisfy(\.isValid)
    }
}
