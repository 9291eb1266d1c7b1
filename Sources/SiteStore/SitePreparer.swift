import AASA
import Logging
import Served

/// Turns a site as read into the version served: per file the new version or the last good one
/// (`ContentCache.choose`, with the Last-Modified rule), the certificate pair in service, the
/// site.yaml settings in force, and the `ServedSite` made of them. It holds what those choices
/// share across sites: the prepared contents (`ContentCache`), the verdicts known valid
/// (`ValidityCache`), the pairs taken unchecked (`LateCertificateChecks`), the serving options and
/// the certificate check.
struct SitePreparer {
    /// Identical files share one prepared content.
    var contents = ContentCache()
    /// Verdicts of valid contents, kept between runs.
    var validity: ValidityCache
    /// Pairs taken unchecked and their late verdicts.
    var late = LateCertificateChecks()
    /// How files are served (Cache-Control); a site.yaml `cache-control` overrides it per site.
    var options: ServingOptions
    let checkCertificate: SiteRegistry.CertificateCheck
    /// Seconds since the epoch, for a new version's `loadedAt`.
    let clock: () -> Int64

    /// Applies the record's source to it: its settings in force and its served version (nil when
    /// neither well-known file has a version to serve). Returns the problems of the version on
    /// disk, one line each (the record's `errors` are left for the caller, which logs a change).
    /// `symlinkHosts`: the names its alias symlinks give it, sorted.
    mutating func prepare(_ name: String, _ record: inout SiteRecord, symlinkHosts: [HostName], takesSource: Bool = false) -> [String] {
        let source = takesSource ? record.takeSource() : record.source
        var errors: [String] = []
        for problem in source.problems where problem.severity == .error { errors.append("\(problem.file): \(problem.message)") }

        // site.yaml errors leave its previous settings in force (and the files served under them).
        var settingsBroken =
            source.unreadable.contains("site.yaml") || source.problems.contains { $0.severity == .error && $0.file.hasSuffix("/site.yaml") }
        // So does a page it names that cannot be served: one missing, refused by the file rules,
        // or invalid, with no last good version (a page only the new settings name has none).
        // The problem itself (the file, what takes it) is the read's.
        let unservable = settingsBroken || source.settings == record.settings ? [] : Self.unservablePages(source, served: record.served)
        if !unservable.isEmpty {
            settingsBroken = true
            // The read reported a page it could not read; an invalid one is reported here, since
            // the settings in force do not name it.
            for name in unservable {
                guard let file = source.pages[name] else { continue }
                for d in file.result.diagnostics.errors {
                    errors.append("\(file.relativePath): \(d) (it is \(source.settings.takers(of: name)))")
                }
            }
            errors.append(
                "\(source.directory)/site.yaml: not applied: \(unservable.joined(separator: ", ")) cannot be served; the last good settings stay in force"
            )
        }
        let settings = settingsBroken ? record.settings : source.settings
        // Which page a URL takes changed: every page is served with a later Last-Modified.
        let restamp =
            record.served != nil && settings.pagePaths != record.settings.pagePaths
            ? ContentCache.restampTime(floor: record.lastModified[.page], now: clock()) : nil
        record.settings = settings
        var siteOptions = options
        if let cacheControl = settings.cacheControl { siteOptions.cacheControl = cacheControl }
        let aasa = contents.choose(
            source.aasa, name: ConfigLoader.aasaFileName, file: .aasa, kind: .aasa, unreadable: source.unreadable,
            previous: record.served?.aasa, record: &record, validity: &validity, options: siteOptions, errors: &errors)
        let assetLinks = contents.choose(
            source.assetLinks, name: ConfigLoader.assetLinksFileName, file: .assetLinks, kind: .assetLinks, unreadable: source.unreadable,
            previous: record.served?.assetLinks, record: &record, validity: &validity, options: siteOptions, errors: &errors)
        var certificate = source.certificate
        if certificate == nil && source.unreadable.contains("tls") {
            certificate = record.served?.certificate  // there but unreadable: not gone
        }
        // The read's verdict is about the source's pair; a kept pair is checked as it is.
        let checked = source.certificate == nil ? nil : source.checkedCertificate
        if let files = certificate, source.certificateCheckDeferred, files == source.certificate {
            // Taken for now, checked after the load (`SiteRegistry.settleCertificateChecks`); the
            // site has no pair in service that it would replace.
            late.take(files, validity: validity)
        } else if let files = certificate,
            let problem = validity.certificateProblem(
                files, checked: checked, late: late, check: checkCertificate)
        {
            errors.append("\(files.directory): \(problem)")
            certificate = record.served?.certificate  // the last pair that loaded
            // ...unless that one was taken unchecked and has failed since.
            if let kept = certificate, late.isRefused(kept.identity) { certificate = nil }
        }
        let pages = contents.choosePages(
            source, settings: settings, restamp: restamp, record: &record, validity: &validity, options: siteOptions, errors: &errors)
        let page = settings.page.flatMap { pages[$0] }
        if record.served?.aasa !== aasa { contents.release(record.served?.aasa) }
        if record.served?.assetLinks !== assetLinks { contents.release(record.served?.assetLinks) }
        for (name, old) in record.served?.pages ?? [:] where pages[name] !== old { contents.release(old) }

        // Claimed hosts: the directory's own, its site.yaml aliases, its alias symlinks'.
        let hosts = [source.host] + settings.aliases + symlinkHosts
        let unchanged =
            record.served.map {
                $0.aasa === aasa && $0.assetLinks === assetLinks && $0.certificate == certificate
                    && $0.page === page && Self.same($0.pages, pages)
                    && $0.fallbackSettings == settings.fallback && $0.links == settings.links
                    && $0.wildcardCertificates == settings.certificates
            } ?? false
        if aasa == nil && assetLinks == nil {
            // Nothing is served, so neither are the pages: their uses go back, or every version
            // read meanwhile would stay in the cache.
            for file in pages.values { contents.release(file) }
            record.served = nil
        } else if !unchanged {
            let fallback = PreparedFallback.prepare(
                settings.fallback, hasPage: page != nil, alwaysVaries: settings.links.variesByUserAgent)
            if fallback != nil && record.fallbackCounts == nil { record.fallbackCounts = FallbackCounts() }
            let routes = PreparedRoutes.prepare(settings.links.routes, site: settings.links)
            // Counts follow the route paths: kept while they stay the same, from 0 when they change.
            let paths = settings.links.routes.map(\.pattern.text)
            if routes != nil && record.routeCounts?.paths != paths { record.routeCounts = RouteCounts(paths: paths) }
            record.served = ServedSite(
                directory: name, hosts: hosts, aasa: aasa, assetLinks: assetLinks, certificate: certificate, loadedAt: clock(),
                page: page, pages: pages, fallback: fallback, fallbackSettings: settings.fallback,
                fallbackCounts: fallback == nil ? nil : record.fallbackCounts, routes: routes, links: settings.links,
                routeCounts: routes == nil ? nil : record.routeCounts, wildcardCertificates: settings.certificates)
        }
        return errors
    }

