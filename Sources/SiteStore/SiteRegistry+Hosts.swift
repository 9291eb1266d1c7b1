import Foundation
import Served

/// Who answers for which host: the names each site holds (`HostOwnership`, the one rule), put
/// into the snapshot, and said to the commands that report what serve would do.
extension SiteRegistry {
    /// Puts a site's current served version into the snapshot, answering for the names it holds.
    func publish(_ name: String) {
        bump()
        tracking.touch(name)
        guard let record = records[name], let served = record.served else {
            replaceServed(name, with: nil)
            return
        }
        let hosts = claims.ownership.held(by: name)
        for refusal in claims.ownership.refusals(of: name) {
            let problem = HostClaims.problem(refusal, site: name)
            logger.error("\(problem.file): \(problem.message)")
        }
        replaceServed(name, with: served.hosts == hosts ? served : served.with(hosts: hosts))
    }

    /// Serves `site` for `name` in the registry's snapshot: changed in place while the registry
    /// holds the only reference to it (a full load builds one snapshot without copying the maps
    /// per site), else replaced by a new one, since a published snapshot never changes.
    func replaceServed(_ name: String, with site: ServedSite?) {
        if isKnownUniquelyReferenced(&snapshot) {
            snapshot.replaceInPlace(name, with: site, generation: generation)
        } else {
            snapshot = snapshot.replacing(name, with: site, generation: generation)
        }
    }

    func bump() {
        generation += 1
    }

    /// Why a host is answered as it is: the snapshot's own lookup first (exactly what `serve`
    /// does), then, for a host it does not serve, the site that holds the name (or the most
    /// specific wildcard above it).
    public enum HostAnswer: Sendable, Equatable {
        /// Served by this site (its directory name).
        case served(String)
        /// Held by this site, which serves nothing (it never had a valid file).
        case refused(String)
        /// No site holds it.
        case unclaimed
    }

    /// How `serve` answers a request for `host` (lower case, no port) right now, and why.
    public func answer(forHost host: String) -> HostAnswer {
        let host = host.lowercased()
        if let site = snapshot.site(forHost: host) { return .served(site.directory) }
        if let holder = claims.ownership.holder(serving: host) { return .refused(holder.site) }
        return .unclaimed
    }

    /// The names a site claims and does not hold, with who holds each and why.
    public func refusals(of name: String) -> [HostOwnership.Refusal] { claims.ownership.refusals(of: name) }
}
