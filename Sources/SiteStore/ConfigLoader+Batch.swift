import Reactor
import Served

extension ConfigLoader {
    /// Batches larger than this are read on every core: a full load of 100,000 sites is file reads,
    /// JSON parsing and gzip, all independent per site.
    static let parallelThreshold = 64

    /// Reads and validates entries, in parallel for large batches; the results are applied in order
    /// on the calling thread. `records`: the registry's sites as they are now (a name that is one
    /// is a site even while its directory cannot be examined).
    static func examine(
        _ names: [String], sitesPath: String, records: [String: SiteRecord], known: KnownValid?,
        check: @escaping SiteRegistry.CertificateCheck, options: ServingOptions
    ) -> [Entry] {
        // The records as they are now, shared rather than copied into a set (a set per chunk cost
        // O(sites) each: quadratic over a full load). Nothing changes them while `examine` runs:
        // the calling thread waits for the reads.
        nonisolated(unsafe) let sites = records
        let isSite: @Sendable (String) -> Bool = { name in
            sites[name] != nil || examineKind(sitesPath, name) == .directory
        }
        // A site's own certificate pair is checked here too, on every core, unless it passed
        // before (serve only): at 50,000 pairs the checks are most of a start.
        let examineOne: @Sendable (String) -> Entry = { name in
            let entry = examine(sitesPath: sitesPath, name: name, isSite: isSite, known: known, options: options)
            guard let known, case .site(var source) = entry, let files = source.certificate else { return entry }
            let identity = files.identity
            source.checkedCertificate = (identity, known.contains(.certificate, digestHex: identity) ? nil : check(files))
            return .site(source)
        }
        return Parallel.map(names, threshold: parallelThreshold, examineOne)
    }
}
