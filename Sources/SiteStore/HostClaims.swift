import Foundation
import Logging
import Served

/// The names sites claim, kept across reloads: which site holds which host (`HostOwnership`, the
/// one rule), the alias symlinks under `sites/` that give a site more names, the operator's bound
/// on site.yaml aliases (`aliases-allowed`), and the record of which site held each alias first
/// (`ServedFirst`), read at start and written after each reload that changed it.
struct HostClaims {
    /// Which site holds which host (the names every site claims, and the decisions).
    var ownership: HostOwnership
    /// Alias symlinks: alias name → (its host, its target site).
    var aliases: [String: (host: HostName, target: String)] = [:]
    /// The same, by target: site name → its alias names.
    var aliasesByTarget: [String: Set<String>] = [:]
    /// Names under `sites/` that are symlinks to a sibling name that is not a site (yet), by that
    /// name: an alias made before its site. When the site appears, they are read again with it,
    /// as a full scan would read them.
    var danglingAliases: [String: Set<String>] = [:]
    /// The same, by symlink name.
    var danglingTargets: [String: String] = [:]
    /// Where `ownership.remembered` is kept between runs (`ServedFirst`), by its version; nil:
    /// memory only.
    private var servedFirstFile: StateFile<Int>?
    /// Why the file could not be read at start, if it could not (`validate` says so).
    private(set) var servedFirstProblem: String?
    /// What the last read of `aliases-allowed` found wrong (the policy before it stays in force).
    private(set) var aliasPolicyProblem: ConfigProblem?
    /// Whether a read of `aliases-allowed` ever succeeded (a missing file is one): until then, a
    /// broken file allows no alias.
    private var aliasPolicyRead = false

    /// Reads `servedFirstFile` when there is one; `stores`: whether reloads write it back (serve
    /// does; the reporting commands read it and never write it).
    init(servedFirstFile: String?, stores: Bool, logger: Logger) {
        var prior: [HostName: String] = [:]
        if let servedFirstFile {
            switch ServedFirst.load(path: servedFirstFile) {
            case .success(let held):
                prior = held
            case .failure(let problem):
                servedFirstProblem = problem.description
                if !problem.isMissing {
                    logger.warning(
                        "ignoring the record of which site held each alias first; contests are decided as on a first start",
                        metadata: ["path": "\(servedFirstFile)", "error": "\(problem)"])
                }
            }
        }
        ownership = HostOwnership(prior: prior)
        // A record read is written again after the first reload (the names may have moved while
        // the server was down); none read and none held: nothing to write.
        if stores, let servedFirstFile {
            self.servedFirstFile = StateFile(
                path: servedFirstFile, stored: prior.isEmpty ? ownership.rememberedVersion : -1,
                keeps: "which site held each alias first")
        }
    }

    /// After a reload: folds the ownership's changes once they are many (`HostOwnership.compact`),
    /// and writes the alias names held to the served-first file when they changed (only then is
    /// the whole map gathered).
    mutating func settle(logger: Logger) {
        ownership.compact()
        let ownership = ownership
        servedFirstFile?.keep(ownership.rememberedVersion, logger: logger) { path throws(ServedFirst.StoreError) in
            try ServedFirst.store(ownership.remembered, path: path)
        }
    }

    /// Reads the config root's `aliases-allowed` (`AliasPolicy`): none, no bound; a file that
    /// cannot be read or parsed keeps the policy in force, as any other file keeps its last good
    /// version, and at start, when none was ever read, allows no alias at all (as a site that
    /// never had a good version is not served): an operator's bound never lapses into none
    /// because its file broke. Applied when the reload resolves ownership.
    mutating func readAliasPolicy(root readRoot: String, logger: Logger) {
        defer {
            if aliasPolicyProblem == nil {
                aliasPolicyRead = true
            } else if !aliasPolicyRead {
                ownership.setPolicy(AliasPolicy())
            }
        }
        let relative = AliasPolicy.fileName
        let keeps = aliasPolicyRead ? "the aliases allowed before stay" : "no site.yaml alias is served until it is fixed"
        switch ConfigLoader.readBounded(path: readRoot + "/" + relative, limit: AliasPolicy.maximumFileSize) {
        case .failure(let error) where error.isMissing:
            aliasPolicyProblem = nil
            ownership.setPolicy(nil)
        case .failure(let error):
            aliasPolicyProblem = ConfigProblem(
                severity: .error, file: relative, message: "cannot be read: \(error); \(keeps)")
        case .success(let bytes) where bytes.count > AliasPolicy.maximumFileSize:
            aliasPolicyProblem = ConfigProblem(
                severity: .error, file: relative,
                message: "larger than \(AliasPolicy.maximumFileSize) bytes; \(keeps)")
        case .success(let bytes):
            switch AliasPolicy.parse(String(decoding: bytes, as: UTF8.self)) {
            case .success(let policy):
                aliasPolicyProblem = nil
                ownership.setPolicy(policy)
            case .failure(let error):
                aliasPolicyProblem = ConfigProblem(
                    severity: .error, file: relative, message: "\(error); \(keeps)")
            }
        }
        if let problem = aliasPolicyProblem { logger.error("\(problem.file): \(problem.message)") }
    }

