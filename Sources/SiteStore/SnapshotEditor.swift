import Served

/// The snapshot the registry makes and the server reads: each change gets the next generation,
/// and is made in place while the registry holds the only reference to it (a full load builds one
/// snapshot without copying its maps once per site), else on a new one, since a snapshot the
/// server was given never changes.
struct SnapshotEditor {
    private(set) var snapshot: Snapshot
    private(set) var generation: UInt64

    init(generation: UInt64) {
        self.generation = generation
        snapshot = Snapshot(generation: generation, sites: [], defaultCertificate: nil)
    }

    /// Serves `site` (nil: nothing) under the directory name `name`.
    mutating func replace(_ name: String, with site: ServedSite?) {
        generation += 1
        if isKnownUniquelyReferenced(&snapshot) {
            snapshot.replaceInPlace(name, with: site, generation: generation)
        } else {
            snapshot = snapshot.replacing(name, with: site, generation: generation)
        }
    }

    /// `replace` for many sites in order, each its own generation; a snapshot with no site yet (a
    /// first load) builds its maps at once (`Snapshot.replaceInPlace(_:generation:)`).
    mutating func replace(_ sites: [(String, ServedSite?)]) {
        guard isKnownUniquelyReferenced(&snapshot) else {
            for (name, site) in sites { replace(name, with: site) }
            return
        }
        generation += UInt64(sites.count)
        snapshot.replaceInPlace(sites, generation: generation)
    }

    /// Serves `files` for hosts whose site has no certificate of its own.
    mutating func setDefaultCertificate(_ files: CertificateFiles?) {
        generation += 1
        snapshot = snapshot.with(defaultCertificate: files, generation: generation)
    }
}
