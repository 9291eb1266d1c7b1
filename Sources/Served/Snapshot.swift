import Dispatch
import HTTPCore
public import HashTreeCollections

/// Everything served at one moment, immutable: built off the hot path, published through
/// `SnapshotStore` (one reference swap), read once per request (docs/architecture.md).
///
/// The maps are persistent hash tries: a snapshot that differs from the last by one site shares
/// everything else with it, so applying a change costs O(log n) whatever the number of sites.
///
/// Immutable once anyone but its maker holds it: the registry changes a snapshot in place
/// (`replaceInPlace`) only while its reference is the only one (`isKnownUniquelyReferenced`),
/// before it is published, so that a full load of 100,000 sites builds its maps without copying
/// a path of the tries per site. Hence `@unchecked Sendable`: no thread but the maker can see a
/// snapshot that still changes.
public final class Snapshot: @unchecked Sendable {
    /// Increases with every published snapshot.
    public private(set) var generation: UInt64
    /// Served sites by directory name.
    public private(set) var sites: TreeDictionary<String, ServedSite>
    public let defaultCertificate: CertificateFiles?
    public let defaultCertificateIdentity: String?
    private var exact: TreeDictionary<String, ServedSite>
    /// Wildcard sites by suffix: `*.users.example.com` is filed under `users.example.com`.
    private var wildcards: TreeDictionary<String, ServedSite>

    private init(
        generation: UInt64, sites: TreeDictionary<String, ServedSite>, exact: TreeDictionary<String, ServedSite>,
        wildcards: TreeDictionary<String, ServedSite>, defaultCertificate: CertificateFiles?
    ) {
        self.generation = generation
        self.sites = sites
        self.exact = exact
        self.wildcards = wildcards
        self.defaultCertificate = defaultCertificate
        defaultCertificateIdentity = defaultCertificate?.identity
    }

    public convenience init(generation: UInt64, sites: [ServedSite], defaultCertificate: CertificateFiles?) {
        self.init(generation: generation, sites: [:], exact: [:], wildcards: [:], defaultCertificate: defaultCertificate)
        // Build through the same path as incremental changes.
        var snapshot = self
        for site in sites { snapshot = snapshot.replacing(site.directory, with: site, generation: generation) }
        self.init(
            generation: generation, sites: snapshot.sites, exact: snapshot.exact, wildcards: snapshot.wildcards,
            defaultCertificate: defaultCertificate)
    }

    /// An empty snapshot: nothing served.
    public static let empty = Snapshot(generation: 0, sites: [], defaultCertificate: nil)

