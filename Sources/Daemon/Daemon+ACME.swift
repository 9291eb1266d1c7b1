package import ACME
package import Logging
package import SiteStore
package import Synchronization
package import TLS
import TenantAPI

/// The daemon's automatic certificates (RFC 8555, docs/acme.md): which names the config directory asks for, and
/// the certificate manager that holds them.
extension Daemon {
    /// The manager, started on the stored certificates; nil when `acme.directory` is not set.
    /// `names` is asked only when automatic certificates are on (a walk over every site: 0.1 s
    /// of a start at 100,000 sites).
    static func certificateManager(
        settings: ServerSettings, names: @autoclosure () -> [String: [String]], logger: Logger
    ) throws -> CertificateManager? {
        guard let configuration = try settings.acme.configuration(state: settings.state) else { return nil }
        let manager = try CertificateManager(configuration: configuration, logger: logger)
        manager.want(names())
        // Before the first handshake and before any call to the CA: a CA outage never stops
        // what was issued from being served.
        manager.loadStored()
        let statuses = manager.statuses()
        logger.info(
            "automatic certificates on",
            metadata: [
                "directory": "\(configuration.directory)", "storage": "\(configuration.storage)", "names": "\(statuses.count)",
                "stored": "\(statuses.count { $0.notAfter != nil })", "challenges": "\(configuration.challenges.joined(separator: ","))",
            ])
        return manager
    }
}

/// The names automatic certificates are for, by site (directory name): every host a served site
/// holds (its directory name, alias symlinks, site.yaml aliases that `HostOwnership` did not
/// refuse: the snapshot has no other) that neither its own `tls/` pair nor the default pair in
/// `tls/` covers. The config directory is the allow-list: nothing else is ever ordered. The
/// default pair's names are read once per pair.
package final class ACMENames: Sendable {
    private let defaultInfo = Mutex<(identity: String, info: CertificateInfo?)?>(nil)
    /// Whether a name waits for its ownership check (a name the tenant API added, not yet
    /// verified: Sources/TenantAPI/VerificationStore.swift): no order is spent on it, since a CA
    /// counts failed validations per name and account. nil: none waits.
    private let blocked: (@Sendable (String) -> Bool)?
    /// `acme.wildcard-certificates`: how wildcard sites without site.yaml `certificates:` get theirs.
    let wildcardCertificates: WildcardCertificates
    /// The children of `per-name` wildcard sites approved so far (Daemon+Children.swift); nil
    /// while automatic certificates are off.
    let children: ChildApprovals?

    package init(
        blocked: (@Sendable (String) -> Bool)? = nil, wildcardCertificates: WildcardCertificates = .wildcard,
        children: ChildApprovals? = nil
    ) {
        self.blocked = blocked
        self.wildcardCertificates = wildcardCertificates
        self.children = children
    }

    package func names(in snapshot: Snapshot) -> [String: [String]] {
        let info = defaultCertificateInfo(snapshot)
        var names: [String: [String]] = [:]
        for site in snapshot.sites.values where site.certificate == nil {
            // A per-name site's wildcard is not ordered: its children each get their own.
            let perName = isPerName(site)
            let hosts = site.hosts.filter { !(perName && $0.isWildcard) }.map(\.name).filter {
                !(info?.covers($0) ?? false) && !(blocked?($0) ?? false)
            }
            if !hosts.isEmpty { names[site.directory] = hosts }
        }
        addChildren(to: &names, snapshot: snapshot)
        return names
    }

    /// Whether `site`'s wildcard names get a certificate per child.
    func isPerName(_ site: ServedSite) -> Bool { (site.wildcardCertificates ?? wildcardCertificates) == .perName }

    /// Whether the default pair in `tls/` covers `name`.
    func defaultCovers(_ name: String, in snapshot: Snapshot) -> Bool { defaultCertificateInfo(snapshot)?.covers(name) ?? false }

    /// Whether the ownership check holds `name` back.
    func holdsBack(_ name: String) -> Bool { blocked?(name) ?? false }

    private func defaultCertificateInfo(_ snapshot: Snapshot) -> CertificateInfo? {
        guard let files = snapshot.defaultCertificate, let identity = snapshot.defaultCertificateIdentity else { return nil }
        return defaultInfo.withLock { cached in
            if let cached, cached.identity == identity { return cached.info }
            let info = try? CertificateInfo(leafPEM: files.chainPEM)
            cached = (identity, info)
            return info
        }
    }
}

extension VerificationStore {
    /// Reads again, before a reload's names are decided, the records of the names the reload
    /// read (all of them when it read every site): another replica's API writes a name's record
    /// before its site (Sources/TenantAPI/TenantAPI+Verification.swift), so the reload that
    /// serves the site finds it, instead of wanting a certificate for the name until the
    /// checker's next read.
    func learnRecords(of snapshot: Snapshot, directories: [String]?) {
        guard let directories else { return refresh() }
        for directory in directories {
            for host in snapshot.sites[directory]?.hosts ?? [] { _ = reread(host.name) }
        }
    }
}
