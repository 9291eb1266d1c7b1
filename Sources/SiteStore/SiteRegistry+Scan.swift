import Logging

/// What the reporting commands (`validate`, `match --config`, `sites`) read: the registry `serve`
/// runs, loaded once, with every file's findings kept. nginx's `-t` and Caddy's `Validate` run the
/// server's own load code in the same way, so that a check can never pass what serve refuses or
/// pick a site serve would not (issue 16).
extension SiteRegistry {
    /// A registry for reporting: nothing logged, every site's files kept with their findings.
    /// `reloadAll()` loads it.
    public static func inspecting(root: String, checkCertificate: @escaping CertificateCheck = { _ in nil }) -> SiteRegistry {
        SiteRegistry(
            root: root, logger: Logger(label: "aasad.inspect", factory: { _ in SwiftLogNoOpLogHandler() }),
            checkCertificate: checkCertificate, keepsSources: true)
    }

    /// A site as last read from disk, with the names the registry gave it: its alias symlinks
    /// and the site.yaml settings in force (a site.yaml with errors adds no names). Its files are
    /// there only in a registry that keeps sources (`inspecting`).
    public func source(of name: String) -> SiteSource? {
        guard let record = records[name] else { return nil }
        var site = record.source
        site.aliases = (aliasesByTarget[name] ?? []).compactMap { aliases[$0]?.host }.sorted()
        site.settings = record.settings
        return site
    }

    /// Everything the last load found, as `aasad validate` reports it: every site with its
    /// files and problems (a host it shares with another site is an error on both), and the
    /// problems of the directory itself (the default certificate, `sites/`, names that cannot be
    /// sites, aliases of no site).
    public func scan() -> ConfigScan {
        var scan = ConfigScan(
            root: root, sites: [], problems: defaultCertificateProblems + entryErrors, defaultCertificate: snapshot.defaultCertificate)
        for name in records.keys.sorted() {
            guard var site = source(of: name) else { continue }
            for (host, sites) in conflicts(of: name) {
                let directories = sites.map { "sites/\($0)" }.joined(separator: " and ")
                site.problems.append(
                    ConfigProblem(
                        severity: .error, file: site.directory,
                        message: "the host \(host) is claimed by \(directories), so neither serves it; keep it in one site"))
            }
            scan.sites.append(site)
        }
        return scan
    }
}
