import Logging

/// What the reporting commands (`validate`, `match --config`, `sites`) read: the registry `serve`
/// runs, loaded once, with every file's findings kept. nginx's `-t` and Caddy's `Validate` run the
/// server's own load code in the same way, so that a check can never pass what serve refuses or
/// pick a site serve would not.
extension SiteRegistry {
    /// A registry for reporting: nothing logged, every site's files kept with their findings.
    /// `reloadAll()` loads it.
    /// `servedFirstFile`: serve's record of which site held each alias first (read, never
    /// written), so that contests are reported as the running server decided them.
    public static func inspecting(
        root: String, checkCertificate: @escaping CertificateCheck = { _ in nil }, servedFirstFile: String? = nil
    ) -> SiteRegistry {
        SiteRegistry(
            root: root, logger: Logger(label: "aasad.inspect", factory: { _ in SwiftLogNoOpLogHandler() }),
            checkCertificate: checkCertificate, keepsSources: true, servedFirstFile: servedFirstFile)
    }

    /// A site as last read from disk, with the names the registry gave it: its alias symlinks
    /// and the site.yaml settings in force (a site.yaml with errors adds no names). Its files are
    /// there only in a registry that keeps sources (`inspecting`).
    public func source(of name: String) -> SiteSource? {
        guard let record = records[name] else { return nil }
        var site = record.source
        site.aliases = claims.symlinks(of: name).values.sorted()
        site.settings = record.settings
        return site
    }

    /// Everything the last load found, as `aasad validate` reports it: every site with its
    /// files and problems (a name it claims and another site holds is an error on it, naming the
    /// holder and why), and the problems of the directory itself (the default certificate,
    /// `sites/`, names that cannot be sites, aliases of no site). When a contest between aliases
    /// was decided without serve's record of who held them first, a warning says so.
    public func scan() -> ConfigScan {
        var scan = ConfigScan(
            root: root, sites: [], problems: defaultCertificateProblems + entryErrors, defaultCertificate: snapshot.defaultCertificate)
        var contested = false
        for name in records.keys.sorted() {
            guard var site = source(of: name) else { continue }
            for refusal in claims.ownership.refusals(of: name) {
                site.refusedHosts.insert(refusal.host)
                site.problems.append(HostClaims.problem(refusal, site: name))
                if case .heldFirst = refusal.reason { contested = true }
                if case .underWildcard(_, let holder) = refusal.reason, holder.source == .alias { contested = true }
            }
            scan.sites.append(site)
        }
        if contested, let problem = servedFirstProblem {
            scan.problems.append(
                ConfigProblem(
                    severity: .warning, file: "sites",
                    message:
                        "aliases contest a name and serve's record of which site held it first cannot be read (\(problem)); "
                        + "reported as a first start decides: the site whose directory name sorts first"))
        }
        return scan
    }
}
