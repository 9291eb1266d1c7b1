import ACME
import Foundation
import Logging
import SafeText
import Served
import SiteStore
import Synchronization
import TLS
package import TenantAPI

/// What the tenant API asks of the running server (`APIServedState`): the served snapshot for
/// what is served, and the ownership the registry published after its last reload (never the
/// registry itself, which a reload holds for seconds at 100,000 sites).
final class DaemonServedState: APIServedState {
    let store: SnapshotStore
    let sites: LockedRegistry
    let automatic: Bool
    /// One name's state from the certificate manager in force, nil when it has none.
    let certificateStatus: @Sendable (String) -> CertificateStatus?

    init(
        store: SnapshotStore, sites: LockedRegistry, automatic: Bool,
        certificateStatus: @escaping @Sendable (String) -> CertificateStatus? = { _ in nil }
    ) {
        self.store = store
        self.sites = sites
        self.automatic = automatic
        self.certificateStatus = certificateStatus
    }

    func served(directory: String) -> APIServedSite? {
        guard let site = store.snapshot().sites[directory] else { return nil }
        let source = site.certificate != nil ? "files" : automatic ? "acme" : "default"
        var served = APIServedSite(
            aasa: site.aasa?.content.digest, assetLinks: site.assetLinks?.content.digest, page: site.page?.content.digest,
            certificateSource: source, certificateState: "the default certificate", hosts: site.hosts.map(\.name))
        switch source {
        case "files":
            served.certificateState = "the site's own pair (tls/)"
            served.certificateNotAfter = site.certificate.flatMap { try? CertificateInfo(leafPEM: $0.chainPEM) }.map {
                Self.date($0.notAfter)
            }
        case "acme":
            let statuses = site.hosts.compactMap { certificateStatus($0.name) }
            served.certificateNames = statuses.map { status in
                APICertificateName(
                    name: status.name, state: status.state.rawValue, notAfter: status.notAfter.map(Self.date), error: status.errorForTenant,
                    nextAttempt: status.nextAttempt.map(Self.date))
            }
            served.certificateState = Self.siteState(statuses.map(\.state))
            // The site is served with certificates that end at the earliest of its names'.
            served.certificateNotAfter = statuses.compactMap(\.notAfter).min().map(Self.date)
        default:
            break
        }
        return served
    }

    /// A site's automatic certificate state: its least advanced name's (a failed name is what
    /// its owner must act on first), `pending` before the manager knows any of its names.
    static func siteState(_ states: [CertificateStatus.State]) -> String {
        let order: [CertificateStatus.State] = [.failed, .needsDNSHook, .capped, .waiting, .ordering, .queued, .valid]
        return order.first(where: states.contains)?.rawValue ?? "pending"
    }

    /// Seconds since the epoch as RFC 3339 (UTC), the API's form of a date.
    static func date(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
    }

    func ownership() -> HostOwnership { sites.ownership }
}

extension Daemon {
    /// Whether each name the tenant API added is verified, read without making anything (for
    /// `aasad sites`).
    package static func verificationStates(config: String) -> VerificationStates {
        VerificationStore.readStates(configDirectory: config)
    }

    /// The ownership checks (Sources/TenantAPI/VerificationStore.swift): made and kept when the
    /// API can write; otherwise only read, from whenever another replica's API makes them in the
    /// shared config directory (this replica then orders no certificate for a name they hold
    /// back either), even when that is after this replica started.
    static func verificationStore(_ settings: APISettings, config: String) throws -> VerificationStore? {
        let writes = settings.listen != nil && !settings.readOnly
        return try VerificationStore(configDirectory: config, creates: writes)
    }

    /// The tenant API when `api.listen` is set: its tokens, its handler over the config
    /// directory, and its listener, bound (not yet accepting). Throws when it cannot listen.
    static func tenantAPI(
        _ settings: APISettings, config: String, store: SnapshotStore, sites: LockedRegistry, automatic: Bool,
        certificateStatus: @escaping @Sendable (String) -> CertificateStatus? = { _ in nil }, logger: Logger,
        verification: VerificationStore? = nil, verificationDue: (@Sendable () -> Void)? = nil
    ) throws -> (listener: APIListener, tokens: APITokenStore)? {
        guard let listen = settings.listen else { return nil }
        // Without a file (refused by the settings' checks) no token is accepted.
        let tokens = APITokenStore(path: settings.tokensFile ?? "", logger: logger)
        let api = TenantAPI(
            configuration: .init(
                configDirectory: config,
                readOnlyReason: settings.readOnly ? "api.read-only is set: another tool owns the config directory" : nil,
                requestsPerMinute: settings.requestsPerMinute, verification: verification, verifyPort: settings.verifyPort,
                verificationDue: verificationDue),
            tokens: tokens,
            state: DaemonServedState(store: store, sites: sites, automatic: automatic, certificateStatus: certificateStatus),
            logger: logger)
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