    /// A site stopped being served: gives back its files' uses of their contents.
    mutating func release(_ served: ServedSite?) {
        contents.release(served?.aasa)
        contents.release(served?.assetLinks)
        for page in served?.pages.values.map({ $0 }) ?? [] { contents.release(page) }
    }

    /// Whether two sets of pages are the same prepared files.
    static func same(_ a: [String: PreparedFile], _ b: [String: PreparedFile]) -> Bool {
        a.count == b.count && a.allSatisfy { entry in b[entry.key] === entry.value }
    }

    /// The pages the source's settings name that have nothing to serve: not read (missing, or
    /// refused by the file rules) or invalid, and without a last good version in `served`
    /// (which has one only for a page the settings in force name too, and not for one deleted).
    ///
    /// None without a served version: at start-up (or a first read) there are no last good
    /// settings to keep, and refusing would serve none (no aliases for another site to take,
    /// no routes, no fallback); the settings apply and such a route answers 404, as a missing
    /// `page:` does. Nor is a page that could not be read for a reason that may pass (EIO,
    /// EMFILE: `ReadError.isTransient`): it keeps its last good version if any, and the next
    /// read tries again. A page refused as it is (a link out, a FIFO) refuses the site.yaml.
    static func unservablePages(_ source: SiteSource, served: ServedSite?) -> [String] {
        guard let served else { return [] }
        return source.settings.pageNames.prefix(SiteSettings.maximumPages).filter { name in
            if let file = source.pages[name], file.isValid { return false }
            if source.transientlyUnreadable.contains(name) { return false }
            let missing = source.pages[name] == nil && !source.unreadable.contains(name)
            return missing || served.pages[name] == nil
        }
    }

    /// Applies late verdicts (`LateCertificateChecks.settle`) to the verdicts kept.
    mutating func settleLate(_ verdicts: [(identity: String, problem: String?)], records: [String: SiteRecord]) -> [String] {
        late.settle(verdicts, validity: &validity, records: records)
    }

    /// Records the verdicts of what is served now (`ValidityCache.remember`).
    mutating func remember(served: some Sequence<ServedSite>, defaultCertificate: String?, logger: Logger) {
        validity.remember(served: served, defaultCertificate: defaultCertificate, late: &late, logger: logger)
    }

    /// Reads the default certificate (`DefaultCertificate.read`) against the verdicts kept.
    mutating func readDefault(
        _ defaultCertificate: inout DefaultCertificate, root: String, current: CertificateFiles?, logger: Logger
    ) -> CertificateFiles? {
        defaultCertificate.read(root: root, current: current, validity: &validity, late: late, check: checkCertificate, logger: logger)
    }
}
