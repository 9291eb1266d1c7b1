import AASA
import Served

/// Applying what was read: per file, the new version or the last good one, with the
/// Last-Modified rule (`choose`).
extension SiteRegistry {
    /// Returns the sites to publish (this one); the names it claims are decided at the end of
    /// the reload (`HostOwnership.resolve`).
    func update(_ name: String) -> Set<String> {
        guard var record = records[name] else { return [] }
        tracking.touch(name)
        let before = record.state
        let source = record.source
        var errors: [String] = []
        for problem in source.problems where problem.severity == .error { errors.append("\(problem.file): \(problem.message)") }

        // site.yaml errors leave its previous settings in force (and the files served under them).
        let settingsBroken =
            source.unreadable.contains("site.yaml") || source.problems.contains { $0.severity == .error && $0.file.hasSuffix("/site.yaml") }
        let settings = settingsBroken ? record.settings : source.settings
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
        if let files = certificate, let problem = validity.certificateProblem(files, checked: checked, check: checkCertificate) {
            errors.append("\(files.directory): \(problem)")
            certificate = record.served?.certificate  // the last pair that loaded
        }
        let page = contents.choosePage(
            source, settings: settings, settingsBroken: settingsBroken, record: &record, validity: &validity, options: siteOptions,
            errors: &errors)
        if record.served?.aasa !== aasa { contents.release(record.served?.aasa) }
        if record.served?.assetLinks !== assetLinks { contents.release(record.served?.assetLinks) }
        if record.served?.page !== page { contents.release(record.served?.page) }

        // Claimed hosts: the directory's own, its alias symlinks', its site.yaml aliases (those
        // only while it serves: a site counts as holding a name from when it serves it).
        let symlinks = claims.symlinks(of: name)
        let hosts = [source.host] + settings.aliases + symlinks.values.sorted()

        let unchanged =
            record.served.map {
                $0.aasa === aasa && $0.assetLinks === assetLinks && $0.certificate == certificate && $0.page === page
                    && $0.fallbackSettings == settings.fallback
            } ?? false
        if aasa == nil && assetLinks == nil {
            record.served = nil
        } else if !unchanged {
            let fallback = PreparedFallback.prepare(settings.fallback, hasPage: page != nil)
            if fallback != nil && record.fallbackCounts == nil { record.fallbackCounts = FallbackCounts() }
            record.served = ServedSite(
                directory: name, hosts: hosts, aasa: aasa, assetLinks: assetLinks, certificate: certificate, loadedAt: clock(),
                page: page, fallback: fallback, fallbackSettings: settings.fallback,
                fallbackCounts: fallback == nil ? nil : record.fallbackCounts)
        }
        if errors != record.errors {
            for line in errors { logger.error("\(line)") }
            if errors.isEmpty && !record.errors.isEmpty { logger.info("site fixed", metadata: ["site": "\(name)"]) }
            if !errors.isEmpty {
                logger.error(record.served == nil ? "not served: \(name)" : "serving the last good version: \(name)")
            }
        }
        record.errors = errors
        // What was read is applied: keep no file contents or parsed models (memory at 100,000
        // sites), unless a reporting command asked for them.
        if !keepsSources { record.dropSource() }
        records[name] = record
        claims.ownership.set(
            name, HostOwnership.Names(host: source.host, symlinks: symlinks, aliases: record.served == nil ? [] : settings.aliases))
        tracking.move(from: before, to: record.state)
        return [name]
    }
}
