import Foundation
public import SiteStore
import StrictJSON
import Synchronization

/// What the process serves for one site directory, as the API reports it and waits for.
public struct APIServedSite: Sendable, Equatable {
    /// SHA-256 (hex) of each file served, nil when the file is not served.
    public var aasa: String?
    public var assetLinks: String?
    public var page: String?
    /// Where its certificate comes from: `acme`, `files` or `default`.
    public var certificateSource: String
    /// The certificate's state in a few words (`issued`, `pending`, `own pair`...).
    public var certificateState: String
    /// When it expires (RFC 3339), when known.
    public var certificateNotAfter: String?
    /// The host names it is served under (its directory's and the aliases it holds); nil when
    /// not known.
    public var hosts: [String]?
    /// With automatic certificates, each of its names' progress (docs/api.md, "Site state").
    public var certificateNames: [APICertificateName] = []

    public init(
        aasa: String?, assetLinks: String?, page: String?, certificateSource: String = "default", certificateState: String = "",
        certificateNotAfter: String? = nil, hosts: [String]? = nil
    ) {
        self.aasa = aasa
        self.assetLinks = assetLinks
        self.page = page
        self.certificateSource = certificateSource
        self.certificateState = certificateState
        self.certificateNotAfter = certificateNotAfter
        self.hosts = hosts
    }
}

/// One name's automatic certificate as the certificate manager sees it (ACME's
/// CertificateStatus, in the API's words): its state, the last error and when it is tried
/// again while failed, and when its served certificate ends.
public struct APICertificateName: Sendable, Equatable {
    public var name: String
    /// valid, queued, ordering, waiting, failed, needs-dns-hook or capped.
    public var state: String
    /// The stored certificate's end of validity (RFC 3339), when one is served.
    public var notAfter: String?
    /// The last failed attempt's error.
    public var error: String?
    /// When a failed name is tried again (RFC 3339).
    public var nextAttempt: String?

    public init(name: String, state: String, notAfter: String? = nil, error: String? = nil, nextAttempt: String? = nil) {
        self.name = name
        self.state = state
        self.notAfter = notAfter
        self.error = error
        self.nextAttempt = nextAttempt
    }

    var json: String {
        func text(_ value: String?) -> String { value.map(JSONValue.quote) ?? "null" }
        return "{\"name\":\(JSONValue.quote(name)),\"state\":\(JSONValue.quote(state)),\"notAfter\":\(text(notAfter)),"
            + "\"error\":\(text(error)),\"nextAttempt\":\(text(nextAttempt))}"
    }
}

/// What the API asks of the running server (the Daemon supplies it): what is served now, and
/// which site holds which host as of the last reload. Called from the API's connection threads.
public protocol APIServedState: Sendable {
    /// The site served from `sites/<directory>`, nil when none is.
    func served(directory: String) -> APIServedSite?
    /// Host ownership as the last reload decided it: a copy the API changes to check a new
    /// version of a site exactly as a reload would.
    func ownership() -> HostOwnership
}

/// The served state of a config directory read afresh on each question, through the registry
/// `validate` uses (`SiteRegistry.inspecting`): for tests and tools, where no server runs. Every
/// call reads the whole tree.
public final class DirectoryServedState: APIServedState {
    private let registry: Mutex<SiteRegistry>

    public init(root: String) {
        registry = Mutex(SiteRegistry.inspecting(root: root))
    }

    public func served(directory: String) -> APIServedSite? {
        registry.withLock { registry in
            registry.reloadAll()
            guard let site = registry.snapshot.sites[directory] else { return nil }
            return APIServedSite(
                aasa: site.aasa?.content.digest, assetLinks: site.assetLinks?.content.digest, page: site.page?.content.digest,
                hosts: site.hosts.map(\.name))
        }
    }

    public func ownership() -> HostOwnership {
        registry.withLock { registry in
            registry.reloadAll()
            return registry.hostOwnership
        }
    }
}
