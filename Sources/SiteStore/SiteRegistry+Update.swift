import AASA

/// Applying what was read: per file, the new version or the last good one (issue 4), with the
/// Last-Modified rule (issue 10).
extension SiteRegistry {
    /// Returns the sites to publish (this one); the names it claims are decided at the end of
    /// the reload (`HostOwnership.resolve`).
    func update(_ name: String) -> Set<String> {
        guard var record = records[name] else { return [] }
        touchedSinceTaken.insert(name)
        let before = Self.state(of: record)
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
        let aasa = choose(
            source.aasa, name: ConfigLoader.aasaFileName, file: .aasa, kind: .aasa, unreadable: source.unreadable,
            previous: record.served?.aasa,
            record: &record, options: siteOptions, errors: &errors)
        let assetLinks = choose(
            source.assetLinks, name: ConfigLoader.assetLinksFileName, file: .assetLinks, kind: .assetLinks, unreadable: source.unreadable,
            previous: record.served?.assetLinks,
            record: &record, options: siteOptions, errors: &errors)
        var certificate = source.certificate
        if certificate == nil && source.unreadable.contains("tls") {
            certificate = record.served?.certificate  // there but unreadable: not gone
        }
        // The read's verdict is about the source's pair; a kept pair is checked as it is.
        let checked = source.certificate == nil ? nil : source.checkedCertificate
        if let files = certificate, let problem = certificateProblem(files, checked: checked) {
            errors.append("\(files.directory): \(problem)")
            certificate = record.served?.certificate  // the last pair that loaded
        }
        let page = choosePage(
            source, settings: settings, settingsBroken: settingsBroken, record: &record, options: siteOptions, errors: &errors)
        if record.served?.aasa !== aasa { contents.release(record.served?.aasa) }
        if record.served?.assetLinks !== assetLinks { contents.release(record.served?.assetLinks) }
        if record.served?.page !== page { contents.release(record.served?.page) }

        // Claimed hosts: the directory's own, its alias symlinks', its site.yaml aliases (those
        // only while it serves: a site counts as holding a name from when it serves it).
        var symlinks: [String: HostName] = [:]
        for entry in aliasesByTarget[name] ?? [] { symlinks[entry] = aliases[entry]?.host }
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
        ownership.set(
            name, HostOwnership.Names(host: source.host, symlinks: symlinks, aliases: record.served == nil ? [] : settings.aliases))
        stateCounts[before, default: 0] -= 1
        stateCounts[Self.state(of: record), default: 0] += 1
        return [name]
    }

    static func state(of record: Record) -> SiteState {
        record.served == nil ? .refused : (record.errors.isEmpty ? .serving : .servingLastGood)
    }

    /// The page to serve: the one the settings in force name, chosen like the other files. While
    /// site.yaml is broken, the settings in force are the previous ones: a page they name that
    /// was not read with them keeps its last good version.
    func choosePage(
        _ source: SiteSource, settings: SiteSettings, settingsBroken: Bool, record: inout Record, options: ServingOptions,
        errors: inout [String]
    ) -> PreparedFile? {
        guard let name = settings.page else { return nil }
        let file = source.page?.relativePath == source.directory + "/" + name ? source.page : nil
        if file == nil && settingsBroken { return record.served?.page }
        var options = options
        options.contentType = ServingOptions.html
        // Platforms with their own redirect get it, the others the page: the same URL answers by
        // User-Agent (the same rule as the redirects' own Vary).
        options.varyUserAgent = PreparedFallback.variesByUserAgent(settings.fallback, hasPage: true)
        return choose(
            file, name: Self.pageKey, file: .page, unreadable: source.unreadable.contains(name) ? [Self.pageKey] : [],
            previous: record.served?.page,
            record: &record, options: options, errors: &errors)
    }

    /// The page's key among a record's files (its Last-Modified moves forward across renames);
    /// no file of a site directory has this name.
    static let pageKey = ":page"

    /// The file to serve: the new one when valid; the previous one when the new one is invalid
    /// or cannot be read (only a file that is gone stops being served); none when it is gone.
    ///
    /// Last-Modified rule (issue 10): it moves whenever the content (and so the ETag) changes,
    /// and only then. A new content gets the file's time (the later of mtime and ctime, see
    /// `ConfigLoader.readFile`), but never a time at or before the one last served for that
    /// file: then the last one plus a second. Two edits within a second, or a roll-back whose
    /// ctime ties, still move forward, and a client's If-Modified-Since of an older version
    /// never gets 304 for a newer one. Unchanged content keeps its Last-Modified (a chmod or a
    /// touch changes nothing a client sees). Across restarts the ctime carries the rule.
    func choose<D>(
        _ file: SiteFile<D>?, name: String, file which: FileKind, kind: KnownValid.Kind? = nil, unreadable: Set<String>,
        previous: PreparedFile?,
        record: inout Record, options: ServingOptions, errors: inout [String]
    ) -> PreparedFile? {
        // The last good version, under the options in force now: a changed cache-control, or a
        // page that now varies by User-Agent, applies to it too.
        func kept() -> PreparedFile? {
            guard let previous, previous.options != options else { return previous }
            return (try? contents.reprepare(previous, options: options)) ?? previous
        }
        guard let file else { return unreadable.contains(name) ? kept() : nil }
        guard file.isValid else {
            for d in file.result.diagnostics.errors { errors.append("\(file.relativePath): \(d)") }
            return kept()
        }
        var modified = file.modified
        if let previous, previous.content.body == file.bytes {
            if previous.options == options { return previous }
            modified = previous.lastModified
        } else if let last = record.lastModified[which], modified <= last {
            modified = last + 1
        }
        do {
            let prepared = try contents.prepare(file, modified: modified, options: options)
            if let prepared {
                record.lastModified[which] = prepared.lastModified
                if let kind { knownValid?.insert(kind, digestHex: prepared.content.digest) }
            }
            return prepared
        } catch {
            // The settings' checks refuse such a value first; never build a head from one.
            errors.append("\(file.relativePath): not served: \(error)")
            return previous
        }
    }
}
