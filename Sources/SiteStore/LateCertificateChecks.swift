import Reactor
import Served

/// Certificate pairs a load takes without checking them (`unchecked`), their late verdicts
/// (`settle`, `check`) and the refusals among them (`refused`); held by `SitePreparer`.
///
/// Serve's first load takes the pairs of sites that have none in service unchecked (`defers`),
/// so that a start at 50,000 pairs is not held by OpenSSL's parsing, and checks them after
/// readiness (`check`, on every core). Until its check, a broken pair is what a handshake for
/// the site's names asks for, fails to load there, and the connection keeps the default
/// certificate (Sources/TLS/TLSServer.swift `selectContext`); after it, the site is served as
/// one without a pair (the default pair, an automatic certificate or a development leaf): the
/// registry reads again the sites serving a refused pair, which reports the problem and leaves
/// them without it. A waiting pair is never recorded as valid, and a refused one is never kept
/// as a site's last good pair (`ValidityCache` asks this type). A site read again without its pair keeps it when the read cannot
/// happen (the root unresolved, a load given up after `SiteRegistry.maximumTreeAttempts`
/// swaps), so a refused pair may still be in the snapshot.
struct LateCertificateChecks {
    /// Whether loads take pairs of sites without one in service unchecked.
    var defers = false
    /// Pairs a load took without checking them, by identity, until their verdict comes
    /// (`settle`): never recorded as known valid meanwhile.
    private(set) var unchecked: [String: CertificateFiles] = [:]
    /// Why pairs taken unchecked failed their late check, by identity: such a pair is never kept
    /// in service as a site's "last good" one, nor recorded as valid. `forgetRefused` with no
    /// pair left unchecked forgets those no site serves any more.
    private var refused: [String: String] = [:]

    /// Takes a pair into service unchecked (a load that defers checks), unless `validity` knows
    /// it valid or keeps no verdicts (a reporting registry).
    mutating func take(_ files: CertificateFiles, validity: ValidityCache) {
        guard let known = validity.known, !known.contains(pair: files) else { return }
        unchecked[files.identity] = files
    }

    func isUnchecked(_ identity: String) -> Bool { unchecked[identity] != nil }
    /// Whether a pair failed its late check (it must not stay in service as a "last good" pair).
    func isRefused(_ identity: String) -> Bool { refused[identity] != nil }
    /// Why the pair failed its late check, if it did.
    func refusal(_ identity: String) -> String? { refused[identity] }

    /// With no pair waiting, forgets the refusals of pairs not in `served` (none serves them).
    mutating func forgetRefused(except served: Set<String>) {
        if !refused.isEmpty, unchecked.isEmpty { refused = refused.filter { served.contains($0.key) } }
    }

    /// Applies late verdicts (`problem` nil: the pair loads) to `validity`: a valid pair becomes
    /// known valid, a refused one refused. Returns the sites of `records` serving a pair now
    /// refused, sorted, for the registry to read again. A verdict on a pair no longer waiting
    /// (settled before) is ignored; with nothing refused no record is walked (100,000 at a large
    /// first start).
    mutating func settle(
        _ verdicts: [(identity: String, problem: String?)], validity: inout ValidityCache, records: [String: SiteRecord]
    ) -> [String] {
        var newlyRefused = Set<String>()
        for verdict in verdicts where unchecked.removeValue(forKey: verdict.identity) != nil {
            if let problem = verdict.problem {
                refused[verdict.identity] = problem
                newlyRefused.insert(verdict.identity)
            } else {
                validity.insert(.certificate, digestHex: verdict.identity)
            }
        }
        // Removing keeps a dictionary's room: the table of 50,000 pairs a first start waited
        // for (8 MB) stayed for the life of the process, empty.
        if unchecked.isEmpty { unchecked = [:] }
        guard !newlyRefused.isEmpty else { return [] }
        return records.compactMap { name, record in
            record.served?.certificate.map(\.identity).map(newlyRefused.contains) == true ? name : nil
        }.sorted()
    }

    /// The verdicts on `pairs`, checked on every core.
    static func check(_ pairs: [CertificateFiles], with check: SiteRegistry.CertificateCheck) -> [(identity: String, problem: String?)] {
        let problems = Parallel.map(pairs, threshold: ConfigLoader.parallelThreshold) { check($0) }
        return zip(pairs, problems).map { ($0.identity, $1) }
    }
}