    /// Records an alias symlink `name` of `target`.
    mutating func addAlias(_ name: String, host: HostName, target: String) {
        aliases[name] = (host, target)
        aliasesByTarget[target, default: []].insert(name)
    }

    /// Forgets the alias symlink `name`, if it was one; returns it.
    mutating func removeAlias(_ name: String) -> (host: HostName, target: String)? {
        guard let old = aliases.removeValue(forKey: name) else { return nil }
        aliasesByTarget[old.target]?.remove(name)
        return old
    }

    /// The alias symlinks of a site, by symlink name.
    func symlinks(of site: String) -> [String: HostName] {
        Self.symlinks(of: site, aliases: aliases, byTarget: aliasesByTarget)
    }

    /// The same from the two maps: what the registry calls for each site it updates, passing
    /// `claims.aliases` and `claims.aliasesByTarget`. A method called through the registry's
    /// property copied the whole of its `HostClaims` (every reference in it retained, then
    /// released) for each site of a full load (perf, docs/benchmarks.md).
    static func symlinks(
        of site: String, aliases: [String: (host: HostName, target: String)], byTarget: [String: Set<String>]
    ) -> [String: HostName] {
        guard let entries = byTarget[site] else { return [:] }
        var symlinks: [String: HostName] = [:]
        for entry in entries { symlinks[entry] = aliases[entry]?.host }
        return symlinks
    }

    /// Remembers that `name`, which cannot be a site, is a symlink to the sibling `target`.
    mutating func addDangling(_ name: String, target: String) {
        danglingAliases[target, default: []].insert(name)
        danglingTargets[name] = target
    }

    mutating func forgetDangling(_ name: String) {
        guard let target = danglingTargets.removeValue(forKey: name), var names = danglingAliases[target] else { return }
        names.remove(name)
        danglingAliases[target] = names.isEmpty ? nil : names
    }

    /// The sibling name a symlink under `sitesPath` points to, if it points to one.
    static func siblingTarget(of name: String, in sitesPath: String) -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: sitesPath + "/" + name) else { return nil }
        let resolved = URL(fileURLWithPath: target.hasPrefix("/") ? target : sitesPath + "/" + target).standardizedFileURL
        guard resolved.deletingLastPathComponent().path == URL(fileURLWithPath: sitesPath).standardizedFileURL.path else { return nil }
        return resolved.lastPathComponent
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

    /// Marks on `site`, as `validate` reports it, each name it claims and another site holds: an
    /// error on the file that names it, naming the holder and why. True when a contest between
    /// aliases decided one (which the served-first record decides, see `contestWarning`).
    func markRefusals(of name: String, on site: inout SiteSource) -> Bool {
        var contested = false
        for refusal in ownership.refusals(of: name) {
            site.refusedHosts.insert(refusal.host)
            site.problems.append(Self.problem(refusal, site: name))
            if case .heldFirst = refusal.reason { contested = true }
            if case .underWildcard(_, let holder) = refusal.reason, holder.source == .alias { contested = true }
        }
        return contested
    }

    /// When aliases contested a name and the served-first record could not be read: a warning
    /// that the contest was reported as a first start decides it.
    func contestWarning() -> ConfigProblem? {
        servedFirstProblem.map { problem in
            ConfigProblem(
                severity: .warning, file: "sites",
                message:
                    "aliases contest a name and serve's record of which site held it first cannot be read (\(problem)); "
                    + "reported as a first start decides: the site whose directory name sorts first")
        }
    }

    /// Alias symlinks whose target directory is not a site (a name that cannot be a host, a
    /// hidden directory): they give no site a name, and say so.
    func aliasesOfNoSite(isSite: (String) -> Bool) -> [ConfigProblem] {
        aliases.keys.sorted().compactMap { name in
            guard let target = aliases[name]?.target, !isSite(target) else { return nil }
            return ConfigProblem(severity: .error, file: "sites/\(name)", message: "an alias of \(target), which is not a site")
        }
    }
}

extension HostOwnership.Refusal {
    /// The problem `aasad validate` reports for this refusal on `site` (`HostClaims.problem`), as
    /// the tenant API reports it too (Sources/TenantAPI).
    public func problem(site: String) -> ConfigProblem { HostClaims.problem(self, site: site) }
}
