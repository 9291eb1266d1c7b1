import Reactor
import Served

/// The settle step over certificate pairs a load takes without checking them: whether loads
/// defer the checks, the checks themselves, and what their verdicts change. The waiting pairs
/// and the refusals are not held here but in `ValidityCache` (`unchecked`, `refused`), with the
/// other verdicts it consults when a pair is taken or kept.
///
/// Serve's first load takes the pairs of sites that have none in service unchecked (`defers`),
/// so that a start at 50,000 pairs is not held by OpenSSL's parsing, and checks them after
/// readiness (`check`, on every core). Until its check, a broken pair is what a handshake for
/// the site's names asks for, fails to load there, and the connection keeps the default
/// certificate (Sources/TLS/TLSServer.swift `selectContext`); after it, the site is served as
/// one without a pair (the default pair, an automatic certificate or a development leaf): the
/// registry reads again the sites serving a refused pair, which reports the problem and leaves
/// them without it. A waiting pair is never recorded as valid, and a refused one is never kept
/// as a site's last good pair (`ValidityCache`). A site read again without its pair keeps it when the read cannot
/// happen (the root unresolved, a load given up after `SiteRegistry.maximumTreeAttempts`
/// swaps), so a refused pair may still be in the snapshot.
struct LateCertificateChecks {
    /// Whether loads take pairs of sites without one in service unchecked.
    var defers = false

    /// Applies late verdicts (`problem` nil: the pair loads) to `validity`: a valid pair becomes
    /// known valid, a refused one refused. Returns the sites of `records` serving a pair now
    /// refused, sorted, for the registry to read again. A verdict on a pair no longer waiting
    /// (settled before) is ignored; with nothing refused no record is walked (100,000 at a large
    /// first start).
    func settle(
        _ verdicts: [(identity: String, problem: String?)], validity: inout ValidityCache, records: [String: SiteRecord]
    ) -> [String] {
        var refused = Set<String>()
        for verdict in verdicts where validity.settle(verdict.identity, problem: verdict.problem) {
            if verdict.problem != nil { refused.insert(verdict.identity) }
        }
        guard !refused.isEmpty else { return [] }
        return records.compactMap { name, record in
            record.served?.certificate.map(\.identity).map(refused.contains) == true ? name : nil
        }.sorted()
    }

    /// The verdicts on `pairs`, checked on every core.
    static func check(_ pairs: [CertificateFiles], with check: SiteRegistry.CertificateCheck) -> [(identity: String, problem: String?)] {
        let problems = Parallel.map(pairs, threshold: ConfigLoader.parallelThreshold) { check($0) }
        return zip(pairs, problems).map { ($0.identity, $1) }
    }
}
