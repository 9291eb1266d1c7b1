import Foundation

/// Who answers for which host: the names each site holds (`HostOwnership`, the one rule), put
/// into the snapshot, and said to the commands that report what serve would do.
extension SiteRegistry {
    /// Puts a site's current served version into the snapshot, answering for the names it holds.
    func publish(_ name: String) {
        bump()
        touchedSinceTaken.insert(name)
        guard let record = records[name], let served = record.served else {
            replaceServed(name, with: nil)
            return
        }
        let hosts = ownership.held(by: name)
        for refusal in ownership.refusals(of: name) {
            let problem = Self.problem(refusal, site: name)
            logger.error("\(problem.file): \(problem.message)")
        }
        replaceServed(name, with: served.hosts == hosts ? served : served.with(hosts: hosts))
    }

    /// A refused claim as `validate` reports it: on the file that names the host.
    static func problem(_ refusal: HostOwnership.Refusal, site: String) -> ConfigProblem {
        let refused = HostOwnership.Holder(site: site, source: refusal.source)
        let what =
            switch refusal.source {
            case .alias: "the alias \(refusal.host)"
            case .directory, .symlink: "the host \(refusal.host)"
            }
        return ConfigProblem(
            severity: .error, file: refused.file, message: "\(what) is not served by sites/\(site): \(refusal)")
    }

    /// After a reload: the alias names held, written to `servedFirstFile` when they changed.
    func rememberServedFirst() {
        guard let path = servedFirstFile, ownership.rememberedVersion != servedFirstStored else { return }
        do throws(ServedFirst.StoreError) {
            try ServedFirst.store(ownership.remembered, path: path)
            servedFirstStored = ownership.rememberedVersion
            servedFirstWriteFailed = false
        } catch {
            // Serving goes on; a restart then decides contests without it. Said once.
            if !servedFirstWriteFailed {
                logger.warning(
                    "cannot keep which site held each alias first for the next start", metadata: ["path": "\(path)", "error": "\(error)"])
            }
            servedFirstWriteFailed = true
        }
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
        if let holder = ownership.holder(serving: host) { return .refused(holder.site) }
        return .unclaimed
    }

    /// The names a site claims and does not hold, with who holds each and why.
    public func refusals(of name: String) -> [HostOwnership.Refusal] { ownership.refusals(of: name) }

    /// Alias symlinks whose target directory is not a site (a name that cannot be a host, a
    /// hidden directory): they give no site a name, and say so.
    var aliasesOfNoSite: [ConfigProblem] {
        aliases.keys.sorted().compactMap { name in
            guard let target = aliases[name]?.target, records[target] == nil else { return nil }
            return ConfigProblem(severity: .error, file: "sites/\(name)", message: "an alias of \(target), which is not a site")
        }
    }
}
