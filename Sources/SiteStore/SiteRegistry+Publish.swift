import Reactor
import Served

/// Publishing: a site's served version put into the snapshot with the names it holds, its refused
/// claims logged (`SiteRegistry.apply` publishes what a reload updated and what the decisions changed).
extension SiteRegistry {
    /// Puts a site's current served version into the snapshot, answering for the names it holds.
    func publish(_ name: String) {
        publish(name, Self.publication(of: records[name]?.served, name, claims.ownership))
    }

    /// `publish` for many sites: what each serves with its names is worked out on every core for
    /// a large batch (reads of the records and the decisions only), then put into the snapshot,
    /// and its refused claims logged, on this thread in order (at a million sites, `held(by:)`
    /// alone was 1.0 s of the start's thread, perf in docs/benchmarks.md). The refusals are
    /// looked up on this thread: while no site has any (most loads), two empty maps' checks a site
    /// (no hashing), else a lookup in the refusals' two layers a site.
    func publish(_ names: [String], threshold: Int = parallelPublication) {
        nonisolated(unsafe) let records = records
        let ownership = claims.ownership
        // Made as the snapshot takes them, not zipped into that shape after (a copy of every
        // name and site, 0.01 s at 100,000 sites).
        let sites = Parallel.map(names, threshold: threshold) { name in
            (name, Self.served(records[name]?.served, name, ownership))
        }
        tracking.reserve(names.count)
        for (name, site) in sites {
            tracking.touch(name)
            // A site not served has no refusals to report (`publication(of:)`).
            if site != nil { log(ownership.refusals(of: name), of: name) }
        }
        editor.replace(sites)
    }

    /// Batches larger than this are worked out on every core by `publish(_:)`.
    static let parallelPublication = 4_096

    /// A site's served version with the names it holds (nil: nothing served), and the claims refused.
    static func publication(
        of served: ServedSite?, _ name: String, _ ownership: HostOwnership
    ) -> (site: ServedSite?, refusals: [HostOwnership.Refusal]) {
        guard let served else { return (nil, []) }
        return (Self.served(served, name, ownership), ownership.refusals(of: name))
    }

    /// A site's served version with the names it holds (nil: nothing served).
    static func served(_ served: ServedSite?, _ name: String, _ ownership: HostOwnership) -> ServedSite? {
        guard let served else { return nil }
        let hosts = ownership.held(by: name)
        return served.hasHosts(hosts) ? served : served.with(hosts: hosts)
    }

    func publish(_ name: String, _ publication: (site: ServedSite?, refusals: [HostOwnership.Refusal])) {
        tracking.touch(name)
        log(publication.refusals, of: name)
        editor.replace(name, with: publication.site)
    }

    func log(_ refusals: [HostOwnership.Refusal], of name: String) {
        for refusal in refusals {
            let problem = HostClaims.problem(refusal, site: name)
            logger.error("\(problem.file): \(problem.message)")
        }
    }
}
