import Foundation
import Logging
import SafeText
import Served
import SiteStore
import Synchronization
import TenantAPI

/// What the tenant API asks of the running server (`APIServedState`): the served snapshot for
/// what is served, and the ownership the registry published after its last reload (never the
/// registry itself, which a reload holds for seconds at 100,000 sites).
final class DaemonServedState: APIServedState {
    let store: SnapshotStore
    let sites: LockedRegistry
    let automatic: Bool

    init(store: SnapshotStore, sites: LockedRegistry, automatic: Bool) {
        self.store = store
        self.sites = sites
        self.automatic = automatic
    }

    func served(directory: String) -> APIServedSite? {
        guard let site = store.snapshot().sites[directory] else { return nil }
        let source = site.certificate != nil ? "files" : automatic ? "acme" : "default"
        let state =
            switch source {
            case "files": "the site's own pair (tls/)"
            case "acme": "automatic: see /sites on the admin listener"
            default: "the default certificate"
            }
        return APIServedSite(
            aasa: site.aasa?.content.digest, assetLinks: site.assetLinks?.content.digest, page: site.page?.content.digest,
            certificateSource: source, certificateState: state, hosts: site.hosts.map(\.name))
    }

    func ownership() -> HostOwnership { sites.ownership }
}

extension Daemon {
    /// The tenant API when `api.listen` is set: its tokens, its handler over the config
    /// directory, and its listener, bound (not yet accepting). Throws when it cannot listen.
    static func tenantAPI(
        _ settings: APISettings, config: String, store: SnapshotStore, sites: LockedRegistry, automatic: Bool, logger: Logger
    ) throws -> (listener: APIListener, tokens: APITokenStore)? {
        guard let listen = settings.listen else { return nil }
        // Without a file (refused by the settings' checks) no token is accepted.
        let tokens = APITokenStore(path: settings.tokensFile ?? "", logger: logger)
        let api = TenantAPI(
            configuration: .init(
                configDirectory: config,
                readOnlyReason: settings.readOnly ? "api.read-only is set: another tool owns the config directory" : nil,
                requestsPerMinute: settings.requestsPerMinute),
            tokens: tokens, state: DaemonServedState(store: store, sites: sites, automatic: automatic), logger: logger)
        let tls = settings.tlsCertificate.flatMap { certificate in
            settings.tlsKey.map { APITLSFiles(certificate: certificate, key: $0) }
        }
        let listener = try APIListener(listen: listen, tls: tls, handler: api.handler, logger: logger)
        return (listener, tokens)
    }

    /// The API's address as bound, for the ready line: `api.listen` with the port the system
    /// chose when it was 0 (`127.0.0.1:0` → `127.0.0.1:41234`), so a test or a supervisor learns
    /// it from the line it waits for instead of picking a free port first (a race); "off" without one.
    static func apiBound(_ listen: String?, port: Int?) -> String {
        guard let listen, let port, let colon = listen.lastIndex(of: ":") else { return "off" }
        return TerminalText.escaped(String(listen[..<colon])) + ":\(port)"
    }
}
