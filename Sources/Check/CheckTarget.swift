/// A host `aasad check` looks at: named on the command line or by an app's entitlements, with
/// the services those entries ask of it and whether any of them goes through Apple's CDN.
public struct CheckTarget: Sendable, Equatable {
    /// The host whose file the system fetches (`Entitlements.fetchedHost`).
    public var host: String
    /// The services the entitlements name it for, in their order, each once.
    public var services: [String]
    /// Whether a device reads its file through Apple's CDN: true unless every entry naming it is
    /// in developer or managed mode (those devices read the origin directly, spec §2).
    public var usesCDN: Bool

    public init(host: String, services: [String] = [], usesCDN: Bool = true) {
        self.host = host
        self.services = services
        self.usesCDN = usesCDN
    }

    /// The hosts named, each once as the system fetches it, then the entitlements' domains
    /// merged in by host: a domain's service added to its host's target, and one entry that goes
    /// through the CDN enough for the CDN to matter.
    public static func list(hosts: [String], domains: [Entitlements.Domain]) -> [CheckTarget] {
        var targets: [CheckTarget] = []
        for host in hosts.map(Entitlements.fetchedHost) where !targets.contains(where: { $0.host == host }) {
            targets.append(CheckTarget(host: host))
        }
        for domain in domains {
            if let index = targets.firstIndex(where: { $0.host == domain.host }) {
                if !targets[index].services.contains(domain.service) { targets[index].services.append(domain.service) }
                targets[index].usesCDN = targets[index].usesCDN || domain.usesCDN
            } else {
                targets.append(CheckTarget(host: domain.host, services: [domain.service], usesCDN: domain.usesCDN))
            }
        }
        return targets
    }

    /// `base` for this host: its services; and, when only developer- or managed-mode entries
    /// name it, no CDN (those devices never ask it) and such devices' rules for the origin.
    public func options(_ base: HostChecker.Options) -> HostChecker.Options {
        var options = base
        if !usesCDN { options.cdn = nil }
        options.services = services
        options.developerModeOnly = !usesCDN
        return options
    }
}
