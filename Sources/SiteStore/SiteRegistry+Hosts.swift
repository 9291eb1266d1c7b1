import Foundation

/// Who answers for which host: claims, conflicts, aliases (DESIGN.md "What it serves"). The one
/// place that decides it, for `serve` and for the commands that report what serve would do.
extension SiteRegistry {
    /// Adds a site's claim on a host; returns the sites that claimed it before.
    func claim(_ host: HostName, for name: String) -> Set<String> {
        let others = claims[host] ?? []
        claims[host, default: []].insert(name)
        if others.count == 1 && !others.contains(name) { conflictingHosts += 1 }
        return others
    }

    /// Removes a site's claim on a host; returns the sites still claiming it.
    func release(_ host: HostName, from name: String) -> Set<String> {
        guard var holders = claims[host], holders.remove(name) != nil else { return claims[host] ?? [] }
        if holders.count == 1 { conflictingHosts -= 1 }
        claims[host] = holders.isEmpty ? nil : holders
        return holders
    }

    /// Puts a site's current served version into the snapshot, answering for its hosts that no
    /// other site claims.
    func publish(_ name: String) {
        bump()
        touchedSinceTaken.insert(name)
        guard let record = records[name], let served = record.served else {
            replaceServed(name, with: nil)
            return
        }
        let hosts = record.claims.filter { (claims[$0]?.count ?? 0) <= 1 }
        let conflicted = record.claims.filter { (claims[$0]?.count ?? 0) > 1 }
        for host in conflicted {
            let others = (claims[host] ?? []).subtracting([name]).sorted().joined(separator: ", ")
            logger.error("sites/\(name): the host \(host) is also claimed by \(others); neither serves it until one lets go")
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

    /// The sibling name a symlink under `sites/` points to, if it points to one.
    func siblingTarget(of name: String) -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: sitesPath + "/" + name) else { return nil }
        let resolved = URL(fileURLWithPath: target.hasPrefix("/") ? target : sitesPath + "/" + target).standardizedFileURL
        guard resolved.deletingLastPathComponent().path == URL(fileURLWithPath: sitesPath).standardizedFileURL.path else { return nil }
        return resolved.lastPathComponent
    }

    func forgetDangling(_ name: String) {
        guard let target = danglingTargets.removeValue(forKey: name), var names = danglingAliases[target] else { return }
        names.remove(name)
        danglingAliases[target] = names.isEmpty ? nil : names
    }

    func bump() {
        generation += 1
    }

    /// Why a host is answered as it is: the snapshot's own lookup first (exactly what `serve`
    /// does), then, for a host it does not serve, the first name in the same order (the host,
    /// then each wildcard above it) that some site claims.
    public enum HostAnswer: Sendable, Equatable {
        /// Served by this site (its directory name).
        case served(String)
        /// Claimed by these sites (directory names, sorted): served by none of them.
        case conflict(HostName, [String])
        /// Claimed by this site alone, which serves nothing (it never had a valid file).
        case refused(String)
        /// No site claims it.
        case unclaimed
    }

    /// How `serve` answers a request for `host` (lower case, no port) right now, and why.
    public func answer(forHost host: String) -> HostAnswer {
        let host = host.lowercased()
        if let site = snapshot.site(forHost: host) { return .served(site.directory) }
        var candidates = [host]
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            candidates.append("*." + rest)
        }
        for candidate in candidates {
            guard let name = try? HostName(parsing: candidate), let holders = claims[name], let first = holders.first else { continue }
            return holders.count > 1 ? .conflict(name, holders.sorted()) : .refused(first)
        }
        return .unclaimed
    }

    /// A site's hosts that another site claims too, each with every claimant (sorted).
    func conflicts(of name: String) -> [(host: HostName, sites: [String])] {
        guard let record = records[name] else { return [] }
        return record.claims.compactMap { host in
            guard let holders = claims[host], holders.count > 1 else { return nil }
            return (host, holders.sorted())
        }
    }

    /// Alias symlinks whose target directory is not a site (a name that cannot be a host, a
    /// hidden directory): they give no site a name, and say so.
    var aliasesOfNoSite: [ConfigProblem] {
        aliases.keys.sorted().compactMap { name in
            guard let target = aliases[name]?.target, records[target] == nil else { return nil }
            return ConfigProblem(severity: .error, file: "sites/\(name)", message: "an alias of \(target), which is not a site")
        }
    }
}