    /// The site for a host (lower case, no port): the exact name first, then the wildcard with the
    /// longest suffix, found by dropping one label at a time (O(labels), whatever the site count).
    public func site(forHost host: String) -> ServedSite? {
        if let site = exact[host] { return site }
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if let site = wildcards[String(rest)] { return site }
        }
        return nil
    }

    /// A snapshot where the site of `directory` is `site` (nil: not served). O(log n).
    public func replacing(_ directory: String, with site: ServedSite?, generation: UInt64) -> Snapshot {
        var sites = self.sites
        var exact = self.exact
        var wildcards = self.wildcards
        Self.replace(directory, with: site, &sites, &exact, &wildcards)
        return Snapshot(generation: generation, sites: sites, exact: exact, wildcards: wildcards, defaultCertificate: defaultCertificate)
    }

    /// The same change made to this snapshot itself. Only for its maker, while no one else holds
    /// it (see the type's note); the maps, held by this object alone, change without copying.
    package func replaceInPlace(_ directory: String, with site: ServedSite?, generation: UInt64) {
        Self.replace(directory, with: site, &sites, &exact, &wildcards)
        self.generation = generation
    }

    /// `replaceInPlace` for many sites, in order. Into a snapshot that serves nothing yet (a first
    /// load: a million sites), the map by directory is built on one core while the other sorts
    /// the names by kind; should a directory come twice (served or not), or a site's own
    /// directory name be claimed by another site too, in order on this one, as `replace` does
    /// each. Returns whether the maps were built at once (for tests).
    ///
    /// A site's directory is almost always one of its names (`sites/example.com/` serves
    /// example.com), so the map of exact names starts as the map by directory itself, sharing
    /// every node with it, and is changed only where the two differ: directories that are not a
    /// name their site holds leave it, other exact names join it. Built on its own, it cost a
    /// second trie of every site (0.08 s and its nodes' memory at 100,000 sites, docs/benchmarks.md).
    @discardableResult
    package func replaceInPlace(_ many: [(String, ServedSite?)], generation: UInt64) -> Bool {
        self.generation = generation
        guard sites.isEmpty, exact.isEmpty, wildcards.isEmpty, many.count > Self.parallelBuild else {
            for (directory, site) in many { Self.replace(directory, with: site, &sites, &exact, &wildcards) }
            return false
        }
        nonisolated(unsafe) var bySite = TreeDictionary<String, ServedSite>()
        nonisolated(unsafe) var repeated = false
        // Directories whose site does not hold their name; the other exact names, in order.
        nonisolated(unsafe) var unheld: [String] = []
        nonisolated(unsafe) var elsewhere: [(name: String, site: ServedSite)] = []
        nonisolated(unsafe) var byWildcard = TreeDictionary<String, ServedSite>()
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            if part == 0 {
                // A directory not served (rare: a site whose first version failed) is looked for
                // among the served ones after.
                var unserved: [String] = []
                for (directory, site) in many {
                    if let site {
                        if bySite.updateValue(site, forKey: directory) != nil { repeated = true }
                    } else {
                        unserved.append(directory)
                    }
                }
                if unserved.contains(where: { bySite[$0] != nil }) || Set(unserved).count != unserved.count { repeated = true }
            } else {
                for case (let directory, let site?) in many {
                    var holdsDirectory = false
                    site.forEachHost { host in
                        if let suffix = host.wildcardSuffix {
                            byWildcard[suffix] = site
                        } else if host.name == directory {
                            holdsDirectory = true
                        } else {
                            elsewhere.append((host.name, site))
                        }
                    }
                    if !holdsDirectory { unheld.append(directory) }
                }
            }
        }
        guard !repeated, let byName = Self.exactNames(bySite, unheld: unheld, elsewhere: elsewhere) else {
            for (directory, site) in many { Self.replace(directory, with: site, &sites, &exact, &wildcards) }
            return false
        }
        (sites, exact, wildcards) = (bySite, byName, byWildcard)
        return true
    }

    /// The map of exact names, from the map by directory (each directory unique) and what differs
    /// from it; nil when a name is held by two sites, one of them the site of the directory of
    /// that name (only an order of the whole batch says which holds it then).
    private static func exactNames(
        _ bySite: TreeDictionary<String, ServedSite>, unheld: [String], elsewhere: [(name: String, site: ServedSite)]
    ) -> TreeDictionary<String, ServedSite>? {
        var byName = bySite
        for directory in unheld { byName[directory] = nil }
        // Names written here: a later one of them replaces an earlier, as in order.
        var written = Set<String>()
        for (name, site) in elsewhere {
            if byName[name] != nil, !written.contains(name) { return nil }
            byName[name] = site
            written.insert(name)
        }
        return byName
    }

    /// Sites above which `replaceInPlace(_:generation:)` builds an empty snapshot's maps on two cores.
    static let parallelBuild = 4_096

    private static func replace(
        _ directory: String, with site: ServedSite?, _ sites: inout TreeDictionary<String, ServedSite>,
        _ exact: inout TreeDictionary<String, ServedSite>, _ wildcards: inout TreeDictionary<String, ServedSite>
    ) {
        if let old = sites[directory] {
            old.forEachHost { host in
                if let suffix = host.wildcardSuffix {
                    if wildcards[suffix] === old { wildcards[suffix] = nil }
                } else if exact[host.name] === old {
                    exact[host.name] = nil
                }
            }
        }
        sites[directory] = site
        site?.forEachHost { host in
            if let suffix = host.wildcardSuffix { wildcards[suffix] = site } else { exact[host.name] = site }
        }
    }

    /// A snapshot with another default certificate.
    public func with(defaultCertificate: CertificateFiles?, generation: UInt64) -> Snapshot {
        Snapshot(generation: generation, sites: sites, exact: exact, wildcards: wildcards, defaultCertificate: defaultCertificate)
    }
}
